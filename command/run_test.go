package command

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/testutil"
)

// runToque runs toque in-process as main does, in dir, and returns its exit
// status and output. Its state directory and host-wide lock are in a
// scratch directory of the test's, given through Streams.Env; the test
// fails before anything runs if either would resolve elsewhere (never the
// machine's own /run/toque/apply.lock or /var/lib/toque). Closing stop is
// the first Ctrl-C.
func runToque(t *testing.T, dir string, stop <-chan struct{}, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runToqueState(t, dir, t.TempDir(), stop, args...)
}

// runToqueState is runToque with the state directory, host-wide lock and
// cache in scratch, so that runs of one test (a plan, its apply, the next
// plan) share them.
func runToqueState(t *testing.T, dir, scratch string, stop <-chan struct{}, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	vars := map[string]string{
		"TOQUE_STATE_DIR": filepath.Join(scratch, "state"),
		HostLockEnv:       filepath.Join(scratch, "host.lock"),
		"TOQUE_CACHE_DIR": filepath.Join(scratch, "cache"),
		"NO_COLOR":        "1",
		"TOQUE_LOG":       "",
	}
	env := Env{Dir: dir, LookupEnv: func(k string) (string, bool) {
		if v, ok := vars[k]; ok {
			return v, v != ""
		}
		return os.LookupEnv(k)
	}}
	testutil.MustBeUnder(t, scratch, "the host-wide apply lock", hostLock(env))
	testutil.MustBeUnder(t, scratch, "the state directory", stateDir(env, ""))
	testutil.MustBeUnder(t, scratch, "the download cache", downloadDir(env))
	return runWithEnvStop(env, stop, args)
}

// runWithEnv runs toque in-process as main does, with env; the caller
// checks that env keeps toque's state in the test's scratch directory.
func runWithEnv(env Env, args []string) (code int, stdout, stderr string) {
	return runWithEnvStop(env, nil, args)
}

func runWithEnvStop(env Env, stop <-chan struct{}, args []string) (code int, stdout, stderr string) {
	var out, errs bytes.Buffer
	code = Run(context.Background(), stop, args, Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errs, Env: env})
	return code, out.String(), errs.String()
}
