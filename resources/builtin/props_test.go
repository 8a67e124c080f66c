package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toquehq/toque/resources"
)

func TestBuiltin(t *testing.T) {
	reg := Registry()
	if got := strings.Join(reg.Names(), ","); got != "alternatives,apt_repository,apt_update,archive_file,authorized_keys,bash,cron_d,csh,directory,dnf_makecache,execute,file,file_block,file_line,git,group,hostname,ini_setting,kernel_module,link,locale,mount,package,perl,powershell_script,python,remote_file,script,service,sh,ssh_known_hosts_entry,sudo,swap_file,sysctl,systemd_unit,template,timezone,user,yum_repository" {
		t.Fatalf("Registry().Names() = %s", got)
	}
	for _, n := range reg.Names() {
		typ, _ := reg.Lookup(n)
		s := typ.Schema()
		if s != typ.Schema() {
			t.Errorf("%s: Schema() returns a different value each call", n)
		}
		// Script types have no name property: as in Chef, their label only
		// names the resource.
		_, runner := typ.(resources.Runner)
		if (s.NameProperty() == nil && (!runner || n == "execute")) || !s.HasAction(s.DefaultAction) {
			t.Errorf("%s: needs a name property and a valid default action", n)
		}
		for _, p := range s.Properties {
			if p.Description == "" || strings.Contains(p.Description, "\n") {
				t.Errorf("%s.%s: description must be one line", n, p.Name)
			}
		}
	}
}

// TestBuiltinDocs keeps docs/resource-authors.md in step with the schemas:
// each built-in type's section has a row for every property and action.
func TestBuiltinDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "resource-authors.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, typ := range Types() {
		s := typ.Schema()
		t.Run(s.Name, func(t *testing.T) {
			start := strings.Index(doc, "\n## "+s.Name+"\n")
			if start < 0 {
				t.Fatalf("no section for %s", s.Name)
			}
			section := doc[start+1:]
			if end := strings.Index(section[3:], "\n## "); end >= 0 {
				section = section[:end+3]
			}
			for _, p := range s.Properties {
				if !strings.Contains(section, "| `"+p.Name+"` |") {
					t.Errorf("property %s is not documented", p.Name)
				}
			}
			for _, a := range s.Actions {
				if !strings.Contains(section, "| `"+a+"`") {
					t.Errorf("action %s is not documented", a)
				}
			}
		})
	}
}
