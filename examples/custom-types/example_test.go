// The custom-types example's recipes are valid and formatted, on any machine and
// as any user (validate reads nothing it would change).
package customtypes_test

import (
	"os"
	"testing"

	"github.com/toquehq/toque/internal/exampletest"
	"github.com/toquehq/toque/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(testutil.IsolateToqueState(m)) }

func TestRecipes(t *testing.T) { exampletest.CheckRecipes(t) }
