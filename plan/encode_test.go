package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// The parallel encoder must write exactly what json.Marshal writes: the
// plan file's checksum and the digest reviewers approve depend on it.
func TestCanonicalEqualsJSONMarshal(t *testing.T) {
	for _, n := range []int{0, 1, parallelEncodeMin - 1, parallelEncodeMin, 2000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			p := &Plan{FormatVersion: FormatVersion, Host: Host{Hostname: "h<&>"}, Salt: "s"}
			for i := 0; i < n; i++ {
				p.Resources = append(p.Resources, &Resource{
					Address: fmt.Sprintf("file[/x/%d]", i), Type: "file", Name: fmt.Sprintf("/x/%d", i),
					Kind:    resources.Create,
					Desired: map[string]Value{"content": {Value: cty.StringVal(fmt.Sprintf("line <%d>\n", i))}, "mode": {Value: cty.StringVal("0644")}},
					Changes: []Change{{Property: "content"}},
				})
			}
			want, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.canonical()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("canonical differs from json.Marshal (len %d vs %d)", len(got), len(want))
			}
		})
	}
}
