package config

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// DataKeyword is the block that reads the host when the plan is made,
// Terraform's data source: data "TYPE" "NAME" { … }, read as
// data.TYPE.NAME.result.
const DataKeyword = "data"

// DataBlock is one data "TYPE" "NAME" { … } block, kept unevaluated:
// package eval decodes its arguments against the data source's schema,
// and the planner reads it.
type DataBlock struct {
	Type string
	Name string
	// Body holds the arguments (sensitive among them).
	Body hcl.Body
	// Dir is the directory of the recipe file.
	Dir        string
	DeclRange  hcl.Range
	TypeRange  hcl.Range
	LabelRange hcl.Range
}

// Address is data.TYPE.NAME, as recipes read it.
func (b *DataBlock) Address() string { return DataAddress(b.Type, b.Name) }

// DataAddress is data.TYPE.NAME.
func DataAddress(typ, name string) string { return DataKeyword + "." + typ + "." + name }

// Attributes are the block's arguments.
func (b *DataBlock) Attributes() (hcl.Attributes, hcl.Diagnostics) {
	if b.Body == nil {
		return nil, nil
	}
	if sb, ok := b.Body.(*hclsyntax.Body); ok {
		var diags hcl.Diagnostics
		if len(sb.Blocks) > 0 {
			blk := sb.Blocks[0]
			diags = diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unexpected block in a data block",
				Detail:   fmt.Sprintf("A data block holds arguments only (NAME = VALUE), not a %s block.", blk.Type),
				Subject:  blk.TypeRange.Ptr(),
			})
		}
		attrs := make(hcl.Attributes, len(sb.Attributes))
		for name, a := range sb.Attributes {
			attrs[name] = a.AsHCLAttribute()
		}
		return attrs, diags
	}
	return b.Body.JustAttributes()
}

// addData keeps a data block, refusing a second one of the same type and
// name.
func (c *Config) addData(b *hcl.Block, dir string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if len(b.Labels) != 2 {
		rng := b.DefRange
		if len(b.LabelRanges) > 2 {
			rng = b.LabelRanges[2]
		}
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Wrong number of block labels",
			Detail:   `A data block takes two labels, the data source and a name: data "exec" "NAME" { … }, read as data.exec.NAME.result.`,
			Subject:  rng.Ptr(),
		})
	}
	for i, l := range b.Labels {
		if !hclsyntax.ValidIdentifier(l) {
			what := "data source"
			if i == 1 {
				what = "name"
			}
			return diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid data block label",
				Detail:   fmt.Sprintf("%q cannot be a data block's %s: it is read as data.TYPE.NAME, so use letters, digits, underscores and dashes, starting with a letter.", l, what),
				Subject:  b.LabelRanges[i].Ptr(),
			})
		}
	}
	db := &DataBlock{Type: b.Labels[0], Name: b.Labels[1], Body: b.Body, Dir: dir, DeclRange: b.DefRange, TypeRange: b.TypeRange, LabelRange: b.LabelRanges[1]}
	for _, other := range c.Data {
		if other.Type == db.Type && other.Name == db.Name {
			return diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate data block",
				Detail: fmt.Sprintf("%s is already declared at %s:%d. Each data block is declared once; give one of them another name.",
					db.Address(), other.DeclRange.Filename, other.DeclRange.Start.Line),
				Subject: db.LabelRange.Ptr(),
			})
		}
	}
	c.Data = append(c.Data, db)
	return diags
}

// DataTypes lists the data sources c's data blocks use, sorted, each once.
func (c *Config) DataTypes() []string {
	seen := map[string]bool{}
	var out []string
	for _, b := range c.Data {
		if !seen[b.Type] {
			seen[b.Type] = true
			out = append(out, b.Type)
		}
	}
	sort.Strings(out)
	return out
}
