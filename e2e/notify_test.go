package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

func readState(t *testing.T, e *env, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.state, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
