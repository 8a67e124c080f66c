package packages

import (
	"context"
	"testing"

	"github.com/toquehq/toque/resources"
)

// multiArch serves two architectures of one package at one version, as a
// multi-arch install brings libc6:amd64 and libc6:i386.
type multiArch struct{}

func (multiArch) Archives(_ context.Context, _ *debCache, changes []PackageChange) ([]*debRef, error) {
	var out []*debRef
	for _, c := range changes {
		out = append(out, &debRef{Name: c.Name, Version: c.To, Arch: c.Arch, SHA256: c.Arch + "-digest"})
	}
	return out, nil
}
func (multiArch) manifestOf(context.Context, *debCache, *debRef) error { return nil }
func (multiArch) installsStaged() bool                                 { return true }
func (multiArch) memberContent(context.Context, *debCache, *debRef, string) ([]byte, error) {
	return nil, nil
}

// Each architecture's change takes its own .deb: one .deb for both would
// be staged twice (and the install fail), and its fact would hide the
// other's.
func TestReadArchivesMultiArch(t *testing.T) {
	typ := &packageType{cacheDir: t.TempDir}
	rs := []*resources.Resource{nil}
	states := []*resources.State{{Extra: map[string]string{}}}
	errs := []error{nil}
	changes := [][]PackageChange{{{Name: "libc6", To: "2.36", Arch: "amd64"}, {Name: "libc6", To: "2.36", Arch: "i386"}}}
	typ.readArchives(context.Background(), multiArch{}, rs, states, errs, []*PackageFile{nil}, changes)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	debs := debsOf(states[0])
	if len(debs) != 2 || debs[0].Arch != "amd64" || debs[1].Arch != "i386" {
		t.Fatalf("debs %+v", debs)
	}
	if states[0].Extra[xDeb+"libc6"] == "" || states[0].Extra[xDeb+"libc6:i386"] == "" {
		t.Errorf("facts %v", states[0].Extra)
	}
}
