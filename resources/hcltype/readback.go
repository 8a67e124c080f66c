package hcltype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

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

// errMoreThanOne is scanAnswer's error for output holding more than one
// JSON value.
var errMoreThanOne = errors.New("more than one JSON value")

// scanAnswer checks raw, one answer of load_current_value, as JSON (with
// encoding/json, which says what is wrong and where, without keeping
// anything) and returns its members, each key once at every depth
// (scanJSON).
func scanAnswer(raw []byte) ([]child, error) {
	if err := json.Unmarshal(raw, &struct{}{}); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) && strings.Contains(se.Error(), "after top-level value") {
			return nil, errMoreThanOne
		}
		return nil, err
	}
	return scanJSON(raw, true)
}

// maxJSONDepth bounds the nesting scanJSON follows, as encoding/json
// bounds its own.
const maxJSONDepth = 10000

// child is one member of a JSON object (key) or element of an array
// (key ""), as the bytes of its value within the answer.
type child struct {
	key   string
	value []byte
}

// scanJSON reads raw, one JSON value (which encoding/json accepted), and
// returns its children: an object's members or an array's elements, in
// order, each as a slice of raw (nothing is copied: a reading may be 64
// MiB). With keys set, it checks that every object, at every depth,
// names each key once (else a *duplicateKeyError). It follows nesting
// with a stack of its own, so that no input can exhaust Go's, and never
// panics on input that is not JSON after all (an error says where).
func scanJSON(raw []byte, keys bool) ([]child, error) {
	type frame struct {
		object bool
		start  int // where it opens
		seen   map[string]bool
		key    string // the member being read, in an object
		index  int    // the element being read, in an array
	}
	var stack []*frame
	var children []child
	where := func() string {
		var b strings.Builder
		for _, f := range stack[:len(stack)-1] {
			if f.object {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(strconv.Quote(f.key))
			} else {
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	bad := func(pos int) error {
		if pos >= len(raw) {
			return errors.New("unexpected end of JSON input")
		}
		return fmt.Errorf("invalid character %q at byte %d", raw[pos], pos)
	}
	// key reads the key at pos (a string, then ":") into the object on
	// top, and returns where its value starts.
	key := func(pos int) (int, error) {
		pos = skipSpace(raw, pos)
		end, err := skipString(raw, pos)
		if err != nil {
			return pos, err
		}
		k := string(raw[pos+1 : end-1])
		if bytes.IndexByte(raw[pos:end], '\\') >= 0 || !utf8.ValidString(k) {
			// As encoding/json reads it (escapes, U+FFFD for bad UTF-8).
			if err := json.Unmarshal(raw[pos:end], &k); err != nil {
				return pos, err
			}
		}
		top := stack[len(stack)-1]
		if keys && top.seen[k] {
			return pos, &duplicateKeyError{key: k, in: where()}
		}
		if keys {
			top.seen[k] = true
		}
		top.key = k
		pos = skipSpace(raw, end)
		if pos >= len(raw) || raw[pos] != ':' {
			return pos, bad(pos)
		}
		return pos + 1, nil
	}
	// ended records a value that ended at end, begun at start.
	ended := func(start, end int) {
		if len(stack) == 1 {
			top := stack[0]
			k := ""
			if top.object {
				k = top.key
			}
			children = append(children, child{key: k, value: raw[start:end]})
		}
	}
	pos := 0
scan:
	for value := true; ; {
		pos = skipSpace(raw, pos)
		if pos >= len(raw) {
			return nil, bad(pos)
		}
		c := raw[pos]
		if value {
			start := pos
			switch c {
			case '{', '[':
				if len(stack) >= maxJSONDepth {
					return nil, errors.New("nested too deeply")
				}
				f := &frame{object: c == '{', start: pos}
				if f.object && keys {
					f.seen = map[string]bool{}
				}
				stack = append(stack, f)
				pos = skipSpace(raw, pos+1)
				if pos < len(raw) && (raw[pos] == '}' && f.object || raw[pos] == ']' && !f.object) {
					value = false // empty: closed below
					continue
				}
				if f.object {
					var err error
					if pos, err = key(pos); err != nil {
						return nil, err
					}
				}
				continue
			case '"':
				end, err := skipString(raw, pos)
				if err != nil {
					return nil, err
				}
				pos = end
			default:
				end := pos
				for end < len(raw) && strings.IndexByte(" \t\r\n,]}", raw[end]) < 0 {
					end++
				}
				if end == pos {
					return nil, bad(pos)
				}
				pos = end
			}
			ended(start, pos)
			value = false
			if len(stack) == 0 {
				break scan
			}
			continue
		}
		top := stack[len(stack)-1]
		switch {
		case c == ',':
			pos++
			if top.object {
				var err error
				if pos, err = key(pos); err != nil {
					return nil, err
				}
			} else {
				top.index++
			}
			value = true
			continue
		case c == '}' && top.object, c == ']' && !top.object:
			pos++
			stack = stack[:len(stack)-1]
			ended(top.start, pos)
			if len(stack) == 0 {
				break scan
			}
			continue
		}
		return nil, bad(pos)
	}
	if pos = skipSpace(raw, pos); pos < len(raw) {
		return nil, bad(pos)
	}
	return children, nil
}

// skipSpace is the first byte of raw at or after pos that is not JSON
// white space.
func skipSpace(raw []byte, pos int) int {
	for pos < len(raw) && (raw[pos] == ' ' || raw[pos] == '\t' || raw[pos] == '\r' || raw[pos] == '\n') {
		pos++
	}
	return pos
}

// skipString is where the JSON string at pos ends (after its closing
// quote).
func skipString(raw []byte, pos int) (int, error) {
	if pos >= len(raw) || raw[pos] != '"' {
		if pos >= len(raw) {
			return pos, errors.New("unexpected end of JSON input")
		}
		return pos, fmt.Errorf("invalid character %q at byte %d, where a string was expected", raw[pos], pos)
	}
	for i := pos + 1; i < len(raw); {
		j := bytes.IndexAny(raw[i:], "\"\\")
		if j < 0 {
			break
		}
		i += j
		if raw[i] == '"' {
			return i + 1, nil
		}
		i += 2 // an escape: the next byte is never the closing quote
	}
	return len(raw), errors.New("unexpected end of JSON input")
}

// decodeJSON reads raw, one value an answer printed for a property, as a
// value of type ty: JSON's own value, which must be of ty's kind at every
// depth (conform), then converted to ty (an array to a list or a set, an
// object to a map).
func decodeJSON(raw json.RawMessage, ty cty.Type) (cty.Value, error) {
	if ty.IsPrimitiveType() {
		return decodePrimitive(raw, ty)
	}
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

// decodePrimitive is decodeJSON for a string, number or bool: straight
// from the bytes with encoding/json, without the copies cty's JSON
// decoder makes of a value (a string may be most of 64 MiB).
func decodePrimitive(raw []byte, ty cty.Type) (cty.Value, error) {
	raw = bytes.TrimSpace(raw)
	kind := "a number"
	switch {
	case len(raw) == 0:
		return cty.NilVal, errors.New("no value")
	case string(raw) == "null":
		return cty.NullVal(ty), nil
	case raw[0] == '"':
		kind = "a string"
	case raw[0] == '{':
		kind = "an object"
	case raw[0] == '[':
		kind = "an array"
	case string(raw) == "true" || string(raw) == "false":
		kind = "a bool"
	}
	if kind != kindWord(ty) {
		return cty.NilVal, fmt.Errorf("it is %s", kind)
	}
	switch ty {
	case cty.String:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return cty.NilVal, err
		}
		return cty.StringVal(s), nil
	case cty.Bool:
		return cty.BoolVal(string(raw) == "true"), nil
	}
	return cty.ParseNumberVal(string(raw))
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
