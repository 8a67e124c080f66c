package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
)

// VerifyProperty is the file types' verify: commands that check a new
// content before it replaces the file — Chef's verify, Ansible's
// validate. %s in a command is the path of a private temporary file that
// holds the new content (Chef's %{path} would open a template directive
// in an HCL string).
func VerifyProperty() *resources.Property {
	return &resources.Property{Name: "verify", Type: cty.List(cty.String), NonState: true, Runs: true, Validate: validateVerify,
		Description: "Commands run by /bin/sh on the new content before it is written, as Ansible's validate: %s is a private temporary file holding it (\"sshd -t -f %s\", \"nginx -t -c %s\"). A command that fails fails the resource, and the file is left as it is. A check reads and changes nothing: the plan does not treat it as a writer of anything."}
}

// verifyTimeout bounds one verify command.
const verifyTimeout = 2 * time.Minute

func validateVerify(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || strings.TrimSpace(e.AsString()) == "" {
			return errors.New("verify: a command is empty")
		}
		c := e.AsString()
		if strings.IndexByte(c, 0) >= 0 {
			return errors.New("verify: a command holds a NUL byte")
		}
		if !strings.Contains(c, "%s") {
			return fmt.Errorf("verify: %q does not name the file to check: write %%s where the new content's path goes (\"sshd -t -f %%s\")", c)
		}
	}
	return nil
}

// verifyScript is cmd with each %s, bare or already quoted ("%s",
// '%s'), made "$1": the temporary file's path is an argument of the
// shell, never text of the command, and a quoted %s stays one word.
func verifyScript(cmd string) string {
	return strings.NewReplacer(`"%s"`, `"$1"`, `'%s'`, `"$1"`, "%s", `"$1"`).Replace(cmd)
}

// verifyContent runs desired's verify commands on content, written to a
// private temporary file (the base name of path, in a directory only
// toque's user can enter), before anything at path changes. The path
// reaches the shell as "$1", never spliced into the command's text. A
// command that fails is an error quoting the end of its output.
func verifyContent(ctx context.Context, env *resources.Env, desired *resources.Resource, path string, content []byte) error {
	v := desired.Get("verify")
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() || v.LengthInt() == 0 {
		return nil
	}
	dir, err := os.MkdirTemp("", "toque-verify-")
	if err != nil {
		return fmt.Errorf("verifying the new content of %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(tmp, content, 0o600); err != nil {
		return fmt.Errorf("verifying the new content of %s: %w", path, err)
	}
	var logger = env.Log()
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		cmd := e.AsString()
		script := verifyScript(cmd)
		res, err := shellexec.Run(ctx, shellexec.Spec{
			Argv: []string{"/bin/sh", "-c", script, "sh", tmp}, Timeout: verifyTimeout,
			Logger: logger, Sensitive: env.Sensitive,
		})
		if err == nil {
			continue
		}
		var ee *shellexec.ExitError
		if errors.As(err, &ee) && res != nil {
			out := hostexec.LastLines(strings.TrimSpace(res.Stderr+"\n"+res.Stdout), 3)
			if env.Sensitive {
				out = "(output hidden: the resource is sensitive)"
			}
			return fmt.Errorf("verify `%s` refused the new content of %s (exit %d): %s; %s was left as it is",
				cmd, path, res.ExitCode, strings.ReplaceAll(out, tmp, "%s"), path)
		}
		return fmt.Errorf("verify `%s` of %s could not run: %w; %s was left as it is", cmd, path, err, path)
	}
	return nil
}
