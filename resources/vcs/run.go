package vcs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// safeConfig is given to every git toque runs, over any configuration
// file: no hooks (neither a repository's nor a template's), no fsmonitor
// command, only git's own transports — https, http, ssh and git always,
// file only for the command itself, never for a submodule (git sets
// GIT_PROTOCOL_FROM_USER=0 there; file URLs in .gitmodules were
// CVE-2022-39253) — and no remote helper (ext::, fd::) at all;
// submodules only when toque asks for them.
func safeConfig(fileSubmodules bool) []string {
	file := "user"
	if fileSubmodules {
		file = "always"
	}
	kv := []string{
		"core.hooksPath=/dev/null",
		"core.fsmonitor=false",
		"protocol.allow=never",
		"protocol.https.allow=always",
		"protocol.http.allow=always",
		"protocol.ssh.allow=always",
		"protocol.git.allow=always",
		"protocol.file.allow=" + file,
		"submodule.recurse=false",
		"fetch.recurseSubmodules=false",
		"advice.detachedHead=false",
		"gc.auto=0",
	}
	out := make([]string, 0, 2*len(kv))
	for _, x := range kv {
		out = append(out, "-c", x)
	}
	return out
}

// keptGitVars are the GIT_* variables of toque's environment a git
// process keeps: where its configuration files are and who commits.
// Every other one is dropped — GIT_ALLOW_PROTOCOL would override the
// transports above, GIT_DIR, GIT_WORK_TREE, GIT_CONFIG_PARAMETERS,
// GIT_SSH_COMMAND and the rest redirect git.
var keptGitVars = map[string]bool{"GIT_CONFIG_GLOBAL": true, "GIT_CONFIG_NOSYSTEM": true, "GIT_CONFIG_SYSTEM": true,
	"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true}

func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GIT_") && !keptGitVars[name] {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// gitRun is one git process: its arguments after the safe
// configuration, the directory it runs in, who it runs as (user, group:
// "" for toque's own), and a URL whose credentials are redacted from
// its messages.
type gitRun struct {
	args        []string
	dir         string
	user, group string
	url         string
	timeout     time.Duration
	logger      hclog.Logger
	// fileSubmodules lets submodules use the file transport (tests).
	fileSubmodules bool
}

// gitError is a git that failed, with the end of what it said.
type gitError struct {
	what string
	msg  string
	err  error
}

func (e *gitError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("git %s: %v", e.what, e.err)
	}
	return fmt.Sprintf("git %s: %s", e.what, e.msg)
}

func (e *gitError) Unwrap() error { return e.err }

// run runs g and returns its standard output.
func (g gitRun) run(ctx context.Context) (string, error) {
	argv := append([]string{"git"}, safeConfig(g.fileSubmodules)...)
	argv = append(argv, g.args...)
	timeout := g.timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	res, err := shellexec.Run(ctx, shellexec.Spec{
		Argv:    argv,
		Dir:     g.dir,
		User:    g.user,
		Group:   g.group,
		BaseEnv: baseEnv(),
		Env: map[string]string{
			"GIT_TERMINAL_PROMPT": "0",
			// No ssh prompt either (a passphrase, a host key): use a key
			// without one, or an agent.
			"GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
		},
		Timeout:     timeout,
		OutputLimit: 32 << 20,
		Logger:      g.logger,
	})
	if err == nil {
		return res.Stdout, nil
	}
	what := g.args[0]
	var ee *shellexec.ExitError
	if errors.As(err, &ee) && res != nil {
		msg := hostexec.LastLines(res.Stderr, 4)
		if g.url != "" {
			msg = strings.ReplaceAll(msg, g.url, props.RedactURL(g.url))
		}
		return res.Stdout, &gitError{what: what, msg: props.RedactURL(msg), err: err}
	}
	return "", &gitError{what: what, err: err}
}
