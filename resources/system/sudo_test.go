package system

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// sudoRes builds a sudo resource as the evaluator does: decoded
// properties, then the derived file.
func sudoRes(t *testing.T, action string, vals map[string]any) *resources.Resource {
	t.Helper()
	typ := newSudoType()
	r := resourcetest.NewRes(t, typ, action, vals)
	derived, err := typ.Derive(r.Values)
	if err != nil {
		t.Fatalf("Derive: %v", err)
	}
	for k, v := range derived {
		r.Values[k] = v
	}
	return r
}

// The file is Chef's sudoer template, line for line: aliases, env_keep
// changes, one rule per command with the tags in Chef's order, then the
// users' Defaults.
func TestSudoFile(t *testing.T) {
	r := sudoRes(t, "create", map[string]any{
		"filename": "web", "users": []string{"bob", "#1001"}, "groups": []string{"webteam", "%ops"},
		"commands": []string{"/usr/bin/systemctl restart nginx", "WEB"}, "runas": "root:www-data", "host": "web*.example.com",
		"nopasswd": true, "noexec": true, "setenv": true, "defaults": []string{"!requiretty", "timestamp_timeout=10"},
		"env_keep_add": []string{"HTTP_PROXY"}, "env_keep_subtract": []string{"LD_*"},
		"command_aliases": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"name": cty.StringVal("web"), "command_list": cty.ListVal([]cty.Value{cty.StringVal("/usr/sbin/nginx -t"), cty.StringVal("/usr/sbin/nginx -s reload")}),
		})}),
	})
	want := `# Managed by toque (sudo[web]): changes made here are undone by its next apply.
Cmnd_Alias WEB = /usr/sbin/nginx -t, /usr/sbin/nginx -s reload
Defaults env_keep += "HTTP_PROXY"
Defaults env_keep -= "LD_*"
%webteam,%ops,bob,#1001 web*.example.com=(root:www-data) NOEXEC:NOPASSWD:SETENV:/usr/bin/systemctl restart nginx
%webteam,%ops,bob,#1001 web*.example.com=(root:www-data) NOEXEC:NOPASSWD:SETENV:WEB
Defaults:%webteam,%ops,bob,#1001 !requiretty,timestamp_timeout=10
`
	if got := r.String("content"); got != want {
		t.Errorf("content:\n%s\nwant:\n%s", got, want)
	}
	if r.String("mode") != "0440" || r.String("owner") != "root" || r.String("group") != "root" {
		t.Errorf("mode %s owner %s group %s", r.String("mode"), r.String("owner"), r.String("group"))
	}
	// Chef's defaults: every command, on every host, as anyone.
	r = sudoRes(t, "create", map[string]any{"filename": "admin", "users": []string{"admin"}})
	if got := r.String("content"); !strings.HasSuffix(got, "\nadmin ALL=(ALL) ALL\n") || strings.Count(got, "\n") != 2 {
		t.Errorf("defaults: %q", got)
	}
	// A lazy value: the content is known only at apply.
	vals := resourcetest.NewRes(t, newSudoType(), "create", map[string]any{"filename": "x"}).Values
	vals["users"] = cty.UnknownVal(cty.List(cty.String))
	if d, err := newSudoType().Derive(vals); err != nil || d["content"].IsKnown() {
		t.Errorf("unknown users: %v %#v", err, d["content"])
	}
	for _, c := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"filename": "x", "defaults": []string{"!requiretty"}, "env_keep_add": []string{"A"}}, "defaults are for users and groups"},
		{map[string]any{"filename": "x", "users": []string{"a"}, "visudo_path": "/usr/sbin/visudo", "visudo_binary": "/usr/sbin/visudo"}, "both set"},
	} {
		if _, err := newSudoType().Derive(resourcetest.NewRes(t, newSudoType(), "create", c.vals).Values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.vals, err, c.want)
		}
	}
}

// Bad input is refused when the recipe is read, before visudo: what
// would end a line, start a comment, split a name or a command in two,
// or smuggle a tag past the plan.
func TestSudoValidation(t *testing.T) {
	typ := newSudoType()
	list := func(xs ...string) cty.Value {
		if len(xs) == 0 {
			return cty.ListValEmpty(cty.String)
		}
		vs := make([]cty.Value, len(xs))
		for i, x := range xs {
			vs[i] = cty.StringVal(x)
		}
		return cty.ListVal(vs)
	}
	alias := func(name string, cmds ...string) cty.Value {
		return cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(name), "command_list": list(cmds...)})})
	}
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string // "" valid
	}{
		{"filename", cty.StringVal("web-team_1"), ""},
		{"filename", cty.StringVal("web.team"), "sudo silently skips"},
		{"filename", cty.StringVal("backup~"), "sudo silently skips"},
		{"filename", cty.StringVal("../sudoers"), "sudo silently skips"},
		{"users", list("bob", "#1000", "%wheel", "%#27", "+admins", "ADMINS", "ALL", "svc$"), ""},
		{"users", list("bob,eve"), "holds a comma"},
		{"users", list("bob\nALL ALL=(ALL) NOPASSWD: ALL"), "must be one line"},
		{"users", list("bob ALL"), "holds a space"},
		{"users", list("#bob"), "start of a comment"},
		{"users", list("bob#x"), "start of a comment"},
		{"users", list(""), "must not be empty"},
		{"users", list("bo(b"), "is not a user or group"},
		{"groups", list("sysadmins, superusers"), "holds a comma"},
		{"commands", list("ALL", "WEB_CMDS", "/usr/bin/systemctl restart nginx", "!/bin/su", "sudoedit /etc/motd", `/bin/echo a\,b`, `/bin/echo \#1`), ""},
		{"commands", list("/bin/ls /tmp, /bin/sh"), "bare comma at byte 13"},
		// A double quote is not quoting in a command (cvtsudoers reads
		// this as /usr/bin/printf "x and ALL).
		{"commands", list(`/usr/bin/printf "x, ALL`), "bare comma at byte 19"},
		{"commands", list(`/usr/bin/printf "a # b"`), "bare # at byte 20"},
		{"commands", list("/usr/bin/less /var/log/syslog # read-only"), "bare # at byte 31"},
		{"commands", list(`/bin/foo \`), "ends with a backslash"},
		{"commands", list("/bin/foo\n/bin/sh"), "must be one line"},
		{"commands", list("NOPASSWD: /bin/sh"), "starts with the tag NOPASSWD:"},
		{"commands", list("systemctl restart nginx"), "full path"},
		{"host", cty.StringVal("ALL"), ""},
		{"host", cty.StringVal("web*.example.com"), ""},
		{"host", cty.StringVal("10.0.0.0/8"), ""},
		{"host", cty.StringVal("a,b"), "holds a comma"},
		{"host", cty.StringVal("web # prod"), "start of a comment"},
		{"host", cty.StringVal("web=1"), "is not a host"},
		{"runas", cty.StringVal("ALL:ALL"), ""},
		{"runas", cty.StringVal("root,operator:wheel"), ""},
		{"runas", cty.StringVal("root) ALL=(ALL"), "parenthesis"},
		{"runas", cty.StringVal("root\nbob"), "must be one line"},
		{"defaults", list("!requiretty", "timestamp_timeout=10", `secure_path="/usr/sbin:/usr/bin"`, `env_keep+="A B"`), ""},
		{"defaults", list("!requiretty,!lecture"), "comma at byte 12 outside quotes"},
		{"defaults", list("lecture=always # x"), "# at byte 16 outside quotes"},
		{"defaults", list("Defaults:bob !requiretty"), "is not a Defaults setting"},
		{"env_keep_add", list("HTTP_PROXY", "LC_*"), ""},
		{"env_keep_add", list(`A" env_reset "`), "is not a variable name"},
		{"env_keep_subtract", list("A,B"), "is not a variable name"},
		{"command_aliases", alias("web", "/usr/sbin/nginx -t"), ""},
		{"command_aliases", alias("web team", "/bin/a"), "is not an alias name"},
		{"command_aliases", alias("ALL", "/bin/a"), "is not an alias name"},
		{"command_aliases", alias("WEB", "/bin/a, /bin/sh"), "command_aliases[0].command_list[0]"},
		{"command_aliases", alias("WEB"), "at least one command"},
		{"content", cty.StringVal("x"), "a recipe does not set it"},
		{"mode", cty.StringVal("0644"), "a recipe does not set it"},
	} {
		err := typ.schema.Property(c.prop).Validate(c.v)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
}

// A file that passes toque's checks but that visudo rejects (an unknown
// Defaults entry, a bare ":" in an argument) is a plan error, pointing at
// the property of the line visudo names; nothing is written.
func TestSudoVisudoRefusesAtPlan(t *testing.T) {
	testenv.MustHave(t, testenv.Visudo)
	prefix := t.TempDir()
	for _, c := range []struct {
		vals       map[string]any
		prop, want string
	}{
		{map[string]any{"users": []string{"bob"}, "defaults": []string{"nosuchdefault"}}, "defaults", `unknown defaults entry "nosuchdefault"`},
		{map[string]any{"users": []string{"bob"}, "defaults": []string{"timestamp_timeout=abc"}}, "defaults", `value "abc" is invalid for option "timestamp_timeout"`},
		{map[string]any{"users": []string{"bob"}, "commands": []string{"/bin/ls", "/usr/bin/printf a:b"}}, "commands", "web:3:"},
	} {
		c.vals["filename"] = "web"
		c.vals["config_prefix"] = prefix
		r := sudoRes(t, "create", c.vals)
		st := resourcetest.Load(t, newSudoType(), r)
		_, err := resources.PlanStep(newSudoType(), r, st)
		var pe *resources.PropertyError
		if !errors.As(err, &pe) || pe.Property != c.prop || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "visudo rejects") {
			t.Errorf("%v: plan error %v (%#v), want one on %s containing %q", c.vals, err, pe, c.prop, c.want)
		}
		if strings.Contains(err.Error(), "toque-visudo-") {
			t.Errorf("the message names the temporary file: %v", err)
		}
	}
	if entries, _ := os.ReadDir(prefix); len(entries) != 0 {
		t.Errorf("planning wrote %v", entries)
	}
}

// A sudoers file's life: sudoers.d made when missing, the file created
// root's 0440 after visudo accepted it, a second plan a no-op, a change
// of users an update, delete. A main sudoers without the @includedir is
// said in a note.
func TestSudoLifecycle(t *testing.T) {
	testenv.MustHave(t, testenv.Root, testenv.Visudo)
	prefix := t.TempDir()
	resourcetest.WriteFile(t, filepath.Join(prefix, "sudoers"), "root ALL=(ALL:ALL) ALL\n", 0o440)
	typ := newSudoType()
	env := resourcetest.TestEnv(t)
	vals := map[string]any{"filename": "admins", "config_prefix": prefix, "groups": []string{"admins"}, "nopasswd": true}
	_, step := resourcetest.Plan(t, typ, sudoRes(t, "create", vals))
	if c := step.Change("content"); c == nil || !strings.Contains(c.Note, "no @includedir "+filepath.Join(prefix, "sudoers.d")) {
		t.Errorf("no note of the missing @includedir: %+v", step.Changes)
	}
	if len(step.Needs) != 0 || len(step.Provides) != 1 || !strings.Contains(step.Reason, "sudoers.d is made too") {
		t.Errorf("needs %v provides %v reason %q", step.Needs, step.Provides, step.Reason)
	}
	step = resourcetest.Apply(t, typ, env, sudoRes(t, "create", vals), resources.Create)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "content,mode,owner,group" {
		t.Errorf("create changes %s", got)
	}
	path := filepath.Join(prefix, "sudoers.d", "admins")
	if got := resourcetest.ReadFile(t, path); !strings.HasSuffix(got, "\n%admins ALL=(ALL) NOPASSWD:ALL\n") {
		t.Errorf("file: %q", got)
	}
	if m := resourcetest.PermOf(t, path); m != 0o440 {
		t.Errorf("mode %04o", m)
	}
	if m := resourcetest.PermOf(t, filepath.Dir(path)); m != 0o755 {
		t.Errorf("sudoers.d mode %04o", m)
	}
	resourcetest.WriteFile(t, filepath.Join(prefix, "sudoers"), "root ALL=(ALL:ALL) ALL\n@includedir "+filepath.Join(prefix, "sudoers.d")+"\n", 0o440)
	vals["users"] = []string{"deploy"}
	step = resourcetest.Apply(t, typ, env, sudoRes(t, "create", vals), resources.Update)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "content" || step.Changes[0].Note != "" {
		t.Errorf("update changes %s (note %q)", got, step.Changes[0].Note)
	}
	resourcetest.Apply(t, typ, env, sudoRes(t, "delete", map[string]any{"filename": "admins", "config_prefix": prefix}), resources.Delete)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("not deleted: %v", err)
	}
	resourcetest.PlanErr(t, typ, sudoRes(t, "create", map[string]any{"filename": "x", "config_prefix": prefix}), "create needs users, groups")
}

// Without visudo there is no file: the plan says the file will be
// checked at apply, and apply, still without it, writes nothing.
func TestSudoNeverLandsUnchecked(t *testing.T) {
	testenv.MustHave(t, testenv.Root)
	prefix := t.TempDir()
	typ := newSudoType()
	r := sudoRes(t, "create", map[string]any{"filename": "x", "config_prefix": prefix, "users": []string{"bob"}, "visudo_binary": filepath.Join(prefix, "no-visudo")})
	_, step := resourcetest.Plan(t, typ, r)
	if c := step.Change("content"); c == nil || !strings.Contains(c.Note, "is not installed yet: apply checks the file with it right before writing") {
		t.Errorf("changes %+v", step.Changes)
	}
	resourcetest.ConvergeErr(t, typ, resourcetest.TestEnv(t), r, "writes a sudoers file only once visudo has accepted it")
	if _, err := os.Stat(filepath.Join(prefix, "sudoers.d", "x")); !os.IsNotExist(err) {
		t.Errorf("the file landed unchecked: %v", err)
	}
}
