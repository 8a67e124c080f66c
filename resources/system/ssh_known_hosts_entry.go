package system

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/shellexec"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/files"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
	"github.com/toquehq/toque/resources/internal/sshkey"
)

// knownHostsType is the built-in "ssh_known_hosts_entry" type, Chef's:
// a host's key in a known_hosts file (/etc/ssh/ssh_known_hosts, or a
// user's). The file is edited, never replaced: only the lines that name
// the host with a key of the entry's type are the entry's, and every
// other line is kept byte for byte. The key comes from the recipe; only
// when the recipe has none does Load ask the host with ssh-keyscan, and
// the plan shows what it found, with its fingerprint, for a reviewer to
// check (and apply refuses another key).
type knownHostsType struct {
	schema *resources.Schema
	file   resources.Type
	// machineID is the file whose content salts hashed names ("" for
	// /etc/machine-id); tests use their own.
	machineID string
}

// SSHKnownHostsEntryType returns the built-in "ssh_known_hosts_entry"
// resource type.
func SSHKnownHostsEntryType() resources.Type { return newKnownHostsType("") }

func newKnownHostsType(machineID string) *knownHostsType {
	return &knownHostsType{file: files.FileType(), machineID: machineID, schema: &resources.Schema{
		Name:        "ssh_known_hosts_entry",
		Description: "Manages a host's key in a known_hosts file.",
		Identified:  true,
		Properties: []*resources.Property{
			{Name: "host", Type: cty.String, NameProperty: true, Identity: true, Required: true, Validate: validateKnownHost,
				Description: "The host: a name or an address, no wildcard; defaults to the block label."},
			{Name: "key", Type: cty.String, NonState: true, Validate: validateHostKey,
				Description: "The host's public key: its base64, or \"TYPE BASE64\" as in a .pub file; unset asks the host with ssh-keyscan at plan time."},
			{Name: "key_type", Type: cty.String, Identity: true, Validate: validateKeyType,
				Description: "The key's type: rsa, ecdsa, ed25519, dsa or a full name (ssh-ed25519); unset, the key's own type, or rsa for ssh-keyscan, as in Chef."},
			{Name: "port", Type: cty.Number, Identity: true, Default: cty.NumberIntVal(22), Validate: validatePort,
				Description: "The host's SSH port; another than 22 is written [host]:port."},
			{Name: "timeout", Type: cty.Number, NonState: true, Default: cty.NumberIntVal(30), Validate: props.PositiveInt("timeout"),
				Description: "Seconds ssh-keyscan may take."},
			{Name: "hash_entries", Type: cty.Bool, NonState: true, Default: cty.False,
				Description: "Write the host's name hashed (as ssh-keygen -H does), so the file does not list the hosts."},
			{Name: "file_location", Type: cty.String, Identity: true, Default: cty.StringVal("/etc/ssh/ssh_known_hosts"), Normalize: props.NormalizePath,
				Description: "The known_hosts file: the host-wide one, or a user's ~/.ssh/known_hosts."},
			{Name: "entry", Type: cty.String, Content: true, Validate: mountReadOnly("entry", "the lines of the file that give the host a key of key_type"),
				Description: "The lines of the file that give the host a key of key_type: read by toque, shown as a diff. A recipe does not set it."},
			files.ModeProperty("0644", "The file's mode, set when toque creates it; unset leaves an existing file's as it is."),
			files.OwnerProperty("The file's owner, set when toque creates it (root); unset leaves an existing file's as it is."),
			files.GroupProperty("The file's group, set when toque creates it (root); unset leaves an existing file's as it is."),
		},
		Actions:       []string{"create"},
		DefaultAction: "create",
	}}
}

func (t *knownHostsType) Schema() *resources.Schema { return t.schema }

// validateKnownHost refuses what known_hosts would read as more than
// one host: a pattern character (* ? !), a list (,), a space, a comment,
// a hashed name, brackets (toque writes them for a port).
func validateKnownHost(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	s := v.AsString()
	if _, err := netip.ParseAddr(s); err == nil && !strings.Contains(s, "%") {
		return nil
	}
	switch {
	case strings.ContainsAny(s, "*?!"):
		return fmt.Errorf("host %q holds a wildcard (* ? !): known_hosts would take the key as every matching host's; name one host", s)
	case strings.ContainsAny(s, ", \t\n\r\x00#"):
		return fmt.Errorf("host %q holds a comma, a space, a # or a control character: known_hosts would read more than one name, or a comment; name one host", s)
	case strings.ContainsAny(s, "[]|@"):
		return fmt.Errorf("host %q holds [, ], | or @: give the port with port, and the plain name (toque hashes it with hash_entries)", s)
	}
	return checkHostname("host", strings.TrimSuffix(s, "."), 253)
}

func validatePort(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	n, acc := v.AsBigFloat().Int64()
	if !v.AsBigFloat().IsInt() || acc != 0 || n < 1 || n > 65535 {
		return errors.New("port must be a whole number from 1 to 65535")
	}
	return nil
}

func validateKeyType(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	if _, ok := sshkey.TypeName(v.AsString()); !ok {
		return fmt.Errorf("key_type %q is not a key type: rsa, ecdsa, ed25519, dsa, or one of %s", v.AsString(), strings.Join(sshkey.KeyTypes, ", "))
	}
	return nil
}

// parseHostKey reads key: a blob, or TYPE BLOB [COMMENT] (the comment is
// dropped: a known_hosts line has none of the key's).
func parseHostKey(s string) (sshkey.Key, error) {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "\n\r\x00") {
		return sshkey.Key{}, errors.New("key must be one line")
	}
	if f := strings.Fields(s); len(f) >= 2 {
		k, err := sshkey.Parse(s)
		k.Comment = ""
		return k, err
	}
	typ, err := sshkey.ParseBlob(s)
	return sshkey.Key{Type: typ, Blob: s}, err
}

func validateHostKey(v cty.Value) error {
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return nil
	}
	if _, err := parseHostKey(v.AsString()); err != nil {
		return fmt.Errorf("key is not a valid OpenSSH public key: %v", err)
	}
	return nil
}

// keyType is the entry's key type: key_type, else the key's own, else
// rsa (Chef's default, for ssh-keyscan).
func keyType(r *resources.Resource) string {
	if r.IsSet("key_type") {
		t, _ := sshkey.TypeName(r.String("key_type"))
		return t
	}
	if k, err := parseHostKey(r.String("key")); r.IsSet("key") && err == nil {
		return k.Type
	}
	return "ssh-rsa"
}

// hostName is how known_hosts names r's host.
func hostName(r *resources.Resource) string {
	return sshkey.HostField(strings.ToLower(strings.TrimSuffix(r.String("host"), ".")), r.Int("port"))
}

// Load reads the file as the file type does (held directories, no link
// followed), and keeps the lines that give the host a key of the entry's
// type (Values "entry"), the file's mode and owner, and in Extra what
// Plan needs besides: the file's kind or why it is refused, "file" when
// it is absent and "dir" when its directory is, "key" the key to write
// (the recipe's, or the one ssh-keyscan found), "salt" for a hashed name.
func (t *knownHostsType) Load(ctx context.Context, r *resources.Resource) (*resources.State, error) {
	path := r.String("file_location")
	fr := resources.NewResource(t.file.Schema(), path, "create", map[string]cty.Value{"path": cty.StringVal(path)})
	fst, err := t.file.Load(ctx, fr.LoadView())
	if err != nil {
		return nil, err
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}, Local: fst}
	for _, k := range []string{"kind", "refused", "link_target", "content_bytes"} {
		if v := fst.Extra[k]; v != "" {
			st.Extra[k] = v
		}
	}
	if !fst.Exists {
		st.Extra["file"] = "absent"
		if _, err := os.Lstat(filepath.Dir(path)); err != nil {
			st.Extra["dir"] = "missing"
		}
	}
	for _, k := range []string{"mode", "owner", "group"} {
		if v, ok := fst.Values[k]; ok {
			st.Values[k] = v
		}
	}
	if why := fst.Private["content"]; why != "" {
		st.Private = map[string]string{"entry": why}
	}
	if v, ok := fst.Values["content"]; ok && !v.IsNull() {
		if lines := entryLines(v.AsString(), hostName(r), keyType(r)); lines != "" {
			st.Values["entry"] = cty.StringVal(lines)
		}
	}
	key := ""
	if r.IsSet("key") {
		k, err := parseHostKey(r.String("key"))
		if err != nil {
			return nil, err
		}
		key = k.Blob
	} else {
		if key, err = keyscan(ctx, r, keyType(r)); err != nil {
			return nil, err
		}
		st.Extra["scanned"] = "true"
	}
	st.Extra["key"] = key
	if r.Bool("hash_entries") {
		st.Extra["salt"] = t.salt(r)
	}
	return st, nil
}

// salt is the salt of the entry's hashed name: HMAC-SHA256 of the file,
// the name and the key type, keyed by this host's machine id, so that a
// plan and its apply write the same line, and two hosts never the same.
func (t *knownHostsType) salt(r *resources.Resource) string {
	id, err := os.ReadFile(cmp(t.machineID, "/etc/machine-id"))
	if err != nil {
		id = []byte("no machine id")
	}
	mac := hmac.New(sha256.New, []byte(strings.TrimSpace(string(id))))
	mac.Write([]byte(r.String("file_location") + "\x00" + hostName(r) + "\x00" + keyType(r)))
	return hex.EncodeToString(mac.Sum(nil)[:20])
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// keyscanTool is ssh-keyscan; tests point it elsewhere only to check
// that a plan given a key never runs it.
var keyscanTool = "ssh-keyscan"

// keyscan asks the host for its key of type typ with ssh-keyscan.
func keyscan(ctx context.Context, r *resources.Resource, typ string) (string, error) {
	host, port := r.String("host"), r.Int("port")
	timeout := r.Int("timeout")
	argv := []string{keyscanTool, "-t", sshkey.ScanName(typ), "-p", strconv.Itoa(port), "-T", strconv.Itoa(timeout), "--", host}
	res, err := shellexec.Run(ctx, shellexec.Spec{Argv: argv, Timeout: time.Duration(timeout+5) * time.Second})
	var ee *shellexec.ExitError
	if err != nil && !(errors.As(err, &ee) && res != nil) {
		return "", fmt.Errorf("running ssh-keyscan for %s port %d: %w (give the key with the key property)", host, port, err)
	}
	for _, line := range strings.Split(res.Stdout, "\n") {
		l := sshkey.ParseKnownHostsLine(line)
		if !l.OK || l.Marker != "" || l.Key.Type != typ {
			continue
		}
		if got, err := sshkey.ParseBlob(l.Key.Blob); err != nil || got != typ {
			return "", fmt.Errorf("ssh-keyscan of %s port %d gave a key toque cannot read: %v", host, port, err)
		}
		return l.Key.Blob, nil
	}
	said := ""
	if msg := strings.TrimSpace(res.Stderr); msg != "" {
		said = "; ssh-keyscan said: " + hostexec.LastLines(msg, 2)
	}
	return "", fmt.Errorf("ssh-keyscan found no %s key at %s port %d: the host did not answer, or has no key of that type (set key_type, or give the key)%s", typ, host, port, said)
}

// entryLines are the lines of text that give name a key of type typ.
func entryLines(text, name, typ string) string {
	var b strings.Builder
	for _, line := range splitLines(text) {
		if l := sshkey.ParseKnownHostsLine(line); l.OK && l.Marker == "" && l.Key.Type == typ && l.Names(name) {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// knownHostsEdit is text with the entry made: the lines that give name a
// key of typ other than blob lose name (a line left naming none goes);
// a line that gives it blob is kept (a plain one replaced when the entry
// is to be hashed); line, the entry's, is appended when none is left.
func knownHostsEdit(text, name, typ, blob, line string, hashed bool) string {
	var out []string
	has := false
	for _, l := range splitLines(text) {
		e := sshkey.ParseKnownHostsLine(l)
		if !e.OK || e.Marker != "" || e.Key.Type != typ || !e.Names(name) {
			out = append(out, l)
			continue
		}
		plain := false
		for _, p := range e.Patterns {
			plain = plain || strings.EqualFold(p, name)
		}
		if e.Key.Blob == blob && !(hashed && plain) {
			has = true
			out = append(out, l)
			continue
		}
		var keep []string
		for _, p := range e.Patterns {
			if !strings.EqualFold(p, name) && !sshkey.MatchesHashed(p, name) {
				keep = append(keep, p)
			}
		}
		if len(keep) > 0 {
			f := strings.Fields(l)
			f[0] = strings.Join(keep, ",")
			out = append(out, strings.Join(f, " "))
		}
	}
	if !has {
		out = append(out, line)
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, "\n") + "\n"
}

// line is the entry's line of r, with the key Load found.
func (t *knownHostsType) line(r *resources.Resource, current *resources.State) string {
	name := hostName(r)
	if salt, err := hex.DecodeString(current.Extra["salt"]); err == nil && len(salt) > 0 {
		name = sshkey.HashHost(name, salt)
	}
	return name + " " + keyType(r) + " " + current.Extra["key"]
}

// Plan adds the entry's line, or replaces the lines that give the host
// another key of the type; the file is created (mode, owner and group
// their defaults unless set) when it does not exist.
func (t *knownHostsType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	if action != "create" {
		return nil, resources.UnknownAction(t.schema, action)
	}
	path := desired.String("file_location")
	switch kind := current.Extra["kind"]; {
	case current.Extra["refused"] != "":
		return nil, errors.New(current.Extra["refused"])
	case kind == "symlink":
		return nil, fmt.Errorf("%s is a symbolic link to %s; toque edits a known_hosts file only where it is, never through a link", path, current.Extra["link_target"])
	case kind != "" && kind != "file":
		return nil, fmt.Errorf("%s is %s, not a regular file", path, props.Article(kind))
	case current.Extra["content_bytes"] != "":
		return nil, fmt.Errorf("%s is not UTF-8 text in normal form (NFC): toque could not keep its other lines byte for byte; edit it by hand", path)
	}
	typ, blob := keyType(desired), current.Extra["key"]
	if k, err := parseHostKey(desired.String("key")); desired.IsSet("key") && err == nil && k.Type != typ {
		return nil, &resources.PropertyError{Property: "key_type", Err: fmt.Errorf("key_type is %s, but the key is %s: leave key_type out, or give a key of its type", typ, k.Type)}
	}
	before := props.StringOr(current.Values["entry"])
	after := knownHostsEdit(before, hostName(desired), typ, blob, t.line(desired, current), current.Extra["salt"] != "")
	var changes []resources.Change
	if after != before {
		c := resources.Change{Property: "entry", Before: current.Values["entry"], After: cty.StringVal(after)}
		if current.Extra["scanned"] != "" {
			k := sshkey.Key{Type: typ, Blob: blob}
			c.Note = fmt.Sprintf("key from ssh-keyscan of %s at plan time, %s: check it against the host's published fingerprint before applying", hostName(desired), k.Fingerprint())
		}
		changes = append(changes, c)
	}
	create := current.Extra["file"] == "absent"
	for _, p := range []string{"mode", "owner", "group"} {
		prop := t.schema.Property(p)
		switch {
		case create && desired.IsSet(p):
			changes = append(changes, resources.Change{Property: p, After: desired.Values[p]})
		case create:
			changes = append(changes, resources.Change{Property: p, After: prop.Default, Default: prop.Default != cty.NilVal})
		case desired.IsSet(p) && !prop.Equals(desired.Values[p], current.Values[p]):
			changes = append(changes, resources.Change{Property: p, Before: current.Values[p], After: desired.Values[p]})
		}
	}
	if create {
		for i := range changes {
			if changes[i].Property == "owner" || changes[i].Property == "group" {
				if changes[i].After == cty.NilVal {
					changes[i].After, changes[i].Default = cty.StringVal("root"), true
				}
			}
		}
	}
	if len(changes) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: path + " gives " + hostName(desired) + " this " + typ + " key already"}, nil
	}
	step := &resources.Step{Kind: resources.Update, Reason: resources.Differ(resources.PropertyNames(changes)), Changes: changes, Groups: t.schema.Groups(changes)}
	if create {
		step.Kind, step.Reason = resources.Create, path+" does not exist"
		if current.Extra["dir"] != "" {
			step.Needs = append(step.Needs, resources.Need{Namespace: resources.NamespacePath, Value: filepath.Dir(path), What: "directory"})
		}
	}
	if fst, ok := current.Local.(*resources.State); ok {
		// As the file type would carry it out: the edit rewrites the file.
		as := &resources.Step{Kind: step.Kind, Changes: step.Changes, Groups: []string{"content"}}
		if err := files.PrivilegeError(as, fst, path); err != nil {
			return nil, err
		}
	}
	return step, nil
}

// Steps edit the file through the file type, reading it again first so
// that other lines written meanwhile are kept; a file that is created
// gets the mode and owner the step shows.
func (t *knownHostsType) Steps() resources.Steps {
	return resources.Same(func(ctx context.Context, env *resources.Env, desired *resources.Resource, current *resources.State, step *resources.Step) error {
		vals := map[string]cty.Value{}
		for _, c := range step.Changes {
			if c.Property == "mode" || c.Property == "owner" || c.Property == "group" {
				vals[c.Property] = c.After
			}
		}
		name, typ, blob := hostName(desired), keyType(desired), current.Extra["key"]
		line := t.line(desired, current)
		return editFile(ctx, env, t.file, desired.String("file_location"), vals, func(old string, _ bool) (string, bool, error) {
			return knownHostsEdit(old, name, typ, blob, line, current.Extra["salt"] != ""), false, nil
		})
	})
}
