package resources

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
)

// Key is an instance key: which instance of a resource block with
// for_each (a string key) or count (an index) a resource is, as
// Terraform's instance keys. The zero Key is no key: the resource of a
// block with neither.
//
// An instance's address is its block's address followed by the key:
// template[vhost]["example.com"], sysctl[hardening][3] (Key.String).
type Key struct {
	kind  keyKind
	str   string
	index int
}

type keyKind uint8

const (
	noKey keyKind = iota
	stringKey
	indexKey
)

// StringKey is the key of a for_each instance.
func StringKey(s string) Key { return Key{kind: stringKey, str: s} }

// IndexKey is the key of a count instance (0, 1, …).
func IndexKey(i int) Key { return Key{kind: indexKey, index: i} }

// IsZero reports whether k is no key.
func (k Key) IsZero() bool { return k.kind == noKey }

// IsIndex reports whether k is a count index; Index is it.
func (k Key) IsIndex() bool { return k.kind == indexKey }

// Index is a count instance's index (0 for any other key).
func (k Key) Index() int { return k.index }

// IsString reports whether k is a for_each key; Str is it.
func (k Key) IsString() bool { return k.kind == stringKey }

// Str is a for_each instance's key ("" for any other key).
func (k Key) Str() string { return k.str }

// String is the key as an address writes it after the block's
// TYPE[NAME]: `["example.com"]` (the key quoted as an HCL string, without
// doubling $ or %: addresses are values, not templates), `[3]`; "" for no
// key.
func (k Key) String() string {
	switch k.kind {
	case stringKey:
		return "[" + QuoteKey(k.str) + "]"
	case indexKey:
		return "[" + strconv.Itoa(k.index) + "]"
	}
	return ""
}

// Value is the key as expressions see it (each.key, count.index);
// cty.NilVal for no key.
func (k Key) Value() cty.Value {
	switch k.kind {
	case stringKey:
		return cty.StringVal(k.str)
	case indexKey:
		return cty.NumberIntVal(int64(k.index))
	}
	return cty.NilVal
}

// MarshalJSON writes a for_each key as a JSON string, a count index as a
// number, and no key as null.
func (k Key) MarshalJSON() ([]byte, error) {
	switch k.kind {
	case stringKey:
		return json.Marshal(k.str)
	case indexKey:
		return []byte(strconv.Itoa(k.index)), nil
	}
	return []byte("null"), nil
}

// UnmarshalJSON reads what MarshalJSON writes; an index must be a whole
// number from 0 to MaxCount-1.
func (k *Key) UnmarshalJSON(b []byte) error {
	var v any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*k = Key{}
	case string:
		*k = StringKey(x)
	case json.Number:
		i, err := strconv.ParseInt(x.String(), 10, 64)
		if err != nil || i < 0 || i >= MaxCount {
			return fmt.Errorf("an instance index must be a whole number from 0 to %d, not %s", MaxCount-1, truncateKey(x.String()))
		}
		*k = IndexKey(int(i))
	default:
		return errors.New("an instance key is a string (for_each) or a whole number (count)")
	}
	return nil
}

// MaxCount bounds the instances of one block (count, and the elements of
// for_each), and so an index: toque plans 100,000 resources in one run
// (the scale workload); a block that asks for more is surely wrong, and
// each instance costs memory.
const MaxCount = 100_000

func truncateKey(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

// QuoteKey quotes s as an HCL string literal: `\"`, `\\`, `\n`, `\r`, `\t`,
// and \uXXXX for any other character that is not printable. Every other
// character is itself. strconv.Unquote reads it back.
func QuoteKey(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			switch {
			case r == utf8.RuneError || !unicode.IsPrint(r):
				if r < 0x10000 {
					fmt.Fprintf(&b, `\u%04x`, r)
				} else {
					fmt.Fprintf(&b, `\U%08x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// InstanceAddress formats TYPE[NAME] followed by key: the address of one
// instance of a block (file[motd], template[vhost]["a.com"],
// sysctl[hardening][3]).
func InstanceAddress(typ, name string, key Key) string {
	return Address(typ, name) + key.String()
}

// SplitKey splits an instance address (with or without a parent) into
// the address of its block and its key, when it ends with one: a
// `[N]` (N a whole number written without sign or leading zeros) or a
// `["…"]` (an HCL-quoted string) after the block's closing bracket. ok is
// false when addr ends with no key. A block label that itself ends that
// way (file "x][0") reads the same as an instance: toque resolves
// addresses as whole strings first, and two resources never have one
// address.
func SplitKey(addr string) (block string, key Key, ok bool) {
	if !strings.HasSuffix(addr, "]") {
		return addr, Key{}, false
	}
	body := addr[:len(addr)-1]
	if strings.HasSuffix(body, `"`) {
		// ["…"]: find the opening quote, preceded by "][" or ".TYPE[NAME][".
		for i := len(body) - 2; i >= 1; i-- {
			if body[i] != '"' || body[i-1] != '[' {
				continue
			}
			s, err := strconv.Unquote(body[i:])
			if err != nil {
				continue
			}
			if i >= 2 && body[i-2] == ']' {
				return addr[:i-1], StringKey(s), true
			}
		}
		return addr, Key{}, false
	}
	j := strings.LastIndexByte(body, '[')
	if j < 1 || body[j-1] != ']' {
		return addr, Key{}, false
	}
	digits := body[j+1:]
	if digits == "" || len(digits) > 7 || (len(digits) > 1 && digits[0] == '0') {
		return addr, Key{}, false
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return addr, Key{}, false
		}
		n = n*10 + int(c-'0')
	}
	if n >= MaxCount || n > math.MaxInt32 {
		return addr, Key{}, false
	}
	return addr[:j], IndexKey(n), true
}
