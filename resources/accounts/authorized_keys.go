package accounts

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
	"github.com/toquehq/toque/resources/internal/sshkey"
)

// authorizedKeysType is the built-in "authorized_keys" type: one public
// key in a user's ~/.ssh/authorized_keys, Ansible's authorized_key. The
// home directory is the one the passwd database gives the user. Every
// path is reached and written through the file and directory types of
// resources/files, whose held directories never follow a link in a
// directory the user controls (the home, ~/.ssh): a ~/.ssh or an
// authorized_keys that is a symbolic link, or an authorized_keys with
// other names (hard links), is a plan error. The file is the user's,
// 0600, in a ~/.ssh of the user's, 0700, as sshd's StrictModes wants.
type authorizedKeysType struct {
	schema *resources.Schema
	file   resources.Type
	dir    resources.Type
	// root is where the user database and the homes are ("" for the
	// host's; tests use a throwaway root).
	root string
}

// AuthorizedKeysType returns the built-in "authorized_keys" resource type.
func AuthorizedKeysType() resources.Type { return newAuthorizedKeysType("") }

func newAuthorizedKeysType(root string) *authorizedKeysType {
	readOnly := func(name, what string, content bool) *resources.Property {
		return &resources.Property{Name: name, Type: cty.String, NonState: true, Content: content, Validate: readOnlyProp(name, what),
			Description: strings.ToUpper(what[:1]) + what[1:] + ": read by toque; a recipe does not set it."}
	}
	return &authorizedKeysType{root: root, file: files.FileType(), dir: files.DirectoryType(), schema: &resources.Schema{
		Name:        "authorized_keys",
		Description: "Manages a public key in a user's ~/.ssh/authorized_keys.",
		Identified:  true,
		Properties: []*resources.Property{
			{Name: "user", Type: cty.String, NameProperty: true, Identity: true, Required: true, Validate: ValidateAccountName("user"),
				Description: "The user whose ~/.ssh/authorized_keys it is (the home the passwd database gives); defaults to the block label."},
			{Name: "key", Type: cty.String, Identity: true, Required: true, Validate: validateAuthorizedKey,
				Description: "The public key, as a .pub file holds it: \"TYPE BASE64 [COMMENT]\"."},
			{Name: "options", Type: cty.List(cty.String), NonState: true, Validate: validateKeyOptions,
				Description: "sshd's options for the key, one per element (\"no-pty\", \"from=\\\"10.0.0.0/8\\\"\", \"command=\\\"/usr/bin/rrsync /srv\\\"\")."},
			{Name: "comment", Type: cty.String, NonState: true, Validate: validateKeyComment,
				Description: "The comment written after the key; unset, the key's own."},
			{Name: "exclusive", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Remove every other key of the file, so that this one is the only one."},
			readOnly("entry", "the lines of the file with this key", true),
			readOnly("other_keys", "with exclusive, the file's lines of other keys, which go", true),
			readOnly("ssh_dir", "the mode and owner of ~/.ssh", false),
			readOnly("mode", "the file's mode (0600)", false),
			readOnly("owner", "the file's owner (the user)", false),
			readOnly("group", "the file's group (the user's primary group)", false),
		},
		Actions:       []string{"create", "delete"},
		DefaultAction: "create",
	}}
}

func (t *authorizedKeysType) Schema() *resources.Schema { return t.schema }

func readOnlyProp(name, what string) func(cty.Value) error {
	return func(v cty.Value) error {
		if v.IsNull() {
			return nil
		}
		return fmt.Errorf("%s is read by toque (%s); a recipe does not set it", name, what)
	}
}

func parseAuthorizedKey(s string) (sshkey.Key, error) {
	k, err := sshkey.Parse(strings.TrimSpace(s))
	if err == nil {
		return k, nil
	}
	if f := strings.Fields(s); len(f) > 2 {
		for _, x := range f[1:] {
			if _, ok := sshkey.TypeName(x); ok {
				return k, fmt.Errorf("%v; it starts with %q: give sshd's options with the options property, and the key as a .pub file holds it", err, f[0])
			}
		}
	}
	return k, err
}

func validateAuthorizedKey(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	if _, err := parseAuthorizedKey(v.AsString()); err != nil {
		return fmt.Errorf("key is not a valid OpenSSH public key: %v", err)
	}
	return nil
}

// keyOptions are sshd's authorized_keys options (sshd(8), OpenSSH 9):
// true for those that take a quoted value.
var keyOptions = map[string]bool{
	"agent-forwarding": false, "cert-authority": false, "no-agent-forwarding": false, "no-port-forwarding": false,
	"no-pty": false, "no-user-rc": false, "no-x11-forwarding": false, "port-forwarding": false, "pty": false,
	"no-touch-required": false, "verify-required": false, "restrict": false, "user-rc": false, "x11-forwarding": false,
	"command": true, "environment": true, "expiry-time": true, "from": true, "permitlisten": true, "permitopen": true,
	"principals": true, "tunnel": true,
}

var keyOptionRE = regexp.MustCompile(`^([A-Za-z0-9-]+)(="((?:[^"\\]|\\.)*)")?$`)

func validateKeyOptions(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	for i, o := range props.StringList(v) {
		what := fmt.Sprintf("options[%d]", i)
		if strings.ContainsAny(o, "\n\r\x00") {
			return fmt.Errorf("%s must be one line: a newline would start another key line", what)
		}
		m := keyOptionRE.FindStringSubmatch(o)
		if m == nil {
			return fmt.Errorf("%s %q is not an option sshd reads: a name (no-pty), or name=\"value\" with the value in double quotes and a quote in it written \\\" (a comma or a space outside the quotes would start another option or end them)", what, o)
		}
		quoted, known := keyOptions[strings.ToLower(m[1])]
		switch {
		case !known:
			return fmt.Errorf("%s: sshd has no option %q (see AUTHORIZED_KEYS FILE FORMAT in sshd(8))", what, m[1])
		case quoted && m[2] == "":
			return fmt.Errorf("%s: %s takes a value: %s=\"…\"", what, m[1], m[1])
		case !quoted && m[2] != "":
			return fmt.Errorf("%s: %s takes no value", what, m[1])
		}
	}
	return nil
}

func validateKeyComment(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	if strings.ContainsAny(v.AsString(), "\n\r\x00") {
		return errors.New("comment must be one line: a newline would start another key line")
	}
	return nil
}

// account is what the passwd database says of the user: home, and ids.
type account struct {
	home     string
	uid, gid uint32
	// owner and group are how the file's owner and group are given to
	// the file type: names for the host's users, ids in a throwaway root.
	owner, group string
}

// lookupAccount finds name in the passwd file under root, else (the
// host's) in NSS; ok is false when no user has the name.
func (t *authorizedKeysType) lookupAccount(name string) (*account, bool, error) {
	db, err := readAccounts(t.root, dbPasswd|dbGroup)
	if err != nil {
		return nil, false, err
	}
	if e := db.users[name]; e != nil {
		a := &account{home: e.home, uid: e.uid, gid: e.gid, owner: name, group: db.groupName(e.gid)}
		if t.root != "" {
			a.home = filepath.Join(t.root, e.home)
			a.owner, a.group = strconv.FormatUint(uint64(e.uid), 10), strconv.FormatUint(uint64(e.gid), 10)
		}
		return a, true, nil
	}
	if !db.nss {
		return nil, false, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, false, nil
	}
	uid, err1 := parseID(u.Uid)
	gid, err2 := parseID(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, false, nil
	}
	return &account{home: u.HomeDir, uid: uid, gid: gid, owner: name, group: u.Gid}, true, nil
}

// paths are the user's ~/.ssh and its authorized_keys.
func (a *account) paths() (dir, file string) {
	dir = filepath.Join(a.home, ".ssh")
	return dir, filepath.Join(dir, "authorized_keys")
}

// dirDesc is how ssh_dir shows a directory's mode and owner.
func dirDesc(mode, owner, group string) string { return mode + " " + owner + ":" + group }

// Load finds the user's home in the passwd database, then reads ~/.ssh
// and ~/.ssh/authorized_keys through the directory and file types (held
// directories, no link followed): Values hold the lines with the key
// (entry), with exclusive the other keys' lines (other_keys), ~/.ssh's
// mode and owner (ssh_dir), and the file's; Extra holds the paths and
// ids, and what Plan refuses (a link, not a directory, hard links).
func (t *authorizedKeysType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	if err := props.CtxErr(ctx, "reading authorized keys"); err != nil {
		return nil, err
	}
	name := r.String("user")
	st := resources.Absent()
	st.Extra = map[string]string{}
	a, ok, err := t.lookupAccount(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		st.Extra["user"] = "missing"
		return st, nil
	}
	dir, path := a.paths()
	st.Extra["home"], st.Extra["owner"], st.Extra["group"] = a.home, a.owner, a.group
	st.Extra["uid"] = strconv.FormatUint(uint64(a.uid), 10)
	dst, err := t.dir.Load(ctx, resources.NewResource(t.dir.Schema(), dir, "create", map[string]cty.Value{"path": cty.StringVal(dir)}).LoadView())
	if err != nil {
		return nil, err
	}
	if !dst.Exists {
		st.Extra["ssh_dir"] = "missing"
		if home, err := t.dir.Load(ctx, resources.NewResource(t.dir.Schema(), a.home, "create", map[string]cty.Value{"path": cty.StringVal(a.home)}).LoadView()); err != nil {
			return nil, err
		} else if !home.Exists {
			st.Extra["home_missing"] = "true"
		}
		return st, nil
	}
	if k := dst.Extra["kind"]; k != "directory" {
		st.Extra["ssh_dir"] = k
		st.Extra["link_target"] = dst.Extra["link_target"]
		return st, nil
	}
	st.Values["ssh_dir"] = cty.StringVal(dirDesc(props.StringOr(dst.Values["mode"]), props.StringOr(dst.Values["owner"]), props.StringOr(dst.Values["group"])))
	fst, err := t.file.Load(ctx, resources.NewResource(t.file.Schema(), path, "create", map[string]cty.Value{"path": cty.StringVal(path)}).LoadView())
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"kind", "refused", "link_target", "content_bytes"} {
		if v := fst.Extra[k]; v != "" {
			st.Extra[k] = v
		}
	}
	if !fst.Exists {
		return st, nil
	}
	st.Exists = true
	for _, k := range []string{"mode", "owner", "group"} {
		if v, ok := fst.Values[k]; ok {
			st.Values[k] = v
		}
	}
	if v, ok := fst.Values["content"]; ok && !v.IsNull() {
		k, _ := parseAuthorizedKey(r.String("key"))
		mine, others := splitKeys(v.AsString(), k.Blob)
		if mine != "" {
			st.Values["entry"] = cty.StringVal(mine)
		}
		if others != "" && r.Bool("exclusive") {
			st.Values["other_keys"] = cty.StringVal(others)
		}
	}
	if why := fst.Private["content"]; why != "" {
		st.Private = map[string]string{"entry": why, "other_keys": why}
	}
	return st, nil
}

// keyOf is the blob of a line of authorized_keys ("" for a comment, a
// blank line, or what holds no key): the first field after the options
// that is a key type, and the one after it.
func keyOf(line string) string {
	f := fieldsOutsideQuotes(line)
	if len(f) == 0 || strings.HasPrefix(f[0], "#") {
		return ""
	}
	for i := 0; i+1 < len(f); i++ {
		if _, ok := sshkey.TypeName(f[i]); ok {
			return f[i+1]
		}
	}
	return ""
}

// fieldsOutsideQuotes splits a line at the spaces outside double quotes
// (an option's value may hold spaces).
func fieldsOutsideQuotes(s string) []string {
	var out []string
	var b strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quoted && i+1 < len(s):
			b.WriteByte(c)
			i++
			b.WriteByte(s[i])
			continue
		case c == '"':
			quoted = !quoted
		case !quoted && (c == ' ' || c == '\t'):
			if b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
			}
			continue
		}
		b.WriteByte(c)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// splitKeys are the lines of text with the key blob, and the lines of
// other keys (every line but blanks and comments).
func splitKeys(text, blob string) (mine, others string) {
	var m, o strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		l := strings.TrimRight(line, "\n")
		switch t := strings.TrimSpace(l); {
		case t == "" || strings.HasPrefix(t, "#"):
		case keyOf(l) == blob:
			m.WriteString(l + "\n")
		default:
			o.WriteString(l + "\n")
		}
	}
	return m.String(), o.String()
}

// keyLine is the recipe's line: options, the key, the comment.
func keyLine(r *resources.Resource) string {
	k, _ := parseAuthorizedKey(r.String("key"))
	if r.IsSet("comment") {
		k.Comment = r.String("comment")
	}
	line := k.String()
	if opts := props.StringList(r.Get("options")); len(opts) > 0 {
		line = strings.Join(opts, ",") + " " + line
	}
	return line
}

// editKeys is text with the key's line: every line with the key replaced
// by the recipe's one (in the place of the first), or it appended;
// without keep, the key's lines removed; with exclusive, every other key
// removed. Comments and blank lines stay.
func editKeys(text, blob, line string, keep, exclusive bool) string {
	var out []string
	placed := false
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
			if text != "" {
				out = append(out, l)
			}
		case keyOf(l) == blob:
			if keep && !placed {
				out = append(out, line)
				placed = true
			}
		case !exclusive:
			out = append(out, l)
		}
	}
	if keep && !placed {
		out = append(out, line)
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

// Plan gives the file the key's line (create) or takes it out (delete),
// and makes ~/.ssh and the file the user's, 0700 and 0600, as sshd's
// StrictModes wants them.
func (t *authorizedKeysType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	name := desired.String("user")
	if current.Extra["user"] == "missing" {
		if action == "delete" {
			return &resources.Step{Kind: resources.NoOp, Reason: "there is no user " + name}, nil
		}
		ch := []resources.Change{{Property: "entry", After: cty.StringVal(keyLine(desired) + "\n")}}
		return &resources.Step{Kind: resources.Create, Reason: "user " + name + " does not exist yet: its home is known once it does", Changes: ch, Groups: []string{"file"},
			Needs: []resources.Need{{Namespace: resources.NamespaceUser, Value: name, What: "user"}}}, nil
	}
	home := current.Extra["home"]
	dir := filepath.Join(home, ".ssh")
	path := filepath.Join(dir, "authorized_keys")
	switch k := current.Extra["ssh_dir"]; {
	case k == "symlink":
		return nil, fmt.Errorf("%s is a symbolic link to %s: toque never follows a link in a home directory its user controls; remove it (or make it a directory)", dir, current.Extra["link_target"])
	case k != "" && k != "missing":
		return nil, fmt.Errorf("%s is %s, not a directory", dir, props.Article(k))
	}
	switch k := current.Extra["kind"]; {
	case k == "symlink":
		return nil, fmt.Errorf("%s is a symbolic link to %s: toque never follows a link in a home directory its user controls; remove it", path, current.Extra["link_target"])
	case k != "" && k != "file":
		return nil, fmt.Errorf("%s is %s, not a regular file", path, props.Article(k))
	case current.Extra["refused"] != "":
		return nil, errors.New(current.Extra["refused"])
	case current.Extra["content_bytes"] != "":
		return nil, fmt.Errorf("%s is not UTF-8 text in normal form (NFC): toque could not keep its other lines byte for byte; edit it by hand", path)
	}
	k, _ := parseAuthorizedKey(desired.String("key"))
	entry := props.StringOr(current.Values["entry"])
	if action == "delete" {
		if entry == "" {
			return &resources.Step{Kind: resources.NoOp, Reason: path + " does not hold the key"}, nil
		}
		ch := []resources.Change{{Property: "entry", Before: current.Values["entry"], After: cty.StringVal("")}}
		return &resources.Step{Kind: resources.Update, Reason: "delete takes the key out of " + path, Changes: ch, Groups: []string{"file"}}, nil
	}
	if action != "create" {
		return nil, resources.UnknownAction(t.schema, action)
	}
	var changes []resources.Change
	if after := editKeys(entry, k.Blob, keyLine(desired), true, false); after != entry {
		changes = append(changes, resources.Change{Property: "entry", Before: current.Values["entry"], After: cty.StringVal(after)})
	}
	if v := current.Values["other_keys"]; v != cty.NilVal && desired.Bool("exclusive") {
		changes = append(changes, resources.Change{Property: "other_keys", Before: v, After: cty.StringVal(""), Note: "exclusive: every other key goes"})
	}
	owner, group := current.Extra["owner"], current.Extra["group"]
	wantDir := dirDesc("0700", owner, group)
	var groups []string
	if v := current.Values["ssh_dir"]; !t.sameDir(v, wantDir) {
		changes = append([]resources.Change{{Property: "ssh_dir", Before: v, After: cty.StringVal(wantDir)}}, changes...)
		groups = append(groups, "ssh_dir")
	}
	for _, c := range []struct{ prop, want string }{{"mode", "0600"}, {"owner", owner}, {"group", group}} {
		v := current.Values[c.prop]
		p := t.file.Schema().Property(c.prop)
		if v == cty.NilVal || !p.Equals(v, cty.StringVal(c.want)) {
			changes = append(changes, resources.Change{Property: c.prop, Before: v, After: cty.StringVal(c.want)})
		}
	}
	if len(changes) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: path + " holds the key already, as the recipe writes it"}, nil
	}
	if len(changes) > len(groups) {
		groups = append(groups, "file")
	}
	step := &resources.Step{Kind: resources.Update, Reason: resources.Differ(resources.PropertyNames(changes)), Changes: changes, Groups: groups}
	if !current.Exists {
		step.Kind, step.Reason = resources.Create, path+" does not exist"
	}
	if current.Extra["home_missing"] != "" {
		step.Needs = append(step.Needs, resources.Need{Namespace: resources.NamespacePath, Value: home, What: "directory"})
	}
	if uid := hostexec.EffectiveUID(); uid != 0 && strconv.Itoa(uid) != current.Extra["uid"] {
		return nil, hostexec.NeedsRoot(fmt.Sprintf("writing %s, which is user %s's,", path, name))
	}
	return step, nil
}

// sameDir compares ssh_dir's reading with the wanted one, owners by id.
func (t *authorizedKeysType) sameDir(have cty.Value, want string) bool {
	h := strings.Fields(props.StringOr(have))
	w := strings.Fields(want)
	if len(h) != 2 || len(w) != 2 || h[0] != w[0] {
		return false
	}
	ho, hg, _ := strings.Cut(h[1], ":")
	wo, wg, _ := strings.Cut(w[1], ":")
	return props.EqualOwner(cty.StringVal(ho), cty.StringVal(wo)) && props.EqualGroup(cty.StringVal(hg), cty.StringVal(wg))
}

// Steps make ~/.ssh (0700, the user's) when the step says so, then edit
// the file through the file type: read again right before it is written,
// so that keys added meanwhile are kept, and written atomically, the
// user's, 0600.
func (t *authorizedKeysType) Steps() resources.Steps {
	return resources.Same(func(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
		if current.Extra["user"] == "missing" {
			return fmt.Errorf("user %s does not exist", desired.String("user"))
		}
		dir := filepath.Join(current.Extra["home"], ".ssh")
		path := filepath.Join(dir, "authorized_keys")
		own := map[string]cty.Value{"owner": cty.StringVal(current.Extra["owner"]), "group": cty.StringVal(current.Extra["group"])}
		if step.HasGroup("ssh_dir") {
			dr := resources.NewResource(t.dir.Schema(), dir, "create", map[string]cty.Value{"path": cty.StringVal(dir), "mode": cty.StringVal("0700"), "owner": own["owner"], "group": own["group"]})
			if err := converge(ctx, env, t.dir, dr); err != nil {
				return err
			}
		}
		if !step.HasGroup("file") {
			return nil
		}
		fr := resources.NewResource(t.file.Schema(), path, "create", map[string]cty.Value{"path": cty.StringVal(path), "mode": cty.StringVal("0600"), "owner": own["owner"], "group": own["group"]})
		fst, err := t.file.Load(ctx, fr.LoadView())
		if err != nil {
			return err
		}
		old := ""
		if v, ok := fst.Values["content"]; ok && fst.Exists && !v.IsNull() {
			old = v.AsString()
		}
		k, _ := parseAuthorizedKey(desired.String("key"))
		keep := desired.EffectiveAction() != "delete"
		fr.Values["content"] = cty.StringVal(editKeys(old, k.Blob, keyLine(desired), keep, keep && desired.Bool("exclusive")))
		fstep, err := resources.PlanStep(t.file, fr, fst)
		if err != nil {
			return err
		}
		return resources.ConvergeStep(ctx, t.file, env, fr, fst, fstep)
	})
}

// converge loads, plans and converges r of type typ.
func converge(ctx context.Context, env *resources.Env, typ resources.Type, r *resources.Resource) error {
	st, err := typ.Load(ctx, r.LoadView())
	if err != nil {
		return err
	}
	step, err := resources.PlanStep(typ, r, st)
	if err != nil {
		return err
	}
	return resources.ConvergeStep(ctx, typ, env, r, st, step)
}
