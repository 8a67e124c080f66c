package system

import (
	"context"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// MountsData is data "mounts": the mount table, as the mount type reads it
// (/proc/self/mountinfo, mountinfo.go).
//
//	data "mounts" "all" {}   # data.mounts.all.result["/srv"].fstype
//
// It answers a map by mount point of the mount visible there (the last
// one mounted over it): source, fstype, options (as mount(8) prints them:
// the mount's own, then its file system's), and root, the directory of
// the file system mounted ("/" but for a bind mount). fstype = […] keeps
// the mounts of those file system types only.
func MountsData() resources.DataSource { return &mountsData{mountinfo: "/proc/self/mountinfo"} }

type mountsData struct{ mountinfo string }

var mountsSchema = &resources.Schema{
	Name:        "mounts",
	Description: "The mount table (/proc/self/mountinfo), by mount point.",
	Properties: []*resources.Property{
		{Name: "fstype", Type: cty.List(cty.String),
			Description: "Keep only the mounts of these file system types (ext4, xfs, tmpfs…)."},
	},
}

var mountEntryType = cty.Object(map[string]cty.Type{
	"mount_point": cty.String, "source": cty.String, "fstype": cty.String,
	"options": cty.List(cty.String), "root": cty.String,
})

func (d *mountsData) Schema() *resources.Schema { return mountsSchema }

func (d *mountsData) Describe(args map[string]cty.Value) string {
	what := "reads the mount table (" + d.mountinfo + ")"
	if v, ok := args["fstype"]; ok && v.IsWhollyKnown() && !v.IsNull() {
		what += ", mounts of type " + strings.Join(props.StringList(v), ", ")
	}
	return what
}

func (d *mountsData) Read(ctx context.Context, req *resources.DataRequest) (cty.Value, error) {
	if err := props.CtxErr(ctx, "reading the mount table"); err != nil {
		return cty.NilVal, err
	}
	mounts, err := readMountinfo(d.mountinfo)
	if err != nil {
		return cty.NilVal, err
	}
	var only map[string]bool
	if v := req.Get(mountsSchema, "fstype"); v != cty.NilVal {
		only = map[string]bool{}
		for _, t := range props.StringList(v) {
			only[t] = true
		}
	}
	out := map[string]cty.Value{}
	for i := range mounts {
		m := &mounts[i]
		if only != nil && !only[m.fstype] {
			continue
		}
		var opts []cty.Value
		for _, o := range m.options() {
			opts = append(opts, resources.DataString(o))
		}
		list := cty.ListValEmpty(cty.String)
		if len(opts) > 0 {
			list = cty.ListVal(opts)
		}
		// Later lines are mounted over earlier ones: the last one wins.
		out[strings.ToValidUTF8(m.mountPoint, "\uFFFD")] = cty.ObjectVal(map[string]cty.Value{
			"mount_point": resources.DataString(m.mountPoint),
			"source":      resources.DataString(m.source),
			"fstype":      resources.DataString(m.fstype),
			"options":     list,
			"root":        resources.DataString(m.root),
		})
	}
	if len(out) == 0 {
		return cty.MapValEmpty(mountEntryType), nil
	}
	return cty.MapVal(out), nil
}
