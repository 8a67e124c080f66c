package system

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/testenv"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// cronRes builds a cron_d resource as the evaluator does: decoded
// properties, then the derived file.
func cronRes(t *testing.T, typ *cronDType, action string, vals map[string]any) *resources.Resource {
	t.Helper()
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

// The file toque writes: header, comment, variables (quoted where cron
// would otherwise read them differently), the job line, a final newline.
func TestCronDFile(t *testing.T) {
	typ := newCronDType(t.TempDir(), "")
	r := cronRes(t, typ, "create", map[string]any{
		"name": "backup", "minute": "15", "hour": "2-4", "weekday": "mon-fri",
		"command": `tar czf /srv/backup-$(date +\%F).tgz /srv/data`, "user": "daemon",
		"mailto": "", "path": "/usr/bin:/bin", "shell": "/bin/bash", "comment": "nightly",
		"environment": map[string]string{"Z": "last", "A": "  padded", "Q": `"quoted`, "B": `both " and`},
	})
	want := `# Managed by toque (cron_d[backup]): changes made here are undone by its next apply.
# nightly
MAILTO=""
PATH=/usr/bin:/bin
SHELL=/bin/bash
A="  padded"
B=both " and
Q='"quoted'
Z=last
15 2-4 * * mon-fri daemon tar czf /srv/backup-$(date +\%F).tgz /srv/data
`
	if got := r.String("content"); got != want {
		t.Errorf("content:\n%s\nwant:\n%s", got, want)
	}
	if r.String("mode") != "0644" || r.String("owner") != "root" || r.String("group") != "root" {
		t.Errorf("mode %s owner %s group %s", r.String("mode"), r.String("owner"), r.String("group"))
	}
	r = cronRes(t, typ, "create", map[string]any{"name": "boot", "time": "reboot", "command": "/usr/local/bin/warm"})
	if got := r.String("content"); !strings.HasSuffix(got, "\n@reboot root /usr/local/bin/warm\n") {
		t.Errorf("time: %q", got)
	}
	if _, err := typ.Derive(resourcetest.NewRes(t, typ, "create", map[string]any{"name": "x", "time": "daily", "hour": "3", "command": "true"}).Values); err == nil || !strings.Contains(err.Error(), "time and hour are both set") {
		t.Errorf("time with hour: %v", err)
	}
	// Unknown at validate time: the content is unknown too.
	vals := resourcetest.NewRes(t, typ, "create", map[string]any{"name": "x", "command": "true"}).Values
	vals["hour"] = cty.UnknownVal(cty.String)
	if d, err := typ.Derive(vals); err != nil || d["content"].IsKnown() {
		t.Errorf("unknown hour: %v %#v", err, d["content"])
	}
}

// Each field as cron reads it (Debian's cron 3.0pl1, measured): what
// would make cron ignore the whole file is a plan error.
func TestCronDFieldValidation(t *testing.T) {
	cases := []struct {
		field int
		v     string
		want  string // "" valid
	}{
		{0, "*", ""}, {0, "0", ""}, {0, "59", ""}, {0, "01", ""}, {0, "*/15", ""}, {0, "0-30/10", ""},
		{0, "1,3-5,*/20", ""}, {0, "*/100", ""},
		{0, "60", "60 is out of range: minute runs from 0 to 59"},
		{0, "-1", "is not a number"},
		{0, "5/10", "a step needs a range"},
		{0, "0-30/0", "the step \"0\" must be a whole number of 1 or more"},
		{0, "30-5", "runs backwards"},
		{0, "", "must not be empty"},
		{0, "1,,2", "is not a number"},
		{1, "24", "out of range"},
		{2, "0", "0 is out of range: day runs from 1 to 31"},
		{2, "31", ""},
		{3, "jan-mar", ""}, {3, "DEC", ""}, {3, "13", "out of range"}, {3, "january", "neither a number from 1 to 12 nor a name"},
		{4, "mon-fri", ""}, {4, "sun,sat", ""}, {4, "7", ""}, {4, "mon-7", ""}, {4, "8", "out of range"}, {4, "*/7", ""},
	}
	for _, c := range cases {
		f := cronFields[c.field]
		err := f.check(c.v)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s %q: %v, want %q", f.name, c.v, err, c.want)
		}
	}
	typ := CronDType().(*cronDType)
	for _, c := range []struct {
		prop string
		v    cty.Value
		want string
	}{
		{"name", cty.StringVal("toque_ok-1"), ""},
		{"name", cty.StringVal("toque.dotted"), "would silently ignore \"toque.dotted\""},
		{"command", cty.StringVal(`date +\%s`), ""},
		{"command", cty.StringVal(`date +%s`), "bare % at byte 7"},
		{"command", cty.StringVal("a\nb"), "must be one line"},
		{"command", cty.StringVal(strings.Repeat("x", 991)), "at most 990"},
		{"environment", cty.MapVal(map[string]cty.Value{"PATH": cty.StringVal("/bin")}), "set PATH with the path property"},
		{"environment", cty.MapVal(map[string]cty.Value{"1X": cty.StringVal("y")}), "is not a variable name"},
		{"environment", cty.MapVal(map[string]cty.Value{"X": cty.StringVal("a\nb")}), "must be one line"},
		{"environment", cty.MapVal(map[string]cty.Value{"X": cty.StringVal("a ")}), "ends with a space, which cron drops"},
		{"environment", cty.MapVal(map[string]cty.Value{"X": cty.StringVal(`"q"`)}), "starts and ends with \", which cron removes"},
		{"environment", cty.MapVal(map[string]cty.Value{"X": cty.StringVal(` both ' and "`)}), "holds both kinds of quote"},
		{"environment", cty.MapVal(map[string]cty.Value{"X": cty.StringVal(`a'b"c # d = e`)}), ""},
		{"mailto", cty.StringVal("ops@example.com"), ""},
		{"time", cty.StringVal("@weekly"), ""},
		{"time", cty.StringVal("fortnightly"), "time must be one of"},
		{"content", cty.StringVal("x"), "a recipe does not set it"},
		{"mode", cty.StringVal("0600"), "a recipe does not set it"},
	} {
		err := typ.schema.Property(c.prop).Validate(c.v)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s = %#v: %v, want %q", c.prop, c.v, err, c.want)
		}
	}
}

// A cron file's life: created root's 0644, a second plan is a no-op, a
// changed hour is a content diff, a mode someone loosened is put back,
// delete. A user that does not exist is a need.
func TestCronDLifecycle(t *testing.T) {
	testenv.MustHave(t, testenv.Root) // the file is root's
	dir := t.TempDir()
	typ := newCronDType(dir, "")
	env := resourcetest.TestEnv(t)
	vals := map[string]any{"name": "toque_job", "minute": "*/5", "command": "echo hi"}
	step := resourcetest.Apply(t, typ, env, cronRes(t, typ, "create", vals), resources.Create)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "content,mode,owner,group" {
		t.Errorf("create changes %s", got)
	}
	path := filepath.Join(dir, "toque_job")
	if got := resourcetest.ReadFile(t, path); !strings.HasSuffix(got, "\n*/5 * * * * root echo hi\n") {
		t.Errorf("file: %q", got)
	}
	if resourcetest.PermOf(t, path) != 0o644 {
		t.Errorf("mode %04o", resourcetest.PermOf(t, path))
	}
	vals["hour"] = "3"
	step = resourcetest.Apply(t, typ, env, cronRes(t, typ, "create", vals), resources.Update)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "content" {
		t.Errorf("update changes %s", got)
	}
	os.Chmod(path, 0o664)
	step = resourcetest.Apply(t, typ, env, cronRes(t, typ, "create", vals), resources.Update)
	if got := strings.Join(resourcetest.ChangedProps(step), ","); got != "mode" {
		t.Errorf("loosened mode: changes %s", got)
	}
	resourcetest.Apply(t, typ, env, cronRes(t, typ, "delete", map[string]any{"name": "toque_job"}), resources.Delete)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("not deleted: %v", err)
	}

	_, step = resourcetest.Plan(t, typ, cronRes(t, typ, "create", map[string]any{"name": "x", "command": "true", "user": "nosuchuser"}))
	if len(step.Needs) != 1 || step.Needs[0] != (resources.Need{Namespace: resources.NamespaceUser, Value: "nosuchuser", What: "user"}) {
		t.Errorf("needs %v", step.Needs)
	}
	resourcetest.PlanErr(t, typ, cronRes(t, typ, "create", map[string]any{"name": "x"}), "create needs a command")
}
