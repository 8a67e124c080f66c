package hostexec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
)

// hostTools runs the programs host resources converge with (sysctl, and
// the shadow tools: useradd, usermod, userdel, groupadd, groupmod,
// groupdel, gpasswd, chpasswd, chage). The shadow tools lock the databases,
// write them atomically, keep /etc/gshadow and /etc/shadow in step, and
// leave nothing behind when they fail. root, when set, points them at the databases under another
// root instead of the host's (tests): --prefix for the tools that have
// it, --root (a chroot) for gpasswd, chpasswd and chage, which do not.
type Tools struct {
	Root string
}

// toolPath is searched first for the tools, whatever toque's PATH says:
// they live in sbin, which a non-login PATH may lack.
var toolPath = []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// toolTimeout bounds one tool run (they wait for the databases' locks).
const toolTimeout = 2 * time.Minute

// Run runs tool with args (and stdin, never logged). The error names the
// tool and quotes the end of its standard error; secret, when not empty,
// is replaced in it.
func (a Tools) Run(ctx context.Context, env *resources.Env, tool string, args []string, stdin []byte, secret string) error {
	argv := []string{tool}
	if a.Root != "" {
		switch tool {
		case "gpasswd":
			argv = append(argv, "-Q", a.Root)
		case "chpasswd", "chage":
			argv = append(argv, "-R", a.Root)
		default:
			argv = append(argv, "-P", a.Root)
		}
	}
	argv = append(argv, args...)
	logger, sensitive := hclog.NewNullLogger(), false
	if env != nil {
		if env.Logger != nil {
			logger = env.Logger
		}
		sensitive = env.Sensitive
	}
	res, err := shellexec.Run(ctx, shellexec.Spec{
		Argv: argv, Path: toolPath, Timeout: toolTimeout, Stdin: stdin,
		Logger: logger, Sensitive: sensitive,
	})
	if err == nil {
		return nil
	}
	what := tool
	if !sensitive {
		what = strings.Join(argv, " ")
	}
	var ee *shellexec.ExitError
	if errors.As(err, &ee) && res != nil {
		msg := LastLines(res.Stderr, 3)
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "(sensitive)")
		}
		if sensitive {
			msg = "(output hidden: the resource is sensitive)"
		}
		return fmt.Errorf("%s failed (exit %d): %s", what, res.ExitCode, msg)
	}
	return fmt.Errorf("running %s: %w", what, err)
}

// LastLines is the last n non-empty lines of s, joined by "; ".
func LastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return "no message"
	}
	return strings.Join(lines, "; ")
}

// Tail is the last lines of what a command printed (its errors first).
func Tail(res *shellexec.Result, lines int) string {
	if res == nil {
		return "(no output)"
	}
	text := strings.TrimSpace(strings.TrimSpace(res.Stderr) + "\n" + strings.TrimSpace(res.Stdout))
	ls := strings.Split(text, "\n")
	if len(ls) > lines {
		ls = append([]string{"…"}, ls[len(ls)-lines:]...)
	}
	if text == "" {
		return "(no output)"
	}
	return strings.Join(ls, "\n")
}
