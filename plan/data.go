package plan

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// DataRead is one data block as the plan read it (data "TYPE" "NAME"):
// its arguments, which say what ran, and its answer, which resources were
// evaluated with. Like a resource's live reading, the answer is kept in
// full unless it is sensitive, when only its digest is; apply reads the
// data block again in pre-flight, with the same arguments, and refuses
// the plan as stale when the digest of its answer differs.
type DataRead struct {
	// Address is data.TYPE.NAME.
	Address string `json:"address"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	Source  Range  `json:"source"`
	// Arguments are the block's arguments as evaluated (never secret:
	// eval refuses a sensitive value in a data block's argument).
	Arguments map[string]Value `json:"arguments,omitempty"`
	// Sensitive marks a block written sensitive = true: its answer is not
	// kept, only its HMAC (Digest), and everything computed from it is
	// hidden.
	Sensitive bool `json:"sensitive,omitempty"`
	// Answer is what the data source answered; absent when Sensitive.
	Answer *Value `json:"answer,omitempty"`
	// Digest is "sha256:HEX" of the answer (its typed JSON), or, for a
	// sensitive one, "hmac-sha256:HEX" keyed with the plan's salt. Read
	// refuses a plan where it is not Answer's.
	Digest string `json:"digest"`
	// DurationMS is how long the read took.
	DurationMS int64 `json:"duration_ms"`
}

// DataDigest is the digest a plan keeps of a data block's answer v:
// sha256 of its typed JSON, or an HMAC keyed with salt when sensitive.
func DataDigest(v cty.Value, sensitive bool, salt string) (string, error) {
	b, err := (Value{Value: v}).MarshalJSON()
	if err != nil {
		return "", err
	}
	if sensitive {
		mac := hmac.New(sha256.New, []byte(salt))
		mac.Write(b)
		return "hmac-sha256:" + hex.EncodeToString(mac.Sum(nil)), nil
	}
	return digestOf(b), nil
}

// Args are the read's arguments as values.
func (d *DataRead) Args() map[string]cty.Value {
	out := make(map[string]cty.Value, len(d.Arguments))
	for k, v := range d.Arguments {
		out[k] = v.Value
	}
	return out
}

// DataDifferences lists how now, a data block's answer read again, differs
// from the plan's: the paths below its result whose values differ (at
// most max, in a stable order), each with both values; a sensitive
// block's only by its digests.
func DataDifferences(d *DataRead, now cty.Value, nowDigest string, max int) []Difference {
	if d.Sensitive || d.Answer == nil || d.Answer.Value == cty.NilVal {
		return []Difference{{Property: "result", Then: d.Digest, Now: nowDigest}}
	}
	var out []Difference
	diffValues("result", d.Answer.Value, now, &out, max)
	if len(out) == 0 {
		// The same values of other types (a number read as a string).
		out = append(out, Difference{Property: "result", Then: d.Digest, Now: nowDigest})
	}
	return out
}

// diffValues appends the paths below path where a and b differ.
func diffValues(path string, a, b cty.Value, out *[]Difference, max int) {
	if len(*out) >= max {
		return
	}
	if a.RawEquals(b) {
		return
	}
	collection := func(v cty.Value) bool {
		return v.IsKnown() && !v.IsNull() && (v.Type().IsObjectType() || v.Type().IsMapType())
	}
	if collection(a) && collection(b) {
		am, bm := a.AsValueMap(), b.AsValueMap()
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			sub := path + dataKey(k)
			av, aok := am[k]
			bv, bok := bm[k]
			switch {
			case !aok:
				*out = append(*out, Difference{Property: sub, Then: "(none)", Now: shortValue(bv)})
			case !bok:
				*out = append(*out, Difference{Property: sub, Then: shortValue(av), Now: "(none)"})
			default:
				diffValues(sub, av, bv, out, max)
			}
			if len(*out) >= max {
				return
			}
		}
		return
	}
	*out = append(*out, Difference{Property: path, Then: shortValue(a), Now: shortValue(b)})
}

// dataKey is how a key follows a path: .name, or ["a.b"].
func dataKey(k string) string {
	if hclsyntax.ValidIdentifier(k) {
		return "." + k
	}
	return fmt.Sprintf("[%q]", k)
}

// shortValue is v on one line, cut at 80 characters.
func shortValue(v cty.Value) string {
	s := DisplayValue(v)
	if len(s) > 80 {
		s = strings.ToValidUTF8(s[:77], "") + "…"
	}
	return s
}

// checkData verifies the plan's data reads: each address its type and
// name, each once, of a data source this build has, and each digest its
// answer's.
func (p *Plan) checkData(reg *resources.Registry) error {
	seen := make(map[string]bool, len(p.Data))
	for i, d := range p.Data {
		if d == nil {
			return fmt.Errorf("data read %d is null", i)
		}
		if want := "data." + d.Type + "." + d.Name; d.Address != want {
			return fmt.Errorf("data read %d is named %q, but its type and name make %q", i, d.Address, want)
		}
		if seen[d.Address] {
			return fmt.Errorf("%s is read twice", d.Address)
		}
		seen[d.Address] = true
		if _, ok := reg.DataSource(d.Type); !ok {
			return fmt.Errorf("%s: data source %q is not known to this build of toque", d.Address, d.Type)
		}
		switch {
		case d.Sensitive && d.Answer != nil:
			return fmt.Errorf("%s: a sensitive data block's answer is kept in the plan", d.Address)
		case d.Sensitive:
			if !strings.HasPrefix(d.Digest, "hmac-sha256:") {
				return fmt.Errorf("%s: a sensitive data block's digest is not an HMAC", d.Address)
			}
		case d.Answer == nil || d.Answer.Value == cty.NilVal:
			return fmt.Errorf("%s: the plan holds no answer", d.Address)
		default:
			got, err := DataDigest(d.Answer.Value, false, "")
			if err != nil || got != d.Digest {
				return fmt.Errorf("%s: its answer does not match its digest", d.Address)
			}
		}
	}
	return nil
}

// DataRead returns the plan's read of the data block at address
// (data.TYPE.NAME), or nil.
func (p *Plan) DataRead(address string) *DataRead {
	for _, d := range p.Data {
		if d != nil && d.Address == address {
			return d
		}
	}
	return nil
}

// checkLazyData checks what a value known at apply reads of data (an
// object of data sources, of blocks, of {result = …}) against the plan's
// answers: apply evaluates it with what it carries, which must be what
// the plan read and shows.
func (p *Plan) checkLazyData(v cty.Value) error {
	if v == cty.NilVal {
		return nil
	}
	if v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() {
		return fmt.Errorf("carries data as a %s value, not as the data blocks' object", v.Type().FriendlyName())
	}
	for typ, names := range v.AsValueMap() {
		if names.IsNull() || !names.IsKnown() || !names.Type().IsObjectType() {
			return fmt.Errorf("carries data.%s as a %s value", truncate(typ, 40), names.Type().FriendlyName())
		}
		for name, block := range names.AsValueMap() {
			addr := "data." + typ + "." + name
			d := p.DataRead(addr)
			if d == nil || d.Sensitive || d.Answer == nil {
				return fmt.Errorf("reads %s, which is not one of the plan's data reads", truncate(addr, 80))
			}
			want := cty.ObjectVal(map[string]cty.Value{resources.DataResultAttr: d.Answer.Value})
			if !within(block, want) {
				return fmt.Errorf("reads %s with another answer than the plan's", truncate(addr, 80))
			}
		}
	}
	return nil
}

// within reports whether part, a subtree picked of whole (objects of the
// keys read), holds whole's values where it holds any.
func within(part, whole cty.Value) bool {
	if part.RawEquals(whole) {
		return true
	}
	pt, wt := part.Type(), whole.Type()
	if !part.IsKnown() || part.IsNull() || !pt.IsObjectType() || !whole.IsKnown() || whole.IsNull() {
		return false
	}
	if !wt.IsObjectType() && !wt.IsMapType() {
		return false
	}
	for k, pv := range part.AsValueMap() {
		var wv cty.Value
		switch {
		case wt.IsObjectType() && wt.HasAttribute(k):
			wv = whole.GetAttr(k)
		case wt.IsMapType() && whole.HasIndex(cty.StringVal(k)).True():
			wv = whole.Index(cty.StringVal(k))
		default:
			return false
		}
		if !within(pv, wv) {
			return false
		}
	}
	return true
}

// ShownData is a data read as renderings show it, derived from what the
// plan carries (and this build's data source, which words what ran).
type ShownData struct {
	Read *DataRead
	// Reads says what the read read or ran ("runs `getent passwd`
	// (/bin/sh)"), from its arguments.
	Reads string
	// Answer says what the answer is ("a map of 24 elements"), or
	// Sensitive.
	Answer string
}

// ShowData is d as renderings show it.
func (p *Plan) ShowData(reg *resources.Registry, d *DataRead) *ShownData {
	s := &ShownData{Read: d, Reads: "reads the host", Answer: Sensitive}
	if src, ok := reg.DataSource(d.Type); ok {
		s.Reads = safeDescribe(src, d.Args())
	}
	if !d.Sensitive && d.Answer != nil {
		s.Answer = Shape(d.Answer.Value)
	}
	return s
}

// safeDescribe is src.Describe(args), or what it is when that panics.
func safeDescribe(src resources.DataSource, args map[string]cty.Value) (s string) {
	defer func() {
		if recover() != nil {
			s = "reads the host (its data source cannot say how)"
		}
	}()
	return src.Describe(args)
}

// Shape words what v is: "a map of 3 elements", "an object of 2
// attributes", "a list of 1 element", "a string", "null".
func Shape(v cty.Value) string {
	if v == cty.NilVal || v.IsNull() {
		return "null"
	}
	if !v.IsKnown() {
		return "not known"
	}
	ty := v.Type()
	count := func(what string) string {
		n := v.LengthInt()
		if n == 1 {
			return fmt.Sprintf("1 %s", what)
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	switch {
	case ty.IsMapType():
		return "a map of " + count("element")
	case ty.IsObjectType():
		return "an object of " + count("attribute")
	case ty.IsListType() || ty.IsTupleType():
		return "a list of " + count("element")
	case ty.IsSetType():
		return "a set of " + count("element")
	case ty == cty.String:
		return "a string"
	case ty == cty.Number:
		return "a number"
	case ty == cty.Bool:
		return "a bool"
	}
	return "a value"
}
