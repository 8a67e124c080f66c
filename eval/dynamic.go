package eval

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/dynblock"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/toquehq/toque/config"
)

// dynamic blocks: `dynamic "notifies" { for_each = …  content { … } }`
// generates one notifies block per element, as Terraform's dynamic blocks
// do (hcl's ext/dynblock: labels, iterator, nested dynamic blocks). config
// keeps them unexpanded (config.Meta.Dynamic); they are expanded here, in
// the scope of the resource instance (each, count) or group that holds
// them, when its notifications are resolved.

// notifyBlockSchema is what dynamic blocks of a resource generate.
var notifyBlockSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "notifies", LabelNames: []string{"action"}},
	{Type: "subscribes", LabelNames: []string{"action"}},
}}

// expandDynamicNotify expands dynamic notifies and subscribes blocks in
// ctx into notify blocks, their expressions evaluated in ctx with the
// block's iterator.
func expandDynamicNotify(dyn []*hcl.Block, ctx *hcl.EvalContext) ([]notifyBlock, hcl.Diagnostics) {
	if len(dyn) == 0 {
		return nil, nil
	}
	content, diags := dynblock.Expand(blocksBody(dyn), ctx).Content(notifyBlockSchema)
	if content == nil {
		return nil, diags
	}
	var out []notifyBlock
	for _, b := range content.Blocks {
		nb, d := config.DecodeNotify(b)
		diags = append(diags, d...)
		if nb == nil {
			continue
		}
		out = append(out, notifyBlock{nb: nb, ctx: ctx, subscribe: b.Type == "subscribes"})
	}
	return out, diags
}

// blocksBody is a body holding only blocks (the dynamic blocks config
// kept), for dynblock to expand.
type blocksBody []*hcl.Block

var _ hcl.Body = blocksBody(nil)

func (bb blocksBody) Content(schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	content, _, diags := bb.PartialContent(schema)
	return content, diags
}

func (bb blocksBody) PartialContent(schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Body, hcl.Diagnostics) {
	want := map[string]bool{}
	for _, s := range schema.Blocks {
		want[s.Type] = true
	}
	content := &hcl.BodyContent{Attributes: hcl.Attributes{}, MissingItemRange: bb.MissingItemRange()}
	var rest blocksBody
	for _, b := range bb {
		if want[b.Type] {
			content.Blocks = append(content.Blocks, b)
		} else {
			rest = append(rest, b)
		}
	}
	return content, rest, nil
}

func (bb blocksBody) JustAttributes() (hcl.Attributes, hcl.Diagnostics) {
	return hcl.Attributes{}, nil
}

func (bb blocksBody) MissingItemRange() hcl.Range {
	if len(bb) > 0 {
		return bb[0].DefRange
	}
	return hcl.Range{}
}

// dynamicExprs lists the expressions of dynamic blocks written in native
// syntax (for_each, labels, content, nested dynamic blocks): what they
// read of node counts as read.
func dynamicExprs(dyn []*hcl.Block) []hcl.Expression {
	var out []hcl.Expression
	for _, b := range dyn {
		sb, ok := b.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		_ = hclsyntax.VisitAll(sb, func(n hclsyntax.Node) hcl.Diagnostics {
			if a, ok := n.(*hclsyntax.Attribute); ok {
				out = append(out, a.Expr)
			}
			return nil
		})
	}
	return out
}

// typeDynamicSchemas are what dynamic blocks make in a resource_type body
// and in an action.
var (
	propertyBlockSchema   = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: config.KeywordProperty, LabelNames: []string{"name"}}}}
	convergeByBlockSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: config.KeywordConvergeBy, LabelNames: []string{"description"}}}}
)

// expandTypeDynamic is tb with its dynamic "property" and "converge_by"
// blocks expanded, in what a type's own expressions see (the functions:
// a type means the same on every host).
func expandTypeDynamic(tb *config.TypeBlock) (*config.TypeBlock, hcl.Diagnostics) {
	ctx := typeEvalContext(tb.Dir)
	var diags hcl.Diagnostics
	var props []*hcl.Block
	if len(tb.Dynamic) > 0 {
		content, d := dynblock.Expand(blocksBody(tb.Dynamic), ctx).Content(propertyBlockSchema)
		diags = append(diags, d...)
		if content != nil {
			props = content.Blocks
		}
	}
	items := map[*config.ActionItem][]*hcl.Block{}
	for _, a := range tb.Actions {
		for _, it := range a.Items {
			if it.Dynamic == nil {
				continue
			}
			content, d := dynblock.Expand(blocksBody{it.Dynamic}, ctx).Content(convergeByBlockSchema)
			diags = append(diags, d...)
			if content != nil {
				items[it] = content.Blocks
			}
		}
	}
	if diags.HasErrors() {
		return tb, diags
	}
	out, d := tb.ExpandedType(props, items)
	return out, append(diags, d...)
}
