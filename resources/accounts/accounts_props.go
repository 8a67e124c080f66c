package accounts

import (
	"errors"
	"fmt"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources/internal/props"
)

// The property checks shared by user and group: names, ids, passwd
// fields, crypt hashes and dates. Each refuses, without I/O, a value the
// shadow tools would refuse or store wrongly, so that the recipe learns it
// from validate and plan, with the attribute's position, not from a
// failed apply.

// maxID is the largest uid or gid: (uid_t)-1 means "no id" to the kernel.
const maxID = 4294967294

// accountNameRE is the names toque accepts for users and groups: the
// portable set (letters, digits, "_", ".", "-"), not starting with a digit,
// "-" or ".", with an optional "$" at the end (Samba machine accounts).
// Debian's useradd accepts more (all digits, "$" anywhere), which only
// invites confusion with ids and shells.
var accountNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*\$?$`)

// maxAccountName is the longest name useradd and groupadd accept.
const maxAccountName = 32

// checkAccountName says what is wrong with a user or group name, or nil.
func checkAccountName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("the %s name must not be empty", what)
	case len(s) > maxAccountName:
		return fmt.Errorf("the %s name %q is longer than %d characters", what, s, maxAccountName)
	case !accountNameRE.MatchString(s):
		return fmt.Errorf("the %s name %q is not valid: use letters, digits, \"_\", \".\" and \"-\", starting with a letter or \"_\"", what, s)
	}
	return nil
}

// ValidateAccountName is the Validate of a user or group name.
func ValidateAccountName(what string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		return checkAccountName(what, v.AsString())
	}
}

// validateID is the Validate of a uid or gid: a whole number from 0 to
// 4294967294.
func validateID(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
			return nil
		}
		bf := v.AsBigFloat()
		if !bf.IsInt() || bf.Sign() < 0 || bf.Cmp(big.NewFloat(maxID)) > 0 {
			return fmt.Errorf("%s %s is out of range: it must be a whole number from 0 to %d", name, bf.Text('f', -1), uint64(maxID))
		}
		return nil
	}
}

// idValue is a validated id value as a uint32.
func idValue(v cty.Value) uint32 {
	n, _ := v.AsBigFloat().Uint64()
	return uint32(n)
}

// validateGroupRef is the Validate of a user's gid: a group name, or a
// numeric id in range.
func validateGroupRef(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	s := v.AsString()
	if s != "" && strings.Trim(s, "0123456789") == "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n > maxID {
			return fmt.Errorf("gid %s is out of range: it must be a group name or a number from 0 to %d", s, uint64(maxID))
		}
		return nil
	}
	return checkAccountName("group", s)
}

// TrimString normalises a string by trimming the space around it.
func TrimString(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return v, nil
	}
	return cty.StringVal(strings.TrimSpace(v.AsString())), nil
}

// checkField refuses what cannot be stored in a colon-separated database
// field: a colon, or a control character (a newline, a tab, an escape,
// DEL, a C1 control such as U+009B). The shadow tools refuse a C0
// control or DEL when they write the database, so useradd would fail at
// apply, after earlier resources changed the host; a C1 control is
// refused too, as it drives terminals that show the field (finger, ls -l
// of the home, a login prompt).
func checkField(name, s string) error {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		return fmt.Errorf("%s must not contain \":\": the account databases separate fields with colons", name)
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("%s must not contain a control character (%U): the account databases separate entries with newlines, and the shadow tools refuse to write a field holding one", name, r)
	}
	return nil
}

// validateField is the Validate of a free-text passwd field (comment).
func validateField(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		return checkField(name, v.AsString())
	}
}

// NormalizeAbsField is the Normalize of home and shell: an absolute path,
// cleaned ("/home/x/" is "/home/x"); "/" itself is allowed (a daemon's
// home).
func NormalizeAbsField(name string) func(cty.Value) (cty.Value, error) {
	return func(v cty.Value) (cty.Value, error) {
		if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return v, nil
		}
		s := v.AsString()
		if err := checkField(name, s); err != nil {
			return cty.NilVal, err
		}
		if !strings.HasPrefix(s, "/") {
			return cty.NilVal, fmt.Errorf("%s %q is not an absolute path", name, s)
		}
		return cty.StringVal(filepath.Clean(s)), nil
	}
}

// checkHome is the HostCheck of home: what is at the path, if anything,
// must be a directory.
func checkHome(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	fi, err := os.Stat(v.AsString())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("checking home %s: %w", v.AsString(), err)
	case !fi.IsDir():
		return fmt.Errorf("home %s exists and is not a directory (it is %s); choose another home, or remove it first", v.AsString(), props.Article(kindOfMode(fi.Mode())))
	}
	return nil
}

// kindOfMode words what an os.FileMode is.
func kindOfMode(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "fifo"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// checkShell is the HostCheck of shell: an executable regular file
// (through links) must be there, or the user could not log in.
func checkShell(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	s := v.AsString()
	fi, err := os.Stat(s)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("shell %s does not exist on this host; install it first, or choose one of /etc/shells (/usr/sbin/nologin for an account nobody logs in to)", s)
	case err != nil:
		return fmt.Errorf("checking shell %s: %w", s, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("shell %s is %s, not a program", s, props.Article(kindOfMode(fi.Mode())))
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("shell %s is not executable (mode %04o)", s, fi.Mode().Perm())
	}
	return nil
}

// cryptAlphabet is the characters of crypt(3)'s base-64 encoding.
const cryptAlphabet = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// cryptSchemes are the hash schemes of libxcrypt that toque accepts, with
// the length of their encoded hash (0: not checked).
var cryptSchemes = map[string]int{
	"y": 43, "gy": 43, "7": 43, // yescrypt, gost-yescrypt, scrypt
	"6": 86, "5": 43, // SHA-512, SHA-256 crypt
	"2b": 0, "2a": 0, "2y": 0, // bcrypt: $2b$NN$ then 53 characters
	"1": 22, // MD5 crypt: weak, but what old hosts have
}

// hashAdvice says how to make a crypt hash.
const hashAdvice = "hash the password and put the hash in the recipe: `mkpasswd --method=yescrypt` (Debian package whois) or `openssl passwd -6` prints one, for example \"$y$j9T$…\""

// checkCryptHash says why s is not a crypt hash toque accepts, or nil. It
// never quotes s: a password in the recipe is a secret even when it is
// the wrong kind of value.
func checkCryptHash(s string) error {
	switch {
	case s == "":
		return errors.New("an empty password would let anyone log in without one; to refuse password logins, leave password out (a new user's password is locked) or add the lock action")
	case strings.HasPrefix(s, "!") || strings.HasPrefix(s, "*"):
		return errors.New("password must be a crypt hash: \"!\" and \"*\" are how the shadow file marks locked and password-less accounts; use the lock action instead")
	case strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == ':' || r == 0x7f }) >= 0:
		return errors.New("password must be a crypt hash, not the password itself (a crypt hash holds no spaces, colons or control characters); " + hashAdvice)
	case !strings.HasPrefix(s, "$"):
		if len(s) == 13 && strings.Trim(s, cryptAlphabet) == "" {
			return errors.New("password looks like a DES crypt hash, which toque does not accept: it is weak and cannot be told from a plain-text password of 13 characters; " + hashAdvice)
		}
		return errors.New("password must be a crypt hash, not the password itself (it does not start with \"$\"); " + hashAdvice)
	}
	parts := strings.Split(s[1:], "$")
	id := parts[0]
	want, known := cryptSchemes[id]
	if !known {
		return fmt.Errorf("password is a crypt hash of a scheme toque does not know ($%s$); use yescrypt ($y$), SHA-512 ($6$), SHA-256 ($5$) or bcrypt ($2b$): %s", printableID(id), hashAdvice)
	}
	hash := parts[len(parts)-1]
	bad := func() error {
		return fmt.Errorf("password is not a well-formed $%s$ crypt hash; %s", id, hashAdvice)
	}
	for _, p := range parts[1:] {
		if p == "" || strings.Trim(p, cryptAlphabet+"=,") != "" {
			return bad()
		}
	}
	switch id {
	case "2a", "2b", "2y":
		if len(parts) != 3 || len(parts[1]) != 2 || strings.Trim(parts[1], "0123456789") != "" || len(parts[2]) != 53 {
			return bad()
		}
		return nil
	case "y", "gy", "7":
		if len(parts) != 4 {
			return bad()
		}
	case "5", "6":
		// $6$salt$hash or $6$rounds=N$salt$hash
		if len(parts) != 3 && !(len(parts) == 4 && strings.HasPrefix(parts[1], "rounds=")) {
			return bad()
		}
	case "1":
		if len(parts) != 3 {
			return bad()
		}
	}
	if len(hash) != want || strings.Trim(hash, cryptAlphabet) != "" {
		return bad()
	}
	return nil
}

// printableID is a scheme id fit to quote: short and plain, or "?".
func printableID(id string) string {
	if len(id) <= 8 && strings.Trim(id, cryptAlphabet) == "" {
		return id
	}
	return "?"
}

// validateCryptHash is the Validate of password.
func validateCryptHash(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	return checkCryptHash(v.AsString())
}

// never is how expire_date says the account does not expire.
const never = "never"

// normalizeExpireDate is the Normalize of expire_date: "YYYY-MM-DD"
// (after 1970-01-01, which the shadow file cannot tell from "never"), or
// "never".
func normalizeExpireDate(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return v, nil
	}
	s := strings.TrimSpace(v.AsString())
	if s == never {
		return cty.StringVal(never), nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return cty.NilVal, fmt.Errorf("expire_date %q is not a date such as \"2030-12-31\" (or \"never\")", s)
	}
	if t.Unix() < 86400 {
		return cty.NilVal, fmt.Errorf("expire_date %q is not after 1970-01-01: the shadow file cannot store it (day 0 means \"never\" to some programs)", s)
	}
	return cty.StringVal(t.Format("2006-01-02")), nil
}

// expireDate is the expire_date of a shadow day count.
func expireDate(days int64) string {
	if days < 0 {
		return never
	}
	return time.Unix(days*86400, 0).UTC().Format("2006-01-02")
}

// validateDays is the Validate of the password ageing properties: a
// whole number of days from 0 to 99999, or -1 for none.
func validateDays(name string) func(cty.Value) error {
	return func(v cty.Value) error {
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
			return nil
		}
		bf := v.AsBigFloat()
		if !bf.IsInt() || bf.Cmp(big.NewFloat(-1)) < 0 || bf.Cmp(big.NewFloat(99999)) > 0 {
			return fmt.Errorf("%s %s is out of range: it must be a whole number of days from 0 to 99999, or -1 for none", name, bf.Text('f', -1))
		}
		return nil
	}
}

// validateInactive is the Validate of inactive: a whole number of days,
// -1 for "never disabled".
func validateInactive(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
		return nil
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() || bf.Cmp(big.NewFloat(-1)) < 0 || bf.Cmp(big.NewFloat(99999)) > 0 {
		return fmt.Errorf("inactive %s is out of range: it must be a whole number of days from 0 to 99999, or -1 for never", bf.Text('f', -1))
	}
	return nil
}

// normalizeNameList is the Normalize of a list of user names (members):
// sorted, each once, so the order a recipe lists them in is no change.
func normalizeNameList(v cty.Value) (cty.Value, error) {
	if v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull() || !v.Type().IsListType() {
		return v, nil
	}
	names := map[string]bool{}
	for _, e := range v.AsValueSlice() {
		if e.IsNull() {
			return cty.NilVal, errors.New("a member must not be null")
		}
		names[strings.TrimSpace(e.AsString())] = true
	}
	return nameList(slices.Sorted(maps.Keys(names))), nil
}

// nameList is a sorted list value of names (an empty list when none).
func nameList(names []string) cty.Value {
	sort.Strings(names)
	if len(names) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vs := make([]cty.Value, len(names))
	for i, n := range names {
		vs[i] = cty.StringVal(n)
	}
	return cty.ListVal(vs)
}

// validateMembers is the Validate of members: user names.
func validateMembers(v cty.Value) error {
	if !v.IsWhollyKnown() || v.IsNull() || !v.Type().IsListType() {
		return nil
	}
	for _, e := range v.AsValueSlice() {
		if err := checkAccountName("user", e.AsString()); err != nil {
			return fmt.Errorf("members: %w", err)
		}
	}
	return nil
}

// stringsOf is the strings of a list value (nil for null or unknown).
func stringsOf(v cty.Value) []string {
	if v == cty.NilVal || !v.IsWhollyKnown() || v.IsNull() || !(v.Type().IsListType() || v.Type().IsSetType()) {
		return nil
	}
	var out []string
	for _, e := range v.AsValueSlice() {
		out = append(out, e.AsString())
	}
	return out
}
