package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
)

// Policy is a decoded policy.hcl.
type Policy struct {
	// Dir is the policy's directory; Path the policy.hcl file in it.
	Dir, Path string
	// Bytes are policy.hcl's bytes (its digest is a lock input).
	Bytes     []byte
	Name      string
	NameRange hcl.Range
	RunList   []RunListEntry
	Cookbooks []*CookbookSpec
	Includes  []*IncludeSpec
	// Attributes by level ("default", "override"): JSON-shaped values.
	Attributes map[string]map[string]any
	// attrRanges maps level → joined path → where the value is written.
	attrRanges map[string]map[string]hcl.Range
	attrRange  map[string]hcl.Range
}

// RunListEntry is one item of the policy's own run list.
type RunListEntry struct {
	Item  config.RunListItem
	Range hcl.Range
}

// CookbookSpec is a `cookbook "NAME" { … }` block: a local path, or a git
// repository (+ path inside it) at a ref or sha.
type CookbookSpec struct {
	Name      string
	Path      string
	Git       string
	Ref       string
	Sha       string
	Version   string
	DeclRange hcl.Range
	attrs     map[string]*hcl.Attribute
}

// IncludeSpec is an `include_policy "NAME" { … }` block.
type IncludeSpec struct {
	Name string
	// Kind is the source: "path", "git", "server" or "remote".
	Kind             string
	Path             string
	Git              string
	Ref              string
	Sha              string
	Server           string
	PolicyRevisionID string
	PolicyGroup      string
	PolicyName       string
	Remote           string
	// RevisionID is the optional expectation: a full id or a prefix of at
	// least 10 characters.
	RevisionID string
	DeclRange  hcl.Range
	attrs      map[string]*hcl.Attribute
}

// rangeOf is the range of attribute name, or the block's.
func (s *IncludeSpec) rangeOf(name string) hcl.Range {
	if a := s.attrs[name]; a != nil {
		return a.Range
	}
	return s.DeclRange
}

func (s *CookbookSpec) rangeOf(name string) hcl.Range {
	if a := s.attrs[name]; a != nil {
		return a.Range
	}
	return s.DeclRange
}

type policyHCL struct {
	Name               *hcl.Attribute `hcl:"name"`
	RunList            *hcl.Attribute `hcl:"run_list,optional"`
	DefaultAttributes  *hcl.Attribute `hcl:"default_attributes,optional"`
	OverrideAttributes *hcl.Attribute `hcl:"override_attributes,optional"`
	Cookbooks          []*cookbookHCL `hcl:"cookbook,block"`
	Includes           []*includeHCL  `hcl:"include_policy,block"`
}

type cookbookHCL struct {
	Name     string         `hcl:"name,label"`
	Path     *hcl.Attribute `hcl:"path,optional"`
	Git      *hcl.Attribute `hcl:"git,optional"`
	Ref      *hcl.Attribute `hcl:"ref,optional"`
	Sha      *hcl.Attribute `hcl:"sha,optional"`
	Version  *hcl.Attribute `hcl:"version,optional"`
	DefRange hcl.Range      `hcl:",def_range"`
}

type includeHCL struct {
	Name             string         `hcl:"name,label"`
	Path             *hcl.Attribute `hcl:"path,optional"`
	Git              *hcl.Attribute `hcl:"git,optional"`
	Ref              *hcl.Attribute `hcl:"ref,optional"`
	Sha              *hcl.Attribute `hcl:"sha,optional"`
	Server           *hcl.Attribute `hcl:"server,optional"`
	PolicyRevisionID *hcl.Attribute `hcl:"policy_revision_id,optional"`
	PolicyGroup      *hcl.Attribute `hcl:"policy_group,optional"`
	PolicyName       *hcl.Attribute `hcl:"policy_name,optional"`
	Remote           *hcl.Attribute `hcl:"remote,optional"`
	RevisionID       *hcl.Attribute `hcl:"revision_id,optional"`
	DefRange         hcl.Range      `hcl:",def_range"`
}

var (
	hexRe  = regexp.MustCompile(`^[0-9a-f]+$`)
	nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// Exists reports whether dir holds a policy.hcl (policy mode).
func Exists(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, PolicyFileName))
	return err == nil && fi.Mode().IsRegular()
}

// ReadPolicy reads and decodes dir/policy.hcl into parser (which keeps the
// file for diagnostics). Every error is reported.
func ReadPolicy(dir string, parser *hclparse.Parser) (*Policy, hcl.Diagnostics) {
	path := filepath.Join(dir, PolicyFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read policy.hcl",
			Detail:   fmt.Sprintf("Reading %s failed: %s.", path, err),
		}}
	}
	return ParsePolicy(dir, path, b, parser)
}

// ParsePolicy decodes policy source b read from path.
func ParsePolicy(dir, path string, b []byte, parser *hclparse.Parser) (*Policy, hcl.Diagnostics) {
	if parser == nil {
		parser = hclparse.NewParser()
	}
	f, diags := parser.ParseHCL(b, path)
	if diags.HasErrors() || f == nil {
		return nil, diags
	}
	var raw policyHCL
	d := gohcl.DecodeBody(f.Body, nil, &raw)
	diags = append(diags, d...)
	if raw.Name == nil {
		return nil, diags
	}
	p := &Policy{
		Dir: dir, Path: path, Bytes: b,
		Attributes: map[string]map[string]any{config.LevelDefault: {}, config.LevelOverride: {}},
		attrRanges: map[string]map[string]hcl.Range{config.LevelDefault: {}, config.LevelOverride: {}},
		attrRange:  map[string]hcl.Range{},
	}
	p.Name, d = stringAttr(raw.Name)
	diags = append(diags, d...)
	p.NameRange = raw.Name.Expr.Range()
	if !d.HasErrors() && !nameRe.MatchString(p.Name) {
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid policy name",
			Detail:   fmt.Sprintf("%q is not a policy name: use letters, digits, '_', '-' and '.', starting with a letter or digit.", p.Name),
			Subject:  p.NameRange.Ptr(),
		})
	}
	if raw.RunList != nil {
		diags = append(diags, p.decodeRunList(raw.RunList)...)
	}
	for level, a := range map[string]*hcl.Attribute{config.LevelDefault: raw.DefaultAttributes, config.LevelOverride: raw.OverrideAttributes} {
		if a != nil {
			diags = append(diags, p.decodeAttributes(level, a)...)
		}
	}
	seen := map[string]hcl.Range{}
	for _, c := range raw.Cookbooks {
		spec, d := decodeCookbook(c)
		diags = append(diags, d...)
		if dup := declaredTwice(seen, "cookbook", c.Name, c.DefRange, "Declare each cookbook once."); dup != nil {
			diags = diags.Append(dup)
			continue
		}
		if spec != nil {
			p.Cookbooks = append(p.Cookbooks, spec)
		}
	}
	for _, inc := range raw.Includes {
		spec, d := decodeInclude(inc)
		diags = append(diags, d...)
		if dup := declaredTwice(seen, "include_policy", inc.Name, inc.DefRange, "Give each include_policy block its own name."); dup != nil {
			diags = diags.Append(dup)
			continue
		}
		if spec != nil {
			p.Includes = append(p.Includes, spec)
		}
	}
	return p, diags
}

func stringAttr(a *hcl.Attribute) (string, hcl.Diagnostics) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return "", diags
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return "", diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Incorrect attribute value type",
			Detail:   fmt.Sprintf("%s must be a string.", a.Name),
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	s := v.AsString()
	if s == "" {
		return "", diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Empty value",
			Detail:   fmt.Sprintf("%s must not be empty.", a.Name),
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	return s, diags
}

func (p *Policy) decodeRunList(a *hcl.Attribute) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var items []hcl.Expression
	if tc, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
		for _, e := range tc.Exprs {
			items = append(items, e)
		}
	} else {
		exprs, d := hcl.ExprList(a.Expr)
		if d.HasErrors() {
			return diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Incorrect attribute value type",
				Detail:   `run_list must be a list of strings: ["COOKBOOK", "COOKBOOK::RECIPE"].`,
				Subject:  a.Expr.Range().Ptr(),
			})
		}
		items = exprs
	}
	for _, e := range items {
		v, d := e.Value(nil)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if v.IsNull() || v.Type() != cty.String {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Incorrect attribute value type",
				Detail:   `Each run_list item must be a string: "COOKBOOK" or "COOKBOOK::RECIPE".`,
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		item, err := config.ParseRunListItem(v.AsString())
		if err != nil {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid run-list item",
				Detail:   err.Error() + ".",
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		p.RunList = append(p.RunList, RunListEntry{Item: item, Range: e.Range()})
	}
	return diags
}

func (p *Policy) decodeAttributes(level string, a *hcl.Attribute) hcl.Diagnostics {
	var diags hcl.Diagnostics
	ctx := &hcl.EvalContext{Functions: eval.Functions(p.Dir)}
	v, d := a.Expr.Value(ctx)
	diags = append(diags, d...)
	if d.HasErrors() {
		return diags
	}
	if v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Incorrect attribute value type",
			Detail:   fmt.Sprintf("%s must be an object: { app = { port = 8080 } }.", a.Name),
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	if !v.IsWhollyKnown() || hasNull(v) {
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Null attribute value",
			Detail:   fmt.Sprintf("%s holds a null. Policy attributes are data: leave the key out instead.", a.Name),
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	if v.ContainsMarked() {
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Sensitive policy attribute",
			Detail: fmt.Sprintf("%s uses sensitive(). Policy attributes are written into policy.lock.json, which is committed and shared, so they cannot hold a secret. "+
				"Write the attribute with sensitive() in a cookbook's attributes/ file (or read it from the host with env() or file()) instead.", a.Name),
			Subject: a.Expr.Range().Ptr(),
		})
	}
	m, err := ctyToJSON(v)
	if err != nil {
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid attribute value",
			Detail:   fmt.Sprintf("%s cannot be stored in the lock: %s.", a.Name, err),
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	obj, _ := m.(map[string]any)
	p.Attributes[level] = obj
	p.attrRange[level] = a.Range
	collectRanges(a.Expr, nil, p.attrRanges[level])
	return diags
}

func hasNull(v cty.Value) bool {
	if v.IsNull() {
		return true
	}
	t := v.Type()
	if t.IsObjectType() || t.IsMapType() || t.IsListType() || t.IsTupleType() || t.IsSetType() {
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if hasNull(ev) {
				return true
			}
		}
	}
	return false
}

// ctyToJSON converts a known, null-free value to JSON-shaped Go values
// (map[string]any, []any, string, bool, json.Number).
func ctyToJSON(v cty.Value) (any, error) {
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// collectRanges records, for each object key path in expr, the range of
// its value expression.
func collectRanges(expr hcl.Expression, path []string, out map[string]hcl.Range) {
	oc, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return
	}
	for _, item := range oc.Items {
		key := hcl.ExprAsKeyword(item.KeyExpr)
		if key == "" {
			kv, d := item.KeyExpr.Value(nil)
			if d.HasErrors() || kv.IsNull() || !kv.IsKnown() || kv.Type() != cty.String {
				continue
			}
			key = kv.AsString()
		}
		p := append(append([]string(nil), path...), key)
		out[pathKey(p)] = item.ValueExpr.Range()
		collectRanges(item.ValueExpr, p, out)
	}
}

func pathKey(p []string) string { return strings.Join(p, "\x00") }

// AttributeRange is where the policy writes path at level: the deepest key
// the source shows, else the whole attribute.
func (p *Policy) AttributeRange(level string, path []string) hcl.Range {
	for n := len(path); n > 0; n-- {
		if r, ok := p.attrRanges[level][pathKey(path[:n])]; ok {
			return r
		}
	}
	return p.attrRange[level]
}

func decodeCookbook(c *cookbookHCL) (*CookbookSpec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	s := &CookbookSpec{Name: c.Name, DeclRange: c.DefRange, attrs: map[string]*hcl.Attribute{}}
	if !config.ValidCookbookName(c.Name) {
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid cookbook name",
			Detail:   fmt.Sprintf("%q is not a cookbook name: use letters, digits, '_', '-' and '.'.", c.Name),
			Subject:  c.DefRange.Ptr(),
		})
	}
	diags = append(diags, stringFields(s.attrs, map[string]stringField{
		"path": {c.Path, &s.Path}, "git": {c.Git, &s.Git}, "ref": {c.Ref, &s.Ref}, "sha": {c.Sha, &s.Sha}, "version": {c.Version, &s.Version},
	})...)
	if diags.HasErrors() {
		return nil, diags
	}
	switch {
	case s.Git != "":
		diags = append(diags, checkGitPin("cookbook", s.Name, s.Ref, s.Sha, s.DeclRange, s.rangeOf("sha"))...)
		if s.Path != "" {
			if _, err := config.CleanCookbookPath(s.Path); err != nil {
				diags = diags.Append(badPath(s.rangeOf("path"), "path inside the repository", err))
			}
		}
	case s.Path != "":
		for _, k := range []string{"ref", "sha"} {
			if s.attrs[k] != nil {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unexpected argument",
					Detail:   fmt.Sprintf("%s applies to a git source only; a path cookbook is read as it is on disk.", k),
					Subject:  s.rangeOf(k).Ptr(),
				})
			}
		}
	default:
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cookbook without a source",
			Detail:   fmt.Sprintf("The cookbook %q needs a source: path = \"cookbooks/%s\", or git = \"URL\" with ref or sha.", s.Name, s.Name),
			Subject:  s.DeclRange.Ptr(),
		})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return s, diags
}

func checkGitPin(what, name, ref, sha string, decl, shaRange hcl.Range) hcl.Diagnostics {
	var diags hcl.Diagnostics
	switch {
	case ref == "" && sha == "":
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Git source without a ref or sha",
			Detail:   fmt.Sprintf("The %s %q comes from git but names no commit. Add ref = \"main\" (a branch or tag, followed by toque update) or sha = \"…\" (a fixed commit); toque never picks a branch for you.", what, name),
			Subject:  decl.Ptr(),
		})
	case ref != "" && sha != "":
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Both ref and sha",
			Detail:   fmt.Sprintf("The %s %q gives both ref and sha. Give sha to pin a commit, or ref to follow a branch or tag with toque update.", what, name),
			Subject:  shaRange.Ptr(),
		})
	case sha != "" && (len(sha) < 7 || len(sha) > 64 || !hexRe.MatchString(sha)):
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid commit sha",
			Detail:   fmt.Sprintf("%q is not a commit sha: write at least 7 lower-case hex digits.", sha),
			Subject:  shaRange.Ptr(),
		})
	}
	return diags
}

func badPath(rng hcl.Range, what string, err error) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid path",
		Detail:   fmt.Sprintf("The %s is not usable: %s.", what, err),
		Subject:  rng.Ptr(),
	}
}

func decodeInclude(c *includeHCL) (*IncludeSpec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	s := &IncludeSpec{Name: c.Name, DeclRange: c.DefRange, attrs: map[string]*hcl.Attribute{}}
	if !nameRe.MatchString(c.Name) {
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid include name",
			Detail:   fmt.Sprintf("%q is not a policy name: use letters, digits, '_', '-' and '.'.", c.Name),
			Subject:  c.DefRange.Ptr(),
		})
	}
	diags = append(diags, stringFields(s.attrs, map[string]stringField{
		"path": {c.Path, &s.Path}, "git": {c.Git, &s.Git}, "ref": {c.Ref, &s.Ref}, "sha": {c.Sha, &s.Sha},
		"server": {c.Server, &s.Server}, "policy_revision_id": {c.PolicyRevisionID, &s.PolicyRevisionID},
		"policy_group": {c.PolicyGroup, &s.PolicyGroup}, "policy_name": {c.PolicyName, &s.PolicyName},
		"remote": {c.Remote, &s.Remote}, "revision_id": {c.RevisionID, &s.RevisionID},
	})...)
	if diags.HasErrors() {
		return nil, diags
	}

	// Exactly one source: git (path is then inside the repository), server,
	// remote, or path.
	var kinds []string
	for _, k := range []string{"git", "server", "remote"} {
		if s.attrs[k] != nil {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 && s.attrs["path"] != nil {
		kinds = append(kinds, "path")
	}
	allowed := map[string][]string{
		"path":   {"path", "revision_id"},
		"git":    {"git", "path", "ref", "sha", "revision_id"},
		"server": {"server", "policy_revision_id", "policy_group", "policy_name", "revision_id"},
		"remote": {"remote", "revision_id"},
	}
	switch len(kinds) {
	case 0:
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Include without a source",
			Detail:   fmt.Sprintf("The include %q needs exactly one source: path, git (with path, and ref or sha), server (with policy_revision_id or policy_group) or remote (a URL of a lock file).", s.Name),
			Subject:  s.DeclRange.Ptr(),
		})
	case 1:
		s.Kind = kinds[0]
	default:
		return nil, diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "More than one source",
			Detail:   fmt.Sprintf("The include %q names %s: an include has exactly one source. Keep one of them.", s.Name, strings.Join(kinds, " and ")),
			Subject:  s.rangeOf(kinds[1]).Ptr(),
		})
	}
	ok := map[string]bool{}
	for _, k := range allowed[s.Kind] {
		ok[k] = true
	}
	var extra []string
	for k := range s.attrs {
		if !ok[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Argument not valid for this source",
			Detail:   fmt.Sprintf("%s does not apply to a %s source. A %s include takes %s.", k, s.Kind, s.Kind, strings.Join(allowed[s.Kind], ", ")),
			Subject:  s.rangeOf(k).Ptr(),
		})
	}
	switch s.Kind {
	case "path":
		// Relative to the policy's directory; may point anywhere.
	case "git":
		diags = append(diags, checkGitPin("include", s.Name, s.Ref, s.Sha, s.DeclRange, s.rangeOf("sha"))...)
		if s.Path == "" {
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Git include without a path",
				Detail:   fmt.Sprintf("The include %q needs path: the lock file inside the repository (for example path = \"policies/%s.lock.json\").", s.Name, s.Name),
				Subject:  s.DeclRange.Ptr(),
			})
		} else if c, err := config.CleanCookbookPath(s.Path); err != nil {
			diags = diags.Append(badPath(s.rangeOf("path"), "path inside the repository", err))
		} else {
			s.Path = c
		}
	case "server":
		switch {
		case s.PolicyRevisionID == "" && s.PolicyGroup == "":
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Server include without a revision or group",
				Detail:   fmt.Sprintf("The include %q needs policy_revision_id (a fixed revision) or policy_group (the revision the group holds at install time).", s.Name),
				Subject:  s.DeclRange.Ptr(),
			})
		case s.PolicyRevisionID != "" && s.PolicyGroup != "":
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Both policy_revision_id and policy_group",
				Detail:   fmt.Sprintf("The include %q gives both; give one of them.", s.Name),
				Subject:  s.rangeOf("policy_group").Ptr(),
			})
		}
		if s.PolicyName == "" {
			s.PolicyName = s.Name
		}
		for _, k := range []string{"policy_name", "policy_group", "policy_revision_id"} {
			v := map[string]string{"policy_name": s.PolicyName, "policy_group": s.PolicyGroup, "policy_revision_id": s.PolicyRevisionID}[k]
			if v != "" && !nameRe.MatchString(v) {
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid " + strings.ReplaceAll(k, "_", " "),
					Detail:   fmt.Sprintf("%q is not usable in a URL path: use letters, digits, '_', '-' and '.'.", v),
					Subject:  s.rangeOf(k).Ptr(),
				})
			}
		}
		diags = append(diags, checkURL(s.Server, s.rangeOf("server"))...)
	case "remote":
		diags = append(diags, checkURL(s.Remote, s.rangeOf("remote"))...)
	}
	if s.RevisionID != "" && (len(s.RevisionID) < 10 || len(s.RevisionID) > 64 || !hexRe.MatchString(s.RevisionID)) {
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid revision id",
			Detail:   fmt.Sprintf("revision_id %q must be a full revision id or a prefix of at least 10 lower-case hex digits.", s.RevisionID),
			Subject:  s.rangeOf("revision_id").Ptr(),
		})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return s, diags
}

func checkURL(u string, rng hcl.Range) hcl.Diagnostics {
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return nil
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Invalid URL",
		Detail:   fmt.Sprintf("%q is not an http or https URL.", redactURL(u)),
		Subject:  rng.Ptr(),
	}}
}

// declaredTwice records the block KIND "NAME" at rng in seen, and returns
// the error for a second block of the same kind and name, naming the first.
func declaredTwice(seen map[string]hcl.Range, kind, name string, rng hcl.Range, advice string) *hcl.Diagnostic {
	key := kind + " " + name
	first, dup := seen[key]
	if !dup {
		seen[key] = rng
		return nil
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Duplicate " + kind + " block",
		Detail:   fmt.Sprintf("The %s %q is already declared at %s:%d. %s", kind, name, first.Filename, first.Start.Line, advice),
		Subject:  rng.Ptr(),
	}
}

// stringField is one optional string attribute of a block and where its
// value goes.
type stringField struct {
	a   *hcl.Attribute
	dst *string
}

// stringFields decodes each set attribute of fields into its destination
// and records it in attrs by name.
func stringFields(attrs map[string]*hcl.Attribute, fields map[string]stringField) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for name, f := range fields {
		if f.a == nil {
			continue
		}
		attrs[name] = f.a
		v, d := stringAttr(f.a)
		diags = append(diags, d...)
		*f.dst = v
	}
	return diags
}
