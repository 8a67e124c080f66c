// Package testutil holds helpers toque's tests share across packages:
// writing file trees and running git in isolation. Only tests import it.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testenv"
)

// WriteFiles writes files (path relative to dir → content) under dir,
// creating directories as needed.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// IsolateGit gives git — the test's and any process it starts — a
// temporary HOME, no system or global configuration, a fixed identity and
// fixed dates, so tests never depend on the machine's git set-up. It
// returns the temporary HOME. Without git the test skips (testenv).
func IsolateGit(t testing.TB) string {
	t.Helper()
	testenv.MustHave(t, testenv.Git)
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   "/dev/null",
		"GIT_AUTHOR_NAME":     "Test Author",
		"GIT_AUTHOR_EMAIL":    "author@example.com",
		"GIT_COMMITTER_NAME":  "Test Committer",
		"GIT_COMMITTER_EMAIL": "committer@example.com",
		"GIT_AUTHOR_DATE":     "2024-01-02T03:04:05Z",
		"GIT_COMMITTER_DATE":  "2024-01-02T03:04:05Z",
		"GIT_TERMINAL_PROMPT": "0",
	} {
		t.Setenv(k, v)
	}
	return home
}

// Git runs git with args in dir and returns its trimmed output, failing
// the test when git fails.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	testenv.MustHave(t, testenv.Git)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
