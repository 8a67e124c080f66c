package config

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// Format returns src in canonical HCL layout (toque fmt). It refuses a file
// that does not parse, returning the syntax errors.
func Format(src []byte, filename string) ([]byte, hcl.Diagnostics) {
	if d := CheckSource(src, filename, false); d != nil {
		return nil, hcl.Diagnostics{d}
	}
	_, diags := hclsyntax.ParseConfig(src, filename, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return nil, diags
	}
	return hclwrite.Format(src), diags
}

// InputsDigest is "sha256:HEX" over every recipe file's base name and
// bytes, in load order. The plan records it.
func (c *Config) InputsDigest() string {
	h := sha256.New()
	var files map[string]*hcl.File
	if c.Parser != nil {
		files = c.Parser.Files()
	}
	var n [8]byte
	for _, path := range c.Files {
		var src []byte
		if f, ok := files[path]; ok && f != nil {
			src = f.Bytes
		}
		name := filepath.Base(path)
		binary.BigEndian.PutUint64(n[:], uint64(len(name)))
		h.Write(n[:])
		h.Write([]byte(name))
		binary.BigEndian.PutUint64(n[:], uint64(len(src)))
		h.Write(n[:])
		h.Write(src)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// DiagnosticWriter renders diagnostics with snippets of the loaded files.
func (c *Config) DiagnosticWriter(w io.Writer, width uint, color bool) hcl.DiagnosticWriter {
	var files map[string]*hcl.File
	if c != nil && c.Parser != nil {
		files = c.Parser.Files()
	}
	return hcl.NewDiagnosticTextWriter(w, files, width, color)
}
