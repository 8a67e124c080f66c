package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/resourcetest"
)

// editCase is one edit of a text: the resource's values (path is set by
// the test), its action, the text before and after, and words the reason
// holds; err, when set, is what the Plan error holds.
type editCase struct {
	name   string
	action string
	vals   map[string]any
	before string
	after  string
	reason string
	err    string
}

// runEdits plans each case on a real file, converges it, and checks the
// file, the reason, and that a second plan is a no-op.
func runEdits(t *testing.T, typ resources.Type, cases []editCase) {
	t.Helper()
	env := resourcetest.TestEnv(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(publicDir(t), "f.conf")
			resourcetest.WriteFile(t, path, c.before, 0o644)
			vals := map[string]any{"path": path}
			for k, v := range c.vals {
				vals[k] = v
			}
			r := resourcetest.BuildRes(t, typ, "x", c.action, vals)
			if c.err != "" {
				resourcetest.PlanErr(t, typ, r, c.err)
				if got := resourcetest.ReadFile(t, path); got != c.before {
					t.Fatalf("the file changed: %q", got)
				}
				return
			}
			st, step := resourcetest.Plan(t, typ, r)
			if !strings.Contains(step.Reason, c.reason) {
				t.Errorf("reason %q does not hold %q", step.Reason, c.reason)
			}
			if c.after == c.before {
				if step.Kind != resources.NoOp {
					t.Fatalf("planned %s (%s), want a no-op", step.Kind, step.Reason)
				}
				return
			}
			if step.Kind != resources.Update {
				t.Fatalf("planned %s (%s), want an update", step.Kind, step.Reason)
			}
			if ch := step.Change("content"); ch == nil || ch.After.AsString() != c.after || ch.Before.AsString() != c.before {
				t.Fatalf("change %+v, want %q -> %q", ch, c.before, c.after)
			}
			if st.Private["content"] != "" {
				t.Fatalf("the test's file is private: %s", st.Private["content"])
			}
			if err := resources.ConvergeStep(context.Background(), typ, env, r, st, step); err != nil {
				t.Fatal(err)
			}
			if got := resourcetest.ReadFile(t, path); got != c.after {
				t.Fatalf("the file holds %q, want %q", got, c.after)
			}
			if _, again := resourcetest.Plan(t, typ, r); again.Kind != resources.NoOp {
				t.Fatalf("a second plan is %s (%s)", again.Kind, again.Reason)
			}
		})
	}
}

func TestFileLineEdits(t *testing.T) {
	const sshd = "# sshd\n#PermitRootLogin yes\nPort 22\nX11Forwarding yes\n"
	runEdits(t, FileLineType(), []editCase{
		{name: "appends a missing line", vals: map[string]any{"line": "UseDNS no"},
			before: sshd, after: sshd + "UseDNS no\n", reason: "adds the line at the end"},
		{name: "a present line is a no-op", vals: map[string]any{"line": "Port 22"},
			before: sshd, after: sshd, reason: "in the file already (line 3)"},
		{name: "replaces the last line match matches", vals: map[string]any{"line": "PermitRootLogin no", "match": `^#?PermitRootLogin\b`},
			before: sshd, after: "# sshd\nPermitRootLogin no\nPort 22\nX11Forwarding yes\n", reason: "replaces line 2"},
		{name: "match finds the line already", vals: map[string]any{"line": "Port 22", "match": `^Port `},
			before: sshd, after: sshd, reason: "line 3 is the line already"},
		{name: "no match and absent: inserted after", vals: map[string]any{"line": "Port 2222", "match": `^Listen`, "insert_after": `^#?PermitRootLogin`},
			before: sshd, after: "# sshd\n#PermitRootLogin yes\nPort 2222\nPort 22\nX11Forwarding yes\n", reason: "after line 2"},
		{name: "inserted before", vals: map[string]any{"line": "Include /etc/ssh/sshd_config.d/*.conf", "insert_before": `^Port`},
			before: sshd, after: "# sshd\n#PermitRootLogin yes\nInclude /etc/ssh/sshd_config.d/*.conf\nPort 22\nX11Forwarding yes\n", reason: "before line 3"},
		{name: "BOF", vals: map[string]any{"line": "# managed in part by toque", "insert_before": "BOF"},
			before: sshd, after: "# managed in part by toque\n" + sshd, reason: "at the start"},
		{name: "no match for insert_after: at the end", vals: map[string]any{"line": "A b", "insert_after": "^Nope"},
			before: sshd, after: sshd + "A b\n", reason: `no line matches "^Nope"`},
		{name: "a file without a final newline", vals: map[string]any{"line": "b"},
			before: "a", after: "a\nb\n", reason: "at the end"},
		{name: "an empty file", vals: map[string]any{"line": "b"},
			before: "", after: "b\n", reason: "at the end"},
		{name: "CRLF lines", vals: map[string]any{"line": "b = 2", "match": "^b ="},
			before: "a = 1\r\nb = 1\r\n", after: "a = 1\r\nb = 2\r\n", reason: "replaces line 2"},
		{name: "delete by line", action: "delete", vals: map[string]any{"line": "Port 22"},
			before: sshd, after: "# sshd\n#PermitRootLogin yes\nX11Forwarding yes\n", reason: "removes line 3"},
		{name: "delete by match, every line", action: "delete", vals: map[string]any{"match": "^#"},
			before: sshd, after: "Port 22\nX11Forwarding yes\n", reason: `removes lines 1 and 2, which match "^#"`},
		{name: "delete of an absent line", action: "delete", vals: map[string]any{"line": "nope"},
			before: sshd, after: sshd, reason: "not in the file"},
		{name: "delete the last line keeps no final newline state", action: "delete", vals: map[string]any{"line": "b"},
			before: "a\nb", after: "a", reason: "removes line 2"},
		{name: "backrefs: an option added to the line match matches", vals: map[string]any{"backrefs": true,
			"match": `^(account\s.*pam_unix\.so.*?)(\s+no_pass_expiry)?\s*$`, "line": "$1 no_pass_expiry"},
			before: "account\t[success=1 default=ignore]\tpam_unix.so \naccount\trequisite\tpam_deny.so\n",
			after:  "account\t[success=1 default=ignore]\tpam_unix.so no_pass_expiry\naccount\trequisite\tpam_deny.so\n", reason: "replaces line 1"},
		{name: "backrefs: the option there already", vals: map[string]any{"backrefs": true,
			"match": `^(account\s.*pam_unix\.so.*?)(\s+no_pass_expiry)?\s*$`, "line": "$1 no_pass_expiry"},
			before: "account\tpam_unix.so no_pass_expiry\n", after: "account\tpam_unix.so no_pass_expiry\n", reason: "line 1 is the line already"},
		{name: "backrefs: named groups", vals: map[string]any{"backrefs": true, "match": `^Port (?P<port>\d+)$`, "line": "ListenAddress 0.0.0.0:${port}"},
			before: sshd, after: "# sshd\n#PermitRootLogin yes\nListenAddress 0.0.0.0:22\nX11Forwarding yes\n", reason: "replaces line 3"},
		{name: "backrefs: no match adds nothing", vals: map[string]any{"backrefs": true, "match": `^(UseDNS) yes$`, "line": "$1 no"},
			before: sshd, after: sshd, reason: "with backrefs, no line is added"},
		{name: "backrefs needs match", vals: map[string]any{"backrefs": true, "line": "$1"}, before: sshd, err: "backrefs needs match"},
		{name: "backrefs is not for delete", action: "delete", vals: map[string]any{"backrefs": true, "match": "^a"}, before: sshd, err: "backrefs is for create"},
		{name: "backrefs and insert_after", vals: map[string]any{"backrefs": true, "match": "^(a)", "line": "$1", "insert_after": "^b"}, before: sshd, err: "leave them out"},
		{name: "without backrefs, $1 is $1", vals: map[string]any{"match": `^(Port) 22$`, "line": "$1 2222"},
			before: sshd, after: "# sshd\n#PermitRootLogin yes\n$1 2222\nX11Forwarding yes\n", reason: "replaces line 3"},
		{name: "create needs line", vals: map[string]any{"match": "^a"}, before: sshd, err: "needs line"},
		{name: "delete needs line or match", action: "delete", vals: map[string]any{}, before: sshd, err: "needs line"},
		{name: "insert_after and insert_before", vals: map[string]any{"line": "a", "insert_after": "x", "insert_before": "y"}, before: sshd, err: "not both"},
	})
}

func TestFileBlockEdits(t *testing.T) {
	const hosts = "127.0.0.1 localhost\n::1 localhost\n"
	const block = "# BEGIN TOQUE MANAGED BLOCK x\n10.0.0.1 db\n10.0.0.2 cache\n# END TOQUE MANAGED BLOCK x\n"
	runEdits(t, FileBlockType(), []editCase{
		{name: "adds the block at the end", vals: map[string]any{"block": "10.0.0.1 db\n10.0.0.2 cache\n"},
			before: hosts, after: hosts + block, reason: "adds the block at the end"},
		{name: "in place already", vals: map[string]any{"block": "10.0.0.1 db\n10.0.0.2 cache"},
			before: hosts + block, after: hosts + block, reason: "in the file already (lines 3 to 6)"},
		{name: "replaces the block's lines", vals: map[string]any{"block": "10.0.0.9 db"},
			before: block + hosts, after: "# BEGIN TOQUE MANAGED BLOCK x\n10.0.0.9 db\n# END TOQUE MANAGED BLOCK x\n" + hosts, reason: "replaces the block (lines 1 to 4)"},
		{name: "after a line", vals: map[string]any{"block": "a", "insert_after": "^127"},
			before: hosts, after: "127.0.0.1 localhost\n# BEGIN TOQUE MANAGED BLOCK x\na\n# END TOQUE MANAGED BLOCK x\n::1 localhost\n", reason: "after line 1"},
		{name: "own markers", vals: map[string]any{"block": "a", "marker": "; {mark} app", "marker_begin": "start", "marker_end": "stop"},
			before: "", after: "; start app\na\n; stop app\n", reason: "at the end"},
		{name: "delete", action: "delete",
			before: hosts + block, after: hosts, reason: "removes the block (lines 3 to 6)"},
		{name: "delete when absent", action: "delete",
			before: hosts, after: hosts, reason: "not in the file"},
		{name: "a damaged block is refused", vals: map[string]any{"block": "a"},
			before: "# BEGIN TOQUE MANAGED BLOCK x\na\n", err: "the block was damaged"},
		{name: "markers in the wrong order", vals: map[string]any{"block": "a"},
			before: "# END TOQUE MANAGED BLOCK x\n# BEGIN TOQUE MANAGED BLOCK x\n", err: "comes before"},
		{name: "two blocks of one name", vals: map[string]any{"block": "a"},
			before: block + block, err: "cannot tell which block"},
		{name: "a marker line in the block", vals: map[string]any{"block": "a\n# END TOQUE MANAGED BLOCK x\n"},
			before: hosts, err: "is a marker line"},
		{name: "create needs block", before: hosts, err: "needs block"},
	})
}

func TestIniSettingEdits(t *testing.T) {
	const ini = "; app settings\nname = demo\n\n[server]\n# the port\nport=80\nhost = 0.0.0.0\n\n[log]\nlevel = info\n"
	runEdits(t, IniSettingType(), []editCase{
		{name: "sets a value, keeping the line's spacing", vals: map[string]any{"section": "server", "key": "port", "value": "8080"},
			before: ini, after: strings.Replace(ini, "port=80", "port=8080", 1), reason: `sets port in [server] (line 6), which was "80"`},
		{name: "equal value, other spacing: a no-op", vals: map[string]any{"section": "server", "key": "port", "value": "80"},
			before: ini, after: ini, reason: "port = 80 in [server] already (line 6)"},
		{name: "adds a key after the section's last", vals: map[string]any{"section": "server", "key": "workers", "value": "4"},
			before: ini, after: strings.Replace(ini, "host = 0.0.0.0\n", "host = 0.0.0.0\nworkers = 4\n", 1), reason: "after line 7"},
		{name: "adds a section", vals: map[string]any{"section": "db", "key": "url", "value": "postgres://db/app"},
			before: ini, after: ini + "\n[db]\nurl = postgres://db/app\n", reason: "adds [db] with url"},
		{name: "a key at the top", vals: map[string]any{"key": "name", "value": "prod"},
			before: ini, after: strings.Replace(ini, "name = demo", "name = prod", 1), reason: "the top of the file"},
		{name: "a new key at the top goes after the top's keys", vals: map[string]any{"key": "env", "value": "prod"},
			before: ini, after: strings.Replace(ini, "name = demo\n", "name = demo\nenv = prod\n", 1), reason: "after line 2"},
		{name: "a commented key is not the key", vals: map[string]any{"section": "log", "key": "the", "value": "x"},
			before: ini, after: ini + "the = x\n", reason: "to [log]"},
		{name: "a key without a value", vals: map[string]any{"section": "mysqld", "key": "skip-networking", "value": "1"},
			before: "[mysqld]\nskip-networking\n", after: "[mysqld]\nskip-networking = 1\n", reason: "sets skip-networking"},
		{name: "every occurrence in the section", vals: map[string]any{"section": "a", "key": "k", "value": "2"},
			before: "[a]\nk = 1\nk = 1\n[b]\nk = 1\n", after: "[a]\nk = 2\nk = 2\n[b]\nk = 1\n", reason: "lines 2 and 3"},
		{name: "an empty section gets the key after its header", vals: map[string]any{"section": "b", "key": "k", "value": "v"},
			before: "[a]\nx = 1\n[b]\n", after: "[a]\nx = 1\n[b]\nk = v\n", reason: "after its header"},
		{name: "delete", action: "delete", vals: map[string]any{"section": "server", "key": "host"},
			before: ini, after: strings.Replace(ini, "host = 0.0.0.0\n", "", 1), reason: "removes host from [server] (line 7)"},
		{name: "delete when absent", action: "delete", vals: map[string]any{"section": "server", "key": "nope"},
			before: ini, after: ini, reason: "nope is not in [server]"},
		{name: "create needs value", vals: map[string]any{"key": "k"}, before: ini, err: "needs value"},
	})
}

// TestEditBadInput: the values a recipe could slip another line, a
// section or a pattern that never matches into are errors on the
// attribute (Validate, which validate and plan report with file:line:col).
func TestEditBadInput(t *testing.T) {
	cases := []struct {
		typ   resources.Type
		prop  string
		value string
		want  string
	}{
		{FileLineType(), "line", "a\nb", "must be one line"},
		{FileLineType(), "line", "a\rb", "must be one line"},
		{FileLineType(), "match", "(unclosed", "not a regular expression"},
		{FileLineType(), "match", `^a\nb`, "matches across lines"},
		{FileLineType(), "match", "a\nb", "matches across lines"},
		{FileLineType(), "match", `a[\r\n]+b`, "matches across lines"},
		{FileLineType(), "match", `(?s)a.b`, "matches across lines"},
		{FileLineType(), "match", "", "empty"},
		{FileLineType(), "insert_after", `x\n`, "matches across lines"},
		{FileLineType(), "insert_before", "[", "not a regular expression"},
		{FileLineType(), "content", "x", "cannot set it"},
		{FileLineType(), "checksum", "x", "cannot set it"},
		{FileBlockType(), "marker", "# no mark", "{mark} once"},
		{FileBlockType(), "marker", "# {mark}\nx", "one line"},
		{FileBlockType(), "marker_begin", "", "a word"},
		{FileBlockType(), "insert_after", `(?s).`, "matches across lines"},
		{IniSettingType(), "key", "a=b", `holds "="`},
		{IniSettingType(), "key", "[a", `holds "["`},
		{IniSettingType(), "key", "a]", `holds "]"`},
		{IniSettingType(), "key", "a\nb", "one line"},
		{IniSettingType(), "key", "; a", "comment"},
		{IniSettingType(), "key", " a", "white space"},
		{IniSettingType(), "key", "", "empty"},
		{IniSettingType(), "section", "a]b", "bracket"},
		{IniSettingType(), "section", "a\n[b", "one line"},
		{IniSettingType(), "value", "1\n[evil]", "one line"},
		{IniSettingType(), "value", "1 ", "white space"},
	}
	for _, c := range cases {
		t.Run(c.typ.Schema().Name+"."+c.prop+"="+c.value, func(t *testing.T) {
			p := c.typ.Schema().Property(c.prop)
			err := p.Validate(cty.StringVal(c.value))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate(%q) = %v, want an error holding %q", c.value, err, c.want)
			}
		})
	}
	// What is fine stays fine: \s and [^x] are broad classes, harmless on
	// one line.
	for _, ok := range []string{`^\s*PermitRootLogin\s`, `[^#]`, `\D+$`, `^a\tb`} {
		if err := FileLineType().Schema().Property("match").Validate(cty.StringVal(ok)); err != nil {
			t.Errorf("match %q: %v", ok, err)
		}
	}
}

// TestEditRefuses: what the file type refuses, an editor refuses too, and
// a file that is not text.
func TestEditRefuses(t *testing.T) {
	dir := t.TempDir()
	fl := FileLineType()
	plan := func(path string) error {
		r := resourcetest.BuildRes(t, fl, "x", "", map[string]any{"path": path, "line": "a"})
		st, err := fl.Load(context.Background(), r.LoadView())
		if err != nil {
			return err
		}
		_, err = resources.PlanStep(fl, r, st)
		return err
	}
	target := filepath.Join(dir, "target")
	resourcetest.WriteFile(t, target, "x\n", 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	mkdir(t, sub, 0o755)
	for name, c := range map[string]struct {
		path, content, want string
	}{
		"a link":      {path: link, want: "is a symbolic link"},
		"a directory": {path: sub, want: "cannot edit a directory"},
		"binary":      {path: filepath.Join(dir, "bin"), content: "a\x00b", want: "NUL byte"},
		"not UTF-8":   {path: filepath.Join(dir, "latin1"), content: "caf\xe9\n", want: "not UTF-8"},
		"not NFC":     {path: filepath.Join(dir, "nfd"), content: "cafe\u0301\n", want: "normal form C"},
		"too large":   {path: filepath.Join(dir, "big"), content: strings.Repeat("a\n", maxEditBytes), want: "more than the 1 MiB"},
	} {
		t.Run(name, func(t *testing.T) {
			if c.content != "" {
				resourcetest.WriteFile(t, c.path, c.content, 0o644)
			}
			err := plan(c.path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("plan: %v, want an error holding %q", err, c.want)
			}
		})
	}
	if got := resourcetest.ReadFile(t, target); got != "x\n" {
		t.Fatalf("the link's target changed: %q", got)
	}
}

// TestEditPrivateFile: a file not every user may read is edited, but the
// plan shows its checksum, never its content, and the file keeps its
// mode and owner.
func TestEditPrivateFile(t *testing.T) {
	env := resourcetest.TestEnv(t)
	path := filepath.Join(t.TempDir(), "secret.conf")
	resourcetest.WriteFile(t, path, "password = old\n", 0o600)
	it := IniSettingType()
	r := resourcetest.BuildRes(t, it, "password", "", map[string]any{"path": path, "value": "new"})
	st, step := resourcetest.Plan(t, it, r)
	if st.Private["content"] == "" || step.Change("content") != nil {
		t.Fatalf("the content must be private and not in the step: %+v %+v", st.Private, step.Changes)
	}
	c := step.Change("checksum")
	if c == nil || c.After.AsString() != resourcetest.SHA256("password = new\n") || !strings.Contains(c.Note, "not shown") {
		t.Fatalf("checksum change %+v", c)
	}
	resourcetest.Apply(t, it, env, r, resources.Update)
	if got := resourcetest.ReadFile(t, path); got != "password = new\n" || resourcetest.PermOf(t, path) != 0o600 {
		t.Fatalf("%q %04o", got, resourcetest.PermOf(t, path))
	}
	// The old content is backed up, as file backs it up.
	backups, err := BackupsOf(env.StateDir, path)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(backups); len(entries) != 1 {
		t.Fatalf("backups: %v", entries)
	}
}

// TestEditMissingFile: deleting from a missing file is a no-op; adding
// to one waits for the earlier resource that creates it.
func TestEditMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope")
	fl := FileLineType()
	_, step := resourcetest.Plan(t, fl, resourcetest.BuildRes(t, fl, "x", "delete", map[string]any{"path": path, "line": "a"}))
	if step.Kind != resources.NoOp {
		t.Fatalf("delete: %+v", step)
	}
	_, step = resourcetest.Plan(t, fl, resourcetest.BuildRes(t, fl, "x", "", map[string]any{"path": path, "line": "a"}))
	ns := step.AwaitedNeeds()
	if step.Kind != resources.Update || len(ns) != 2 || ns[0].Value != path || ns[0].Property != "content" || step.Change("content").After.IsKnown() {
		t.Fatalf("create: %+v", step)
	}
	if !FileType().(resources.NeedMeeter).Meets(resourcetest.BuildRes(t, FileType(), "", "create_if_missing", map[string]any{"path": path}), ns[0]) {
		t.Fatal("a file resource that creates the path meets the need")
	}
	if FileType().(resources.NeedMeeter).Meets(resourcetest.BuildRes(t, FileType(), "", "delete", map[string]any{"path": path}), ns[0]) {
		t.Fatal("a delete meets nothing")
	}
}

// TestEditConvergeChecks: the step's file must be the file read, with
// the content read: otherwise nothing is written.
func TestEditConvergeChecks(t *testing.T) {
	env := resourcetest.TestEnv(t)
	path := filepath.Join(t.TempDir(), "f")
	resourcetest.WriteFile(t, path, "a\n", 0o644)
	fl := FileLineType()
	r := resourcetest.BuildRes(t, fl, "x", "", map[string]any{"path": path, "line": "b"})
	st, step := resourcetest.Plan(t, fl, r)
	// Changed in place since it was read: refused.
	if err := os.WriteFile(path, []byte("c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := resources.ConvergeStep(context.Background(), fl, env, r, st, step)
	if err == nil || !strings.Contains(err.Error(), "not the content read") {
		t.Fatalf("converge: %v", err)
	}
	// Replaced by another file: refused.
	resourcetest.WriteFile(t, path+".new", "a\n", 0o644)
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if err := resources.ConvergeStep(context.Background(), fl, env, r, st, step); err == nil || !strings.Contains(err.Error(), "another file") {
		t.Fatalf("converge: %v", err)
	}
	if got := resourcetest.ReadFile(t, path); got != "a\n" {
		t.Fatalf("the file was written: %q", got)
	}
}
