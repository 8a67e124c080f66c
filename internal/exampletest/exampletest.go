// Package exampletest checks an example's recipes the way a newcomer
// first meets them, on any machine and as any user: toque validate (with
// each set of extra arguments) and toque fmt -check in the example's
// directory, nothing that would change the host.
package exampletest

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/toquehq/toque/command"
)

// CheckRecipes runs toque validate, then validate with each of
// validateArgs, then fmt -check, in the test's directory (the example's),
// and fails t for each that does not exit 0.
func CheckRecipes(t *testing.T, validateArgs ...[]string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	runs := [][]string{{"validate"}}
	for _, a := range validateArgs {
		runs = append(runs, append([]string{"validate"}, a...))
	}
	runs = append(runs, []string{"fmt", "-check"})
	for _, args := range runs {
		env := command.Env{Dir: dir, LookupEnv: os.LookupEnv}
		var out bytes.Buffer
		code := command.Run(context.Background(), nil, args, command.Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Env: env})
		if code != 0 {
			t.Errorf("toque %s: exit %d:\n%s", strings.Join(args, " "), code, out.String())
		}
	}
}
