package command

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// parseDigest accepts a plan digest as "sha256:HEX" or as the bare 64
// hexadecimal digits, and returns it in the "sha256:hex" form Plan.Digest
// prints (lower case).
func parseDigest(s string) (string, error) {
	v := strings.TrimSpace(s)
	if i := strings.IndexByte(v, ':'); i >= 0 {
		if !strings.EqualFold(v[:i], "sha256") {
			return "", fmt.Errorf("-expect-digest=%s: a plan digest is sha256 (\"sha256:HEX\" or 64 hexadecimal digits), not %q", s, v[:i])
		}
		v = v[i+1:]
	}
	if len(v) != 64 {
		return "", fmt.Errorf("-expect-digest=%s: want 64 hexadecimal digits (the \"Plan digest\" that plan and show print), got %d characters", s, len(v))
	}
	if _, err := hex.DecodeString(v); err != nil {
		return "", fmt.Errorf("-expect-digest=%s: not hexadecimal: want the \"Plan digest\" that plan and show print", s)
	}
	return "sha256:" + strings.ToLower(v), nil
}
