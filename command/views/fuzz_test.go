package views

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/toquehq/toque/resources/builtin"

	"github.com/toquehq/toque/internal/plantest"
	"github.com/toquehq/toque/plan"
)

// FuzzRenderPlan wraps the fuzz bytes in a valid plan file envelope (with
// the right checksum), so the fuzzer reaches every rendering of whatever
// plan.Read accepts: a plan file is input from outside, and no rendering
// may panic on one.
func FuzzRenderPlan(f *testing.F) {
	body, err := plantest.SamplePlan(f).Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body.Body)
	groups, err := groupsScenario(f).Encode() // instances and resource groups
	if err != nil {
		f.Fatal(err)
	}
	f.Add(groups.Body)
	f.Add([]byte(`{"format_version":2,"resources":[{"desired":{"x":{"value":1,"type":"number"}},"current":{"exists":true,"values":{"a":{"value":{"value":"x","type":["list","string"]}}}}}]}`))
	f.Add([]byte(`{"format_version":2,"attributes":[{"path":"a","value":{"value":[1],"type":["tuple",["number"]]}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := sha256.Sum256(body)
		var buf bytes.Buffer
		fmt.Fprintf(&buf, `{"toque_plan":%d,"checksum":"sha256:`, plan.FormatVersion)
		buf.WriteString(hex.EncodeToString(sum[:]) + `","plan":`)
		buf.Write(body)
		buf.WriteString(`}`)
		path := filepath.Join(t.TempDir(), "plan.out")
		if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		got, digest, err := plan.ReadWithDigest(path, builtin.Registry())
		if err != nil {
			return
		}
		// Whatever plan.Read accepts can be rendered and viewed.
		var text bytes.Buffer
		if err := RenderText(&text, got, RenderOptions{Registry: builtin.Registry(), Color: true, Digest: digest}); err != nil || text.Len() == 0 {
			t.Fatalf("RenderText: %v, %d bytes", err, text.Len())
		}
		if js, err := JSONView(got, JSONOptions{Registry: builtin.Registry(), Digest: digest}); err != nil || !json.Valid(js) {
			t.Fatalf("JSONView: %v\n%.300s", err, js)
		}
		if err := RenderMarkdown(&bytes.Buffer{}, got, MarkdownOptions{Registry: builtin.Registry(), MaxBytes: 4000, Digest: digest}); err != nil && !errors.Is(err, ErrMarkdownTooSmall) {
			t.Fatalf("RenderMarkdown: %v", err)
		}
	})
}
