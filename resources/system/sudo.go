package system

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// sudoType is the built-in "sudo" type, Chef's: one file of
// /etc/sudoers.d that grants users and groups commands, derived from the
// properties when the recipe is evaluated (Deriver), so that the plan
// shows and applies the exact file. The file is written through the file
// type (held directories, atomically, backed up), root's and mode 0440,
// and only once visudo has accepted its exact bytes: Load runs
// `visudo -cf` on the rendered file in a private temporary directory, so
// a file visudo rejects is a plan error, and the create or update runs it
// again right before writing. An invalid sudoers file never lands.
type sudoType struct {
	schema *resources.Schema
	file   resources.Type
	dir    resources.Type
}

// SudoType returns the built-in "sudo" resource type.
func SudoType() resources.Type { return newSudoType() }

// sudoDerived marks the properties the type derives.
func sudoDerived(name string) func(cty.Value) error {
	return func(cty.Value) error {
		return fmt.Errorf("%s is made by toque from users, groups, commands and the other properties; a recipe does not set it", name)
	}
}

func newSudoType() *sudoType {
	list := func(name string, check func(string, string) error, desc string) *resources.Property {
		return &resources.Property{Name: name, Type: cty.List(cty.String), NonState: true, Validate: validateSudoList(name, check), Description: desc}
	}
	flag := func(name, desc string) *resources.Property {
		return &resources.Property{Name: name, Type: cty.Bool, NonState: true, Default: cty.False, Description: desc}
	}
	return &sudoType{file: files.FileType(), dir: files.DirectoryType(), schema: &resources.Schema{
		Name:        "sudo",
		Description: "Manages a file of /etc/sudoers.d that grants users and groups commands, checked by visudo before it lands.",
		Properties: []*resources.Property{
			{Name: "filename", Type: cty.String, NameProperty: true, Identity: true, Required: true, Namespace: "sudo",
				Validate:    validateSudoFilename,
				Description: "The file's name in sudoers.d: letters, digits, \"_\" and \"-\" (sudo skips names with a \".\" or ending in \"~\"); defaults to the block label."},
			list("users", checkSudoUser, "Users granted the commands: names, #uid, %group, +netgroup or a User_Alias, one per element."),
			{Name: "groups", Type: cty.List(cty.String), NonState: true, Normalize: normalizeSudoGroups, Validate: validateSudoList("groups", checkSudoUser),
				Description: "Groups granted the commands, with or without the leading %, one per element."},
			{Name: "commands", Type: cty.List(cty.String), NonState: true, Default: cty.ListVal([]cty.Value{cty.StringVal("ALL")}), Validate: validateSudoList("commands", checkSudoCommand),
				Description: "Commands they may run: ALL, a Cmnd_Alias, or a full path with its arguments, one per element (a literal comma is written \\,)."},
			{Name: "host", Type: cty.String, NonState: true, Default: cty.StringVal("ALL"), Validate: validateSudoString("host", checkSudoHost),
				Description: "The hosts the rule holds on: ALL, a host name, an address or network, or a Host_Alias."},
			{Name: "runas", Type: cty.String, NonState: true, Default: cty.StringVal("ALL"), Validate: validateSudoString("runas", checkSudoRunas),
				Description: "Who the commands run as: users, then :groups (\"ALL\", \"root\", \"app,web:www-data\")."},
			flag("nopasswd", "Run the commands without a password (NOPASSWD)."),
			flag("noexec", "Keep the commands from running others (NOEXEC)."),
			flag("setenv", "Let the user keep their environment with sudo -E (SETENV)."),
			list("defaults", checkSudoDefault, "Defaults for these users and groups (\"!requiretty\", \"timestamp_timeout=10\"), one per element."),
			{Name: "command_aliases", Type: cty.List(cty.Object(map[string]cty.Type{"name": cty.String, "command_list": cty.List(cty.String)})), NonState: true,
				Validate:    validateCommandAliases,
				Description: "Cmnd_Alias definitions: objects of name (upper case) and command_list, usable in commands."},
			list("env_keep_add", checkEnvKeep, "Variables added to env_keep (a global Defaults line each)."),
			list("env_keep_subtract", checkEnvKeep, "Variables taken out of env_keep (a global Defaults line each)."),
			{Name: "config_prefix", Type: cty.String, NonState: true, Default: cty.StringVal("/etc"), Normalize: props.NormalizePath,
				Description: "The directory of sudoers and sudoers.d."},
			{Name: "visudo_binary", Type: cty.String, NonState: true, Default: cty.StringVal("/usr/sbin/visudo"), Normalize: props.NormalizePath,
				Description: "The visudo that checks the file."},
			{Name: "visudo_path", Type: cty.String, NonState: true, Normalize: props.NormalizePath,
				Description: "The sudo cookbook's name for visudo_binary; setting both is an error."},
			{Name: "content", Type: cty.String, Content: true, Validate: sudoDerived("content"),
				Description: "The file, made by toque from the properties above; a recipe does not set it."},
			{Name: "mode", Type: cty.DynamicPseudoType, Normalize: files.NormalizeMode, Validate: sudoDerived("mode"),
				Description: "Always 0440, as sudo's own files. Set by toque."},
			{Name: "owner", Type: cty.String, Group: "owner", Equal: props.EqualOwner, Validate: sudoDerived("owner"),
				Description: "Always root: sudo refuses a file another user owns. Set by toque."},
			{Name: "group", Type: cty.String, Group: "owner", Equal: props.EqualGroup, Validate: sudoDerived("group"),
				Description: "Always root. Set by toque."},
		},
		Actions:       []string{"create", "delete"},
		DefaultAction: "create",
	}}
}

func (t *sudoType) Schema() *resources.Schema { return t.schema }

// sudoFilenameRE is the names sudo's @includedir reads: it skips a name
// with a "." or ending in "~".
var sudoFilenameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func validateSudoFilename(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	if s := v.AsString(); !sudoFilenameRE.MatchString(s) {
		return fmt.Errorf("filename %q is not letters, digits, \"_\" and \"-\": sudo silently skips a file of sudoers.d whose name holds a \".\" or ends in \"~\", and a \"/\" would leave the directory; write \"__\" for \".\", as Chef does", s)
	}
	return nil
}

func validateSudoList(name string, check func(what, s string) error) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsWhollyKnown() || v.IsNull() {
			return nil
		}
		for i, s := range props.StringList(v) {
			if err := check(fmt.Sprintf("%s[%d]", name, i), s); err != nil {
				return err
			}
		}
		return nil
	}
}

func validateSudoString(name string, check func(what, s string) error) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		return check(name, v.AsString())
	}
}

// sudoLine refuses what would end or continue a line of sudoers: a
// newline, and a backslash at the end (sudoers joins the next line).
func sudoLine(what, s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("%s must not be empty", what)
	case strings.ContainsAny(s, "\n\r\x00"):
		return fmt.Errorf("%s must be one line: a newline would start another sudoers rule", what)
	case strings.HasSuffix(s, `\`):
		return fmt.Errorf("%s ends with a backslash, which makes sudoers join the next line to it", what)
	}
	return nil
}

// bare reports the first of chars in s that is neither escaped with a
// backslash nor, when quotes is set, inside double quotes, and its byte
// offset. sudoers honours double quotes in Defaults values only: in a
// command's arguments a " is a character like any other
// (cvtsudoers reads `/usr/bin/printf "x, ALL` as two commands).
func bare(s, chars string, quotes bool) (rune, int) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case quotes && c == '"':
			quoted = !quoted
		case !quoted && strings.IndexByte(chars, c) >= 0:
			return rune(c), i
		}
	}
	return 0, -1
}

var (
	sudoAliasRE   = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	sudoAccountRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*\$?$`)
	sudoIDRE      = regexp.MustCompile(`^#[0-9]+$`)
)

// checkSudoUser is one element of a User_List (users, groups, runas):
// ALL, a name, #uid, %group, %#gid, %:group, +netgroup or an alias.
func checkSudoUser(what, s string) error {
	if err := sudoLine(what, s); err != nil {
		return err
	}
	if strings.Contains(s, ",") {
		return fmt.Errorf("%s %q holds a comma, which sudoers reads as the end of one name and the start of another: give each name as its own element", what, s)
	}
	if strings.ContainsAny(s, " \t") {
		return fmt.Errorf("%s %q holds a space: a name in sudoers has none", what, s)
	}
	name := strings.TrimPrefix(s, "!")
	switch {
	case name == "":
		return fmt.Errorf("%s %q negates nothing: a ! goes before a name", what, s)
	case name == "ALL", sudoAliasRE.MatchString(name), sudoIDRE.MatchString(name), sudoAccountRE.MatchString(name):
		return nil
	case strings.HasPrefix(name, "%#") && sudoIDRE.MatchString(name[1:]):
		return nil
	case strings.HasPrefix(name, "%:") && sudoAccountRE.MatchString(name[2:]):
		return nil
	case (name[0] == '%' || name[0] == '+') && sudoAccountRE.MatchString(name[1:]):
		return nil
	case strings.Contains(name, "#"):
		return fmt.Errorf("%s %q holds a #, which sudoers reads as the start of a comment unless it is a numeric id (#1000)", what, s)
	}
	return fmt.Errorf("%s %q is not a user or group sudoers reads: a name (letters, digits, \"_\", \".\" and \"-\"), #uid, %%group, %%#gid, +netgroup, ALL or an upper-case alias", what, s)
}

func normalizeSudoGroups(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull() {
		return v, nil
	}
	out := []string{}
	for _, g := range props.StringList(v) {
		if !strings.HasPrefix(g, "%") {
			g = "%" + g
		}
		out = append(out, g)
	}
	if len(out) == 0 {
		return cty.ListValEmpty(cty.String), nil
	}
	return props.StringListVal(out), nil
}

// checkSudoCommand is one command of a rule or an alias: ALL, an alias,
// sudoedit or list, or a full path with its arguments, each maybe
// negated with "!". Tags go in nopasswd, noexec and setenv, never here.
func checkSudoCommand(what, s string) error {
	if err := sudoLine(what, s); err != nil {
		return err
	}
	if c, i := bare(s, ",#", false); i >= 0 {
		if c == ',' {
			return fmt.Errorf("%s %q has a bare comma at byte %d, which sudoers reads as the start of another command (so /bin/a x, /bin/sh would grant a shell); give each command as its own element, and write \\, for a comma in an argument (in HCL: \"\\\\,\")", what, s, i+1)
		}
		return fmt.Errorf("%s %q has a bare # at byte %d, which sudoers reads as the start of a comment: the command would be allowed with any arguments; write \\# for a # in an argument (in HCL: \"\\\\#\")", what, s, i+1)
	}
	cmd := strings.TrimLeft(strings.TrimSpace(s), "! \t")
	first, _, _ := strings.Cut(cmd, " ")
	switch {
	case cmd == "ALL", sudoAliasRE.MatchString(cmd):
		return nil
	case first == "sudoedit", first == "list", strings.HasPrefix(first, "/"):
		return nil
	case strings.HasSuffix(first, ":"):
		return fmt.Errorf("%s %q starts with the tag %s: set nopasswd, noexec or setenv instead, so that the plan shows it", what, s, first)
	}
	return fmt.Errorf("%s %q is not a command sudoers reads: ALL, an upper-case Cmnd_Alias, sudoedit, or a full path (/usr/bin/systemctl restart nginx)", what, s)
}

var sudoHostRE = regexp.MustCompile(`^!?[A-Za-z0-9_.:/*?\[\]-]+$`)

// checkSudoHost is the host of a rule: ALL, a name (wildcards allowed),
// an address or network, or an alias.
func checkSudoHost(what, s string) error {
	if err := sudoLine(what, s); err != nil {
		return err
	}
	switch {
	case strings.Contains(s, ","):
		return fmt.Errorf("%s %q holds a comma: the rule holds on one host, network or Host_Alias (define a Host_Alias for several)", what, s)
	case strings.Contains(s, "#"):
		return fmt.Errorf("%s %q holds a #, which sudoers reads as the start of a comment", what, s)
	case strings.ContainsAny(s, " \t"):
		return fmt.Errorf("%s %q holds a space", what, s)
	case !sudoHostRE.MatchString(s):
		return fmt.Errorf("%s %q is not a host sudoers reads: ALL, a host name, an address or network, or an upper-case Host_Alias", what, s)
	}
	return nil
}

// checkSudoRunas is what goes between the parentheses of a rule:
// users, then ":" and groups, each a comma-separated list.
func checkSudoRunas(what, s string) error {
	if err := sudoLine(what, s); err != nil {
		return err
	}
	if strings.ContainsAny(s, "()") {
		return fmt.Errorf("%s %q holds a parenthesis: toque writes the parentheses around it", what, s)
	}
	users, groups, _ := strings.Cut(s, ":")
	for _, side := range []string{users, groups} {
		if side == "" {
			continue
		}
		for _, u := range strings.Split(side, ",") {
			if err := checkSudoUser(what, strings.TrimSpace(u)); err != nil {
				return err
			}
		}
	}
	if users == "" && groups == "" {
		return fmt.Errorf("%s must name a user or a group", what)
	}
	return nil
}

var sudoDefaultRE = regexp.MustCompile(`^!*[a-z_]+(\s*[-+]?=.*)?$`)

// checkSudoDefault is one Defaults setting: a flag (maybe negated), or
// name=value, += or -=.
func checkSudoDefault(what, s string) error {
	if err := sudoLine(what, s); err != nil {
		return err
	}
	if c, i := bare(s, ",#", true); i >= 0 {
		if c == ',' {
			return fmt.Errorf("%s %q has a comma at byte %d outside quotes, which sudoers reads as the start of another setting: give each setting as its own element", what, s, i+1)
		}
		return fmt.Errorf("%s %q has a # at byte %d outside quotes, which sudoers reads as the start of a comment", what, s, i+1)
	}
	if !sudoDefaultRE.MatchString(strings.TrimSpace(s)) {
		return fmt.Errorf("%s %q is not a Defaults setting: a flag (\"!requiretty\") or name=value (\"timestamp_timeout=10\")", what, s)
	}
	return nil
}

var envKeepRE = regexp.MustCompile(`^[A-Za-z_*][A-Za-z0-9_*]*$`)

func checkEnvKeep(what, s string) error {
	if err := sudoLine(what, s); err != nil {
		return err
	}
	if !envKeepRE.MatchString(s) {
		return fmt.Errorf("%s %q is not a variable name (letters, digits and _, or * as a wildcard): toque writes it in double quotes, where a quote, a space, a comma or a # would change the line", what, s)
	}
	return nil
}

func validateCommandAliases(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	seen := map[string]bool{}
	for i, a := range v.AsValueSlice() {
		if a.IsNull() {
			return fmt.Errorf("command_aliases[%d] must not be null", i)
		}
		name := props.StringOr(a.GetAttr("name"))
		what := fmt.Sprintf("command_aliases[%d]", i)
		switch up := strings.ToUpper(name); {
		case !sudoAliasRE.MatchString(up) || up == "ALL":
			return fmt.Errorf("%s: name %q is not an alias name: a letter, then letters, digits and _ (toque writes it in upper case, as Chef does); ALL is sudoers' own", what, name)
		case seen[up]:
			return fmt.Errorf("%s: the alias %s is defined twice", what, up)
		default:
			seen[up] = true
		}
		cmds := a.GetAttr("command_list")
		if cmds.IsNull() || cmds.LengthInt() == 0 {
			return fmt.Errorf("%s: command_list must name at least one command", what)
		}
		for j, c := range props.StringList(cmds) {
			if err := checkSudoCommand(fmt.Sprintf("%s.command_list[%d]", what, j), c); err != nil {
				return err
			}
		}
	}
	return nil
}

// sudoInputs are the properties the file is made of.
var sudoInputs = []string{"filename", "users", "groups", "commands", "host", "runas", "nopasswd", "noexec", "setenv", "defaults", "command_aliases", "env_keep_add", "env_keep_subtract"}

// renderSudoers is the file of r's properties (set or default), with the
// property each line comes from (lines[i] is line i+1's); ok is false
// when r grants nothing: no users, groups nor env_keep changes.
func renderSudoers(get func(string) cty.Value) (content string, lines []string, ok bool) {
	strs := func(name string) []string { return props.StringList(get(name)) }
	str := func(name string) string { return props.StringOr(get(name)) }
	flag := func(name string) bool { v := get(name); return !v.IsNull() && v.True() }
	sudoer := strings.Join(append(strs("groups"), strs("users")...), ",")
	if sudoer == "" && len(strs("env_keep_add")) == 0 && len(strs("env_keep_subtract")) == 0 {
		return "", nil, false
	}
	var b strings.Builder
	line := func(prop, text string) {
		b.WriteString(text + "\n")
		lines = append(lines, prop)
	}
	line("filename", fmt.Sprintf("# Managed by toque (sudo[%s]): changes made here are undone by its next apply.", str("filename")))
	if a := get("command_aliases"); !a.IsNull() {
		for _, alias := range a.AsValueSlice() {
			line("command_aliases", fmt.Sprintf("Cmnd_Alias %s = %s", strings.ToUpper(props.StringOr(alias.GetAttr("name"))), strings.Join(props.StringList(alias.GetAttr("command_list")), ", ")))
		}
	}
	for _, e := range strs("env_keep_add") {
		line("env_keep_add", fmt.Sprintf("Defaults env_keep += \"%s\"", e))
	}
	for _, e := range strs("env_keep_subtract") {
		line("env_keep_subtract", fmt.Sprintf("Defaults env_keep -= \"%s\"", e))
	}
	if sudoer != "" {
		tags := ""
		for _, tg := range []struct{ prop, tag string }{{"noexec", "NOEXEC:"}, {"nopasswd", "NOPASSWD:"}, {"setenv", "SETENV:"}} {
			if flag(tg.prop) {
				tags += tg.tag
			}
		}
		for _, c := range strs("commands") {
			line("commands", fmt.Sprintf("%s %s=(%s) %s%s", sudoer, str("host"), str("runas"), tags, c))
		}
		if d := strs("defaults"); len(d) > 0 {
			line("defaults", fmt.Sprintf("Defaults:%s %s", sudoer, strings.Join(d, ",")))
		}
	}
	return b.String(), lines, true
}

// sudoGetter is how renderSudoers reads values: the set value, else the
// default, else null.
func (t *sudoType) sudoGetter(values map[string]cty.Value) func(string) cty.Value {
	return func(name string) cty.Value {
		if v, ok := values[name]; ok && v != cty.NilVal && !v.IsNull() {
			return v
		}
		p := t.schema.Property(name)
		if p.Default != cty.NilVal {
			return p.Default
		}
		return cty.NullVal(p.Type)
	}
}

// Derive makes the file, mode 0440, owned by root.
func (t *sudoType) Derive(values map[string]cty.Value) (map[string]cty.Value, error) {
	out := map[string]cty.Value{"mode": cty.StringVal("0440"), "owner": cty.StringVal("root"), "group": cty.StringVal("root")}
	if v, ok := values["visudo_path"]; ok && !v.IsNull() {
		if w, ok := values["visudo_binary"]; ok && !w.IsNull() {
			return nil, errors.New("visudo_path and visudo_binary are both set: they are one setting (visudo_path is the sudo cookbook's name); keep visudo_binary")
		}
	}
	for _, n := range sudoInputs {
		if v, ok := values[n]; ok && v != cty.NilVal && !v.IsWhollyKnown() {
			out["content"] = cty.UnknownVal(cty.String)
			return out, nil
		}
	}
	get := t.sudoGetter(values)
	if len(props.StringList(get("defaults"))) > 0 && len(props.StringList(get("users")))+len(props.StringList(get("groups"))) == 0 {
		return nil, errors.New("defaults are for users and groups: set users or groups too")
	}
	if content, _, ok := renderSudoers(get); ok {
		out["content"] = cty.StringVal(content)
	}
	return out, nil
}

// paths are r's sudoers.d directory, its file there, and the main
// sudoers file.
func (t *sudoType) paths(r *resources.Resource) (dir, file, main string) {
	prefix := r.String("config_prefix")
	dir = filepath.Join(prefix, "sudoers.d")
	return dir, filepath.Join(dir, r.String("filename")), filepath.Join(prefix, "sudoers")
}

// visudo is the visudo r names.
func visudo(r *resources.Resource) string {
	if r.IsSet("visudo_path") {
		return r.String("visudo_path")
	}
	return r.String("visudo_binary")
}

// fileRes is the file resource r's file is.
func (t *sudoType) fileRes(r *resources.Resource) *resources.Resource {
	_, path, _ := t.paths(r)
	vals := map[string]cty.Value{"path": cty.StringVal(path)}
	for _, k := range []string{"content", "mode", "owner", "group"} {
		if r.IsSet(k) {
			vals[k] = r.Values[k]
		}
	}
	return resources.NewResource(t.file.Schema(), path, r.EffectiveAction(), vals)
}

// Load reads the file as the file type does, and records in Extra what
// Plan decides on besides: "sudoers_d" when the directory is missing
// (the create makes it, as Chef's does), "includedir" when the main
// sudoers file, readable, does not include the directory (sudo would not
// read the file), and "visudo": "ok", "missing" (no visudo here) or what
// visudo says of the file r's properties make, with "visudo_property",
// the property of the line it names.
func (t *sudoType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	dir, _, main := t.paths(r)
	st, err := t.file.Load(ctx, t.fileRes(r).LoadView())
	if err != nil {
		return nil, err
	}
	if st.Extra == nil {
		st.Extra = map[string]string{}
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		st.Extra["sudoers_d"] = "missing"
	}
	if data, err := os.ReadFile(main); err == nil && !includesDir(string(data), dir) {
		st.Extra["includedir"] = "missing"
	}
	content, lines, ok := renderSudoers(t.sudoGetter(r.Values))
	if !ok || r.EffectiveAction() == "delete" {
		return st, nil
	}
	verdict, line, err := checkSudoers(ctx, visudo(r), content, r.String("filename"))
	if err != nil {
		return nil, err
	}
	st.Extra["visudo"] = verdict
	if line > 0 && line <= len(lines) {
		st.Extra["visudo_property"] = lines[line-1]
	}
	return st, nil
}

// includesDir reports whether sudoers text includes dir (@includedir or
// #includedir, sudo's older spelling).
func includesDir(text, dir string) bool {
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && (f[0] == "@includedir" || f[0] == "#includedir") && filepath.Clean(f[1]) == dir {
			return true
		}
	}
	return false
}

// visudoTimeout bounds one visudo -cf.
const visudoTimeout = 30 * time.Second

// visudoLineRE finds visudo's "FILE:LINE:COL: message".
var visudoLineRE = regexp.MustCompile(`:([0-9]+):[0-9]+: `)

// visudoCaretRE is a line of carets and spaces under a line visudo
// quotes.
var visudoCaretRE = regexp.MustCompile(`(?m)^[ \t^~]*$`)

// checkSudoers runs `visudo -cf` on content, written to a file named name
// in a private temporary directory. verdict is "ok", "missing" when the
// visudo binary is not there, or visudo's complaint (the temporary path
// replaced by the file's name); line is the line it names, 0 for none.
func checkSudoers(ctx context.Context, bin, content, name string) (verdict string, line int, err error) {
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() {
		return "missing", 0, nil
	}
	tmp, err := os.MkdirTemp("", "toque-visudo-")
	if err != nil {
		return "", 0, fmt.Errorf("checking the sudoers file: %w", err)
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, name)
	if err := os.WriteFile(path, []byte(content), 0o440); err != nil {
		return "", 0, fmt.Errorf("checking the sudoers file: %w", err)
	}
	res, err := shellexec.Run(ctx, shellexec.Spec{Argv: []string{bin, "-cf", path}, Timeout: visudoTimeout})
	var ee *shellexec.ExitError
	switch {
	case err == nil:
		return "ok", 0, nil
	case errors.As(err, &ee) && res != nil:
		// Without the caret lines under the line it quotes.
		text := visudoCaretRE.ReplaceAllString(res.Stderr+"\n"+res.Stdout, "")
		msg := strings.ReplaceAll(hostexec.LastLines(text, 3), path, name)
		if m := visudoLineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		return msg, line, nil
	}
	return "", 0, fmt.Errorf("running %s -cf: %w", bin, err)
}

// Plan is the file type's Plan of the file, refused when visudo rejects
// it; a missing sudoers.d is made by the create, and a main sudoers file
// that does not include it is said in a note.
func (t *sudoType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	dir, _, main := t.paths(desired)
	if content := desired.Values["content"]; action == "create" {
		if !desired.IsSet("content") {
			return nil, &resources.PropertyError{Property: "users", Err: errors.New("create needs users, groups, env_keep_add or env_keep_subtract: a file that grants nothing")}
		}
		// Load checked the file the values it was given make; a value
		// known only at apply (lazy) is checked once it is known.
		switch v := current.Extra["visudo"]; {
		case !content.IsWhollyKnown(), v == "", v == "ok", v == "missing":
		default:
			prop := current.Extra["visudo_property"]
			if prop == "" || prop == "filename" {
				prop = "users"
			}
			return nil, &resources.PropertyError{Property: prop, Err: fmt.Errorf("visudo rejects the sudoers file toque would write (%s): %s", filepath.Join(dir, desired.String("filename")), v)}
		}
	}
	step, err := t.file.Plan(action, t.fileRes(desired), current)
	if err != nil || step.Kind != resources.Create && step.Kind != resources.Update {
		return step, err
	}
	var notes []string
	if current.Extra["sudoers_d"] == "missing" {
		step.Needs = withoutNeed(step.Needs, dir)
		step.Provides = append(step.Provides, resources.Need{Namespace: resources.NamespacePath, Value: dir, What: "directory"})
		step.Reason += "; " + dir + " is made too (0755, root's)"
	}
	if current.Extra["visudo"] == "missing" {
		notes = append(notes, visudo(desired)+" is not installed yet: apply checks the file with it right before writing, and writes nothing without it")
	}
	if current.Extra["includedir"] == "missing" {
		notes = append(notes, main+" has no @includedir "+dir+" line: sudo will not read this file")
	}
	if c := step.Change("content"); c != nil && len(notes) > 0 {
		c.Note = strings.Join(notes, "; ")
	}
	return needsRoot(step, "writing a sudoers file")
}

// withoutNeed is needs without the directory dir.
func withoutNeed(needs []resources.Need, dir string) []resources.Need {
	var out []resources.Need
	for _, n := range needs {
		if !(n.Namespace == resources.NamespacePath && n.Value == dir) {
			out = append(out, n)
		}
	}
	return out
}

// Predict is the file's.
func (t *sudoType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	st, err := resources.Predict(t.file, t.fileRes(desired), current, step)
	if err == nil && step.Kind.IsWork() {
		delete(st.Extra, "sudoers_d")
	}
	return st, err
}

// Steps check the content with visudo again, right before it is written
// (it is the exact bytes the file will hold), make sudoers.d when it is
// missing, then write or delete the file through the file type.
func (t *sudoType) Steps() resources.Steps {
	return resources.Same(func(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
		dir, path, _ := t.paths(desired)
		if step.HasGroup("content") {
			verdict, _, err := checkSudoers(ctx, visudo(desired), desired.String("content"), desired.String("filename"))
			switch {
			case err != nil:
				return fmt.Errorf("%w; %s was not written", err, path)
			case verdict == "missing":
				return fmt.Errorf("%s is not installed, and toque writes a sudoers file only once visudo has accepted it: install sudo first (a package resource before this one); %s was not written", visudo(desired), path)
			case verdict != "ok":
				return fmt.Errorf("visudo rejects the sudoers file: %s; %s was not written", verdict, path)
			}
		}
		if step.Kind != resources.Delete && current.Extra["sudoers_d"] == "missing" {
			dr := resources.NewResource(t.dir.Schema(), dir, "create", map[string]cty.Value{
				"path": cty.StringVal(dir), "mode": cty.StringVal("0755"), "owner": cty.StringVal("root"), "group": cty.StringVal("root"),
			})
			ds, err := t.dir.Load(ctx, dr.LoadView())
			if err != nil {
				return err
			}
			dstep, err := resources.PlanStep(t.dir, dr, ds)
			if err != nil {
				return err
			}
			if err := resources.ConvergeStep(ctx, t.dir, env, dr, ds, dstep); err != nil {
				return err
			}
		}
		return resources.ConvergeStep(ctx, t.file, env, t.fileRes(desired), current, step)
	})
}
