package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinDataSources(t *testing.T) {
	reg := Registry()
	if got := strings.Join(reg.DataNames(), ","); got != "exec,files,groups,mounts,packages,users" {
		t.Fatalf("Registry().DataNames() = %s", got)
	}
	// WithDefine (and With) keep the data sources.
	if _, ok := reg.With().DataSource("exec"); !ok {
		t.Error("With drops the data sources")
	}
	for _, ds := range DataSources() {
		s := ds.Schema()
		if s != ds.Schema() {
			t.Errorf("%s: Schema() returns a different value each call", s.Name)
		}
		if len(s.Actions) > 0 || s.Description == "" {
			t.Errorf("%s: a data source takes no action and says what it reads", s.Name)
		}
		for _, p := range s.Properties {
			if p.Description == "" || strings.Contains(p.Description, "\n") || p.Name == "sensitive" {
				t.Errorf("%s.%s: description must be one line (and sensitive is every data block's)", s.Name, p.Name)
			}
		}
		if ds.Describe(nil) == "" {
			t.Errorf("%s: Describe says nothing", s.Name)
		}
	}
}

// TestBuiltinDataDocs keeps docs/data.md in step with the data sources:
// each has a section with a row for every argument.
func TestBuiltinDataDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "data.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, ds := range DataSources() {
		s := ds.Schema()
		t.Run(s.Name, func(t *testing.T) {
			start := strings.Index(doc, "\n### `data \""+s.Name+"\"`\n")
			if start < 0 {
				t.Fatalf("no section for %s", s.Name)
			}
			section := doc[start+1:]
			if end := strings.Index(section[3:], "\n### "); end >= 0 {
				section = section[:end+3]
			}
			for _, p := range s.Properties {
				if !strings.Contains(section, "| `"+p.Name+"` |") {
					t.Errorf("argument %s is not documented", p.Name)
				}
			}
		})
	}
}
