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

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// sysctlType is the built-in "sysctl" type: a kernel parameter, set now
// with `sysctl -w` and persisted for the next boot in a file of
// /etc/sysctl.d that only toque writes (99-toque-KEY.conf). Reading it is
// a file read of /proc/sys: no process.
type sysctlType struct {
	schema *resources.Schema
	file   resources.Type
	// proc is where the kernel's parameters are read (/proc/sys), dir
	// where they are persisted (/etc/sysctl.d): tests use others.
	proc, dir string
}

// SysctlType returns the built-in "sysctl" resource type.
func SysctlType() resources.Type { return newSysctlType("/proc/sys", "/etc/sysctl.d") }

func newSysctlType(proc, dir string) *sysctlType {
	t := &sysctlType{proc: proc, dir: dir, file: files.FileType()}
	t.schema = &resources.Schema{
		Name:        "sysctl",
		Description: "Manages a kernel parameter: its value now and after a reboot.",
		Properties: []*resources.Property{
			{Name: "key", Type: cty.String, NameProperty: true, Identity: true, Required: true,
				Normalize: normalizeSysctlKey, Namespace: "sysctl",
				Description: "The parameter, dotted (net.ipv4.ip_forward) or as a path under /proc/sys (net/ipv4/ip_forward); defaults to the block label."},
			{Name: "value", Type: cty.String, LoadInput: true, Normalize: normalizeSysctlValue, Group: "value",
				Description: "The value; runs of spaces and tabs are one space (\"32768 60999\"). Required by apply."},
		},
		Actions:       []string{"apply", "remove"},
		DefaultAction: "apply",
	}
	return t
}

func (t *sysctlType) Schema() *resources.Schema { return t.schema }

// normalizeSysctlKey is the dotted form of a key (sysctl's: when a key
// is written as a path, its slashes are the separators and its dots part
// of a name, as in net/ipv4/conf/eth0.1/forwarding, which is dotted
// net.ipv4.conf.eth0/1.forwarding). It refuses what is no key.
func normalizeSysctlKey(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return v, nil
	}
	s := strings.TrimSpace(v.AsString())
	if s == "" || strings.ContainsAny(s, " \t\n\r\x00=") {
		return cty.NilVal, fmt.Errorf("sysctl key %q is not a key: no spaces, \"=\" or control characters", s)
	}
	if i := strings.IndexAny(s, "./"); i >= 0 && s[i] == '/' {
		s = swapDotsSlashes(strings.Trim(s, "/"))
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || part == ".." || strings.Trim(part, "/") == "" {
			return cty.NilVal, fmt.Errorf("sysctl key %q has an empty or \"..\" part", v.AsString())
		}
	}
	return cty.StringVal(s), nil
}

func swapDotsSlashes(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, s)
}

// procPath is a dotted key's file under proc.
func (t *sysctlType) procPath(key string) string {
	return filepath.Join(t.proc, swapDotsSlashes(key))
}

// confPath is the file that persists key: one name in the directory, a
// "/" of the key (an interface eth0.1's dotted eth0/1) written %2F, and
// so "%" written %25, so that two keys never share a file.
func (t *sysctlType) confPath(key string) string {
	name := strings.NewReplacer("%", "%25", "/", "%2F").Replace(key)
	return filepath.Join(t.dir, "99-toque-"+name+".conf")
}

// normalizeSysctlValue joins the words of a value with single spaces (the
// kernel prints some with tabs: "32768\t60999"). A newline is refused: a
// value is one line of /proc/sys and of the file that persists it.
func normalizeSysctlValue(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return v, nil
	}
	s := v.AsString()
	if strings.ContainsAny(s, "\n\r\x00") {
		return cty.NilVal, errors.New("a sysctl value must be one line: it has a newline")
	}
	if strings.TrimSpace(s) == "" {
		return cty.NilVal, errors.New("a sysctl value must not be empty")
	}
	return cty.StringVal(strings.Join(strings.Fields(s), " ")), nil
}

// confContent is the file that persists key = value.
func confContent(key, value string) string {
	return fmt.Sprintf("# Managed by toque (sysctl[%s]): changes made here are undone by its next apply.\n%s = %s\n", key, key, value)
}

// Load reads the parameter from /proc/sys: Values "value" is its value
// (normalised), Extra "writable" whether the kernel lets anyone write
// it, and "persisted" what the file of /etc/sysctl.d says: "absent",
// "same" (it holds the recipe's value: value is LoadInput) or "other".
// A key the kernel does not have is a state that does not exist.
func (t *sysctlType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	key := r.String("key")
	if err := props.CtxErr(ctx, "reading sysctl "+key); err != nil {
		return nil, err
	}
	st := resources.Absent()
	st.Extra = map[string]string{}
	conf, err := os.ReadFile(t.confPath(key))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st.Extra["persisted"] = "absent"
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", t.confPath(key), err)
	case r.IsSet("value") && string(conf) == confContent(key, r.String("value")):
		st.Extra["persisted"] = "same"
	default:
		st.Extra["persisted"] = "other"
	}
	path := t.procPath(key)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading sysctl %s: %w", key, err)
	}
	if fi.IsDir() {
		st.Extra["kind"] = "directory"
		return st, nil
	}
	st.Exists = true
	st.Extra["writable"] = fmt.Sprint(fi.Mode().Perm()&0o222 != 0)
	if fi.Mode().Perm()&0o444 == 0 {
		st.Extra["readable"] = "false"
		return st, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading sysctl %s (%s): %w", key, path, err)
	}
	st.Values["value"] = cty.StringVal(strings.Join(strings.Fields(string(bytes.ToValidUTF8(data, []byte("?")))), " "))
	return st, nil
}

// Plan: apply sets the value when it differs (group "value") and writes
// the file when it does not hold it (group "persist"); remove deletes the
// file, leaving the running value as it is (toque cannot know what it
// was before).
func (t *sysctlType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	key := desired.String("key")
	var step *resources.Step
	switch action {
	case "apply":
		if !desired.IsSet("value") {
			return nil, &resources.PropertyError{Property: "value", Err: errors.New("apply needs a value: set value to what the parameter must hold")}
		}
		switch {
		case current.Extra["kind"] == "directory":
			return nil, fmt.Errorf("%s is a group of parameters (%s is a directory), not one parameter", key, t.procPath(key))
		case !current.Exists:
			return nil, fmt.Errorf("this kernel has no parameter %s (there is no %s): check the spelling, or load the module that provides it first", key, t.procPath(key))
		case current.Extra["writable"] == "false":
			return nil, fmt.Errorf("%s is read-only (%s has no write permission): the kernel does not let it be set", key, t.procPath(key))
		}
		want := desired.String("value")
		var changes []resources.Change
		var groups, why []string
		if current.Extra["readable"] == "false" {
			changes, groups = append(changes, resources.Change{Property: "value", Before: cty.NilVal, After: desired.Get("value")}), append(groups, "value")
			why = append(why, "the kernel does not let its value be read, so it is set every time")
		} else if have := current.Values["value"]; have == cty.NilVal || have.AsString() != want {
			changes, groups = append(changes, resources.Change{Property: "value", Before: have, After: desired.Get("value")}), append(groups, "value")
			why = append(why, "value differs")
		}
		switch current.Extra["persisted"] {
		case "same":
		case "absent":
			groups = append(groups, "persist")
			why = append(why, t.confPath(key)+" does not exist yet to keep it after a reboot")
		default:
			groups = append(groups, "persist")
			why = append(why, t.confPath(key)+" holds another value or text")
		}
		if len(groups) == 0 {
			step = &resources.Step{Kind: resources.NoOp, Reason: "already in the desired state, and persisted in " + t.confPath(key)}
		} else {
			step = &resources.Step{Kind: resources.Update, Reason: strings.Join(why, "; "), Changes: changes, Groups: groups}
		}
	case "remove":
		if current.Extra["persisted"] == "absent" {
			step = &resources.Step{Kind: resources.NoOp, Reason: t.confPath(key) + " does not exist"}
		} else {
			step = &resources.Step{Kind: resources.Delete, Reason: "remove deletes " + t.confPath(key) + "; the running value stays as it is until the next boot", Groups: []string{"persist"}}
		}
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
	if step.Kind.IsWork() && hostexec.EffectiveUID() != 0 {
		return nil, hostexec.NeedsRoot(fmt.Sprintf("setting kernel parameters (%s)", key))
	}
	return step, nil
}

// Predict is the sysctl's: the value a step sets, and the file it
// writes or deletes.
func (t *sysctlType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	st := current.Clone()
	if st.Extra == nil {
		st.Extra = map[string]string{}
	}
	for _, c := range step.Changes {
		st.Values[c.Property] = c.After
	}
	switch {
	case step.Kind == resources.Delete:
		st.Extra["persisted"] = "absent"
	case step.HasGroup("persist"):
		st.Extra["persisted"] = "same"
	}
	return st, nil
}

// Steps set the value with `sysctl -w` first, then write the file
// (as the file type writes one: atomically, backed up, root's, 0644), so
// that a value the kernel refuses is never persisted for the next boot.
func (t *sysctlType) Steps() resources.Steps {
	return resources.Steps{Update: t.converge, Delete: t.converge}
}

func (t *sysctlType) converge(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
	key := desired.String("key")
	if step.HasGroup("value") && step.Kind != resources.Delete {
		want := desired.String("value")
		if err := (hostexec.Tools{}).Run(ctx, env, "sysctl", []string{"-w", key + "=" + want}, nil, ""); err != nil {
			return err
		}
		// sysctl exits 0 after some refusals (a read-only key), and the
		// kernel may keep another spelling than the one written: read back.
		if current.Extra["readable"] != "false" {
			data, err := os.ReadFile(t.procPath(key))
			if err != nil {
				return fmt.Errorf("reading back sysctl %s: %w", key, err)
			}
			if got := strings.Join(strings.Fields(string(data)), " "); got != want {
				shown := fmt.Sprintf("%q", got)
				if env != nil && env.Sensitive {
					shown = "another value"
				}
				return fmt.Errorf("sysctl %s: the kernel holds %s after sysctl -w set it; nothing was persisted. Write the value as the kernel prints it, or check that the kernel accepts it", key, shown)
			}
		}
	}
	if !step.HasGroup("persist") {
		return nil
	}
	path := t.confPath(key)
	fr := resources.NewResource(t.file.Schema(), path, "create", map[string]cty.Value{
		"path":  cty.StringVal(path),
		"mode":  cty.StringVal("0644"),
		"owner": cty.StringVal("root"),
		"group": cty.StringVal("root"),
	})
	if step.Kind == resources.Delete {
		fr = fr.WithAction("delete")
	} else {
		fr.Values["content"] = cty.StringVal(confContent(key, desired.String("value")))
	}
	st, err := t.file.Load(ctx, fr.LoadView())
	if err != nil {
		return err
	}
	fstep, err := resources.PlanStep(t.file, fr, st)
	if err != nil {
		return err
	}
	return resources.ConvergeStep(ctx, t.file, env, fr, st, fstep)
}
