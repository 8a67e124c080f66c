package packages

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
)

// A throwaway package database: dpkg-query reads the status file of
// DPKG_ADMINDIR, never the machine's.
const dataStatus = `Package: toque-a
Status: install ok installed
Architecture: amd64
Version: 1.0-1
Maintainer: t <t@example.com>
Description: a

Package: toque-held
Status: hold ok installed
Architecture: all
Version: 2:3.1
Maintainer: t <t@example.com>
Description: held

Package: toque-gone
Status: deinstall ok config-files
Architecture: amd64
Version: 0.9
Maintainer: t <t@example.com>
Description: removed, configuration left

Package: toque-half
Status: install reinstreq half-installed
Architecture: amd64
Version: 0.1
Maintainer: t <t@example.com>
Description: broken

Package: libtoque
Status: install ok installed
Architecture: amd64
Multi-Arch: same
Version: 5
Maintainer: t <t@example.com>
Description: amd64

Package: libtoque
Status: install ok installed
Architecture: i386
Multi-Arch: same
Version: 5
Maintainer: t <t@example.com>
Description: i386
`

func dataProvider(t *testing.T) *aptProvider {
	t.Helper()
	testenv.MustHave(t, testenv.DpkgDev)
	admin := t.TempDir()
	for name, content := range map[string]string{"status": dataStatus, "available": "", "arch": "amd64\ni386\n"} {
		if err := os.WriteFile(filepath.Join(admin, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(admin, "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &aptProvider{env: map[string]string{"DPKG_ADMINDIR": admin}, readTimeout: time.Minute}
}

func TestPackagesData(t *testing.T) {
	d := &packagesData{provider: dataProvider(t)}
	v, err := d.Read(context.Background(), &resources.DataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ctyjson.Marshal(v, v.Type())
	want := `{"libtoque:amd64":{"arch":"amd64","held":false,"name":"libtoque","version":"5"},"libtoque:i386":{"arch":"i386","held":false,"name":"libtoque","version":"5"},` +
		`"toque-a":{"arch":"amd64","held":false,"name":"toque-a","version":"1.0-1"},"toque-held":{"arch":"all","held":true,"name":"toque-held","version":"2:3.1"}}`
	if string(b) != want {
		t.Errorf("answer\n%s\nwant (installed only; NAME:ARCH for a package of two architectures)\n%s", b, want)
	}

	names := cty.ListVal([]cty.Value{cty.StringVal("toque-a"), cty.StringVal("toque-gone"), cty.StringVal("toque-nowhere")})
	v, err = d.Read(context.Background(), &resources.DataRequest{Args: map[string]cty.Value{"names": names}})
	if err != nil {
		t.Fatal(err)
	}
	if v.LengthInt() != 1 || !v.HasIndex(cty.StringVal("toque-a")).True() {
		t.Errorf("names: %#v", v)
	}
	if got := d.Describe(map[string]cty.Value{"names": names}); !strings.Contains(got, "toque-a, toque-gone, toque-nowhere") {
		t.Errorf("Describe = %q", got)
	}
	if err := packagesSchema.Property("names").Validate(cty.ListVal([]cty.Value{cty.StringVal("-rf")})); err == nil {
		t.Error("a name that reads as an option is taken")
	}
}

// A provider that cannot list what is installed says so.
func TestPackagesDataNeedsALister(t *testing.T) {
	_, err := (&packagesData{provider: noLister{}}).Read(context.Background(), &resources.DataRequest{})
	if err == nil || !strings.Contains(err.Error(), "the fake package provider cannot list the installed packages") {
		t.Errorf("got %v", err)
	}
}

type noLister struct{ PackageProvider }

func (noLister) Name() string { return "fake" }
