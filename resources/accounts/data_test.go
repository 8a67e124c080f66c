package accounts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// dataRoot is a throwaway root holding account databases (any user reads
// them: no tool runs).
func dataRoot(t *testing.T, shadow bool) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"etc/passwd":     "root:x:0:0:root:/root:/bin/bash\nalice:x:1500:1500:Alice A.:/home/alice:/bin/bash\n# a comment\nbob:x:1501:100::/home/bob:/bin/sh\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
		"etc/group":      "root:x:0:\nusers:x:100:bob,alice\nalice:x:1500:\nadm:x:4:bob\n",
		"etc/login.defs": "UID_MIN 1000\nUID_MAX 1500\nGID_MIN 1000\nGID_MAX 60000\n",
	}
	if shadow {
		files["etc/shadow"] = "root:*:19000:0:99999:7:::\nalice:$6$x$y:19000:1:90:14:30::\nbob:!$6$x$y:19500:0:99999:7::19999:\n"
	}
	for name, content := range files {
		resourcetest.WriteFile(t, filepath.Join(root, name), content, 0o644)
	}
	return root
}

func answerJSON(t *testing.T, v cty.Value) string {
	t.Helper()
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUsersData(t *testing.T) {
	root := dataRoot(t, true)
	v, err := (&usersData{root: root}).Read(context.Background(), &resources.DataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Type().IsMapType() || v.LengthInt() != 4 {
		t.Fatalf("answer %s", answerJSON(t, v))
	}
	alice := answerJSON(t, v.Index(cty.StringVal("alice")))
	if want := `{"comment":"Alice A.","expire_date":"never","gid":1500,"group":"alice","home":"/home/alice","inactive":30,"last_change":"2022-01-08","locked":false,"max_days":90,"min_days":1,"name":"alice","regular":true,"shell":"/bin/bash","uid":1500,"warn_days":14}`; alice != want {
		t.Errorf("alice\n%s\nwant\n%s", alice, want)
	}
	bob := v.Index(cty.StringVal("bob"))
	if bob.GetAttr("regular").True() || !bob.GetAttr("locked").True() || bob.GetAttr("group").AsString() != "users" || bob.GetAttr("expire_date").AsString() != "2024-10-03" {
		t.Errorf("bob (uid above UID_MAX, locked, expiring): %s", answerJSON(t, bob))
	}
	if v.Index(cty.StringVal("root")).GetAttr("regular").True() {
		t.Error("root is a regular user")
	}
	for _, u := range v.AsValueMap() {
		for name := range u.Type().AttributeTypes() {
			if name == "password" {
				t.Error("the answer holds the password hash")
			}
		}
	}

	// Without /etc/shadow (or where toque may not read it), its fields are null.
	v, err = (&usersData{root: dataRoot(t, false)}).Read(context.Background(), &resources.DataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if a := v.Index(cty.StringVal("alice")); !a.GetAttr("locked").IsNull() || !a.GetAttr("inactive").IsNull() || a.GetAttr("uid").IsNull() {
		t.Errorf("without shadow: %s", answerJSON(t, a))
	}
}

func TestGroupsData(t *testing.T) {
	v, err := (&groupsData{root: dataRoot(t, true)}).Read(context.Background(), &resources.DataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := answerJSON(t, v), `{"adm":{"gid":4,"members":["bob"],"name":"adm","regular":false},"alice":{"gid":1500,"members":[],"name":"alice","regular":true},"root":{"gid":0,"members":[],"name":"root","regular":false},"users":{"gid":100,"members":["alice","bob"],"name":"users","regular":false}}`; got != want {
		t.Errorf("groups\n%s\nwant\n%s", got, want)
	}
	empty, err := (&groupsData{root: t.TempDir()}).Read(context.Background(), &resources.DataRequest{})
	if err != nil || !empty.Type().IsMapType() || empty.LengthInt() != 0 {
		t.Errorf("no databases: %v %v", empty, err)
	}
}
