package system

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

const debianHosts = "127.0.0.1\tlocalhost\n127.0.1.1\told.example.com\told\n# The following lines are desirable for IPv6 capable hosts\n::1     localhost ip6-localhost ip6-loopback\n10.0.0.7 db web1 web1.example.com\n"

// The lines of /etc/hosts that concern the host: its address's, and
// those naming it, which lose only its names.
func TestHostsEdit(t *testing.T) {
	typ := newHostnameType(t.TempDir(), "/nonexistent")
	r := resourcetest.NewRes(t, typ, "set", map[string]any{"hostname": "web1", "fqdn": "web1.example.com", "ipaddress": "127.0.1.1", "aliases": []string{"www"}})
	if got := hostsLine(r); got != "127.0.1.1 web1.example.com web1 www" {
		t.Errorf("line %q", got)
	}
	before, after := hostsEdit(debianHosts, r)
	if before != "127.0.1.1\told.example.com\told\n10.0.0.7 db web1 web1.example.com\n" {
		t.Errorf("before %q", before)
	}
	if want := "127.0.0.1\tlocalhost\n127.0.1.1 web1.example.com web1 www\n# The following lines are desirable for IPv6 capable hosts\n::1     localhost ip6-localhost ip6-loopback\n10.0.0.7 db\n"; after != want {
		t.Errorf("after:\n%s\nwant:\n%s", after, want)
	}
	if got := hostsAfter(before, r); got != "127.0.1.1 web1.example.com web1 www\n10.0.0.7 db\n" {
		t.Errorf("entry after %q", got)
	}
	// Written already (with other spacing): nothing to change.
	if _, again := hostsEdit(after, r); again != after {
		t.Errorf("not stable:\n%s", again)
	}
	spaced := strings.Replace(after, "127.0.1.1 web1.example.com", "127.0.1.1\t web1.example.com", 1)
	if b, a := hostsEdit(spaced, r); a != spaced || hostsAfter(b, r) != b {
		t.Errorf("spacing: %q", a)
	}
	// A host with a dotted name gets its short name too; no address line
	// yet: appended.
	r = resourcetest.NewRes(t, typ, "set", map[string]any{"hostname": "db1.example.com", "ipaddress": "10.1.2.3"})
	if _, a := hostsEdit("127.0.0.1 localhost", r); a != "127.0.0.1 localhost\n10.1.2.3 db1.example.com db1\n" {
		t.Errorf("appended %q", a)
	}
}

// hostnameRoot is a throwaway root with Debian's /etc/hostname and
// /etc/hosts; the test's thread gets a UTS namespace of its own, so that
// the kernel's hostname toque sets is seen by that thread alone.
func hostnameRoot(t *testing.T, flags int) *hostnameType {
	threadNS(t, syscall.CLONE_NEWUTS|flags)
	if err := unix.Sethostname([]byte("old")); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	testutil.WriteFiles(t, root, map[string]string{"etc/hostname": "old\n", "etc/hosts": debianHosts})
	typ := newHostnameType(root, threadMountinfo)
	typ.run = func(_ context.Context, _ *resources.Env, tool string, _ ...string) error {
		t.Fatalf("ran %s: without systemd, toque sets the names itself", tool)
		return nil
	}
	return typ
}

func TestHostname(t *testing.T) {
	typ := hostnameRoot(t, 0)
	env := resourcetest.TestEnv(t)
	r := resourcetest.NewRes(t, typ, "set", map[string]any{"hostname": "web1", "fqdn": "web1.example.com", "ipaddress": "127.0.1.1"})
	st, step := resourcetest.Plan(t, typ, r)
	if st.Values["static_hostname"].AsString() != "old" || st.Values["transient_hostname"].AsString() != "old" ||
		strings.Join(step.Groups, ",") != "static,transient,hosts" || step.Change("hosts_entry").After.AsString() != "127.0.1.1 web1.example.com web1\n10.0.0.7 db\n" {
		t.Fatalf("plan %v %+v", step.Groups, step.Changes)
	}
	resourcetest.Apply(t, typ, env, r, resources.Update)
	if got := resourcetest.ReadFile(t, filepath.Join(typ.root, "etc/hostname")); got != "web1\n" {
		t.Errorf("/etc/hostname %q", got)
	}
	if got, _ := os.Hostname(); got != "web1" {
		t.Errorf("uname -n %q", got)
	}
	if got := resourcetest.ReadFile(t, filepath.Join(typ.root, "etc/hosts")); !strings.Contains(got, "\n127.0.1.1 web1.example.com web1\n") || !strings.HasPrefix(got, "127.0.0.1\tlocalhost\n") || !strings.HasSuffix(got, "\n10.0.0.7 db\n") {
		t.Errorf("/etc/hosts:\n%s", got)
	}
	// Only the kernel's name moved: only it is set again.
	unix.Sethostname([]byte("other"))
	if _, step := resourcetest.Plan(t, typ, r); strings.Join(step.Groups, ",") != "transient" {
		t.Errorf("groups %v", step.Groups)
	}
}

// A container's /etc/hosts is a file mounted over, which a rename cannot
// replace: toque rewrites it in place.
func TestHostnameMountedHosts(t *testing.T) {
	typ := hostnameRoot(t, syscall.CLONE_NEWNS)
	outside := filepath.Join(t.TempDir(), "hosts")
	resourcetest.WriteFile(t, outside, debianHosts, 0o644)
	hosts := filepath.Join(typ.root, "etc/hosts")
	if err := syscall.Mount(outside, hosts, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(hosts, syscall.MNT_DETACH) })
	r := resourcetest.NewRes(t, typ, "set", map[string]any{"hostname": "web1", "ipaddress": "127.0.1.1"})
	if st := resourcetest.Load(t, typ, r); st.Extra["mounted /etc/hosts"] == "" {
		t.Fatalf("not seen mounted: %v", st.Extra)
	}
	resourcetest.Apply(t, typ, resourcetest.TestEnv(t), r, resources.Update)
	if got := resourcetest.ReadFile(t, outside); !strings.Contains(got, "\n127.0.1.1 web1\n") {
		t.Errorf("the mounted file:\n%s", got)
	}
}

func TestHostnameBadInput(t *testing.T) {
	typ := newHostnameType(t.TempDir(), "/nonexistent")
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"hostname", cty.StringVal("web-1"), ""},
		{"hostname", cty.StringVal("web1.example.com"), ""},
		{"hostname", cty.StringVal("-web"), "starts or ends with \"-\""},
		{"hostname", cty.StringVal("web_1"), `"_" is not a letter`},
		{"hostname", cty.StringVal("web1."), "empty label"},
		{"hostname", cty.StringVal("a..b"), "empty label"},
		{"hostname", cty.StringVal("web1\n127.0.0.1 bank.example.com"), `"\n" is not a letter`},
		{"hostname", cty.StringVal("web1 evil"), `" " is not a letter`},
		{"hostname", cty.StringVal(strings.Repeat("a", 65)), "at most 64"},
		{"hostname", cty.StringVal(strings.Repeat("a", 64) + ".b"), "at most 64"},
		{"fqdn", cty.StringVal(strings.Repeat("a", 64) + ".example.com"), "longer than 63"},
		{"fqdn", cty.StringVal("caf\u00e9.example.com"), "is not a letter"},
		{"ipaddress", cty.StringVal("127.0.1.1"), ""},
		{"ipaddress", cty.StringVal("2001:db8::0001"), ""},
		{"ipaddress", cty.StringVal("127.0.1"), "not an IPv4 or IPv6 address"},
		{"ipaddress", cty.StringVal("fe80::1%eth0"), "not an IPv4 or IPv6 address"},
		{"ipaddress", cty.StringVal("127.0.0.1"), "localhost's"},
		{"aliases", resourcetestList([]string{"www", "#x"}), `aliases[1] "#x"`},
		{"static_hostname", cty.StringVal("x"), "read by toque"},
	} {
		p := typ.Schema().Property(c.prop)
		v, err := c.v, error(nil)
		if p.Normalize != nil {
			v, err = p.Normalize(v)
		}
		if err == nil && p.Validate != nil {
			err = p.Validate(v)
		}
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
}
