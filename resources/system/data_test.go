package system

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/resources"
)

const dataMountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
30 22 0:25 / /srv/my\040data rw,nosuid,nodev shared:14 - tmpfs tmpfs rw,size=1024k,mode=755
31 30 8:1 /var/www /srv/my\040data ro,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
`

func TestMountsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(path, []byte(dataMountinfo), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &mountsData{mountinfo: path}
	v, err := d.Read(context.Background(), &resources.DataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ctyjson.Marshal(v, v.Type())
	want := `{"/":{"fstype":"ext4","mount_point":"/","options":["rw","relatime","errors=remount-ro"],"root":"/","source":"/dev/sda1"},` +
		`"/proc":{"fstype":"proc","mount_point":"/proc","options":["rw","nosuid","nodev","noexec","relatime"],"root":"/","source":"proc"},` +
		`"/srv/my data":{"fstype":"ext4","mount_point":"/srv/my data","options":["ro","relatime","errors=remount-ro"],"root":"/var/www","source":"/dev/sda1"}}`
	if string(b) != want {
		t.Errorf("answer\n%s\nwant (the bind mount over the tmpfs is what is visible)\n%s", b, want)
	}

	v, err = d.Read(context.Background(), &resources.DataRequest{Args: map[string]cty.Value{"fstype": cty.ListVal([]cty.Value{cty.StringVal("proc"), cty.StringVal("xfs")})}})
	if err != nil || v.LengthInt() != 1 || !v.HasIndex(cty.StringVal("/proc")).True() {
		t.Errorf("fstype = [proc, xfs]: %v %v", v, err)
	}
	v, err = d.Read(context.Background(), &resources.DataRequest{Args: map[string]cty.Value{"fstype": cty.ListVal([]cty.Value{cty.StringVal("nfs")})}})
	if err != nil || !v.Type().IsMapType() || v.LengthInt() != 0 {
		t.Errorf("no mount of the type: %v %v", v, err)
	}

	if err := os.WriteFile(path, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(context.Background(), &resources.DataRequest{}); err == nil || !strings.Contains(err.Error(), "not a mountinfo line") {
		t.Errorf("a garbled table: %v", err)
	}
}

// The process's own mount table reads.
func TestMountsDataOfThisHost(t *testing.T) {
	v, err := MountsData().Read(context.Background(), &resources.DataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !v.HasIndex(cty.StringVal("/")).True() {
		t.Errorf("no / in %d mounts", v.LengthInt())
	}
}
