package command

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/internal/diag"
)

// FmtCommand is `toque fmt`.
type FmtCommand struct {
	*Base
}

func (c *FmtCommand) Synopsis() string { return "Rewrite recipe files in the canonical format" }

func (c *FmtCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] fmt [options] [TARGET...]

  Rewrites HCL recipe files (*.hcl) in the canonical format and style. A
  TARGET is a file or a directory (default: the working directory).
  HCL JSON files (*.hcl.json) are left alone.

Options:

  -check       Change nothing; list the files that are not formatted and
               exit 3 if there are any (for CI).
  -diff        Print a diff of the changes.
  -list=false  Do not list the files that were (or would be) changed.
  -write=false Do not rewrite files (implied by -check).
  -recursive   Also format files in subdirectories.
`
}

func (c *FmtCommand) Run(args []string) int {
	var check, diff, recursive bool
	list, write := true, true
	fs := c.newFlagSet("fmt", c.Help)
	fs.BoolVar(&check, "check", false, "")
	fs.BoolVar(&diff, "diff", false, "")
	fs.BoolVar(&list, "list", true, "")
	fs.BoolVar(&write, "write", true, "")
	fs.BoolVar(&recursive, "recursive", false, "")
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if check {
		write = false
	}
	targets := fs.Args()
	if len(targets) == 0 {
		targets = []string{c.workDir()}
	}
	v := c.view(true)
	msg := views.Messages{V: v}
	var diags diag.Diagnostics
	fail := func(err error) int {
		diags = diags.Append(err)
		v.Diagnostics(diags)
		return views.ExitStatus(diags)
	}
	var files []string
	for _, t := range targets {
		found, err := hclFiles(c.path(t), recursive)
		if err != nil {
			return fail(err)
		}
		files = append(files, found...)
	}

	changed := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return fail(err)
		}
		out, d := config.Format(src, f)
		if d.HasErrors() {
			diags = diags.Append(d)
			c.files[f] = &hcl.File{Bytes: src}
			continue
		}
		if bytes.Equal(src, out) {
			continue
		}
		changed++
		msg.Formatted(f, list, diff, string(src), string(out))
		if write {
			st, err := os.Stat(f)
			if err != nil {
				return fail(err)
			}
			if err := os.WriteFile(f, out, st.Mode().Perm()); err != nil {
				return fail(fmt.Errorf("cannot rewrite %s: %w", f, err))
			}
		}
	}
	if diags.HasErrors() {
		v.Diagnostics(diags)
		return ExitError
	}
	if check && changed > 0 {
		return 3
	}
	return ExitOK
}

// hclFiles lists the *.hcl files of target (a file, or a directory).
func hclFiles(target string, recursive bool) ([]string, error) {
	st, err := os.Stat(target)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{target}, nil
	}
	var out []string
	err = filepath.WalkDir(target, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != target && (!recursive || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".hcl") && !strings.HasPrefix(d.Name(), ".") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}
