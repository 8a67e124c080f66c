package system

import (
	"context"
	"fmt"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
)

// editFile rewrites the file at path as the file type writes one (held
// directories, a temporary file renamed over it, the old content backed
// up), with the text edit makes of what the file holds right now: the
// types that own a part of a shared file (an fstab entry, a line of
// /etc/hosts) read it again here, so that what other resources of the
// same apply wrote meanwhile is kept. edit gets the content ("" and false
// when there is no file) and returns the new content, or remove to delete
// the file. vals are further properties of the file resource (mode,
// owner), used as the file type uses them: mode only when the file is
// created unless the file type must converge it. Nothing is written when
// the content is already the new one.
func editFile(ctx context.Context, env *resources.Env, file resources.Type, path string, vals map[string]cty.Value, edit func(old string, exists bool) (content string, remove bool, err error)) error {
	fr := resources.NewResource(file.Schema(), path, "create", map[string]cty.Value{"path": cty.StringVal(path)})
	for k, v := range vals {
		fr.Values[k] = v
	}
	st, err := file.Load(ctx, fr.LoadView())
	if err != nil {
		return err
	}
	if st.Exists && st.Extra["kind"] != "" && st.Extra["kind"] != "file" {
		return fmt.Errorf("%s is %s, not a regular file: toque edits only a regular file", path, st.Extra["kind"])
	}
	if st.Extra["content_bytes"] != "" {
		return fmt.Errorf("%s is not UTF-8 text in normal form (NFC): toque could not write its other lines back unchanged; edit it by hand", path)
	}
	old := ""
	if v, ok := st.Values["content"]; ok && st.Exists && !v.IsNull() {
		old = v.AsString()
	}
	content, remove, err := edit(old, st.Exists)
	if err != nil {
		return err
	}
	if remove {
		if !st.Exists {
			return nil
		}
		fr = fr.WithAction("delete")
	} else {
		fr.Values["content"] = cty.StringVal(content)
	}
	step, err := resources.PlanStep(file, fr, st)
	if err != nil {
		return err
	}
	return resources.ConvergeStep(ctx, file, env, fr, st, step)
}

// rootFile is the mode and owner of the files toque writes for the
// kernel and the host's daemons: root's, 0644.
func rootFile() map[string]cty.Value {
	return map[string]cty.Value{"mode": cty.StringVal("0644"), "owner": cty.StringVal("root"), "group": cty.StringVal("root")}
}

// writeRootFile writes a file toque alone writes, as the file type does
// (atomically, backed up, root's, 0644), or deletes it when content is "".
func writeRootFile(ctx context.Context, env *resources.Env, file resources.Type, path, content string) error {
	fr := resources.NewResource(file.Schema(), path, "create", rootFile())
	fr.Values["path"] = cty.StringVal(path)
	if content == "" {
		fr = fr.WithAction("delete")
	} else {
		fr.Values["content"] = cty.StringVal(content)
	}
	st, err := file.Load(ctx, fr.LoadView())
	if err != nil {
		return err
	}
	step, err := resources.PlanStep(file, fr, st)
	if err != nil {
		return err
	}
	return resources.ConvergeStep(ctx, file, env, fr, st, step)
}

// toolRunner runs one of the host's programs a type converges with
// (mount, modprobe, mkswap, locale-gen…), failing with its words when it
// exits otherwise than 0. Tests replace it only where the real program
// would change what a namespace cannot isolate (the kernel's modules, the
// host's swap).
type toolRunner func(ctx context.Context, env *resources.Env, tool string, args ...string) error

// runHostTool is the toolRunner of production: hostexec, which words the
// failure with the end of the program's standard error.
func runHostTool(ctx context.Context, env *resources.Env, tool string, args ...string) error {
	return hostexec.Tools{}.Run(ctx, env, tool, args, nil, "")
}

// boolValue is a known bool's value, false for anything else (a value
// Load did not read).
func boolValue(v cty.Value) bool {
	return v != cty.NilVal && v.IsKnown() && !v.IsNull() && v.Type() == cty.Bool && v.True()
}

// knownFrom is v, a value the type computes from the recipe's props, or
// an unknown string when one of them is set but known only at apply
// (lazy): the plan then shows it as known at apply, and apply computes it
// from the values it resolves.
func knownFrom(desired *resources.Resource, v cty.Value, props ...string) cty.Value {
	for _, p := range props {
		if x, ok := desired.Values[p]; ok && x != cty.NilVal && !x.IsWhollyKnown() {
			return cty.UnknownVal(cty.String)
		}
	}
	return v
}

// needsRoot refuses a step with work when toque does not run as root:
// the files and the kernel's state these types change are root's.
func needsRoot(step *resources.Step, what string) (*resources.Step, error) {
	if step.Kind.IsWork() && hostexec.EffectiveUID() != 0 {
		return nil, hostexec.NeedsRoot(what)
	}
	return step, nil
}
