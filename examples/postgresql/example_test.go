// The postgresql example's recipes are valid and formatted, on any
// machine and as any user (validate reads nothing it would change).
// e2e/postgresql_test.go applies them to a fresh Debian 12 in a
// container, as root.
package postgresql_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/toquehq/toque/command"
	"github.com/toquehq/toque/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.IsolateToqueState(m)) }

func TestRecipes(t *testing.T) {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"validate"},
		{"validate", "-attr", "postgresql.version=16"},
		{"fmt", "-check"},
	} {
		env := command.Env{Dir: dir, LookupEnv: os.LookupEnv}
		var out bytes.Buffer
		code := command.Run(context.Background(), nil, args, command.Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Env: env})
		if code != 0 {
			t.Errorf("toque %s: exit %d:\n%s", strings.Join(args, " "), code, out.String())
		}
	}
}
