package fleet

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSelect(t *testing.T) {
	dir := inventoryDir(t)
	inv, diags := ParseInventory([]byte(`recipes = "site"
hosts = ["web-01", "web-02", "web-03", "db-01", "db-02"]
group "web" { hosts = ["web-*"] }
group "canary" { hosts = ["web-01", "db-01"] }
`), "fleet.hcl", dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	res := &Result{Format: ResultFormat, BundleDigest: "sha256:x", Hosts: []HostResult{
		{Alias: "web-01", Outcome: Applied}, {Alias: "web-02", Outcome: Failed},
		{Alias: "web-03", Outcome: NotStarted}, {Alias: "db-01", Outcome: Unknown}, {Alias: "db-02", Outcome: AlreadyApplied},
	}}
	if err := WriteResult(filepath.Join(dir, "fleet.result"), res); err != nil {
		t.Fatal(err)
	}
	path := func(p string) string { return filepath.Join(dir, p) }
	for _, c := range []struct {
		limits []string
		want   []string
		err    string
	}{
		{nil, []string{"web-01", "web-02", "web-03", "db-01", "db-02"}, ""},
		{[]string{"web"}, []string{"web-01", "web-02", "web-03"}, ""},
		{[]string{"db-02,canary"}, []string{"web-01", "db-01", "db-02"}, ""},
		{[]string{"*-0[12]", "!web-02"}, []string{"web-01", "db-01", "db-02"}, ""},
		{[]string{"!web"}, []string{"db-01", "db-02"}, ""},
		{[]string{"@fleet.result"}, []string{"web-02", "web-03", "db-01"}, ""},
		{[]string{"@fleet.result:failed,unknown"}, []string{"web-02", "db-01"}, ""},
		{[]string{"web", "!@fleet.result:applied"}, []string{"web-02", "web-03"}, ""},
		{[]string{"web-1"}, nil, `-limit "web-1" names no host or group of fleet.hcl, nor matches a host's alias. Did you mean "web-01"?`},
		{[]string{"@fleet.result:broken"}, nil, `"broken" is not an outcome`},
		{[]string{"@fleet.result:stale"}, nil, "no host of fleet.result is stale"},
		{[]string{"@nowhere.result"}, nil, "no such file"},
		{[]string{"web", "!web"}, nil, "leaves no host"},
		{[]string{"web,,db-01"}, nil, "empty item"},
	} {
		got, err := inv.Select(c.limits, path)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.limits, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v: %v %v, want %v", c.limits, got, err, c.want)
		}
	}
	if _, err := inv.Select([]string{"nope"}, path); !errors.Is(err, ErrNoMatch) {
		t.Errorf("a -limit matching nothing is %v, not ErrNoMatch", err)
	}
}

func TestResultMerge(t *testing.T) {
	prev := &Result{BundleDigest: "sha256:a", Hosts: []HostResult{{Alias: "a", Outcome: Failed}, {Alias: "b", Outcome: NotStarted}, {Alias: "c", Outcome: Applied}}}
	now := &Result{BundleDigest: "sha256:a", Hosts: []HostResult{{Alias: "a", Outcome: Applied}}}
	now.Merge(prev, []string{"a", "b", "c"})
	var got []string
	for _, h := range now.Hosts {
		got = append(got, h.Alias+"="+string(h.Outcome))
	}
	if want := []string{"a=applied", "b=not-started", "c=applied"}; !reflect.DeepEqual(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
	other := &Result{BundleDigest: "sha256:b", Hosts: []HostResult{{Alias: "a", Outcome: Applied}}}
	other.Merge(prev, []string{"a", "b", "c"})
	if len(other.Hosts) != 1 {
		t.Errorf("another bundle's result was merged: %v", other.Hosts)
	}
}
