package system

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/accounts"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/props"
)

// cronDType is the built-in "cron_d" type: one job in a file of
// /etc/cron.d, which Debian's cron reads as it reads /etc/crontab. The
// recipe gives the schedule, the command, the user and the environment;
// the type derives the file from them (Deriver) when the recipe is
// evaluated, so that the plan shows, diffs and applies the exact file.
// The file itself is managed as the file type manages one (held
// directories, atomic writes, backups), always root's and mode 0644.
type cronDType struct {
	schema *resources.Schema
	file   resources.Type
	// dir is where the files go; root is where the user database is
	// ("" for the host's; tests use throwaway ones).
	dir, root string
}

// CronDType returns the built-in "cron_d" resource type.
func CronDType() resources.Type { return newCronDType("/etc/cron.d", "") }

// cronDerived marks the properties the type derives: a recipe does not
// set them.
func cronDerived(name string) func(cty.Value) error {
	return func(cty.Value) error {
		return fmt.Errorf("%s is made by toque from the schedule, the command and the environment; a recipe does not set it (use a file resource to write a cron file by hand)", name)
	}
}

func newCronDType(dir, root string) *cronDType {
	field := func(name, desc string, f cronField) *resources.Property {
		return &resources.Property{Name: name, Type: cty.String, NonState: true, Default: cty.StringVal("*"),
			Normalize: accounts.TrimString, Validate: f.validate, Description: desc}
	}
	return &cronDType{dir: dir, root: root, file: files.FileType(), schema: &resources.Schema{
		Name:        "cron_d",
		Description: "Manages a job in a file of /etc/cron.d.",
		Properties: []*resources.Property{
			{Name: "name", Type: cty.String, NameProperty: true, Identity: true, Required: true,
				Validate: validateCronName, Namespace: "cron_d",
				Description: "The file's name in /etc/cron.d: letters, digits, \"_\" and \"-\"; defaults to the block label."},
			field("minute", "Minutes, 0-59: a number, a range (1-5), a step (*/15, 0-30/10) or a list of them.", cronFields[0]),
			field("hour", "Hours, 0-23, written as minute is.", cronFields[1]),
			field("day", "Days of the month, 1-31, written as minute is.", cronFields[2]),
			field("month", "Months, 1-12 or jan-dec, written as minute is.", cronFields[3]),
			field("weekday", "Days of the week, 0-7 (0 and 7 are Sunday) or sun-sat, written as minute is.", cronFields[4]),
			{Name: "time", Type: cty.String, NonState: true, Normalize: accounts.TrimString, Validate: validateCronTime,
				Description: "Instead of the five fields: reboot, yearly, annually, monthly, weekly, daily, midnight or hourly."},
			{Name: "command", Type: cty.String, NonState: true, Validate: validateCronCommand,
				Description: "The command, run by the user's shell; a literal % is written \\% (cron turns a bare % into a newline). Required by create."},
			{Name: "user", Type: cty.String, NonState: true, Default: cty.StringVal("root"), Normalize: accounts.TrimString,
				Validate:    accounts.ValidateAccountName("user"),
				Description: "The user the command runs as; it must exist, or be created by a user resource earlier in the plan."},
			{Name: "environment", Type: cty.Map(cty.String), NonState: true, Validate: validateCronEnvironment,
				Description: "Variables set for the command (NAME = value), written before it in the file."},
			{Name: "mailto", Type: cty.String, NonState: true, Validate: validateCronValue("mailto"),
				Description: "Where cron mails the command's output (MAILTO); \"\" mails nothing."},
			{Name: "path", Type: cty.String, NonState: true, Validate: validateCronValue("path"),
				Description: "The PATH the command runs with."},
			{Name: "shell", Type: cty.String, NonState: true, Normalize: accounts.NormalizeAbsField("shell"), Validate: validateCronValue("shell"),
				Description: "The shell that runs the command (SHELL); cron's default is /bin/sh."},
			{Name: "comment", Type: cty.String, NonState: true, Validate: validateCronLine("comment"),
				Description: "A comment written above the job."},
			{Name: "content", Type: cty.String, Content: true, Validate: cronDerived("content"),
				Description: "The file, made by toque from the properties above; a recipe does not set it."},
			{Name: "mode", Type: cty.DynamicPseudoType, Normalize: files.NormalizeMode, Validate: cronDerived("mode"),
				Description: "Always 0644: cron skips a group- or other-writable file. Set by toque."},
			{Name: "owner", Type: cty.String, Group: "owner", Equal: props.EqualOwner, Validate: cronDerived("owner"),
				Description: "Always root: cron skips a file another user owns. Set by toque."},
			{Name: "group", Type: cty.String, Group: "owner", Equal: props.EqualGroup, Validate: cronDerived("group"),
				Description: "Always root. Set by toque."},
		},
		Actions:       []string{"create", "create_if_missing", "delete"},
		DefaultAction: "create",
	}}
}

func (t *cronDType) Schema() *resources.Schema { return t.schema }

// cronNameRE is the names Debian's cron reads in /etc/cron.d (without -l;
// others, "x.conf" or "x~" say, are silently ignored).
var cronNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func validateCronName(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	if s := v.AsString(); !cronNameRE.MatchString(s) {
		return fmt.Errorf("cron reads only files of /etc/cron.d whose names are letters, digits, \"_\" and \"-\", and would silently ignore %q; write it with \"-\" for \".\" (as Chef does)", s)
	}
	return nil
}

// cronField is one of the five time fields: its range and names.
type cronField struct {
	name     string
	low, max int
	names    []string // names[i] is low+i
}

var cronFields = [5]cronField{
	{name: "minute", low: 0, max: 59},
	{name: "hour", low: 0, max: 23},
	{name: "day", low: 1, max: 31},
	{name: "month", low: 1, max: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{name: "weekday", low: 0, max: 7, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

func (f cronField) validate(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	return f.check(v.AsString())
}

// check parses s as cron's parser does (entry.c: a list of ranges, each
// "*", N or N-M, with an optional /STEP), refusing what would make cron
// ignore the whole file.
func (f cronField) check(s string) error {
	if s == "" {
		return fmt.Errorf("%s must not be empty (\"*\" means every %s)", f.name, f.name)
	}
	for _, item := range strings.Split(s, ",") {
		if err := f.checkRange(item); err != nil {
			return fmt.Errorf("%s %q: %w", f.name, s, err)
		}
	}
	return nil
}

func (f cronField) checkRange(item string) error {
	rng, step, hasStep := strings.Cut(item, "/")
	switch {
	case rng == "*":
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		lo, err := f.number(a)
		if err != nil {
			return err
		}
		hi, err := f.number(b)
		if err != nil {
			return err
		}
		if lo > hi {
			// cron reads it, and never runs the job.
			return fmt.Errorf("the range %s runs backwards: cron would never run the job", rng)
		}
	default:
		if _, err := f.number(rng); err != nil {
			return err
		}
		if hasStep {
			return fmt.Errorf("a step needs a range (%s-%d/%s or */%s), not a single value", rng, f.max, step, step)
		}
	}
	if hasStep {
		n, err := strconv.Atoi(step)
		if err != nil || strings.Trim(step, "0123456789") != "" || n < 1 {
			return fmt.Errorf("the step %q must be a whole number of 1 or more", step)
		}
	}
	return nil
}

// number parses one value: digits in range, or (month, weekday) a name.
func (f cronField) number(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.low + i, nil
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || strings.Trim(s, "0123456789") != "" {
		if f.names != nil {
			return 0, fmt.Errorf("%q is neither a number from %d to %d nor a name (%s)", s, f.low, f.max, strings.Join(f.names, ", "))
		}
		return 0, fmt.Errorf("%q is not a number from %d to %d", s, f.low, f.max)
	}
	if n < f.low || n > f.max {
		return 0, fmt.Errorf("%d is out of range: %s runs from %d to %d", n, f.name, f.low, f.max)
	}
	return n, nil
}

// cronTimes are the @-schedules cron knows.
var cronTimes = []string{"reboot", "yearly", "annually", "monthly", "weekly", "daily", "midnight", "hourly"}

func validateCronTime(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	s := strings.TrimPrefix(v.AsString(), "@")
	for _, c := range cronTimes {
		if s == c {
			return nil
		}
	}
	return fmt.Errorf("time must be one of %s, not %q", strings.Join(cronTimes, ", "), v.AsString())
}

// validateCronCommand refuses what cron would read otherwise than the
// recipe means: a newline (the end of the job), and a bare % (cron makes
// it a newline and feeds what follows to standard input: `date +%s` runs
// as `date +`).
func validateCronCommand(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	s := v.AsString()
	switch {
	case strings.TrimSpace(s) == "":
		return errors.New("command must not be empty")
	case strings.ContainsAny(s, "\n\r\x00"):
		return errors.New("command must be one line: cron ends a job at the newline")
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && (i == 0 || s[i-1] != '\\') {
			return fmt.Errorf("command has a bare %% at byte %d: cron turns it into a newline and passes the rest as standard input (`date +%%s` would run `date +`); write \\%% for a %% (in HCL: \"\\\\%%\")", i+1)
		}
	}
	if len(s) > maxCronLine {
		return fmt.Errorf("command is %d bytes long; cron reads lines of at most %d", len(s), maxCronLine)
	}
	return nil
}

// maxCronLine is how long a command or variable toque lets cron read:
// Debian's cron 3.0pl1 ignores a file whose command is longer than 998
// bytes ("command too long"); variables are kept as short.
const maxCronLine = 990

// validateCronLine refuses a value that would end its line (comment).
func validateCronLine(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		return checkCronLine(name, v.AsString())
	}
}

func checkCronLine(name, s string) error {
	if strings.ContainsAny(s, "\n\r\x00") {
		return fmt.Errorf("%s must be one line", name)
	}
	if len(s) > maxCronLine {
		return fmt.Errorf("%s is %d bytes long; cron reads lines of at most %d", name, len(s), maxCronLine)
	}
	return nil
}

// validateCronValue is the Validate of a variable's value (mailto,
// path, shell, environment's values).
func validateCronValue(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		return checkCronValue(name, v.AsString())
	}
}

// checkCronValue refuses a variable's value that cron would not read
// back as it is, however it is written. Measured on Debian's cron
// 3.0pl1: it drops the space at the end of a value, quoted or not; it
// removes a pair of quotes around a value twice ('"q"' is q); and it
// ignores the whole file for a value quoted with a quote inside ("a"b").
func checkCronValue(name string, s string) error {
	if err := checkCronLine(name, s); err != nil {
		return err
	}
	switch {
	case strings.TrimRight(s, " \t") != s:
		return fmt.Errorf("%s ends with a space, which cron drops from a variable's value", name)
	case len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0]:
		return fmt.Errorf("%s starts and ends with %c, which cron removes (twice, when quoted)", name, s[0])
	case needsQuotes(s) && strings.Contains(s, `"`) && strings.Contains(s, "'"):
		return fmt.Errorf("%s must be written in quotes for cron, and holds both kinds of quote", name)
	}
	return nil
}

// envNameRE is the variable names toque writes.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validateCronEnvironment(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	for k, e := range v.AsValueMap() {
		switch {
		case !envNameRE.MatchString(k):
			return fmt.Errorf("environment: %q is not a variable name (letters, digits and _, not starting with a digit)", k)
		case k == "MAILTO" || k == "PATH" || k == "SHELL":
			return fmt.Errorf("environment: set %s with the %s property", k, strings.ToLower(k))
		}
		if e.IsNull() {
			return fmt.Errorf("environment: %s must not be null", k)
		}
		if err := checkCronValue("environment "+k, e.AsString()); err != nil {
			return err
		}
	}
	return nil
}

// needsQuotes reports whether cron would not read s back as it is when
// written bare after "NAME=": empty, space first, or a quote first.
func needsQuotes(s string) bool {
	return s == "" || s[0] == ' ' || s[0] == '\t' || s[0] == '"' || s[0] == '\''
}

// envLine is "NAME=value", quoted when cron would otherwise read value
// differently (it drops the space before a bare value, and reads a quote
// first as the start of a quoted value), with a quote character the value
// does not hold.
func envLine(name, value string) string {
	if !needsQuotes(value) {
		return name + "=" + value + "\n"
	}
	if !strings.Contains(value, `"`) {
		return name + `="` + value + "\"\n"
	}
	return name + "='" + value + "'\n"
}

// Derive makes the file: a header, the comment, the variables, then the
// job line; mode 0644, owned by root.
func (t *cronDType) Derive(values map[string]cty.Value) (map[string]cty.Value, error) {
	get := func(name string) cty.Value {
		if v, ok := values[name]; ok && v != cty.NilVal && !v.IsNull() {
			return v
		}
		if p := t.schema.Property(name); p.Default != cty.NilVal {
			return p.Default
		}
		return cty.NullVal(t.schema.Property(name).Type)
	}
	out := map[string]cty.Value{
		"mode":  cty.StringVal("0644"),
		"owner": cty.StringVal("root"),
		"group": cty.StringVal("root"),
	}
	if get("command").IsNull() {
		return out, nil // nothing to write: delete needs no command (Plan says create does)
	}
	names := []string{"name", "minute", "hour", "day", "month", "weekday", "time", "command", "user", "environment", "mailto", "path", "shell", "comment"}
	for _, n := range names {
		if !get(n).IsWhollyKnown() {
			out["content"] = cty.UnknownVal(cty.String)
			return out, nil
		}
	}
	str := func(name string) string {
		if v := get(name); !v.IsNull() {
			return v.AsString()
		}
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Managed by toque (cron_d[%s]): changes made here are undone by its next apply.\n", str("name"))
	if c := str("comment"); c != "" {
		b.WriteString("# " + c + "\n")
	}
	for _, v := range []struct{ name, prop string }{{"MAILTO", "mailto"}, {"PATH", "path"}, {"SHELL", "shell"}} {
		if get(v.prop).IsNull() {
			continue
		}
		b.WriteString(envLine(v.name, str(v.prop)))
	}
	if env := get("environment"); !env.IsNull() {
		m := env.AsValueMap()
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(envLine(k, m[k].AsString()))
		}
	}
	when := strings.Join([]string{str("minute"), str("hour"), str("day"), str("month"), str("weekday")}, " ")
	if tm := str("time"); tm != "" {
		for _, f := range []string{"minute", "hour", "day", "month", "weekday"} {
			if v, ok := values[f]; ok && !v.IsNull() {
				return nil, fmt.Errorf("time and %s are both set: time replaces the five fields", f)
			}
		}
		when = "@" + strings.TrimPrefix(tm, "@")
	}
	fmt.Fprintf(&b, "%s %s %s\n", when, str("user"), str("command"))
	out["content"] = cty.StringVal(b.String())
	return out, nil
}

// path is where the file of r is.
func (t *cronDType) path(r *resources.Resource) string { return filepath.Join(t.dir, r.String("name")) }

// fileRes is the file resource r's file is: its path, and the derived
// content, mode and owner.
func (t *cronDType) fileRes(r *resources.Resource) *resources.Resource {
	vals := map[string]cty.Value{"path": cty.StringVal(t.path(r))}
	for _, k := range []string{"content", "mode", "owner", "group"} {
		if r.IsSet(k) {
			vals[k] = r.Values[k]
		}
	}
	action := r.EffectiveAction()
	return resources.NewResource(t.file.Schema(), t.path(r), action, vals)
}

// Load reads the file (LoadAll for one).
func (t *cronDType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	sts, err := t.LoadAll(ctx, []*resources.Resource{r})
	if err != nil {
		return nil, err
	}
	return sts[0], nil
}

// LoadAll reads /etc/passwd once, then each file as the file type does.
// Extra "user" records a user that does not exist.
func (t *cronDType) LoadAll(ctx context.Context, rs []*resources.Resource) ([]*resources.State, error) {
	hasUser, err := accounts.UserExists(t.root)
	if err != nil {
		return nil, err
	}
	out := make([]*resources.State, len(rs))
	for i, r := range rs {
		st, err := t.file.Load(ctx, t.fileRes(r).LoadView())
		if err != nil {
			return nil, err
		}
		if st.Extra == nil {
			st.Extra = map[string]string{}
		}
		if !hasUser(r.String("user")) {
			st.Extra["user"] = "does not exist"
		}
		out[i] = st
	}
	return out, nil
}

// Plan is the file type's Plan of the file, and a need for the user when
// it does not exist.
func (t *cronDType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	if action != "delete" && !desired.IsSet("content") {
		return nil, &resources.PropertyError{Property: "command", Err: fmt.Errorf("%s needs a command", action)}
	}
	step, err := t.file.Plan(action, t.fileRes(desired), current)
	if err != nil {
		return nil, err
	}
	if current.Extra["user"] != "" && (step.Kind == resources.Create || step.Change("content") != nil) {
		step.Needs = append(step.Needs, resources.Need{Namespace: resources.NamespaceUser, Value: desired.String("user"), What: "user"})
	}
	return step, nil
}

// Predict is the file's: a created file is a regular file.
func (t *cronDType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	return resources.Predict(t.file, t.fileRes(desired), current, step)
}

// Steps are the file type's, on the file.
func (t *cronDType) Steps() resources.Steps {
	return resources.Same(func(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
		return resources.ConvergeStep(ctx, t.file, env, t.fileRes(desired), current, step)
	})
}
