package packages

import (
	"archive/tar"
	"reflect"
	"strings"
	"testing"
)

// TestPackageAccounts: the users and groups a package creates, from a
// sysusers.d file it ships or a maintainer script's adduser, useradd,
// addgroup or groupadd; a name the script computes is not read.
func TestPackageAccounts(t *testing.T) {
	got := sysusers([]byte("# comment\nu nginx - \"nginx user\" /var/lib/nginx\ng web -\nu svc 900:900 -\nu %b -\n"))
	want := []debAccount{{"user", "nginx", "sysusers.d"}, {"group", "nginx", "sysusers.d"}, {"group", "web", "sysusers.d"}, {"user", "svc", "sysusers.d"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sysusers: %+v", got)
	}
	script := `set -e
if ! getent passwd toque-svc >/dev/null; then
	adduser --system --group --no-create-home \
		--home /nonexistent toque-svc
fi
groupadd -r toque_web || true
useradd -r -g "$GROUP" "$USER"
addgroup --system toque-extra
`
	got = scriptAccounts("postinst", script)
	want = []debAccount{{"user", "toque-svc", "postinst"}, {"group", "toque-svc", "postinst"}, {"group", "toque_web", "postinst"}, {"group", "toque-extra", "postinst"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scripts: %+v", got)
	}
}

// A .deb's sysusers.d file is kept, so the accounts it declares are read
// (its content was dropped as neither conffile nor unit).
func TestDebSysusersKept(t *testing.T) {
	text := "u toqsvc - \"toque service\" /var/lib/toqsvc\n"
	h := &tar.Header{Name: "./usr/lib/sysusers.d/toqsvc.conf", Typeflag: tar.TypeReg, Size: int64(len(text)), Mode: 0o644}
	e, err := debEntryOf(h, strings.NewReader(text), nil)
	if err != nil || e == nil || !e.HasContent || string(e.ContentBytes) != text {
		t.Fatalf("entry %+v, %v", e, err)
	}
}
