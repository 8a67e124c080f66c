package system

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// swapFileType is the built-in "swap_file" type, Chef's: a file of swap
// space, made (its space allocated, then mkswap), turned on (swapon) and
// optionally listed in /etc/fstab for the next boot; or turned off and
// deleted. Reading is files only: /proc/swaps, the file's stat and its
// swap signature, fstab.
type swapFileType struct {
	schema *resources.Schema
	file   resources.Type
	// swaps and fstab are the files read (/proc/swaps, /etc/fstab): tests
	// use others.
	swaps, fstab string
	run          toolRunner
}

// SwapFileType returns the built-in "swap_file" resource type.
func SwapFileType() resources.Type { return newSwapFileType("/proc/swaps", "/etc/fstab") }

const mib = 1 << 20

func newSwapFileType(swaps, fstab string) *swapFileType {
	return &swapFileType{swaps: swaps, fstab: fstab, file: files.FileType(), run: runHostTool, schema: &resources.Schema{
		Name:        "swap_file",
		Description: "Manages a swap file: made, turned on, and listed in /etc/fstab, or turned off and deleted.",
		Properties: []*resources.Property{
			{Name: "path", Type: cty.String, NameProperty: true, Identity: true, Required: true, Namespace: resources.NamespacePath,
				Normalize: props.NormalizePath, Validate: validateSwapPath,
				Description: "Absolute path of the swap file; defaults to the block label."},
			{Name: "size", Type: cty.Number, Validate: validateSwapSize,
				Description: "Its size in MiB (Chef's MB); required to make it."},
			{Name: "persist", Type: cty.Bool, Default: cty.False,
				Description: "List it in /etc/fstab, so that it is on after a reboot (true), or take it out (false)."},
			{Name: "timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(600), Validate: props.ValidateTimeout,
				Description: "Seconds that allocating the file and mkswap may take."},
			{Name: "active", Type: cty.Bool, NonState: true, Validate: mountReadOnly("active", "whether the kernel swaps to it"),
				Description: "Whether the kernel swaps to it (listed in /proc/swaps): read by toque; a recipe does not set it."},
			{Name: "fstab", Type: cty.String, NonState: true, Content: true, Validate: mountReadOnly("fstab", "the lines of /etc/fstab for it"),
				Description: "Its lines in /etc/fstab: read by toque, and shown as a diff; a recipe does not set it."},
		},
		Actions:       []string{"create", "remove"},
		DefaultAction: "create",
	}}
}

func (t *swapFileType) Schema() *resources.Schema { return t.schema }

func validateSwapPath(v cty.Value) error {
	if err := props.ValidateAbsPath(v); err != nil {
		return err
	}
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	return checkFstabText("path", v.AsString())
}

func validateSwapSize(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
		return nil
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() || bf.Sign() <= 0 {
		return fmt.Errorf("size must be a whole number of MiB, 1 or more, not %s", bf.Text('g', -1))
	}
	if n, _ := bf.Int64(); n > 1<<30 {
		return fmt.Errorf("size %d MiB is more than a PiB", n)
	}
	return nil
}

// swapSignature is what mkswap writes at the end of the first page.
const swapSignature = "SWAPSPACE2"

// Load reads whether the kernel swaps to the file (/proc/swaps), the
// file (its kind, size, mode, holes, swap signature), the file system it
// is on, and its fstab entries. Values: size (MiB), active, persist,
// fstab.
func (t *swapFileType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	path := r.String("path")
	if err := props.CtxErr(ctx, "reading swap file "+path); err != nil {
		return nil, err
	}
	st := resources.Absent()
	st.Extra = map[string]string{}
	active, err := swapActive(t.swaps, path)
	if err != nil {
		return nil, err
	}
	st.Values["active"] = cty.BoolVal(active)
	if err := readSwapFile(path, st); err != nil {
		return nil, err
	}
	st.Exists = st.Exists || active
	tab, err := readFstab(t.fstab)
	if err != nil {
		return nil, err
	}
	if !tab.text {
		st.Extra["fstab"] = "not text"
	}
	idx := tab.find(swapEntry(path))
	st.Values["persist"] = cty.BoolVal(len(idx) > 0)
	if len(idx) > 0 {
		st.Values["fstab"] = cty.StringVal(tab.linesAt(idx))
	}
	return st, nil
}

// swapEntry matches path's swap entries of fstab.
func swapEntry(path string) func(*fstabEntry) bool {
	return func(e *fstabEntry) bool { return e.device == path && e.fstype == "swap" }
}

// swapLine is the entry toque writes, Chef's.
func swapLine(path string) string {
	return fstabEscape(path) + " swap swap defaults 0 0"
}

// swapActive reports whether /proc/swaps lists path.
func swapActive(swaps, path string) (bool, error) {
	data, err := os.ReadFile(swaps)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the active swap spaces: %w", err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); i > 0 && len(f) > 0 && fstabUnescape(f[0]) == path {
			return true, nil
		}
	}
	return false, nil
}

// readSwapFile records what is at path: Extra kind, mode, holes,
// signature and the file system's (fs: a kind swap cannot use, or "");
// Values size.
func readSwapFile(path string, st *resources.State) error {
	var s unix.Stat_t
	err := unix.Lstat(path, &s)
	if errors.Is(err, unix.ENOENT) {
		st.Extra["kind"] = "absent"
		var sfs unix.Statfs_t
		if err := unix.Statfs(filepath.Dir(path), &sfs); err == nil {
			st.Extra["fs"] = swaplessFS(sfs.Type)
		} else {
			st.Extra["parent"] = "missing"
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	st.Exists = true
	if s.Mode&unix.S_IFMT != unix.S_IFREG {
		st.Extra["kind"] = "not a regular file"
		return nil
	}
	st.Extra["kind"] = "file"
	st.Extra["mode"] = fmt.Sprintf("%04o", s.Mode&0o7777)
	if s.Size%mib == 0 {
		st.Values["size"] = cty.NumberIntVal(s.Size / mib)
	} else {
		st.Values["size"] = cty.NumberFloatVal(float64(s.Size) / mib)
	}
	if s.Blocks*512 < s.Size {
		st.Extra["holes"] = "true"
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	page := os.Getpagesize()
	buf := make([]byte, len(swapSignature))
	if n, _ := f.ReadAt(buf, int64(page-len(swapSignature))); n == len(buf) && string(buf) == swapSignature {
		st.Extra["signature"] = "swap"
	} else {
		st.Extra["signature"] = "none"
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &sfs); err == nil {
		st.Extra["fs"] = swaplessFS(sfs.Type)
	}
	return nil
}

// swaplessFS names a file system the kernel cannot swap to a file of
// (tmpfs and ramfs are memory; overlayfs has no blocks; btrfs needs a
// file with copy-on-write off), or "".
func swaplessFS(magic int64) string {
	switch magic {
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.RAMFS_MAGIC:
		return "ramfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	}
	return ""
}

// Plan: create makes the file when it does not exist (or, a swap file of
// another size, makes it anew), turns it on, and adds or removes its
// fstab entry as persist says; remove turns it off, deletes it and its
// entry.
func (t *swapFileType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	path := desired.String("path")
	var step *resources.Step
	var err error
	switch action {
	case "create":
		step, err = t.planCreate(desired, current)
	case "remove":
		step, err = t.planRemove(desired, current)
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
	if err != nil {
		return nil, err
	}
	return needsRoot(step, "managing swap file "+path)
}

func (t *swapFileType) planCreate(desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	path := desired.String("path")
	kind := current.Extra["kind"]
	var groups, why []string
	var changes []resources.Change
	active := boolValue(current.Values["active"])
	switch {
	case kind == "not a regular file":
		return nil, fmt.Errorf("%s exists and is not a regular file: a swap file is one", path)
	case kind == "file" && current.Extra["signature"] != "swap":
		return nil, fmt.Errorf("%s exists and is not a swap file (it has no swap signature): toque does not overwrite a file it did not make; delete it, or choose another path", path)
	case current.Extra["fs"] != "":
		return nil, fmt.Errorf("%s is on %s, whose files the kernel cannot swap to: put it on another file system", path, current.Extra["fs"])
	}
	if kind == "absent" || (desired.IsSet("size") && !sameNumber(current.Values["size"], desired.Values["size"])) {
		if !desired.IsSet("size") {
			return nil, &resources.PropertyError{Property: "size", Err: fmt.Errorf("create needs a size to make %s", path)}
		}
		if active {
			groups, why = append(groups, "swapoff"), append(why, "swapoff first (its pages move back to memory)")
		}
		groups = append(groups, "allocate", "mkswap", "swapon")
		before := cty.NilVal
		if kind == "file" {
			before = current.Values["size"]
			why = append(why, fmt.Sprintf("makes it anew at %s MiB, then mkswap and swapon", desired.Values["size"].AsBigFloat().Text('f', -1)))
		} else {
			why = append(why, fmt.Sprintf("makes a file of %s MiB (allocated, mode 0600), then mkswap and swapon", desired.Values["size"].AsBigFloat().Text('f', -1)))
		}
		changes = append(changes, resources.Change{Property: "size", Before: before, After: desired.Values["size"]})
		if !active {
			changes = append(changes, resources.Change{Property: "active", Before: current.Values["active"], After: cty.True})
		}
	} else {
		if current.Extra["holes"] == "true" {
			return nil, fmt.Errorf("%s has holes (it is sparse), and swapon refuses it: delete it, and toque makes it anew", path)
		}
		if m := current.Extra["mode"]; m != "0600" {
			groups, why = append(groups, "chmod"), append(why, "its mode is "+m+": set to 0600, so that only root reads what is swapped")
		}
		if !active {
			groups, why = append(groups, "swapon"), append(why, "not on: swapon")
			changes = append(changes, resources.Change{Property: "active", Before: current.Values["active"], After: cty.True})
		}
	}
	persisted := boolValue(current.Values["persist"])
	if want := desired.Get("persist").True(); want != persisted {
		if current.Extra["fstab"] == "not text" {
			return nil, fmt.Errorf("%s is not UTF-8 text in normal form (NFC): toque could not keep its other lines byte for byte; edit it by hand", t.fstab)
		}
		after := ""
		if want {
			after = swapLine(path) + "\n"
			why = append(why, "adds it to "+t.fstab)
		} else {
			why = append(why, "takes it out of "+t.fstab)
		}
		groups = append(groups, "fstab")
		changes = append(changes, resources.Change{Property: "persist", Before: current.Values["persist"], After: cty.BoolVal(want)},
			resources.Change{Property: "fstab", Before: current.Values["fstab"], After: cty.StringVal(after)})
	}
	if len(groups) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: "a swap file of its size, on"}, nil
	}
	step := &resources.Step{Kind: resources.Update, Reason: strings.Join(why, "; "), Changes: changes, Groups: groups}
	if !current.Exists {
		step.Kind = resources.Create
	}
	if current.Extra["parent"] == "missing" {
		step.Needs = append(step.Needs, resources.Need{Namespace: resources.NamespacePath, Value: props.ParentDir(path), What: "directory"})
	}
	return step, nil
}

func (t *swapFileType) planRemove(desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	path := desired.String("path")
	var groups, why []string
	if boolValue(current.Values["active"]) {
		groups, why = append(groups, "swapoff"), append(why, "swapoff (its pages move back to memory)")
	}
	switch current.Extra["kind"] {
	case "not a regular file":
		return nil, fmt.Errorf("%s is not a regular file: toque deletes only a swap file", path)
	case "file":
		if current.Extra["signature"] != "swap" {
			return nil, fmt.Errorf("%s is not a swap file (it has no swap signature): toque deletes only a swap file", path)
		}
		groups, why = append(groups, "delete"), append(why, "deletes it")
	}
	if boolValue(current.Values["persist"]) {
		if current.Extra["fstab"] == "not text" {
			return nil, fmt.Errorf("%s is not UTF-8 text in normal form (NFC): toque could not keep its other lines byte for byte; edit it by hand", t.fstab)
		}
		groups, why = append(groups, "fstab"), append(why, "takes it out of "+t.fstab)
	}
	if len(groups) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: "no such swap file"}, nil
	}
	return &resources.Step{Kind: resources.Delete, Reason: strings.Join(why, "; "), Groups: groups}, nil
}

// sameNumber compares two known numbers.
func sameNumber(a, b cty.Value) bool {
	if a == cty.NilVal || b == cty.NilVal || !a.IsKnown() || !b.IsKnown() || a.IsNull() || b.IsNull() || a.Type() != cty.Number || b.Type() != cty.Number {
		return false
	}
	return a.AsBigFloat().Cmp(b.AsBigFloat()) == 0
}

// Predict is the state the step leaves.
func (t *swapFileType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	st := current.Clone()
	if st.Extra == nil {
		st.Extra = map[string]string{}
	}
	for _, g := range step.Groups {
		switch g {
		case "swapoff":
			st.Values["active"] = cty.False
		case "swapon":
			st.Values["active"] = cty.True
		case "allocate":
			st.Extra["kind"], st.Extra["mode"], st.Extra["signature"] = "file", "0600", "swap"
			st.Values["size"] = desired.Values["size"]
			delete(st.Extra, "holes")
			delete(st.Extra, "parent")
		case "chmod":
			st.Extra["mode"] = "0600"
		case "delete":
			st.Extra = map[string]string{"kind": "absent"}
			delete(st.Values, "size")
		case "fstab":
			want := step.Kind != resources.Delete && desired.Get("persist").True()
			st.Values["persist"] = cty.BoolVal(want)
			delete(st.Values, "fstab")
			if want {
				st.Values["fstab"] = cty.StringVal(swapLine(desired.String("path")) + "\n")
			}
		}
	}
	st.Exists = st.Extra["kind"] == "file" || boolValue(st.Values["active"])
	return st, nil
}

// Steps carry out the groups in order; swapon and swapoff are read back
// from /proc/swaps.
func (t *swapFileType) Steps() resources.Steps { return resources.Same(t.converge) }

func (t *swapFileType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	path := desired.String("path")
	ctx, cancel := context.WithTimeout(ctx, props.Seconds(desired.Get("timeout")))
	defer cancel()
	for _, g := range step.Groups {
		var err error
		switch g {
		case "swapoff", "swapon":
			err = t.swap(ctx, env, path, g == "swapon")
		case "allocate":
			err = allocateSwap(ctx, path, int64(desired.Int("size"))*mib)
		case "mkswap":
			err = t.run(ctx, env, "mkswap", path)
		case "chmod":
			err = os.Chmod(path, 0o600)
		case "delete":
			err = files.Remove(path)
		case "fstab":
			line := ""
			if step.Kind != resources.Delete && desired.Get("persist").True() {
				line = swapLine(path)
			}
			err = editFile(ctx, env, t.file, t.fstab, nil, func(old string, _ bool) (string, bool, error) {
				return parseFstab(old).withEntry(swapEntry(path), line), false, nil
			})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// swap runs swapon or swapoff, and reads /proc/swaps back.
func (t *swapFileType) swap(ctx context.Context, env *resources.Env, path string, on bool) error {
	tool := map[bool]string{true: "swapon", false: "swapoff"}[on]
	if err := t.run(ctx, env, tool, path); err != nil {
		return err
	}
	active, err := swapActive(t.swaps, path)
	if err != nil {
		return err
	}
	if active != on {
		return fmt.Errorf("%s %s exited 0, yet %s lists it as %s", tool, path, t.swaps, map[bool]string{true: "on", false: "off"}[active])
	}
	return nil
}

// allocateSwap makes the file: removed first when it exists (a swap
// file of another size, turned off), then created new, mode 0600, with
// all its blocks allocated (fallocate, or zeros written where the file
// system cannot allocate): swapon refuses a file with holes.
func allocateSwap(ctx context.Context, path string, size int64) (err error) {
	if err := files.Remove(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("making swap file %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("making swap file %s: %w", path, err)
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = writeZeros(ctx, f, size)
	}
	if err != nil {
		return fmt.Errorf("allocating %d MiB for swap file %s: %w", size/mib, path, err)
	}
	return f.Sync()
}

// writeZeros fills f with size zero bytes, a MiB at a time, until ctx
// ends.
func writeZeros(ctx context.Context, f *os.File, size int64) error {
	chunk := bytes.Repeat([]byte{0}, mib)
	start := time.Now()
	for off := int64(0); off < size; off += mib {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("after %s: %w", time.Since(start).Round(time.Second), err)
		}
		n := min(int64(mib), size-off)
		if _, err := f.WriteAt(chunk[:n], off); err != nil {
			return err
		}
	}
	return nil
}
