package files

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
)

// Symbolic modes: mode = "go-w", "u=rwx,g=rx,o=", "a+X", with chmod's
// meaning (GNU coreutils' mode_compile and mode_adjust, which POSIX
// specifies). A symbolic mode is relative: what it means depends on the
// mode it is applied to. So the property keeps the symbolic form
// (NormalizeMode, which is pure, cannot know the live mode), and a type's
// Plan resolves it against its reading — the live mode, or the type's
// default for a thing it creates — into the absolute mode the change
// shows and apply sets (planWithMode). The plan records that absolute
// mode as the change's planned value, so apply sets the mode the plan
// showed or refuses; the converge resolves it against the mode it finds
// by descriptor (modeAgainst), which is the reading the step was planned
// from.
//
// One departure from chmod: a clause must say whom it is for (u, g, o or
// a). chmod's "+x" applies the umask of the process that runs it, which
// would make a plan depend on toque's umask; "a+x" says it.

// symbolicMode is a parsed symbolic mode.
type symbolicMode struct {
	text    string
	changes []modeChange
}

// modeChange is one operation of a clause ("g+w" of "u=rwx,g+w").
type modeChange struct {
	op byte // '+', '-' or '='
	// affected are the bits the clause's "who" covers (u: 04700, g: 02070,
	// o: 01007, a: 07777).
	affected uint32
	// value are the bits the permissions name (r: 0444, w: 0222, x: 0111,
	// s: 06000, t: 01000), before they are limited to affected; for a
	// copy (u=g), the bits of the class copied.
	value uint32
	// mentioned are the bits the clause names explicitly: on a directory,
	// "=" keeps setuid and setgid unless it names them (GNU chmod).
	mentioned uint32
	flag      modeFlag
}

type modeFlag int

const (
	modeOrdinary modeFlag = iota
	// modeCopy copies the permissions another class has (g=u).
	modeCopy
	// modeXIfAnyX is X: execute, if the thing is a directory or already
	// has an execute bit.
	modeXIfAnyX
)

const (
	whoU = 0o4700
	whoG = 0o2070
	whoO = 0o1007
	whoA = 0o7777
)

// isSymbolicMode reports whether v is a string that is not an octal mode:
// one NormalizeMode keeps as a symbolic mode.
func isSymbolicMode(v cty.Value) bool {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return false
	}
	s := strings.TrimSpace(v.AsString())
	if len(s) > 2 && (s[:2] == "0o" || s[:2] == "0O") {
		s = s[2:]
	}
	return s != "" && strings.Trim(s, "01234567") != ""
}

// looksSymbolic reports whether s holds a character only a symbolic mode
// has, so that an error is worded for one.
func looksSymbolic(s string) bool { return strings.ContainsAny(s, "ugoa+-=") }

// parseSymbolicMode parses a chmod symbolic mode: clauses separated by
// commas, each [ugoa]+ followed by one or more operations, each an
// operator (+, - or =) and either permissions from rwxXst or one class
// (u, g or o) to copy.
func parseSymbolicMode(s string) (*symbolicMode, error) {
	text := strings.TrimSpace(s)
	if text == "" {
		return nil, fmt.Errorf("mode is empty")
	}
	m := &symbolicMode{text: text}
	for _, clause := range strings.Split(text, ",") {
		if clause == "" {
			return nil, fmt.Errorf("mode %q has an empty clause (two commas, or one at an end)", text)
		}
		i := 0
		var affected uint32
		for ; i < len(clause); i++ {
			switch clause[i] {
			case 'u':
				affected |= whoU
			case 'g':
				affected |= whoG
			case 'o':
				affected |= whoO
			case 'a':
				affected |= whoA
			default:
				goto ops
			}
		}
	ops:
		if affected == 0 {
			return nil, fmt.Errorf("mode %q: the clause %q does not say whom it is for: start it with u, g, o or a (\"a+x\", not \"+x\": without them chmod applies its umask, which would make the plan depend on toque's)", text, clause)
		}
		if i == len(clause) {
			return nil, fmt.Errorf("mode %q: the clause %q has no operator: use +, - or = (\"%s+x\")", text, clause, clause)
		}
		for i < len(clause) {
			op := clause[i]
			if op != '+' && op != '-' && op != '=' {
				return nil, fmt.Errorf("mode %q: %q in the clause %q is not an operator (+, - or =) nor a permission (r, w, x, X, s, t)", text, string(op), clause)
			}
			i++
			c := modeChange{op: op, affected: affected}
			if i < len(clause) && strings.IndexByte("ugo", clause[i]) >= 0 {
				c.flag = modeCopy
				c.value = map[byte]uint32{'u': 0o700, 'g': 0o070, 'o': 0o007}[clause[i]]
				i++
			} else {
				for ; i < len(clause) && strings.IndexByte("+-=", clause[i]) < 0; i++ {
					switch clause[i] {
					case 'r':
						c.value |= 0o444
					case 'w':
						c.value |= 0o222
					case 'x':
						c.value |= 0o111
					case 'X':
						c.flag = modeXIfAnyX
					case 's':
						c.value |= 0o6000
					case 't':
						c.value |= 0o1000
					default:
						return nil, fmt.Errorf("mode %q: %q in the clause %q is not a permission: use r, w, x, X, s and t, or one of u, g, o alone to copy its permissions (\"g=u\")", text, string(clause[i]), clause)
					}
				}
			}
			c.mentioned = affected & c.value
			m.changes = append(m.changes, c)
		}
	}
	return m, nil
}

// apply is the mode that m makes of mode (permission bits with setuid,
// setgid and sticky), as chmod makes it of a directory (isDir) or of
// another file.
func (m *symbolicMode) apply(mode uint32, isDir bool) uint32 {
	mode &= MaxMode
	for _, c := range m.changes {
		var omit uint32
		if isDir {
			omit = 0o6000 &^ c.mentioned
		}
		value := c.value
		switch c.flag {
		case modeCopy:
			value &= mode
			var spread uint32
			if value&0o444 != 0 {
				spread |= 0o444
			}
			if value&0o222 != 0 {
				spread |= 0o222
			}
			if value&0o111 != 0 {
				spread |= 0o111
			}
			value |= spread
		case modeXIfAnyX:
			if mode&0o111 != 0 || isDir {
				value |= 0o111
			}
		}
		value &= c.affected &^ omit
		switch c.op {
		case '=':
			preserved := ^c.affected | omit
			mode = mode&preserved | value
		case '+':
			mode |= value
		case '-':
			mode &^= value
		}
	}
	return mode & MaxMode
}

// modeAgainst is the permission bits a mode value (normalised: octal or
// symbolic) gives a thing whose mode is base, and whether it is set. A
// converge resolves the recipe's mode with it against the mode it finds.
func modeAgainst(v cty.Value, base uint32, isDir bool) (uint32, bool, error) {
	if !isSymbolicMode(v) {
		return modeBits(v)
	}
	m, err := parseSymbolicMode(v.AsString())
	if err != nil {
		return 0, false, err
	}
	return m.apply(base, isDir), true, nil
}

// planWithMode plans desired with plan, resolving a symbolic mode first:
// against the live mode when current holds one, else against def, the
// mode the type gives a thing it creates. plan gets desired with the
// absolute mode, so Diff and CreateDiff compare and show absolute modes;
// the mode's change says which symbolic mode it came from (its Note).
func planWithMode(desired *resources.Resource, current *resources.State, def uint32, isDir bool, plan func(*resources.Resource) (*resources.Step, error)) (*resources.Step, error) {
	v, ok := desired.Values["mode"]
	if !ok || !isSymbolicMode(v) {
		return plan(desired)
	}
	m, err := parseSymbolicMode(v.AsString())
	if err != nil {
		return nil, &resources.PropertyError{Property: "mode", Err: err}
	}
	base, from := def, fmt.Sprintf("the default %04o", def)
	if current.Exists {
		if lv, ok := current.Values["mode"]; ok && lv != cty.NilVal && lv.IsKnown() && !lv.IsNull() && lv.Type() == cty.String {
			if n, err := strconv.ParseUint(lv.AsString(), 8, 32); err == nil {
				base, from = uint32(n), lv.AsString()
			}
		}
	}
	resolved := *desired
	resolved.Values = maps.Clone(desired.Values)
	resolved.Values["mode"] = ModeValue(m.apply(base, isDir))
	step, err := plan(&resolved)
	if err != nil || step == nil {
		return step, err
	}
	for i := range step.Changes {
		if c := &step.Changes[i]; c.Property == "mode" && c.Note == "" {
			c.Note = fmt.Sprintf("%s, applied to %s", m.text, from)
		}
	}
	return step, nil
}
