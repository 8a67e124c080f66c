package system

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

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
			{Name: "comment", Type: cty.DynamicPseudoType, NonState: true, Normalize: normalizeComment, Validate: validateComment,
				Description: "Comment lines written above the key in the file that persists it (a string, or a list of lines), as Chef writes them."},
			{Name: "conf_file", Type: cty.String, NonState: true, Validate: validateConfFile,
				Description: "Persist the key in this file of /etc/sysctl.d, which many keys may share (\"90-hardening.conf\"), instead of a file of its own (99-toque-KEY.conf)."},
			{Name: "conf", Type: cty.String, NonState: true, Content: true, Validate: mountReadOnly("conf", "the lines of /etc/sysctl.d that persist the key"),
				Description: "The lines of /etc/sysctl.d that persist the key (its file, or its lines of conf_file): read by toque; the plan shows a conf_file's as a diff. A recipe does not set it."},
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

// confContent is the file of its own that persists key = value, the
// comment lines above it.
func confContent(key, value string, comments []string) string {
	return fmt.Sprintf("# Managed by toque (sysctl[%s]): changes made here are undone by its next apply.\n", key) + keyBlock(key, value, comments)
}

// persistPath is the file that persists r's key: conf_file, or the
// key's own.
func (t *sysctlType) persistPath(r *resources.Resource) string {
	if r.IsSet("conf_file") {
		return filepath.Join(t.dir, r.String("conf_file"))
	}
	return t.confPath(r.String("key"))
}

// persistText is what persists r's value: the file of its own, or its
// block of conf_file.
func persistText(r *resources.Resource) string {
	key, comments := r.String("key"), props.StringList(r.Get("comment"))
	if r.IsSet("conf_file") {
		return keyBlock(key, r.String("value"), comments)
	}
	return confContent(key, r.String("value"), comments)
}

// loadPersisted reads what persists r's key into st: Values "conf"
// (the file, or the key's blocks of conf_file) and Extra "persisted":
// "absent", "same" (the recipe's text: value is LoadInput) or "other".
// With conf_file, Extra "old_file" records a file of the key's own left
// from before, which apply removes (it would win over conf_file), and
// "conf_text" a conf_file toque could not write back unchanged.
func (t *sysctlType) loadPersisted(r *resources.Resource, st *resources.State) error {
	path := t.persistPath(r)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st.Extra["persisted"] = "absent"
		st.Local = confMissing{} // for Plan's Provides; never compared
	case err != nil:
		return fmt.Errorf("reading %s: %w", path, err)
	}
	text := string(data)
	if r.IsSet("conf_file") {
		if _, err := os.Stat(t.confPath(r.String("key"))); err == nil {
			st.Extra["old_file"] = t.confPath(r.String("key"))
		}
		if !utf8.Valid(data) || cty.StringVal(text).AsString() != text {
			st.Extra["conf_text"] = "not text"
		}
		n := 0
		text, n = keyText(text, r.String("key"))
		if n == 0 {
			st.Extra["persisted"] = "absent"
			return nil
		}
		if n > 1 {
			st.Extra["blocks"] = strconv.Itoa(n)
		}
	}
	if st.Extra["persisted"] == "absent" {
		return nil
	}
	st.Values["conf"] = cty.StringVal(string(bytes.ToValidUTF8([]byte(text), []byte("?"))))
	if r.IsSet("value") && text == persistText(r) {
		st.Extra["persisted"] = "same"
	} else {
		st.Extra["persisted"] = "other"
	}
	return nil
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
	if err := t.loadPersisted(r, st); err != nil {
		return nil, err
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
	// A container's /proc/sys is mounted read-only (but for its own
	// network namespace's keys): its mode says writable, and sysctl -w
	// fails there.
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err == nil && sfs.Flags&unix.ST_RDONLY != 0 {
		st.Extra["mount"] = "read-only"
	}
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
// what persists it when that is not the recipe's (group "persist"; the
// key's lines of a conf_file are shown before and after as "conf"), removing a file of the
// key's own left from before conf_file (group "unpersist_old"); remove
// deletes what persists it, leaving the running value as it is (toque
// cannot know what it was before).
func (t *sysctlType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	key := desired.String("key")
	path := t.persistPath(desired)
	if current.Extra["conf_text"] != "" {
		return nil, &resources.PropertyError{Property: "conf_file", Err: fmt.Errorf("%s is not UTF-8 text in normal form (NFC): toque could not write its other lines back unchanged; edit it by hand", path)}
	}
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
			if current.Extra["mount"] == "read-only" {
				return nil, &resources.PropertyError{Property: "value", Err: fmt.Errorf("%s is %s and cannot be set here: %s is on a read-only mount, as a container's kernel parameters are (but for its own network's): set it on the host whose kernel it is, or leave it out here", key, have.AsString(), t.procPath(key))}
			}
			changes, groups = append(changes, resources.Change{Property: "value", Before: have, After: desired.Get("value")}), append(groups, "value")
			why = append(why, "value differs")
		}
		if current.Extra["persisted"] != "same" {
			if desired.IsSet("conf_file") {
				// The key's lines of a file others share, before and
				// after; a file of the key's own is named in the reason.
				changes = append(changes, resources.Change{Property: "conf", Before: current.Values["conf"], After: knownFrom(desired, cty.StringVal(persistText(desired)), "value", "comment")})
			}
			groups = append(groups, "persist")
			switch {
			case current.Extra["persisted"] == "absent" && desired.IsSet("conf_file"):
				why = append(why, path+" does not persist it yet")
			case current.Extra["persisted"] == "absent":
				why = append(why, path+" does not exist yet to keep it after a reboot")
			case current.Extra["blocks"] != "":
				why = append(why, fmt.Sprintf("%s sets it %s times", path, current.Extra["blocks"]))
			default:
				why = append(why, path+" holds another value or text")
			}
		}
		if old := current.Extra["old_file"]; old != "" {
			groups = append(groups, "unpersist_old")
			why = append(why, old+", its file from before conf_file, is removed: read after "+desired.String("conf_file")+", it would win")
		}
		if len(groups) == 0 {
			step = &resources.Step{Kind: resources.NoOp, Reason: "already in the desired state, and persisted in " + path}
		} else {
			step = &resources.Step{Kind: resources.Update, Reason: strings.Join(why, "; "), Changes: changes, Groups: groups}
		}
	case "remove":
		var groups, why []string
		if current.Extra["persisted"] != "absent" {
			groups = append(groups, "persist")
			if desired.IsSet("conf_file") {
				why = append(why, "remove deletes its lines from "+path)
			} else {
				why = append(why, "remove deletes "+path)
			}
		}
		if old := current.Extra["old_file"]; old != "" {
			groups = append(groups, "unpersist_old")
			why = append(why, "remove deletes "+old+", its file from before conf_file")
		}
		if len(groups) == 0 {
			step = &resources.Step{Kind: resources.NoOp, Reason: path + " does not persist it"}
		} else {
			step = &resources.Step{Kind: resources.Delete, Reason: strings.Join(why, "; ") + "; the running value stays as it is until the next boot", Groups: groups}
		}
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
	if step.Kind == resources.Update && step.HasGroup("persist") && desired.IsSet("conf_file") && isConfMissing(current) {
		step.Provides = append(step.Provides, confFileMade(desired.Address(), path))
	}
	return needsRoot(step, fmt.Sprintf("setting kernel parameters (%s)", key))
}

// confMissing, as a reading's Local, says its conf_file did not exist.
type confMissing struct{}

func isConfMissing(st *resources.State) bool {
	_, ok := st.Local.(confMissing)
	return ok
}

// confFileMade is what a step that persists a key in a conf_file the
// host lacks provides: the file, root's and 0644 (rootFile), for a later
// resource of the plan that sets its mode or owner (resources.Foresight).
// Its content is the keys' blocks, which the plan does not compose: a
// resource that reads it finds no content in the prediction.
func confFileMade(addr, path string) resources.Need {
	return resources.Need{Namespace: resources.NamespacePath, Value: path, What: "file",
		Prediction: &resources.Prediction{By: addr, Facts: map[string]string{
			"kind": "file", "mode": "0644", "owner": "root", "group": "root", "uid": "0", "gid": "0",
		}}}
}

// Predict is the sysctl's: the value a step sets, and what it persists
// or removes.
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
		delete(st.Values, "conf")
	case step.HasGroup("persist"):
		st.Extra["persisted"] = "same"
	}
	delete(st.Extra, "blocks")
	if step.HasGroup("unpersist_old") {
		delete(st.Extra, "old_file")
	}
	return st, nil
}

// Steps set the value with `sysctl -w` first and read it back, then write
// what persists it (as the file type writes a file: atomically, backed
// up, root's, 0644), so that a value the kernel refuses or keeps
// otherwise is never persisted for the next boot.
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
	if step.HasGroup("persist") {
		if err := t.persist(ctx, env, desired, step.Kind == resources.Delete); err != nil {
			return err
		}
	}
	if step.HasGroup("unpersist_old") {
		return writeRootFile(ctx, env, t.file, t.confPath(key), "")
	}
	return nil
}

// persist writes (or, for remove, deletes) what persists the key.
func (t *sysctlType) persist(ctx context.Context, env *resources.Env, desired *resources.Resource, remove bool) error {
	text := persistText(desired)
	if remove {
		text = ""
	}
	if !desired.IsSet("conf_file") {
		return writeRootFile(ctx, env, t.file, t.confPath(desired.String("key")), text)
	}
	name := desired.String("conf_file")
	return editFile(ctx, env, t.file, t.persistPath(desired), rootFile(), func(old string, exists bool) (string, bool, error) {
		out := withKeyBlock(old, exists, name, desired.String("key"), text)
		return out, out == "", nil
	})
}
