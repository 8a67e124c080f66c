package hcltype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// What load_current_value prints back is held to the type's properties
// exactly (docs/resource-authors.md): each value of JSON's own type for
// its property, at any depth, and each key of an object once. HCL
// converts a recipe's values (a number to a string); a reading is not
// converted, so that a script printing the wrong thing is told, rather
// than compared as something it did not mean.

// duplicateKeyError is an object of an answer naming one key twice.
type duplicateKeyError struct {
	key string
	in  string // where the object is: "" at the top, `"labels"`, `"extra"[0]."k"`
}

func (e *duplicateKeyError) Error() string {
	if e.in == "" {
		return fmt.Sprintf("printed the key %q twice: a JSON object names each key once", e.key)
	}
	return fmt.Sprintf("printed the key %q twice (in %s): a JSON object names each key once", e.key, e.in)
}

// maxJSONDepth bounds the nesting duplicateKey follows, as encoding/json
// bounds its own.
const maxJSONDepth = 10000

// duplicateKey reports the first object of raw, one JSON value, that
// names a key twice (a *duplicateKeyError), or nil. It walks the tokens
// with a stack of its own, so that no input can exhaust Go's.
func duplicateKey(raw []byte) error {
	type frame struct {
		object bool
		seen   map[string]bool
		key    string // the member being read, in an object
		index  int    // the element being read, in an array
	}
	var stack []*frame
	where := func() string {
		var b strings.Builder
		for _, f := range stack[:len(stack)-1] {
			if f.object {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(strconv.Quote(f.key))
			} else {
				fmt.Fprintf(&b, "[%d]", f.index-1)
			}
		}
		return b.String()
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && dec.More() {
			// A key, then its value.
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := tok.(string)
			if top.seen[k] {
				return &duplicateKeyError{key: k, in: where()}
			}
			top.seen[k] = true
			top.key = k
		} else if top != nil && !top.object {
			top.index++
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxJSONDepth {
				return errors.New("nested too deeply")
			}
			f := &frame{object: tok == json.Delim('{')}
			if f.object {
				f.seen = map[string]bool{}
			}
			stack = append(stack, f)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if top != nil && !top.object {
				top.index-- // the closing bracket was no element
			}
		}
		if len(stack) == 0 {
			return nil
		}
	}
}

// decodeJSON reads raw, one value an answer printed for a property, as a
// value of type ty: JSON's own value, which must be of ty's kind at every
// depth (conform), then converted to ty (an array to a list or a set, an
// object to a map).
func decodeJSON(raw json.RawMessage, ty cty.Type) (cty.Value, error) {
	implied, err := ctyjson.ImpliedType(raw)
	if err != nil {
		return cty.NilVal, err
	}
	v, err := ctyjson.Unmarshal(raw, implied)
	if err != nil {
		return cty.NilVal, err
	}
	if ty == cty.DynamicPseudoType {
		return v, nil
	}
	if err := conform(v, ty, ""); err != nil {
		return cty.NilVal, err
	}
	return convert.Convert(v, ty)
}

// conform says how v, a value as JSON implies it (strings, numbers,
// bools, tuples for arrays, objects), is not of type ty; path names v
// within the property's value ("" for the value itself). A null is of
// every type.
func conform(v cty.Value, ty cty.Type, path string) error {
	if ty == cty.DynamicPseudoType || v.IsNull() {
		return nil
	}
	vt := v.Type()
	mismatch := func(want string) error {
		if path == "" {
			return fmt.Errorf("it is %s", jsonKind(vt))
		}
		return fmt.Errorf("%s is %s, not %s", path, jsonKind(vt), want)
	}
	subject := path
	if subject == "" {
		subject = "it"
	}
	switch {
	case ty.IsPrimitiveType():
		if !vt.Equals(ty) {
			return mismatch(kindWord(ty))
		}
	case ty.IsListType() || ty.IsSetType():
		if !vt.IsTupleType() {
			return mismatch("an array")
		}
		for i, e := range v.AsValueSlice() {
			if err := conform(e, ty.ElementType(), elemPath(path, i)); err != nil {
				return err
			}
		}
	case ty.IsTupleType():
		if !vt.IsTupleType() {
			return mismatch("an array")
		}
		want := ty.TupleElementTypes()
		if n := v.LengthInt(); n != len(want) {
			return fmt.Errorf("%s has %d element%s, not %d", subject, n, plural(n), len(want))
		}
		for i, e := range v.AsValueSlice() {
			if err := conform(e, want[i], elemPath(path, i)); err != nil {
				return err
			}
		}
	case ty.IsMapType() || ty.IsObjectType():
		if !vt.IsObjectType() {
			return mismatch("an object")
		}
		m := v.AsValueMap()
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			et := cty.DynamicPseudoType
			if ty.IsMapType() {
				et = ty.ElementType()
			} else if !ty.HasAttribute(k) {
				return fmt.Errorf("%s has no attribute %q: the property's type is %s", subject, k, ty.FriendlyName())
			} else {
				et = ty.AttributeType(k)
			}
			if err := conform(m[k], et, keyPath(path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonKind words the kind of JSON value of implied type t.
func jsonKind(t cty.Type) string {
	switch {
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		return "an array"
	case t.IsObjectType() || t.IsMapType():
		return "an object"
	}
	return kindWord(t)
}

// kindWord words a primitive type with its article: "a string".
func kindWord(t cty.Type) string {
	return "a " + t.FriendlyName()
}

func elemPath(path string, i int) string {
	if path == "" {
		return fmt.Sprintf("element %d", i)
	}
	return fmt.Sprintf("%s[%d]", path, i)
}

func keyPath(path, k string) string {
	if path == "" {
		return strconv.Quote(k)
	}
	return path + "." + strconv.Quote(k)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
