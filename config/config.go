package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/guard"
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
	// Attributes holds the default and override writes, merged.
	Attributes *Attributes
	// Resources is the resource collection, in declaration order.
	Resources []*ResourceBlock

	// attrBlocks are the default/override blocks in load order, kept so
	// that Compile can write them again with the host's facts.
	attrBlocks []*attributeBlock
	// fixedWrites are written after attrBlocks on every Compile (policy
	// attributes in policy mode; see LoadPolicy).
	fixedWrites []AttributeWrite
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
}

// Address is TYPE[NAME].
func (b *ResourceBlock) Address() string { return resources.Address(b.Type, b.Name) }

// Meta holds the arguments common to every resource, unevaluated. A nil
// expression means the argument is absent.
type Meta struct {
	Action           hcl.Expression
	OnlyIf           hcl.Expression
	NotIf            hcl.Expression
	GuardInterpreter hcl.Expression
	IgnoreFailure    hcl.Expression
	Sensitive        hcl.Expression
	Notifies         []*NotifyBlock
	Subscribes       []*NotifyBlock
}

// NotifyBlock is a `notifies "ACTION" { resource = "TYPE[NAME]" timing = … }`
// or `subscribes` block, kept for the notifications work.
type NotifyBlock struct {
	Action    string
	Resource  hcl.Expression
	Timing    hcl.Expression
	DeclRange hcl.Range
}

// Instance is a resource block evaluated against its type's schema.
type Instance struct {
	Block         *ResourceBlock
	Type          resources.Type
	Resource      *resources.Resource
	Sensitive     bool
	IgnoreFailure bool
	// Guards are the resource's only_if / not_if, decoded and resolved
	// (guard.Decode), in evaluation order; none when the action is
	// "nothing".
	Guards []*guard.Spec
	// Notifies are the notification edges this resource fires when it
	// changes (its notifies blocks and the subscribes blocks naming it),
	// resolved and checked by Evaluate, in collection order.
	Notifies []*Notification
	// NotifiedGuards are the guards of a resource whose action is
	// "nothing", decoded as if it had its type's default action: they
	// decide a notified run of it (Chef evaluates guards when a notified
	// action runs).
	NotifiedGuards []*guard.Spec
}

// Scope is what expressions can see at plan time.
type Scope struct {
	// Node is the merged node attributes (an object).
	Node cty.Value
	// Host is the host facts (an object), or cty.DynamicVal when the host
	// must not be read (validate).
	Host cty.Value
}
