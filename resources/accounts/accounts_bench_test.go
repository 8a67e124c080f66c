package accounts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// benchAccountsRoot is a root whose databases hold n users (user0…),
// each in its own group, m further groups (grp0…) with five members
// each, and the host's usual few.
func benchAccountsRoot(b *testing.B, n, m int) string {
	b.Helper()
	root := b.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	var passwd, shadow, group, gshadow strings.Builder
	passwd.WriteString("root:x:0:0:root:/root:/bin/bash\n")
	shadow.WriteString("root:*:19000:0:99999:7:::\n")
	group.WriteString("root:x:0:\nusers:x:100:\n")
	gshadow.WriteString("root:*::\nusers:*::\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&passwd, "user%d:x:%d:%d:User %d:/home/user%d:/bin/sh\n", i, 2000+i, 2000+i, i, i)
		fmt.Fprintf(&shadow, "user%d:%s:19000:0:99999:7:::\n", i, hashSecret)
		fmt.Fprintf(&group, "user%d:x:%d:\n", i, 2000+i)
		fmt.Fprintf(&gshadow, "user%d:!::\n", i)
	}
	for j := 0; j < m; j++ {
		var members []string
		for k := 0; k < 5; k++ {
			members = append(members, fmt.Sprintf("user%d", (j*5+k)%n))
		}
		fmt.Fprintf(&group, "grp%d:x:%d:%s\n", j, 5000+j, strings.Join(members, ","))
		fmt.Fprintf(&gshadow, "grp%d:!::%s\n", j, strings.Join(members, ","))
	}
	for name, sb := range map[string]*strings.Builder{"passwd": &passwd, "shadow": &shadow, "group": &group, "gshadow": &gshadow} {
		if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

// BenchmarkAccountsPlan is the plan of 100 users and 50 groups in their
// desired state: one LoadAll per type (each database parsed once, no
// process), then Plan for each resource. make bench runs it; the
// end-to-end benchmark (BenchmarkE2EPlanAccounts) times the whole toque
// plan.
func BenchmarkAccountsPlan(b *testing.B) {
	const users, groups = 100, 50
	root := benchAccountsRoot(b, users, groups)
	utyp, gtyp := newUserType(root), newGroupType(root)
	var urs, grs []*resources.Resource
	for i := 0; i < users; i++ {
		urs = append(urs, resources.NewResource(utyp.schema, fmt.Sprintf("user%d", i), "create", map[string]cty.Value{
			"username": cty.StringVal(fmt.Sprintf("user%d", i)), "uid": cty.NumberIntVal(int64(2000 + i)), "gid": cty.StringVal(fmt.Sprintf("user%d", i)),
			"comment": cty.StringVal(fmt.Sprintf("User %d", i)), "home": cty.StringVal(fmt.Sprintf("/home/user%d", i)), "shell": cty.StringVal("/bin/sh"),
			"password": cty.StringVal(hashSecret),
		}))
	}
	for j := 0; j < groups; j++ {
		var members []string
		for k := 0; k < 5; k++ {
			members = append(members, fmt.Sprintf("user%d", (j*5+k)%users))
		}
		ml := nameList(members)
		grs = append(grs, resources.NewResource(gtyp.schema, fmt.Sprintf("grp%d", j), "create", map[string]cty.Value{
			"group_name": cty.StringVal(fmt.Sprintf("grp%d", j)), "gid": cty.NumberIntVal(int64(5000 + j)), "members": ml,
		}))
	}
	views := func(rs []*resources.Resource) []*resources.Resource {
		out := make([]*resources.Resource, len(rs))
		for i, r := range rs {
			out[i] = r.LoadView()
		}
		return out
	}
	uviews, gviews := views(urs), views(grs)
	ctx := context.Background()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for _, set := range []struct {
			typ   resources.Type
			rs    []*resources.Resource
			views []*resources.Resource
		}{{utyp, urs, uviews}, {gtyp, grs, gviews}} {
			sts, err := set.typ.(resources.BatchLoader).LoadAll(ctx, set.views)
			if err != nil {
				b.Fatal(err)
			}
			for i, r := range set.rs {
				step, err := resources.PlanStep(set.typ, r, sts[i])
				if err != nil || step.Kind != resources.NoOp {
					b.Fatalf("%s: %v %v", r.Address(), step, err)
				}
			}
		}
	}
}
