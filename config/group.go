package config

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/toquehq/toque/internal/words"
)

// GroupKeyword is the block that puts guards, and notifications, on a
// group of resources once, as Ansible's `block: … when:` does:
//
//	resource_group "core_dumps" {
//	  only_if = node.hardening.disable_core_dumps
//	  sysctl "fs.suid_dumpable" { value = 0 }
//	  file "/etc/security/limits.d/core.conf" { content = "* hard core 0\n" }
//	}
//
// (group is a resource type, the host's groups.) The resources keep their
// own addresses: a group names no namespace, so moving a resource into
// one or out of it changes nothing that refers to it.
const GroupKeyword = "resource_group"

// GroupArguments are the arguments a resource_group takes besides its
// resources.
var GroupArguments = []string{"only_if", "not_if", "guard_interpreter", "notifies", "subscribes"}

// GroupBlock is one resource_group block, its arguments unevaluated. Its
// resources are in Config.Resources, in declaration order, each pointing
// back to it (ResourceBlock.Group).
type GroupBlock struct {
	Name string
	// OnlyIf, NotIf and GuardInterpreter are the group's guards: every
	// resource of the group is guarded by them, before its own guards.
	// Nil when absent.
	OnlyIf, NotIf, GuardInterpreter hcl.Expression
	// Notifies and Subscribes are the group's notifications: each is one
	// edge per resource of the group (any of them changing notifies).
	Notifies, Subscribes []*NotifyBlock
	// Dynamic are dynamic "notifies" and "subscribes" blocks, expanded by
	// package eval.
	Dynamic []*hcl.Block
	// Size is the number of resource blocks the group declares.
	Size       int
	Dir        string
	DeclRange  hcl.Range
	LabelRange hcl.Range
}

// Address is resource_group[NAME], how plans name the group.
func (g *GroupBlock) Address() string { return GroupKeyword + "[" + g.Name + "]" }

// HasGuards reports whether the group has an only_if or not_if.
func (g *GroupBlock) HasGuards() bool { return g != nil && (g.OnlyIf != nil || g.NotIf != nil) }

// groupSchema is what a resource_group body holds besides resources.
var groupSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "only_if"}, {Name: "not_if"}, {Name: "guard_interpreter"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "notifies", LabelNames: []string{"action"}},
		{Type: "subscribes", LabelNames: []string{"action"}},
		{Type: DynamicKeyword, LabelNames: []string{"type"}},
	},
}

// addGroup reads a resource_group block: its arguments, then its
// resources, which are added to c as any top-level resource is, each
// pointing to the group.
func (c *Config) addGroup(b *hcl.Block, dir string, names *typeNames, seen map[string]*ResourceBlock) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if len(b.Labels) != 1 || b.Labels[0] == "" {
		rng := b.DefRange
		if len(b.LabelRanges) > 1 {
			rng = b.LabelRanges[1]
		} else if len(b.LabelRanges) == 1 {
			rng = b.LabelRanges[0]
		}
		return diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Wrong number of block labels",
			Detail:   "A resource_group block takes exactly one label, the group's name: resource_group \"NAME\" { … }.",
			Subject:  rng.Ptr(),
		})
	}
	g := &GroupBlock{Name: b.Labels[0], Dir: dir, DeclRange: b.DefRange, LabelRange: b.LabelRanges[0]}
	for _, other := range c.Groups {
		if other.Name == g.Name {
			return diags.Append(&hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate resource group",
				Detail:   fmt.Sprintf("The resource group %q is already declared at %s:%d. Give one of them another name, or merge them.", g.Name, other.DeclRange.Filename, other.DeclRange.Start.Line),
				Subject:  g.LabelRange.Ptr(),
			})
		}
	}
	schema := &hcl.BodySchema{Attributes: groupSchema.Attributes, Blocks: append([]hcl.BlockHeaderSchema(nil), groupSchema.Blocks...)}
	var members []*hcl.Block
	if sb, ok := b.Body.(*hclsyntax.Body); ok {
		// Resource blocks of any type, in order; the rest by the schema.
		for _, a := range sortedAttributes(sb) {
			if _, known := groupAttr(a.Name); !known {
				diags = diags.Append(unknownGroupArgument(a.Name, a.NameRange))
			}
		}
		for _, blk := range sb.Blocks {
			switch {
			case blk.Type == "notifies" || blk.Type == "subscribes" || blk.Type == DynamicKeyword:
			case blk.Type == GroupKeyword:
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Nested resource group",
					Detail:   "Resource groups do not nest: a resource_group holds resources. Give the inner resources the outer group's guards and their own, or make two groups.",
					Subject:  blk.TypeRange.Ptr(),
				})
			case blk.Type == LevelDefault || blk.Type == LevelOverride || blk.Type == TypeKeyword || blk.Type == DataKeyword:
				diags = diags.Append(&hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unexpected block in a resource group",
					Detail:   fmt.Sprintf("A resource_group holds resources, its guards and its notifications; write the %s block outside it.", blk.Type),
					Subject:  blk.TypeRange.Ptr(),
				})
			case !names.known(blk.Type):
				diags = diags.Append(unknownTypeDiag(blk.Type, blk.TypeRange, names.list()))
			default:
				members = append(members, blk.AsHCLBlock())
			}
		}
		attrs := map[string]*hclsyntax.Attribute{}
		for name, a := range sb.Attributes {
			attrs[name] = a
		}
		if a := attrs["only_if"]; a != nil {
			g.OnlyIf = a.Expr
		}
		if a := attrs["not_if"]; a != nil {
			g.NotIf = a.Expr
		}
		if a := attrs["guard_interpreter"]; a != nil {
			g.GuardInterpreter = a.Expr
		}
		for _, blk := range sb.Blocks {
			switch blk.Type {
			case "notifies", "subscribes", DynamicKeyword:
				diags = append(diags, g.addMetaBlock(blk.AsHCLBlock())...)
			}
		}
	} else {
		for _, n := range names.list() {
			schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: n, LabelNames: []string{"name"}})
		}
		content, rest, d := b.Body.PartialContent(schema)
		diags = append(diags, d...)
		if content != nil {
			for name, a := range content.Attributes {
				switch name {
				case "only_if":
					g.OnlyIf = a.Expr
				case "not_if":
					g.NotIf = a.Expr
				case "guard_interpreter":
					g.GuardInterpreter = a.Expr
				}
			}
			for _, blk := range sortBlocks(content.Blocks) {
				switch blk.Type {
				case "notifies", "subscribes", DynamicKeyword:
					diags = append(diags, g.addMetaBlock(blk)...)
				default:
					members = append(members, blk)
				}
			}
		}
		if rest != nil {
			left, _ := rest.JustAttributes()
			keys := make([]*hcl.Attribute, 0, len(left))
			for _, a := range left {
				keys = append(keys, a)
			}
			sort.Slice(keys, func(i, j int) bool { return keys[i].NameRange.Start.Byte < keys[j].NameRange.Start.Byte })
			for _, a := range keys {
				diags = diags.Append(unknownGroupArgument(a.Name, a.NameRange))
			}
		}
	}
	c.Groups = append(c.Groups, g)
	for _, m := range members {
		before := len(c.Resources)
		diags = append(diags, c.addBlock(m, dir, seen)...)
		for _, rb := range c.Resources[before:] {
			rb.Group = g
			g.Size++
		}
	}
	return diags
}

// addMetaBlock keeps a notifies, subscribes or dynamic block of a group.
func (g *GroupBlock) addMetaBlock(b *hcl.Block) hcl.Diagnostics {
	if b.Type == DynamicKeyword {
		if len(b.Labels) == 1 && (b.Labels[0] == "notifies" || b.Labels[0] == "subscribes") {
			g.Dynamic = append(g.Dynamic, b)
			return nil
		}
		rng := b.DefRange
		if len(b.LabelRanges) > 0 {
			rng = b.LabelRanges[0]
		}
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Unsupported dynamic block type",
			Detail:   fmt.Sprintf("A dynamic block in a resource_group generates notifies or subscribes blocks, not %s. To make several resources, set for_each or count on the resource itself.", words.Quoted(b.Labels)),
			Subject:  rng.Ptr(),
		}}
	}
	if len(b.Labels) != 1 {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Wrong number of block labels",
			Detail:   fmt.Sprintf("A %s block takes one label, the action to run: %s \"ACTION\" { resource = \"TYPE[NAME]\" }.", b.Type, b.Type),
			Subject:  b.DefRange.Ptr(),
		}}
	}
	n, d := DecodeNotify(b)
	if n == nil {
		return d
	}
	if b.Type == "notifies" {
		g.Notifies = append(g.Notifies, n)
	} else {
		g.Subscribes = append(g.Subscribes, n)
	}
	return d
}

func groupAttr(name string) (string, bool) {
	switch name {
	case "only_if", "not_if", "guard_interpreter":
		return name, true
	}
	return "", false
}

func unknownGroupArgument(name string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Unsupported argument in a resource group",
		Detail: fmt.Sprintf("A resource_group takes %s, and the resources it groups; not %q.%s To set it on every resource of the group, set it on each one.",
			words.Quoted(GroupArguments), name, words.DidYouMean(name, GroupArguments)),
		Subject: rng.Ptr(),
	}
}
