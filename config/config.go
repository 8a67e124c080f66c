package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/toquehq/toque/resources"
)

// Config is a compiled recipe set: node attributes written, resource blocks
// collected in declaration order with their expressions unevaluated.
type Config struct {
	// Dir is the directory the recipes were read from.
	Dir string
	// Parser holds every parsed file, so diagnostics can show snippets.
	Parser *hclparse.Parser
	// Files lists the recipe files read, in load order.
	Files []string
	// Resources is the resource collection, in declaration order.
	Resources []*ResourceBlock
	// Groups are the resource_group blocks, in declaration order; their
	// resources are in Resources.
	Groups []*GroupBlock
	// Data are the data blocks, in declaration order: what the planner
	// reads of the host before it evaluates the resources that read them
	// (data.TYPE.NAME.result).
	Data []*DataBlock
	// Types are the resource_type blocks, in declaration order (in policy
	// mode, the cookbooks' resources/ files in run-list order).
	Types []*TypeBlock
	// AttributeBlocks are the default and override blocks in load order,
	// unevaluated: package eval writes them into Attributes, once without
	// the host (validate) and once with its facts (plan).
	AttributeBlocks []*AttributeBlock
	// PolicyWrites are written after AttributeBlocks (policy attributes in
	// policy mode; see LoadPolicy).
	PolicyWrites []AttributeWrite
	// CommandLine are the values -attr and -attr-file give, evaluated
	// already (package eval), at LevelNormal, in command-line order: the
	// command sets them after loading.
	CommandLine []AttributeWrite
	// CookbookDirs names, in policy mode, each cookbook by its directory,
	// for DisplayPath.
	CookbookDirs map[string]string
}

// DisplayPath is how plans name a recipe file: relative to the recipe (or
// policy) directory when inside it; inside a cookbook elsewhere (one a
// git or server include brought into the cache), as "cookbook NAME:
// PATH"; else as it is. Plans are read on reviewers' machines and in pull
// requests, where this host's absolute paths are noise.
func (c *Config) DisplayPath(name string) string {
	if c == nil || name == "" || !filepath.IsAbs(name) {
		return name
	}
	if rel, ok := inside(c.Dir, name); ok {
		return rel
	}
	for dir, cb := range c.CookbookDirs {
		if rel, ok := inside(dir, name); ok {
			return "cookbook " + cb + ": " + rel
		}
	}
	return name
}

// inside is name relative to dir, when name lies inside dir.
func inside(dir, name string) (string, bool) {
	if dir == "" {
		return "", false
	}
	rel, err := filepath.Rel(dir, name)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// AttributeBlock is one `default "NAME" { … }` or `override "NAME" { … }`
// block, kept unevaluated.
type AttributeBlock struct {
	// Level is LevelDefault or LevelOverride; Name the top-level key.
	Level     string
	Name      string
	Body      hcl.Body
	Dir       string
	DeclRange hcl.Range
}

// ResourceBlock is one `TYPE "NAME" { … }` block, kept unevaluated.
type ResourceBlock struct {
	Type string
	Name string
	// Body holds the type-specific attributes (everything but Meta).
	Body hcl.Body
	Meta Meta
	// Dir is the directory of the recipe file (relative paths resolve
	// against it).
	Dir        string
	DeclRange  hcl.Range
	TypeRange  hcl.Range
	LabelRange hcl.Range
	// Parent is, for a child resource declared in an action of a custom
	// resource type, the address of the resource it was expanded for
	// (package eval makes one copy of the block per such resource); ""
	// at the top level.
	Parent string
	// Key is, for one instance of a block with for_each or count, which
	// instance it is: package eval makes one copy of the block per
	// instance, keyed. The zero Key otherwise (the block as written).
	Key resources.Key
	// Group is the resource_group the block is declared in; nil when it
	// is in none.
	Group *GroupBlock
	// released is set by ReleaseSyntax, which keeps attrRanges.
	released   bool
	attrRanges []attrRange
}

// HasGuards reports whether the resource has an only_if or not_if.
func (m *Meta) HasGuards() bool { return m.OnlyIf != nil || m.NotIf != nil }

// Address is TYPE[NAME], or PARENT.TYPE[NAME] for a child resource
// (web_site[blog].template[conf]), followed by the instance key of an
// instance of a block with for_each or count (template[vhost]["a.com"],
// sysctl[hardening][3]).
func (b *ResourceBlock) Address() string {
	if b.Parent != "" {
		return b.Parent + "." + b.LocalAddress()
	}
	return b.LocalAddress()
}

// LocalAddress is TYPE[NAME] and the instance key, without the parent.
func (b *ResourceBlock) LocalAddress() string {
	return resources.InstanceAddress(b.Type, b.Name, b.Key)
}

// BlockAddress is Address without the instance key: the address of the
// block as written, which names all its instances.
func (b *ResourceBlock) BlockAddress() string {
	if b.Parent != "" {
		return b.Parent + "." + resources.Address(b.Type, b.Name)
	}
	return resources.Address(b.Type, b.Name)
}

// Expands reports whether the block has for_each or count: it stands for
// its instances, each a keyed copy (Key).
func (m *Meta) Expands() bool { return m.ForEach != nil || m.Count != nil }

// Meta holds the arguments common to every resource, unevaluated. A nil
// expression means the argument is absent.
type Meta struct {
	Action           hcl.Expression
	OnlyIf           hcl.Expression
	NotIf            hcl.Expression
	GuardInterpreter hcl.Expression
	IgnoreFailure    hcl.Expression
	Sensitive        hcl.Expression
	// ForEach and Count make the block stand for several instances
	// (Terraform's meta-arguments); at most one of them is set.
	ForEach    hcl.Expression
	Count      hcl.Expression
	Notifies   []*NotifyBlock
	Subscribes []*NotifyBlock
	// Dynamic are the block's dynamic "notifies" and dynamic "subscribes"
	// blocks, unexpanded: package eval expands them (hcl's dynblock) in
	// each instance's scope into more Notifies and Subscribes.
	Dynamic []*hcl.Block
}

// NotifyBlock is a `notifies "ACTION" { resource = "TYPE[NAME]" timing = … }`
// or `subscribes` block, kept for the notifications work.
type NotifyBlock struct {
	Action    string
	Resource  hcl.Expression
	Timing    hcl.Expression
	DeclRange hcl.Range
}

// SourceText is the recipe text of rng, "" when the file is not known.
func (c *Config) SourceText(rng hcl.Range) string {
	if c.Parser == nil {
		return ""
	}
	f, ok := c.Parser.Files()[rng.Filename]
	if !ok || f == nil || rng.End.Byte > len(f.Bytes) || rng.Start.Byte > rng.End.Byte {
		return ""
	}
	return string(rng.SliceBytes(f.Bytes))
}

// Timings of a notification.
const (
	// TimingDelayed queues the target's action; queued actions run once
	// each, in queue order, at the end of the apply.
	TimingDelayed = "delayed"
	// TimingImmediately runs the target's action right after the notifier
	// changed.
	TimingImmediately = "immediately"
	// TimingBefore runs the target's action right before the notifier
	// changes.
	TimingBefore = "before"
)

// Timings lists the valid timings; the first is the default.
var Timings = []string{TimingDelayed, TimingImmediately, TimingBefore}

// ParseAddress splits "TYPE[NAME]"; ok is false when ref has another shape.
func ParseAddress(ref string) (typ, name string, ok bool) {
	i := strings.IndexByte(ref, '[')
	if i <= 0 || !strings.HasSuffix(ref, "]") || len(ref) < i+3 {
		return "", "", false
	}
	typ, name = ref[:i], ref[i+1:len(ref)-1]
	if strings.TrimSpace(typ) != typ || strings.ContainsAny(typ, " []") {
		return "", "", false
	}
	return typ, name, true
}

// metaNames is the names of MetaSchema's attributes and blocks, made once.
var metaNames = sync.OnceValue(func() map[string]bool {
	isMeta := map[string]bool{}
	for _, a := range MetaSchema.Attributes {
		isMeta[a.Name] = true
	}
	for _, b := range MetaSchema.Blocks {
		if b.Type != DynamicKeyword {
			// (an attribute called dynamic is a property)
			isMeta[b.Type] = true
		}
	}
	return isMeta
})

// Attributes returns the type-specific attributes of the block's body
// (the remainder after the meta-arguments were taken), unevaluated. hclsyntax's
// JustAttributes would complain about the notifies blocks Meta took, so
// native bodies are read directly.
func (b *ResourceBlock) Attributes() (hcl.Attributes, hcl.Diagnostics) {
	if b.Body == nil {
		return nil, nil // released (ReleaseBody)
	}
	sb, ok := b.Body.(*hclsyntax.Body)
	if !ok {
		return b.Body.JustAttributes()
	}
	var diags hcl.Diagnostics
	isMeta := metaNames()
	attrs := make(hcl.Attributes, len(sb.Attributes))
	for name, a := range sb.Attributes {
		if !isMeta[name] {
			attrs[name] = a.AsHCLAttribute()
		}
	}
	for _, blk := range sb.Blocks {
		if isMeta[blk.Type] || blk.Type == DynamicKeyword {
			continue
		}
		diags = diags.Append(&hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unexpected block",
			Detail:   fmt.Sprintf("A resource takes no %q block; only notifies and subscribes blocks (and dynamic blocks that generate them) are allowed. To set a map or object property, write %s = { … }.", blk.Type, blk.Type),
			Subject:  blk.TypeRange.Ptr(),
		})
	}
	return attrs, diags
}
