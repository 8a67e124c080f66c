package plan

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/toquehq/toque/resources"
)

// MaxInlineValue is the largest live string value shown in full; larger
// ones (and every Content property) are shown as size and digest.
const MaxInlineValue = 1024

// MaxDiffSize is the largest text content (either side) shown as a unified
// diff, and the largest live text content a plan keeps in full to diff
// against; larger content is summarised by size and digest only.
const MaxDiffSize = 1 << 20

// Sensitive is how hidden values are shown.
const Sensitive = "(sensitive)"

// DisplayValue renders v in HCL syntax for reviewers ("0644", 3, ["a"]).
func DisplayValue(v cty.Value) string {
	if v == cty.NilVal {
		return ""
	}
	if !v.IsKnown() {
		return "(known after apply)"
	}
	if v.IsNull() {
		return "null"
	}
	return inlineValue(v)
}

// inlineValue writes v in HCL syntax on one line: a plan shows a value
// after "name = ", so a map is { a = 1, b = "x" }, not hclwrite's block.
func inlineValue(v cty.Value) string {
	switch {
	case !v.IsKnown():
		return "(known after apply)"
	case v.IsNull():
		return "null"
	}
	ty := v.Type()
	switch {
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		parts := make([]string, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			parts = append(parts, inlineValue(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case ty.IsMapType() || ty.IsObjectType():
		if v.LengthInt() == 0 {
			return "{}"
		}
		parts := make([]string, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			key := k.AsString()
			if !hclsyntax.ValidIdentifier(key) {
				key = strings.TrimSpace(string(hclwrite.TokensForValue(k).Bytes()))
			}
			parts = append(parts, key+" = "+inlineValue(e))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	return strings.TrimSpace(string(hclwrite.TokensForValue(v).Bytes()))
}

// valueBytes is what a value's digest is taken over: the raw bytes of a
// string (so a file's digest is its sha256), the typed JSON of anything else.
func valueBytes(v cty.Value) []byte {
	if v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
		return []byte(v.AsString())
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return []byte(v.GoString())
	}
	ty, _ := ctyjson.MarshalType(v.Type())
	return append(append(ty, 0), b...)
}

// DigestValue returns "sha256:HEX" of v, or "hmac-sha256:HEX" keyed with salt
// when sensitive.
func DigestValue(v cty.Value, salt string, sensitive bool) string {
	b := valueBytes(v)
	if sensitive {
		m := hmac.New(sha256.New, []byte(salt))
		m.Write(b)
		return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ShortDigest shortens "sha256:HEX" for display.
func ShortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13] + "…"
	}
	return d
}

// StoreValue turns a live value into its stored form: in full when it is
// not sensitive and either small (MaxInlineValue) or the text of a Content
// property a diff is made from (up to MaxDiffSize, no NUL, valid UTF-8);
// otherwise as size and digest only.
func StoreValue(p *resources.Property, v cty.Value, salt string, sensitive bool) StoredValue {
	sensitive = sensitive || (p != nil && p.Sensitive)
	sv := StoredValue{Digest: DigestValue(v, salt, sensitive)}
	isString := v.IsKnown() && !v.IsNull() && v.Type() == cty.String
	if isString {
		sv.Size = int64(len(v.AsString()))
	}
	keep := !sensitive
	if keep && isString && sv.Size > MaxInlineValue {
		keep = p != nil && p.Content && sv.Size <= MaxDiffSize && !isBinary(v.AsString())
	}
	if keep {
		sv.Value = &Value{Value: v}
	}
	return sv
}

// Display is how a stored live value is shown: "(12 bytes, private)" for
// one not every user may read, "(sensitive)" for a sensitive one, its HCL form when it is kept in full, short and not
// content, otherwise its size and digest ("(12 KiB, sha256:…)"). content
// is whether the property is a Content property (file content).
func (sv StoredValue) Display(content bool) string {
	if sv.Private != "" {
		return fmt.Sprintf("(%s, private)", humanSize(sv.Size))
	}
	if sv.IsSensitive() {
		return Sensitive
	}
	if sv.Value != nil && sv.Value.Value != cty.NilVal {
		v := sv.Value.Value
		if s, ok := stringOf(v); ok {
			if !content && len(s) <= MaxInlineValue {
				return DisplayValue(v)
			}
			return Summary(int64(len(s)), sv.Digest)
		}
		return DisplayValue(v)
	}
	return Summary(sv.Size, sv.Digest)
}

// IsSensitive reports whether the value is kept only as a salted HMAC.
func (sv StoredValue) IsSensitive() bool { return strings.HasPrefix(sv.Digest, "hmac-") }

// Text returns the value when it is kept in full and is a string.
func (sv StoredValue) Text() (string, bool) {
	if sv.Value == nil || sv.IsSensitive() {
		return "", false
	}
	return stringOf(sv.Value.Value)
}

// Summary shows content by size and digest: "(31 bytes, sha256:c872e499a204…)".
func Summary(size int64, digest string) string {
	return fmt.Sprintf("(%s, %s)", humanSize(size), ShortDigest(digest))
}

// stringOf returns v's string when v is a known, non-null string.
func stringOf(v cty.Value) (string, bool) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return "", false
	}
	return v.AsString(), true
}

// isBinary reports content no diff can show: a NUL byte or invalid UTF-8.
func isBinary(s string) bool {
	return strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)
}

func humanSize(n int64) string {
	switch {
	case n == 1:
		return "1 byte"
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1024*1024))
	}
}

// StoreCurrent turns a live reading into the form kept in the plan.
// sensitive hides every value (a sensitive resource); sensitiveProps names
// properties whose values are hidden besides those the schema marks (the
// recipe made their value sensitive).
func StoreCurrent(s *resources.Schema, st *resources.State, salt string, sensitive bool, sensitiveProps ...string) *Current {
	c := &Current{Exists: st.Exists}
	if len(st.Values) > 0 {
		c.Values = make(map[string]StoredValue, len(st.Values))
		for k, v := range st.Values {
			if v == cty.NilVal || !v.IsWhollyKnown() {
				// Nothing read is unknown; a state predicted from a step
				// holding a value known only at apply is, and is not kept.
				continue
			}
			hidden := sensitive || slices.Contains(sensitiveProps, k)
			sv := StoreValue(s.Property(k), v, salt, hidden)
			if !hidden && st.Private[k] != "" {
				// A value not every user may read (a private file's
				// content): its plain sha256 would let anyone holding the
				// plan guess a short secret, so it is keyed like a
				// sensitive value's, and shown by size only.
				sv = StoredValue{Digest: DigestValue(v, salt, true), Size: sv.Size, Private: st.Private[k]}
			}
			c.Values[k] = sv
		}
	}
	if len(st.Extra) > 0 {
		c.Extra = make(map[string]string, len(st.Extra))
		for k, v := range st.Extra {
			c.Extra[k] = v
		}
	}
	return c
}

// Fingerprint is a sha256 over everything a reading holds: existence, each
// value's digest and each extra fact.
func (c *Current) Fingerprint() string {
	h := sha256.New()
	fmt.Fprintf(h, "exists=%v\n", c.Exists)
	for _, k := range slices.Sorted(maps.Keys(c.Values)) {
		fmt.Fprintf(h, "v:%s=%s\n", k, c.Values[k].Digest)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Extra)) {
		fmt.Fprintf(h, "x:%s=%q\n", k, c.Extra[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Difference is one way a live reading differs from the one in the plan.
type Difference struct {
	Property string // "exists", a property name, or an extra fact's name
	Then     string // display form at plan time
	Now      string // display form now
}

// CompareCurrent lists how now differs from then, in a stable order, with
// display forms (text of several lines by size and digest).
func CompareCurrent(then, now *Current) []Difference {
	var out []Difference
	if then.Exists != now.Exists {
		out = append(out, Difference{Property: "exists", Then: existsWord(then.Exists), Now: existsWord(now.Exists)})
	}
	keys := map[string]bool{}
	for k := range then.Values {
		keys[k] = true
	}
	for k := range now.Values {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		a, aok := then.Values[k]
		b, bok := now.Values[k]
		if aok && bok && a.Digest == b.Digest {
			continue
		}
		d := Difference{Property: k, Then: "(none)", Now: "(none)"}
		if aok {
			d.Then = a.Display(spansLines(a))
		}
		if bok {
			d.Now = b.Display(spansLines(b))
		}
		out = append(out, d)
	}
	extras := map[string]bool{}
	for k := range then.Extra {
		extras[k] = true
	}
	for k := range now.Extra {
		extras[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(extras)) {
		if then.Extra[k] != now.Extra[k] {
			out = append(out, Difference{Property: k, Then: then.Extra[k], Now: now.Extra[k]})
		}
	}
	return out
}

// spansLines reports a value kept in full that is text of several lines:
// content, which a list of differences shows by size and digest (it has
// no schema to ask).
func spansLines(sv StoredValue) bool {
	text, ok := sv.Text()
	return ok && strings.Contains(text, "\n")
}

func existsWord(b bool) string {
	if b {
		return "exists"
	}
	return "does not exist"
}

// DesiredResource rebuilds the evaluated resource a plan entry was made from,
// so apply can load and converge it without re-reading HCL. A value known
// only at apply (Resource.Lazy) is an unknown value of its property's type
// until a Resolver evaluates it.
func DesiredResource(reg *resources.Registry, r *Resource) (resources.Type, *resources.Resource, error) {
	t, ok := reg.Lookup(r.Type)
	if !ok {
		return nil, nil, fmt.Errorf("%s: resource type %q is not known to this build of toque", r.Address, r.Type)
	}
	vals := make(map[string]cty.Value, len(r.Desired)+len(r.Lazy))
	for k, v := range r.Desired {
		if t.Schema().Property(k) == nil {
			return nil, nil, fmt.Errorf("%s: the plan sets property %q, which type %q does not have", r.Address, k, r.Type)
		}
		vals[k] = v.Value
	}
	for k := range r.Lazy {
		p := t.Schema().Property(k)
		if p == nil {
			return nil, nil, fmt.Errorf("%s: the plan has a value known at apply for property %q, which type %q does not have", r.Address, k, r.Type)
		}
		if p.Identity || p.NameProperty {
			return nil, nil, fmt.Errorf("%s: the plan has a value known at apply for %q, which names the resource and must be known at plan", r.Address, k)
		}
		vals[k] = p.Unknown()
	}
	res := resources.NewResource(t.Schema(), r.Name, r.Action, vals)
	res.Key = r.Index
	d := res.WithSecrets(r.Sensitive, r.SensitiveProperties)
	if len(r.Then) > 0 {
		later := make([]string, len(r.Then))
		for i, st := range r.Then {
			later[i] = st.Action
		}
		d = d.WithLater(later)
	}
	return t, d, nil
}

// DesiredValues is the inverse of DesiredResource: the values to store.
func DesiredValues(r *resources.Resource) map[string]Value {
	out := make(map[string]Value, len(r.Values))
	for k, v := range r.Values {
		if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
			continue // unset, or known only at apply (Resource.Lazy)
		}
		out[k] = Value{Value: v}
	}
	return out
}
