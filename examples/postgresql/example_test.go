// The postgresql example's recipes are valid and formatted, on any machine
// and as any user (validate reads nothing it would change). e2e/postgresql_test.go
// applies them to a fresh Debian 12 in a container, as root.
package postgresql_test

import (
	"os"
	"testing"

	"github.com/toquehq/toque/internal/exampletest"
	"github.com/toquehq/toque/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.IsolateToqueState(m)) }

func TestRecipes(t *testing.T) {
	exampletest.CheckRecipes(t, []string{"-attr", "postgresql.version=16"})
}
