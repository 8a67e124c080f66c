package eval

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"go.yaml.in/yaml/v3"

	"github.com/toquehq/toque/config"
)

// Limits of yamldecode. YAML's aliases (*name) can make a small document
// a huge value (the "billion laughs"), and a deep one exhausts whoever
// walks it; these are checked while decoding, so that a bad document is
// an error naming the limit, never a stalled or crashed plan. Variables
// only so that tests can lower them.
var (
	// MaxYAMLBytes is the largest YAML text yamldecode reads.
	MaxYAMLBytes = 4 << 20
	// MaxYAMLAliasValues is the most values (scalars, sequences,
	// mappings) the aliases of one document may repeat in all.
	MaxYAMLAliasValues = 100_000
)

// yamlDecodeFunc is yamldecode(STRING), as Terraform's: one YAML document
// as a value — mappings as objects, sequences as tuples, and scalars by
// their YAML 1.2 type (strings, numbers, true/false, null; a timestamp
// stays the string it is written as). Aliases and merge keys (<<) are
// expanded; custom tags, complex keys, duplicate keys, .inf and .nan are
// errors, and so is more than one document.
var yamlDecodeFunc = function.New(&function.Spec{
	Description: "Decodes one YAML document into a value.",
	Params:      []function.Parameter{{Name: "src", Type: cty.String}},
	// The type is the document's: known once it is decoded, in Impl.
	Type: function.StaticReturnType(cty.DynamicPseudoType),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v, err := yamlDecode(args[0].AsString())
		if err != nil {
			return cty.DynamicVal, function.NewArgError(0, err)
		}
		return v, nil
	},
})

func yamlDecode(src string) (cty.Value, error) {
	if len(src) > MaxYAMLBytes {
		return cty.NilVal, fmt.Errorf("the YAML is %d bytes; yamldecode reads at most %d MiB", len(src), MaxYAMLBytes>>20)
	}
	dec := yaml.NewDecoder(strings.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return cty.NullVal(cty.DynamicPseudoType), nil // no document
		}
		return cty.NilVal, fmt.Errorf("not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		line := more.Line
		if err != nil {
			return cty.NilVal, fmt.Errorf("not valid YAML after the first document: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return cty.NilVal, fmt.Errorf("at line %d of the YAML: a second document; yamldecode reads one (split the text at ---, or decode each part)", line)
	}
	y := &yamlDecoder{budget: MaxYAMLAliasValues}
	return y.value(&doc, 0)
}

type yamlDecoder struct {
	// budget is how many more values aliases may repeat.
	budget int
	// expanding lists the anchors being expanded, to refuse an alias
	// inside what it names.
	expanding []*yaml.Node
}

func yamlAt(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("at line %d, column %d of the YAML: %s", n.Line, n.Column, fmt.Sprintf(format, args...))
}

func (y *yamlDecoder) value(n *yaml.Node, depth int) (cty.Value, error) {
	if depth > config.MaxNestingDepth {
		return cty.NilVal, yamlAt(n, "it nests more than %d levels deep; yamldecode decodes no deeper", config.MaxNestingDepth)
	}
	if len(y.expanding) > 0 {
		if y.budget--; y.budget < 0 {
			return cty.NilVal, yamlAt(n, "its aliases (*name) repeat more than %d values in all; yamldecode expands no more", MaxYAMLAliasValues)
		}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return cty.NullVal(cty.DynamicPseudoType), nil
		}
		return y.value(n.Content[0], depth)
	case yaml.AliasNode:
		for _, a := range y.expanding {
			if a == n.Alias {
				return cty.NilVal, yamlAt(n, "the alias *%s is inside the value it names", n.Value)
			}
		}
		y.expanding = append(y.expanding, n.Alias)
		v, err := y.value(n.Alias, depth)
		y.expanding = y.expanding[:len(y.expanding)-1]
		return v, err
	case yaml.SequenceNode:
		if n.Tag != "" && n.ShortTag() != "!!seq" {
			return cty.NilVal, yamlAt(n, "the tag %s is not one yamldecode knows", n.Tag)
		}
		if len(n.Content) == 0 {
			return cty.EmptyTupleVal, nil
		}
		elems := make([]cty.Value, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := y.value(c, depth+1)
			if err != nil {
				return cty.NilVal, err
			}
			elems = append(elems, v)
		}
		return cty.TupleVal(elems), nil
	case yaml.MappingNode:
		return y.mapping(n, depth)
	case yaml.ScalarNode:
		return yamlScalar(n)
	}
	return cty.NilVal, yamlAt(n, "a YAML node of an unknown kind")
}

// mapping decodes a mapping into an object: its keys as strings, merge
// keys (<<: *base, or a list of aliases) giving the keys the mapping does
// not give itself.
func (y *yamlDecoder) mapping(n *yaml.Node, depth int) (cty.Value, error) {
	if n.Tag != "" && n.ShortTag() != "!!map" {
		return cty.NilVal, yamlAt(n, "the tag %s is not one yamldecode knows", n.Tag)
	}
	attrs := map[string]cty.Value{}
	var merged []map[string]cty.Value
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			mv, err := y.value(v, depth+1)
			if err != nil {
				return cty.NilVal, err
			}
			ms, err := mergeSources(v, mv)
			if err != nil {
				return cty.NilVal, err
			}
			merged = append(merged, ms...)
			continue
		}
		if k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			return cty.NilVal, yamlAt(k, "a mapping key must be a plain value (a string, a number), not a %s", yamlKindName(k))
		}
		if _, dup := attrs[k.Value]; dup {
			return cty.NilVal, yamlAt(k, "the key %q is given twice", k.Value)
		}
		ev, err := y.value(v, depth+1)
		if err != nil {
			return cty.NilVal, err
		}
		attrs[k.Value] = ev
	}
	// Earlier merge sources win over later ones; the mapping's own keys
	// over both (YAML's merge key type).
	for _, m := range merged {
		for k, v := range m {
			if _, ok := attrs[k]; !ok {
				attrs[k] = v
			}
		}
	}
	return cty.ObjectVal(attrs), nil
}

// mergeSources are the mappings a merge key's value gives: one mapping,
// or a sequence of them.
func mergeSources(n *yaml.Node, v cty.Value) ([]map[string]cty.Value, error) {
	asMap := func(v cty.Value) (map[string]cty.Value, bool) {
		if v.IsNull() || !v.Type().IsObjectType() {
			return nil, false
		}
		return v.AsValueMap(), true
	}
	if m, ok := asMap(v); ok {
		return []map[string]cty.Value{m}, nil
	}
	if !v.IsNull() && v.Type().IsTupleType() {
		var out []map[string]cty.Value
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			m, ok := asMap(ev)
			if !ok {
				return nil, yamlAt(n, "a merge key (<<) takes a mapping or a list of mappings")
			}
			out = append(out, m)
		}
		return out, nil
	}
	return nil, yamlAt(n, "a merge key (<<) takes a mapping or a list of mappings")
}

func yamlKindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "sequence"
	case yaml.MappingNode:
		return "mapping"
	}
	return "node"
}

// yamlScalar decodes a scalar by its resolved tag.
func yamlScalar(n *yaml.Node) (cty.Value, error) {
	switch n.ShortTag() {
	case "!!str", "!!timestamp", "!!binary":
		return cty.StringVal(n.Value), nil
	case "!!null":
		return cty.NullVal(cty.DynamicPseudoType), nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return cty.NilVal, yamlAt(n, "%q is not true or false", n.Value)
		}
		return cty.BoolVal(b), nil
	case "!!int", "!!float":
		s := strings.ReplaceAll(n.Value, "_", "")
		if v, err := cty.ParseNumberVal(s); err == nil {
			return v, nil // decimal: exactly as written
		}
		var x any
		if err := n.Decode(&x); err != nil {
			return cty.NilVal, yamlAt(n, "%q is not a number", n.Value)
		}
		switch x := x.(type) {
		case int:
			return cty.NumberIntVal(int64(x)), nil
		case int64:
			return cty.NumberIntVal(x), nil
		case uint64:
			return cty.NumberUIntVal(x), nil
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return cty.NilVal, yamlAt(n, "%q is not a number toque can hold (infinities and NaN are not)", n.Value)
			}
			return cty.NumberFloatVal(x), nil
		}
		return cty.NilVal, yamlAt(n, "%q is not a number", n.Value)
	}
	return cty.NilVal, yamlAt(n, "the tag %s is not one yamldecode knows", n.Tag)
}

// yamlEncodeFunc is yamlencode(VALUE), as Terraform's: block style, keys
// sorted, strings and keys double-quoted (text of several lines as a
// literal block), so that no string reads back as another type.
var yamlEncodeFunc = function.New(&function.Spec{
	Description: "Encodes a value as YAML.",
	Params: []function.Parameter{{
		Name: "value", Type: cty.DynamicPseudoType,
		AllowNull: true, AllowDynamicType: true,
	}},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v := args[0]
		if !v.IsWhollyKnown() {
			return cty.UnknownVal(cty.String), nil
		}
		n, err := yamlNode(v, 0)
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgError(0, err)
		}
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		enc.CompactSeqIndent()
		if err := enc.Encode(n); err != nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "cannot encode as YAML: %s", err)
		}
		if err := enc.Close(); err != nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "cannot encode as YAML: %s", err)
		}
		return cty.StringVal(buf.String()), nil
	},
})

func yamlNode(v cty.Value, depth int) (*yaml.Node, error) {
	if depth > config.MaxNestingDepth {
		return nil, fmt.Errorf("the value nests more than %d levels deep", config.MaxNestingDepth)
	}
	if v.IsNull() {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		s := v.AsString()
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
		if strings.Contains(strings.TrimSuffix(s, "\n"), "\n") {
			n.Style = yaml.LiteralStyle
		}
		return n, nil
	case t == cty.Bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(v.True())}, nil
	case t == cty.Number:
		f := v.AsBigFloat()
		if f.IsInf() {
			return nil, errors.New("an infinite number has no YAML form toque writes")
		}
		tag := "!!float"
		if f.IsInt() {
			tag = "!!int"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: f.Text('f', -1)}, nil
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			c, err := yamlNode(ev, depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		if len(n.Content) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n, nil
	case t.IsMapType() || t.IsObjectType():
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for it := v.ElementIterator(); it.Next(); { // sorted by key
			k, ev := it.Element()
			c, err := yamlNode(ev, depth+1)
			if err != nil {
				return nil, err
			}
			key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k.AsString(), Style: yaml.DoubleQuotedStyle}
			n.Content = append(n.Content, key, c)
		}
		if len(n.Content) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n, nil
	}
	return nil, fmt.Errorf("a value of type %s has no YAML form", t.FriendlyName())
}
