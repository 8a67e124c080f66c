package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toquehq/toque/internal/testenv"
)

// Who may write plan.out is who decides what a root apply runs. These tests
// take the side of someone who can write plan.out (a pull-request author)
// and of the reviewer who reads `toque show`: the reviewer must read what
// apply runs, a signing host must apply only its CI's plans, and no plan
// file, however made, may hang toque or drive the reviewer's terminal.

// editPlan does what an attacker with a text editor and sha256sum does:
// change the plan member, then compute the checksum again. A signature, if
// any, is kept as it was.
func editPlan(t *testing.T, path string, edit func(p map[string]any)) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	dec := json.NewDecoder(bytes.NewReader(env["plan"]))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		t.Fatal(err)
	}
	edit(p)
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		t.Fatal(err)
	}
	b := bytes.TrimRight(body.Bytes(), "\n")
	sum := sha256.Sum256(b)
	var out bytes.Buffer
	out.WriteString(`{"toque_plan":` + string(env["toque_plan"]) + `,"checksum":"sha256:` + hex.EncodeToString(sum[:]) + `",`)
	if sig, ok := env["signature"]; ok {
		out.WriteString(`"signature":`)
		out.Write(sig)
		out.WriteString(",")
	}
	out.WriteString(`"plan":`)
	out.Write(b)
	out.WriteString("}\n")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// obj walks a decoded plan: obj(p, "resources", 0, "desired").
func obj(t *testing.T, v any, path ...any) map[string]any {
	t.Helper()
	for _, k := range path {
		switch k := k.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not an object: %#v", path, v)
	}
	return m
}

// A plan whose command and guard were edited (and checksum recomputed)
// shows, in every output, the command apply then runs.
func TestE2ETrustShowIsWhatApplyRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("run.hcl", `
execute "greet" {
  command = "echo hello > ROOT/greeting"
  only_if = "true"
}
`)
	e.must(0, "plan", "-out=plan.out")
	editPlan(t, filepath.Join(e.dir, "plan.out"), func(p map[string]any) {
		obj(t, p, "resources", 0, "desired", "command")["value"] = "echo pwned > " + e.root + "/greeting"
		spec := obj(t, p, "resources", 0, "guard_specs", 0)
		spec["source"] = "test -d /"
		obj(t, spec, "values", "command")["value"] = "test -d /"
		// The plan's own prose still says the old command: no output
		// may print it.
	})
	pwned := `echo pwned > ` + e.root + `/greeting`

	text := e.must(0, "show", "plan.out").stdout
	md := e.must(0, "show", "-markdown", "plan.out").stdout
	for name, out := range map[string]string{"text": text, "Markdown": md} {
		contains(t, name, out, pwned, "only_if `test -d /` passed")
		for _, old := range []string{"echo hello", "only_if `true`"} {
			if strings.Contains(out, old) {
				t.Errorf("%s shows %q, which apply does not run:\n%s", name, old, out)
			}
		}
	}
	var view struct {
		Resources []struct {
			Reason  string            `json:"reason"`
			Desired map[string]string `json:"desired"`
			Guards  []struct {
				Command string `json:"command"`
			} `json:"guards"`
		} `json:"resources"`
	}
	js := e.must(0, "show", "-json", "plan.out").stdout
	if err := json.Unmarshal([]byte(js), &view); err != nil {
		t.Fatal(err)
	}
	r := view.Resources[0]
	if r.Desired["command"] != pwned || r.Guards[0].Command != "test -d /" || !strings.Contains(r.Reason, "test -d /") {
		t.Errorf("the JSON view does not show what runs:\n%s", js)
	}

	// What was shown is what runs.
	e.must(0, "apply", "plan.out")
	if got := e.read("greeting"); got != "pwned\n" {
		t.Errorf("apply wrote %q", got)
	}
}

// motdPlan plans a file update into plan.out and returns its path.
func motdPlan(t *testing.T, e *env) string {
	t.Helper()
	e.write("motd", "welcome\n", 0o644)
	e.recipe("motd.hcl", `file "ROOT/motd" { content = "welcome, friends\n" }`)
	e.must(0, "plan", "-out=plan.out")
	return filepath.Join(e.dir, "plan.out")
}

// The diff is made when the plan is shown, from the live content the plan
// keeps and the content apply writes: an edited desired content shows in
// the diff.
func TestE2ETrustDiffIsComputedWhenShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	planFile := motdPlan(t, e)
	editPlan(t, planFile, func(p map[string]any) {
		obj(t, p, "resources", 0, "desired", "content")["value"] = "welcome, friends\nssh-ed25519 AAAA attacker\n"
	})
	for _, args := range [][]string{{"show", "plan.out"}, {"show", "-markdown", "plan.out"}} {
		out := e.must(0, args...).stdout
		contains(t, strings.Join(args, " "), out, "-welcome\n", "+welcome, friends\n", "+ssh-ed25519 AAAA attacker\n")
	}
}

// A live value whose digest is left as it was would show the reviewer a
// "before" that is not the host's: the plan is refused.
func TestE2ETrustEditedLiveValueRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	planFile := motdPlan(t, e)
	editPlan(t, planFile, func(p map[string]any) {
		obj(t, p, "resources", 0, "current", "values", "content")["value"].(map[string]any)["value"] = "something else entirely\n"
	})
	before := e.snapshot()
	for _, args := range [][]string{{"show", "plan.out"}, {"show", "-json", "plan.out"}, {"apply", "plan.out"}} {
		r := e.must(1, args...)
		contains(t, strings.Join(args, " "), r.stderr, "the plan contradicts itself", `the live value of "content" does not match its digest`)
	}
	sameSnapshot(t, before, e.snapshot())

	r := e.must(1, "apply", "-json", "plan.out")
	contains(t, "apply -json", r.stdout, `"plan_refused"`)
}

var fingerprintRe = regexp.MustCompile(`SHA256:[A-Za-z0-9+/]{43}`)

func TestE2ETrustSignedPlans(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("motd.hcl", `file "ROOT/motd" { content = "signed\n" }`)
	keys := t.TempDir()
	ci, next := filepath.Join(keys, "ci"), filepath.Join(keys, "next")
	gen := e.must(0, "keygen", "-comment=ci 2025", ci)
	ciFP := fingerprintRe.FindString(gen.stdout)
	if ciFP == "" {
		t.Fatalf("keygen names no fingerprint:\n%s", gen.stdout)
	}
	nextFP := fingerprintRe.FindString(e.must(0, "keygen", next).stdout)
	if st, err := os.Stat(ci); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("private key: %v %v", st.Mode(), err)
	}
	contains(t, "keygen again", e.must(1, "keygen", ci).stderr, "exists already")
	pub := func(k string) string {
		b, err := os.ReadFile(k + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	trusted := filepath.Join(keys, "trusted.pub")
	trust := func(ks ...string) {
		content := "# keys whose plans this host applies\n"
		for _, k := range ks {
			content += pub(k)
		}
		if err := os.WriteFile(trusted, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	trust(ci)

	// Signed by CI: shown with its signer, applied under -verify-key.
	planned := e.must(0, "plan", "-sign-key="+ci, "-out=signed.out")
	contains(t, "plan -sign-key", planned.stdout, "Signed by key "+ciFP+".")
	contains(t, "show", e.must(0, "show", "signed.out").stdout, "Signed by key "+ciFP+".")
	contains(t, "show -verify-key", e.must(0, "show", "-verify-key="+trusted, "signed.out").stdout, "Signed by key "+ciFP+" (ci 2025), one of the trusted keys.")
	contains(t, "show -json", e.must(0, "show", "-json", "signed.out").stdout, `"signed_by": "`+ciFP+`"`)

	// Refused before anything happens: unsigned, edited after signing,
	// signed by a key the host does not trust.
	e.must(0, "plan", "-out=unsigned.out")
	contains(t, "show unsigned", e.must(0, "show", "unsigned.out").stdout, "Not signed.")
	tampered := filepath.Join(e.dir, "tampered.out")
	raw, _ := os.ReadFile(filepath.Join(e.dir, "signed.out"))
	os.WriteFile(tampered, raw, 0o600)
	editPlan(t, tampered, func(p map[string]any) {
		obj(t, p, "resources", 0, "desired", "content")["value"] = "not what CI planned\n"
	})
	e.must(0, "plan", "-sign-key="+next, "-out=by-next.out")
	before := e.snapshot()
	for _, c := range []struct{ file, why string }{
		{"unsigned.out", "carries no signature, and this host applies only plans signed by a key in " + trusted},
		{"tampered.out", "the plan was changed after it was signed"},
		{"by-next.out", "is signed by key " + nextFP + ", which is not one of the 1 key(s) in " + trusted},
	} {
		r := e.must(1, "apply", "-json", "-verify-key="+trusted, c.file)
		contains(t, "apply "+c.file, r.stdout, `"plan_refused"`)
		contains(t, "apply "+c.file, r.stderr, c.why)
		if strings.Count(strings.TrimSpace(r.stderr), "\n") > 2 {
			t.Errorf("apply %s: not a short refusal:\n%s", c.file, r.stderr)
		}
		// The environment variable does what the flag does.
		r = e.mustToque(1, []string{"TOQUE_VERIFY_KEY=" + trusted}, "-chdir="+e.dir, "apply", c.file)
		contains(t, "TOQUE_VERIFY_KEY apply "+c.file, r.stderr, c.why)
	}
	// A signature that does not verify is refused without any key, too.
	contains(t, "show tampered", e.must(1, "show", "tampered.out").stderr, "the plan was changed after it was signed")
	// Under TOQUE_VERIFY_KEY, apply without a plan file (plan and confirm)
	// is refused: nobody signed that plan.
	r := e.mustToque(1, []string{"TOQUE_VERIFY_KEY=" + trusted}, "-chdir="+e.dir, "apply", "-auto-approve")
	contains(t, "apply without a plan file", r.stderr, "TOQUE_VERIFY_KEY names the keys whose signed plans this host applies")
	sameSnapshot(t, before, e.snapshot())

	e.must(0, "apply", "-verify-key="+trusted, "signed.out")
	if got := e.read("motd"); got != "signed\n" {
		t.Fatalf("motd %q", got)
	}

	// Rotation: while both keys are listed, plans of either are accepted;
	// once the old one is retired, its plans are refused.
	e.recipe("motd.hcl", `file "ROOT/motd" { content = "rotated\n" }`)
	e.mustToque(0, []string{"TOQUE_SIGN_KEY=" + ci}, "-chdir="+e.dir, "plan", "-out=old-key.out")
	e.must(0, "plan", "-sign-key="+next, "-out=new-key.out")
	trust(ci, next)
	for _, f := range []string{"old-key.out", "new-key.out"} {
		contains(t, "show "+f, e.must(0, "show", "-verify-key="+trusted, f).stdout, "one of the trusted keys")
	}
	trust(next)
	contains(t, "retired key", e.must(1, "apply", "-verify-key="+trusted, "old-key.out").stderr, "is signed by key "+ciFP+", which is not one of")
	e.mustToque(0, []string{"TOQUE_VERIFY_KEY=" + trusted}, "-chdir="+e.dir, "apply", "new-key.out")
	if got := e.read("motd"); got != "rotated\n" {
		t.Fatalf("motd %q", got)
	}

	// A signing key others may read is refused before planning.
	os.Chmod(ci, 0o644)
	os.Remove(filepath.Join(e.dir, "again.out"))
	contains(t, "readable key", e.must(1, "plan", "-sign-key="+ci, "-out=again.out").stderr, "chmod 600")
	if _, err := os.Stat(filepath.Join(e.dir, "again.out")); err == nil {
		t.Error("a plan was written with a refused key")
	}
	contains(t, "-sign-key without -out", e.must(1, "plan", "-sign-key="+next).stderr, "give -out=FILE too")
	contains(t, "missing trusted keys", e.must(1, "apply", "-verify-key="+filepath.Join(keys, "nope"), "new-key.out").stderr, "unusable key file")
}

// toqueWithin runs toque and fails the test if it does not end within d.
func (e *env) toqueWithin(d time.Duration, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, toqueBin, append([]string{"-chdir=" + e.dir}, args...)...)
	r := e.runCmd(cmd)
	if ctx.Err() != nil {
		e.t.Fatalf("toque %s did not end within %s: %s", strings.Join(args, " "), d, r)
	}
	return r
}

// A plan file that is a FIFO or a device fails at once, with the reason.
func TestE2ETrustPlanFileMustBeARegularFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	fifo := filepath.Join(e.dir, "plan.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	for _, c := range []struct{ path, why string }{
		{fifo, "is a named pipe (FIFO); a plan file is a regular file"},
		{"/dev/zero", "is a character device; a plan file is a regular file"},
		{e.root, "is a directory"},
	} {
		for _, cmd := range [][]string{{"show"}, {"show", "-json"}, {"apply"}} {
			r := e.toqueWithin(10*time.Second, append(cmd, c.path)...)
			if r.code != 1 {
				t.Errorf("%v %s: exit %d", cmd, c.path, r.code)
			}
			contains(t, strings.Join(cmd, " ")+" "+c.path, r.stderr, c.why)
		}
	}
}

// Names and content from a pull request cannot drive the reviewer's
// terminal or turn into active Markdown.
func TestE2ETrustHostileNamesAndContent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	name := "notes\u202etxt.sh"
	e.write(name, "old\n\x1b[2Jcleared\n", 0o644)
	e.recipe("hostile.hcl", `
file "ROOT/`+name+`" {
  content = "new\n\u001b]0;pwned\u0007\n`+"```"+`\n<details><summary>click</summary>\n[x](https://evil.example) <img src=x>\n"
}
`)
	planned := e.must(0, "plan", "-out=plan.out")
	text := e.must(0, "show", "plan.out").stdout
	md := e.must(0, "show", "-markdown", "plan.out").stdout
	for what, out := range map[string]string{"plan": planned.stdout, "show": text, "show -markdown": md} {
		for _, raw := range []string{"\x1b", "\x07", "\u202e"} {
			if strings.Contains(out, raw) {
				t.Errorf("%s prints %q raw:\n%q", what, raw, out)
			}
		}
	}
	contains(t, "show", text, `notes\u202etxt.sh`, `-\x1b[2Jcleared`, `+\x1b]0;pwned\x07`)
	// In Markdown the content sits in a fence longer than its own.
	contains(t, "show -markdown", md, "````diff\n", "+```\n+<details><summary>click</summary>\n", "<code>file["+e.root+"/notes\\u202etxt.sh]</code>")
	if strings.Count(md, "<details>") != 2 { // the resource's section and the content's line
		t.Errorf("<details> count %d:\n%s", strings.Count(md, "<details>"), md)
	}
}

func TestE2EEditedPlanIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	e.must(0, "plan", "-out=plan.out")
	p := filepath.Join(e.dir, "plan.out")
	b, _ := os.ReadFile(p)
	edited := bytes.Replace(b, []byte(`a\\n`), []byte(`b\\n`), 1)
	if bytes.Equal(edited, b) {
		edited = bytes.Replace(b, []byte("a.conf"), []byte("b.conf"), 1)
	}
	if err := os.WriteFile(p, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.must(1, "apply", "plan.out")
	if !strings.Contains(strings.ToLower(r.stderr), "checksum") {
		t.Errorf("want a checksum error:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(e.root, "a.conf")); !os.IsNotExist(err) {
		t.Error("an edited plan changed the host")
	}

	// Truncated, and not a plan at all.
	os.WriteFile(p, b[:len(b)/2], 0o600)
	e.must(1, "apply", "plan.out")
	e.must(1, "show", "plan.out")
	os.WriteFile(p, []byte("hello"), 0o600)
	e.must(1, "apply", "plan.out")
}

func TestE2EPlanFromAnotherHostIsRefused(t *testing.T) {
	t.Parallel()
	// Another hostname is a UTS namespace away: root makes one, anyone
	// else in a user namespace of their own.
	unshare := []string{"unshare", "--uts"}
	if ok, _ := testenv.Has(testenv.Root); ok {
		testenv.MustHave(t, testenv.Unshare)
	} else {
		testenv.MustHave(t, testenv.UserNS)
		unshare = append(unshare, "--user", "--map-root-user")
	}
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)
	e.must(0, "plan", "-out=plan.out")
	cmd := exec.Command(unshare[0], append(unshare[1:], "sh", "-c", `hostname toque-elsewhere && exec "$@"`, "sh",
		toqueBin, "-chdir="+e.dir, "apply", "plan.out")...)
	r := e.runCmd(cmd)
	if r.code != 1 || !strings.Contains(r.stderr, "toque-elsewhere") {
		t.Fatalf("want the other host refused by name, got %s", r)
	}
	if _, err := os.Stat(filepath.Join(e.root, "a.conf")); !os.IsNotExist(err) {
		t.Error("a plan from another host changed this one")
	}
}

// withoutMachineID returns argv that runs toque args in a mount namespace
// where /etc/machine-id (and /var/lib/dbus/machine-id) read empty, or
// skips the test, saying why, where such a namespace cannot be made.
func withoutMachineID(t *testing.T, args ...string) []string {
	t.Helper()
	// A mount namespace of a user namespace of its own, as any user.
	testenv.MustHave(t, testenv.UserNS, testenv.MachineID)
	script := `mount --bind /dev/null /etc/machine-id || exit 97
if [ -e /var/lib/dbus/machine-id ]; then mount --bind /dev/null /var/lib/dbus/machine-id || exit 97; fi
exec "$@"`
	if out, err := exec.Command("unshare", "--mount", "--map-root-user", "sh", "-c", script, "sh", "true").CombinedOutput(); err != nil {
		t.Fatalf("cannot hide the machine id in a mount namespace: %v\n%s", err, out)
	}
	return append([]string{"unshare", "--mount", "--map-root-user", "sh", "-c", script, "sh", toqueBin}, args...)
}

// TestE2EMachineIDIsRequired: a plan is applied only where its machine id
// matches; a plan without one, or a host without one, is refused with
// what to do, and nothing changes.
func TestE2EMachineIDIsRequired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recipe("conf.hcl", `file "ROOT/a.conf" { content = "a\n" }`)

	argv := withoutMachineID(t, "-chdir="+e.dir, "plan", "-out=nomid.plan")
	if r := e.runCmd(exec.Command(argv[0], argv[1:]...)); r.code != 0 {
		t.Fatalf("plan without a machine id: %s", r)
	}
	r := e.must(1, "apply", "nomid.plan")
	if !strings.Contains(r.stderr, "the plan records no machine id") || !strings.Contains(r.stderr, "toque plan") {
		t.Fatalf("a plan without a machine id: %s", r)
	}

	e.must(0, "plan", "-out=here.plan")
	argv = withoutMachineID(t, "-chdir="+e.dir, "apply", "here.plan")
	r = e.runCmd(exec.Command(argv[0], argv[1:]...))
	if r.code != 1 || !strings.Contains(r.stderr, "this host has no machine id") || !strings.Contains(r.stderr, "systemd-machine-id-setup") {
		t.Fatalf("a host without a machine id: %s", r)
	}
	if _, err := os.Stat(filepath.Join(e.root, "a.conf")); !os.IsNotExist(err) {
		t.Fatal("a refused plan changed the host")
	}
	e.must(0, "apply", "here.plan")
}
