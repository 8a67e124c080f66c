package host

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
)

// Identity names the host a plan was made on.
type Identity struct {
	Hostname string `json:"hostname"`
	// MachineID is /etc/machine-id, empty when the host has none.
	MachineID string `json:"machine_id,omitempty"`
}

// Facts is what toque knows about the host.
type Facts struct {
	Identity
	FQDN string
	// OS is runtime.GOOS: "linux".
	OS string
	// Platform, PlatformVersion and PlatformFamily come from os-release,
	// named as Chef's Ohai names them, so that a recipe ported from Chef
	// reads the same values: Platform is ID ("ubuntu", "rocky"), but
	// "redhat" for rhel, "amazon" for amzn, "oracle" for ol (platformName);
	// PlatformVersion is VERSION_ID ("22.04", "9.3"); PlatformFamily is
	// Ohai's family of the platform — debian, rhel, fedora, amazon, suse,
	// arch, alpine, gentoo… (platformFamily) — or, for a distribution Ohai
	// does not know, the family of the first word of ID_LIKE that has one,
	// else ID.
	Platform        string
	PlatformVersion string
	PlatformFamily  string
	// Arch is runtime.GOARCH: "amd64".
	Arch string
	// Kernel is the kernel release (uname -r).
	Kernel string
	CPUs   int
}

// fqdnTimeout bounds the DNS lookup of the fully qualified name, so that a
// host without a reachable resolver does not stall a plan.
const fqdnTimeout = 200 * time.Millisecond

// Detect reads the host's facts. Only the hostname is required: any other
// fact that cannot be read is left empty.
func Detect(ctx context.Context) (*Facts, error) {
	return detect(ctx, "/")
}

// detect reads the facts with files under root (tests point it at a temp
// directory).
func detect(ctx context.Context, root string) (*Facts, error) {
	hn, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("reading the hostname: %w", err)
	}
	f := &Facts{
		Identity: Identity{Hostname: hn, MachineID: machineID(root)},
		OS:       runtime.GOOS,
		Arch:     runtime.GOARCH,
		Kernel:   kernelRelease(),
		CPUs:     runtime.NumCPU(),
	}
	f.FQDN = fqdn(ctx, root, hn)
	osr := osRelease(root)
	f.Platform = platformName(osr["ID"])
	f.PlatformVersion = osr["VERSION_ID"]
	f.PlatformFamily = platformFamily(osr["ID"], strings.Fields(osr["ID_LIKE"]))
	if f.Platform == "" {
		f.Platform = f.OS
		f.PlatformFamily = f.OS
	}
	return f, nil
}

// ohaiPlatforms are the os-release IDs Ohai renames.
var ohaiPlatforms = map[string]string{
	"rhel": "redhat", "amzn": "amazon", "ol": "oracle", "alinux": "alibabalinux", "archarm": "arch",
	"cumulus-linux": "cumulus", "opensuse-leap": "opensuseleap", "sles": "suse", "sles_sap": "suse",
	"xenenterprise": "xenserver",
}

// ohaiFamilies maps Ohai's platform names to their family.
var ohaiFamilies = map[string]string{
	"debian": "debian", "ubuntu": "debian", "linuxmint": "debian", "raspbian": "debian", "cumulus": "debian",
	"kali": "debian", "pop": "debian",
	"redhat": "rhel", "centos": "rhel", "rocky": "rhel", "almalinux": "rhel", "oracle": "rhel",
	"scientific": "rhel", "cloudlinux": "rhel", "alibabalinux": "rhel", "xenserver": "rhel", "xcp-ng": "rhel",
	"virtuozzo": "rhel", "clearos": "rhel", "eurolinux": "rhel", "circle": "rhel", "navylinux": "rhel",
	"amazon": "amazon",
	"fedora": "fedora", "arista_eos": "fedora",
	"suse": "suse", "opensuse": "suse", "opensuseleap": "suse", "opensuse-tumbleweed": "suse", "sled": "suse",
	"arch": "arch", "manjaro": "arch", "alpine": "alpine", "gentoo": "gentoo", "clearlinux": "clearlinux",
	"slackware": "slackware", "exherbo": "exherbo",
}

// platformName is Ohai's name for the os-release ID: the ID, lower-case,
// but for the few Ohai renames (rhel is "redhat", amzn "amazon").
func platformName(id string) string {
	id = strings.ToLower(id)
	if p, ok := ohaiPlatforms[id]; ok {
		return p
	}
	return id
}

// platformFamily is Ohai's platform_family: the family of the platform
// (Amazon Linux is "amazon", not "fedora", though its ID_LIKE says
// fedora; RHEL is "rhel", though its ID_LIKE says fedora), else that of
// the first word of ID_LIKE Ohai knows, else the ID itself.
func platformFamily(id string, like []string) string {
	if f, ok := ohaiFamilies[platformName(id)]; ok {
		return f
	}
	for _, l := range like {
		if f, ok := ohaiFamilies[platformName(l)]; ok {
			return f
		}
	}
	return platformName(id)
}

// Type is the cty object type of Value.
func Type() cty.Type {
	return cty.Object(map[string]cty.Type{
		"hostname":         cty.String,
		"machine_id":       cty.String,
		"fqdn":             cty.String,
		"os":               cty.String,
		"platform":         cty.String,
		"platform_version": cty.String,
		"platform_family":  cty.String,
		"arch":             cty.String,
		"kernel":           cty.String,
		"cpus":             cty.Number,
	})
}

// Unknown is the host object when the host must not be read (validate):
// every fact is unknown, but a reference to a fact that does not exist is
// still an error.
func Unknown() cty.Value { return cty.UnknownVal(Type()) }

// Value is the facts as the cty object recipes read as host.
func (f *Facts) Value() cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"hostname":         cty.StringVal(f.Hostname),
		"machine_id":       cty.StringVal(f.MachineID),
		"fqdn":             cty.StringVal(f.FQDN),
		"os":               cty.StringVal(f.OS),
		"platform":         cty.StringVal(f.Platform),
		"platform_version": cty.StringVal(f.PlatformVersion),
		"platform_family":  cty.StringVal(f.PlatformFamily),
		"arch":             cty.StringVal(f.Arch),
		"kernel":           cty.StringVal(f.Kernel),
		"cpus":             cty.NumberIntVal(int64(f.CPUs)),
	})
}

func machineID(root string) string {
	for _, p := range []string{"etc/machine-id", "var/lib/dbus/machine-id"} {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			continue
		}
		if id := strings.TrimSpace(string(b)); id != "" {
			return id
		}
	}
	return ""
}

// fqdn finds the host's fully qualified name like `hostname -f`: the first
// dotted name on the /etc/hosts line that lists the hostname, else the
// canonical name from DNS (bounded by fqdnTimeout), else the hostname.
func fqdn(ctx context.Context, root, hostname string) string {
	if strings.Contains(hostname, ".") {
		return hostname
	}
	if n := fqdnFromHosts(root, hostname); n != "" {
		return n
	}
	ctx, cancel := context.WithTimeout(ctx, fqdnTimeout)
	defer cancel()
	if cname, err := net.DefaultResolver.LookupCNAME(ctx, hostname); err == nil {
		cname = strings.TrimSuffix(cname, ".")
		if strings.Contains(cname, ".") && strings.HasPrefix(cname, hostname+".") {
			return cname
		}
	}
	return hostname
}

func fqdnFromHosts(root, hostname string) string {
	b, err := os.ReadFile(filepath.Join(root, "etc/hosts"))
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		names := fields[1:]
		listed := false
		for _, n := range names {
			if n == hostname || strings.HasPrefix(n, hostname+".") {
				listed = true
				break
			}
		}
		if !listed {
			continue
		}
		for _, n := range names {
			if strings.HasPrefix(n, hostname+".") {
				return strings.TrimSuffix(n, ".")
			}
		}
	}
	return ""
}

// Lineage is the host's distribution and those it derives from, as
// os-release says: ID, then each word of ID_LIKE ("linuxmint", "ubuntu",
// "debian"); nil when os-release cannot be read. Resource types choose
// their tools from it (apt and dpkg for anything in the debian lineage).
func Lineage() []string { return lineage("/") }

func lineage(root string) []string {
	osr := osRelease(root)
	var out []string
	if id := osr["ID"]; id != "" {
		out = append(out, id)
	}
	return append(out, strings.Fields(osr["ID_LIKE"])...)
}

// osRelease parses os-release(5): KEY=value lines, values optionally quoted.
func osRelease(root string) map[string]string {
	out := map[string]string{}
	var b []byte
	for _, p := range []string{"etc/os-release", "usr/lib/os-release"} {
		var err error
		if b, err = os.ReadFile(filepath.Join(root, p)); err == nil {
			break
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		out[strings.TrimSpace(k)] = unquote(strings.TrimSpace(v))
	}
	return out
}

func unquote(v string) string {
	if len(v) >= 2 {
		switch {
		case v[0] == '"' && v[len(v)-1] == '"':
			if s, err := strconv.Unquote(v); err == nil {
				return s
			}
			return v[1 : len(v)-1]
		case v[0] == '\'' && v[len(v)-1] == '\'':
			return v[1 : len(v)-1]
		}
	}
	return v
}
