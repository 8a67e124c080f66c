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
	"github.com/toquehq/toque/policy"
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
  HCL JSON files (*.hcl.json) are left alone, and so are files and
  directories whose names start with ".".

  A policy directory (one holding policy.hcl) is formatted whole: its
  subdirectories, and the directories of the cookbooks policy.hcl reads
  from local paths, wherever they are (-recursive=false: the directory
  alone). A file that does not parse is reported at its line and column,
  and the others are formatted still.

Options:

  -check       Change nothing; list the files that are not formatted and
               exit 3 if there are any (for CI).
  -diff        Print a diff of the changes.
  -list=false  Do not list the files that were (or would be) changed.
  -write=false Do not rewrite files (implied by -check).
  -recursive   Also format files in subdirectories (the default for a
               policy directory).
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
	files, err := fmtFiles(targets, c.path, recursive, isSet(fs, "recursive"))
	if err != nil {
		return fail(err)
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

// fmtFiles lists the files fmt formats for targets, each once: a file;
// a directory's *.hcl files (and its subdirectories' when recursive); a
// policy directory's and those of its local cookbooks, recursively unless
// -recursive=false was given (explicit).
func fmtFiles(targets []string, path func(string) string, recursive, explicit bool) ([]string, error) {
	var files []string
	seen := map[string]bool{}
	add := func(dir string, rec bool) error {
		found, err := hclFiles(dir, rec)
		for _, f := range found {
			if !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
		return err
	}
	for _, t := range targets {
		target := path(t)
		if !policy.Exists(target) || (explicit && !recursive) {
			if err := add(target, recursive); err != nil {
				return nil, err
			}
			continue
		}
		if err := add(target, true); err != nil {
			return nil, err
		}
		for _, dir := range policy.LocalCookbookDirs(target) {
			if err := add(dir, true); err != nil {
				return nil, fmt.Errorf("the cookbook at %s, which %s names: %w", dir, filepath.Join(target, policy.PolicyFileName), err)
			}
		}
	}
	return files, nil
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
