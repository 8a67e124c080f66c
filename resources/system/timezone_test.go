package system

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/internal/testutil"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// zoneRoot is a throwaway root with Debian's /etc/localtime (a link to
// Etc/UTC) and /etc/timezone, and a small tz database of its own in
// usr/share/zoneinfo: its list (tzdata.zi) and TZif files.
func zoneRoot(t *testing.T) *timezoneType {
	t.Helper()
	root := t.TempDir()
	zi := filepath.Join(root, "usr/share/zoneinfo")
	testutil.WriteFiles(t, root, map[string]string{
		"usr/share/zoneinfo/tzdata.zi":          "# version 2024a\nZ Etc/UTC 0 - UTC\nZ Europe/Paris 0:9:21 - LMT 1891 Mar 16\nL Etc/UTC UTC\n",
		"usr/share/zoneinfo/Etc/UTC":            "TZif2 utc",
		"usr/share/zoneinfo/UTC":                "TZif2 utc",
		"usr/share/zoneinfo/Europe/Paris":       "TZif2 paris",
		"usr/share/zoneinfo/posix/Europe/Paris": "TZif2 paris",
		"usr/share/zoneinfo/zone.tab":           "# not a zone\n",
		"etc/timezone":                          "Etc/UTC\n",
		"etc/debian_version":                    "12.7\n",
	})
	if err := os.Symlink(filepath.Join(zi, "Etc/UTC"), filepath.Join(root, "etc/localtime")); err != nil {
		t.Fatal(err)
	}
	return newTimezoneType(root, zi)
}

func TestTimezone(t *testing.T) {
	testenv.MustHave(t, testenv.Root) // the files are root's
	typ := zoneRoot(t)
	env := resourcetest.TestEnv(t)
	lt := filepath.Join(typ.root, "etc/localtime")
	paris := resourcetest.NewRes(t, typ, "set", map[string]any{"timezone": "Europe/Paris"})
	st, step := resourcetest.Plan(t, typ, paris)
	if st.Values["localtime"].AsString() != filepath.Join(typ.zoneinfo, "Etc/UTC") || strings.Join(step.Groups, ",") != "localtime,timezone_file" ||
		step.Change("localtime").After.AsString() != filepath.Join(typ.zoneinfo, "Europe/Paris") || step.Change("timezone_file").After.AsString() != "Europe/Paris" {
		t.Fatalf("plan %v %+v", step.Groups, step.Changes)
	}
	resourcetest.Apply(t, typ, env, paris, resources.Update)
	if to, _ := os.Readlink(lt); to != filepath.Join(typ.zoneinfo, "Europe/Paris") {
		t.Errorf("localtime -> %s", to)
	}
	if got := resourcetest.ReadFile(t, filepath.Join(typ.root, "etc/timezone")); got != "Europe/Paris\n" {
		t.Errorf("timezone %q", got)
	}
	// A relative link that leads there is the zone already (timedatectl's).
	os.Remove(lt)
	os.Symlink("../usr/share/zoneinfo/Europe/Paris", lt)
	if _, step := resourcetest.Plan(t, typ, paris); step.Kind != resources.NoOp {
		t.Errorf("relative link: %s %s", step.Kind, step.Reason)
	}
	// UTC is Etc/UTC's file by another name, which timedatectl shows: a
	// link to it is not Etc/UTC's.
	utc := resourcetest.NewRes(t, typ, "set", map[string]any{"timezone": "Etc/UTC"})
	os.Remove(lt)
	os.Symlink(filepath.Join(typ.zoneinfo, "UTC"), lt)
	if _, step := resourcetest.Plan(t, typ, utc); !step.HasGroup("localtime") {
		t.Errorf("UTC for Etc/UTC: %v", step.Groups)
	}
	// A copy of a zone's file is replaced by the link, and backed up.
	os.Remove(lt)
	resourcetest.WriteFile(t, lt, "TZif2 utc", 0o644)
	st, step = resourcetest.Plan(t, typ, utc)
	if st.Values["localtime"].AsString() != "(a copy of Etc/UTC's file)" || !strings.Contains(step.Reason, "is a copy of a zone's file") {
		t.Errorf("copy: %v: %s", st.Values, step.Reason)
	}
	resourcetest.Apply(t, typ, env, utc, resources.Update)
	if to, _ := os.Readlink(lt); to != filepath.Join(typ.zoneinfo, "Etc/UTC") {
		t.Errorf("localtime -> %s", to)
	}
	if backups, _ := filepath.Glob(filepath.Join(resources.BackupDir(env.StateDir), lt, "*")); len(backups) != 1 {
		t.Errorf("backups %v", backups)
	}
	// Not Debian's kind, and no /etc/timezone: only the link.
	os.Remove(filepath.Join(typ.root, "etc/timezone"))
	os.Remove(filepath.Join(typ.root, "etc/debian_version"))
	if _, step := resourcetest.Plan(t, typ, paris); strings.Join(step.Groups, ",") != "localtime" {
		t.Errorf("without /etc/timezone: %v", step.Groups)
	}
}

// The zone is checked against the tz database when the plan is made.
func TestTimezoneBadInput(t *testing.T) {
	typ := zoneRoot(t)
	p := typ.Schema().Property("timezone")
	for _, c := range []struct {
		v    string
		want string
	}{
		{"Europe/Paris", ""},
		{"UTC", ""},
		{"Europe/Nowhere", "lists no zone or link of that name"},
		{"posix/Europe/Paris", "lists no zone or link of that name"},
		{"zone.tab", "not the name of a zone"},
		{"../../../etc/passwd", "not the name of a zone"},
		{"/etc/passwd", "not the name of a zone"},
		{"Europe/Paris\n", "not the name of a zone"},
		{"Europe Paris", "not the name of a zone"},
	} {
		err := p.Validate(cty.StringVal(c.v))
		if err == nil {
			err = p.HostCheck(cty.StringVal(c.v))
		}
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: %v, want %q", c.v, err, c.want)
		}
	}
	// Without the database's list, a zone is a TZif file of it.
	os.Remove(filepath.Join(typ.zoneinfo, "tzdata.zi"))
	if err := p.HostCheck(cty.StringVal("zone.tab")); err == nil || !strings.Contains(err.Error(), "is not a zone file") {
		t.Errorf("zone.tab: %v", err)
	}
	if err := p.HostCheck(cty.StringVal("Asia/Nowhere")); err == nil || !strings.Contains(err.Error(), "is tzdata installed") {
		t.Errorf("Asia/Nowhere: %v", err)
	}
	if err := typ.Schema().Property("localtime").Validate(cty.StringVal("x")); err == nil {
		t.Error("localtime is settable")
	}
}
