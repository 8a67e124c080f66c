package host

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestDetect(t *testing.T) {
	f, err := Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.Hostname()
	if f.Hostname == "" || f.Hostname != want {
		t.Errorf("hostname = %q, want %q", f.Hostname, want)
	}
	if f.FQDN == "" {
		t.Error("fqdn is empty; it falls back to the hostname")
	}
	if f.OS != runtime.GOOS || f.Arch != runtime.GOARCH || f.CPUs != runtime.NumCPU() {
		t.Errorf("os/arch/cpus = %s/%s/%d", f.OS, f.Arch, f.CPUs)
	}
	if runtime.GOOS == "linux" && f.Kernel == "" {
		t.Error("kernel release is empty on Linux")
	}
}

func TestValueHasAllAttributes(t *testing.T) {
	f, err := Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v := f.Value()
	for _, name := range []string{"hostname", "fqdn", "os", "platform", "platform_version", "platform_family", "arch", "kernel", "cpus", "machine_id"} {
		if !v.Type().HasAttribute(name) {
			t.Errorf("Value has no attribute %q", name)
		}
	}
	if !v.Type().Equals(Type()) {
		t.Errorf("Value's type %#v is not Type()", v.Type())
	}
	if u := Unknown(); u.IsKnown() || !u.Type().Equals(Type()) {
		t.Errorf("Unknown() = %#v", u)
	}
	if got := v.GetAttr("cpus"); got.Type() != cty.Number || !got.Equals(cty.NumberIntVal(int64(f.CPUs))).True() {
		t.Errorf("cpus = %#v", got)
	}
	if got := v.GetAttr("hostname").AsString(); got != f.Hostname {
		t.Errorf("hostname = %q", got)
	}
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDetectFromFiles(t *testing.T) {
	hn, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name                      string
		files                     map[string]string
		platform, version, family string
		machineID, fqdn           string
	}{
		{
			name: "ubuntu",
			files: map[string]string{
				"etc/os-release": "NAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"22.04\"\n",
				"etc/machine-id": "abc123\n",
				"etc/hosts":      "127.0.0.1 localhost\n10.0.0.5 " + hn + ".example.com " + hn + " # web\n",
			},
			platform: "ubuntu", version: "22.04", family: "debian",
			machineID: "abc123", fqdn: hn + ".example.com",
		},
		{
			name: "rocky from usr/lib, dbus machine id",
			files: map[string]string{
				"usr/lib/os-release":      "ID='rocky'\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.3\"\n",
				"var/lib/dbus/machine-id": "dbus-id\n",
			},
			platform: "rocky", version: "9.3", family: "rhel", machineID: "dbus-id",
		},
		{
			name:     "debian without ID_LIKE",
			files:    map[string]string{"etc/os-release": "# comment\nID=debian\nVERSION_ID=\"12\"\n"},
			platform: "debian", version: "12", family: "debian",
		},
		// Ohai's names: the family of the platform first, not ID_LIKE's
		// first word (RHEL and Amazon Linux say ID_LIKE=fedora).
		{name: "rhel", files: map[string]string{"etc/os-release": "ID=\"rhel\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"9.3\"\n"},
			platform: "redhat", version: "9.3", family: "rhel"},
		{name: "amazon linux 2023", files: map[string]string{"etc/os-release": "ID=\"amzn\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"2023\"\n"},
			platform: "amazon", version: "2023", family: "amazon"},
		{name: "fedora", files: map[string]string{"etc/os-release": "ID=fedora\nVERSION_ID=39\n"},
			platform: "fedora", version: "39", family: "fedora"},
		{name: "almalinux", files: map[string]string{"etc/os-release": "ID=\"almalinux\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.4\"\n"},
			platform: "almalinux", version: "9.4", family: "rhel"},
		{name: "centos stream", files: map[string]string{"etc/os-release": "ID=\"centos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"9\"\n"},
			platform: "centos", version: "9", family: "rhel"},
		{name: "oracle linux", files: map[string]string{"etc/os-release": "ID=\"ol\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"9.3\"\n"},
			platform: "oracle", version: "9.3", family: "rhel"},
		{name: "linux mint", files: map[string]string{"etc/os-release": "ID=linuxmint\nID_LIKE=\"ubuntu debian\"\nVERSION_ID=\"21.2\"\n"},
			platform: "linuxmint", version: "21.2", family: "debian"},
		{name: "unknown, derived from ubuntu", files: map[string]string{"etc/os-release": "ID=neon\nID_LIKE=\"ubuntu debian\"\n"},
			platform: "neon", family: "debian"},
		{name: "unknown, nothing known", files: map[string]string{"etc/os-release": "ID=toqueos\nID_LIKE=\"toquebase\"\n"},
			platform: "toqueos", family: "toqueos"},
		{
			name:     "no os-release",
			files:    map[string]string{},
			platform: runtime.GOOS, family: runtime.GOOS,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for rel, c := range tc.files {
				write(t, root, rel, c)
			}
			f, err := detect(context.Background(), root)
			if err != nil {
				t.Fatal(err)
			}
			if f.Platform != tc.platform || f.PlatformVersion != tc.version || f.PlatformFamily != tc.family {
				t.Errorf("platform = %q %q %q, want %q %q %q", f.Platform, f.PlatformVersion, f.PlatformFamily, tc.platform, tc.version, tc.family)
			}
			if f.MachineID != tc.machineID {
				t.Errorf("machine id = %q, want %q", f.MachineID, tc.machineID)
			}
			if tc.fqdn != "" && f.FQDN != tc.fqdn {
				t.Errorf("fqdn = %q, want %q", f.FQDN, tc.fqdn)
			}
		})
	}
}

func TestLineage(t *testing.T) {
	root := t.TempDir()
	if got := lineage(root); got != nil {
		t.Errorf("no os-release: %q", got)
	}
	write(t, root, "etc/os-release", "ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n")
	if got := strings.Join(lineage(root), ","); got != "linuxmint,ubuntu,debian" {
		t.Errorf("lineage %q", got)
	}
}
