package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toquehq/toque/internal/lazy"
)

// TestLazyReadsShowCarriedRecipePaths: what a value known at apply read
// of the recipes is shown by kind — a file by size and digest, a
// directory, a refused path with its reason, a fileset listing by count.
func TestLazyReadsShowCarriedRecipePaths(t *testing.T) {
	e := &LazyExpr{Source: `x`, Scope: lazy.Scope{
		Dir: "/r",
		Files: map[string]*lazy.File{
			"/r/a.txt":  {Content: []byte("a")},
			"/r/conf.d": {Kind: lazy.KindDir},
			"/r/gone":   nil,
			"/x":        {Error: `"../x" leads out of the recipe directory`},
		},
		Sets: []lazy.FileSet{
			{Dir: "/r/conf.d", Pattern: "*.conf", Matches: []string{"a.conf", "b.conf"}},
			{Dir: "/r/none", Pattern: "*", Error: "no directory /r/none"},
		},
	}}
	var got []string
	for _, v := range (&Plan{}).lazyReads(e, false, false) {
		got = append(got, fmt.Sprintf("%s: %s", v.Property, v.Value))
	}
	want := []string{
		"recipe file a.txt: ",
		"recipe file conf.d: (a directory)",
		"recipe file gone: (does not exist)",
		`recipe file /x: (refused: "\"../x\" leads out of the recipe directory")`,
		`recipe files conf.d "*.conf": 2 files`,
		`recipe files none "*": (refused: "no directory /r/none")`,
	}
	if len(got) != len(want) {
		t.Fatalf("got\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d: %q, want %q…", i, got[i], want[i])
		}
	}
}
