package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/toquehq/toque/config"
)

// LockFileName is the lock written next to policy.hcl.
const LockFileName = "policy.lock.json"

// PolicyFileName is the policy file whose presence selects policy mode.
const PolicyFileName = "policy.hcl"

// LockVersion is the version of the lock format this build writes.
const LockVersion = 1

// Lock is a policy lock: the policy with every source pinned and every
// include merged. Its JSON form follows Chef's Policyfile.lock.json where
// the two overlap.
type Lock struct {
	RevisionID         string                   `json:"revision_id"`
	Name               string                   `json:"name"`
	RunList            []string                 `json:"run_list"`
	CookbookLocks      map[string]*CookbookLock `json:"cookbook_locks"`
	DefaultAttributes  map[string]any           `json:"default_attributes"`
	OverrideAttributes map[string]any           `json:"override_attributes"`
	// AttributeOrigins says where each attribute leaf came from.
	AttributeOrigins    []*AttributeOrigin `json:"attribute_origins,omitempty"`
	IncludedPolicyLocks []*IncludedLock    `json:"included_policy_locks"`
	// Inputs are the local inputs (policy.hcl, local cookbooks, locks
	// included by path) with their digests when the lock was made.
	Inputs []*Input `json:"inputs,omitempty"`
	// InputsDigest is a sha256 over Inputs.
	InputsDigest     string `json:"inputs_digest,omitempty"`
	ToqueLockVersion int    `json:"toque_lock_version,omitempty"`
}

// CookbookLock is one locked cookbook.
type CookbookLock struct {
	Version                 string        `json:"version"`
	Identifier              string        `json:"identifier"`
	DottedDecimalIdentifier string        `json:"dotted_decimal_identifier,omitempty"`
	Source                  string        `json:"source,omitempty"`
	SourceOptions           SourceOptions `json:"source_options"`
	// Origin says which policy brought the cookbook: "policy.hcl:LINE" or
	// `include "NAME"`.
	Origin string `json:"origin,omitempty"`
}

// SourceOptions locate a cookbook. Exactly one form is used:
//   - path: a directory relative to the lock's directory;
//   - git + sha (+ ref, + path): a directory in a git tree at a commit;
//   - artifact: a cookbook_artifacts manifest, relative to the lock's
//     directory (with git + sha: in a git tree; with url: below a URL), as
//     written by toque export.
type SourceOptions struct {
	Path     string `json:"path,omitempty"`
	Git      string `json:"git,omitempty"`
	Ref      string `json:"ref,omitempty"`
	Sha      string `json:"sha,omitempty"`
	Artifact string `json:"artifact,omitempty"`
	URL      string `json:"url,omitempty"`
}

// IncludedLock records one include: its source with the immutable pin, and
// the included lock's revision id and own includes (for loop detection).
type IncludedLock struct {
	Name                string          `json:"name"`
	PolicyName          string          `json:"policy_name"`
	RevisionID          string          `json:"revision_id"`
	SourceOptions       IncludeSource   `json:"source_options"`
	IncludedPolicyLocks []*IncludedLock `json:"included_policy_locks,omitempty"`
}

// IncludeSource is an include's source as declared in policy.hcl (URLs
// redacted) plus its pin: Sha (the full commit) for git, PolicyRevisionID
// for a server, SHA256 of the fetched bytes for path and remote.
type IncludeSource struct {
	Path             string `json:"path,omitempty"`
	Git              string `json:"git,omitempty"`
	Ref              string `json:"ref,omitempty"`
	Sha              string `json:"sha,omitempty"`
	Server           string `json:"server,omitempty"`
	PolicyName       string `json:"policy_name,omitempty"`
	PolicyGroup      string `json:"policy_group,omitempty"`
	PolicyRevisionID string `json:"policy_revision_id,omitempty"`
	Remote           string `json:"remote,omitempty"`
	SHA256           string `json:"sha256,omitempty"`
}

// Input is one local input of a lock.
type Input struct {
	// Kind is "policy", "cookbook" or "include".
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
	// Path is relative to the lock's directory (slash-separated) or
	// absolute.
	Path string `json:"path"`
	// Digest is "sha256:…" of a file, or a cookbook's identifier.
	Digest string `json:"digest"`
}

// AttributeOrigin is where one attribute leaf came from.
type AttributeOrigin struct {
	Level string   `json:"level"`
	Path  []string `json:"path"`
	// File and Line: the policy.hcl line (relative to the lock's directory).
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Include and Revision: the include that brought the leaf.
	Include  string `json:"include,omitempty"`
	Revision string `json:"revision,omitempty"`
}

// String renders the origin for messages and plan provenance.
func (o *AttributeOrigin) String() string {
	if o.Include != "" {
		s := fmt.Sprintf("include_policy %q (revision %s)", o.Include, short(o.Revision))
		if o.File != "" {
			s += fmt.Sprintf(" at %s:%d", o.File, o.Line)
		}
		return s
	}
	return fmt.Sprintf("%s:%d", o.File, o.Line)
}

func short(rev string) string {
	if len(rev) > 10 {
		return rev[:10]
	}
	return rev
}

// revisionInput is the canonical form the revision id is computed over.
type revisionInput struct {
	Name      string            `json:"name"`
	RunList   []string          `json:"run_list"`
	Cookbooks map[string]string `json:"cookbooks"`
	Default   map[string]any    `json:"default_attributes"`
	Override  map[string]any    `json:"override_attributes"`
}

// ComputeRevisionID is the hex sha256 over a canonical JSON form of the
// lock's name, run list, cookbook identifiers and attributes.
func (l *Lock) ComputeRevisionID() string {
	in := revisionInput{Name: l.Name, RunList: l.RunList, Cookbooks: map[string]string{}, Default: l.DefaultAttributes, Override: l.OverrideAttributes}
	if in.RunList == nil {
		in.RunList = []string{}
	}
	if in.Default == nil {
		in.Default = map[string]any{}
	}
	if in.Override == nil {
		in.Override = map[string]any{}
	}
	for n, c := range l.CookbookLocks {
		in.Cookbooks[n] = c.Identifier
	}
	b, err := json.Marshal(in)
	if err != nil {
		// Attribute values come from JSON or cty: always encodable.
		b = []byte(err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Marshal encodes the lock in its canonical, byte-stable form: sorted
// object keys, two-space indentation, a final newline.
func (l *Lock) Marshal() ([]byte, error) {
	c := *l
	if c.RunList == nil {
		c.RunList = []string{}
	}
	if c.CookbookLocks == nil {
		c.CookbookLocks = map[string]*CookbookLock{}
	}
	if c.DefaultAttributes == nil {
		c.DefaultAttributes = map[string]any{}
	}
	if c.OverrideAttributes == nil {
		c.OverrideAttributes = map[string]any{}
	}
	if c.IncludedPolicyLocks == nil {
		c.IncludedPolicyLocks = []*IncludedLock{}
	}
	c.AttributeOrigins = append([]*AttributeOrigin(nil), c.AttributeOrigins...)
	sort.Slice(c.AttributeOrigins, func(i, j int) bool {
		a, b := c.AttributeOrigins[i], c.AttributeOrigins[j]
		if a.Level != b.Level {
			return a.Level < b.Level
		}
		return strings.Join(a.Path, "\x00") < strings.Join(b.Path, "\x00")
	})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		return nil, fmt.Errorf("encoding the lock: %w", err)
	}
	return buf.Bytes(), nil
}

// ParseLock decodes a lock; numbers are kept exact.
func ParseLock(b []byte) (*Lock, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var l Lock
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("not a policy lock: %w", err)
	}
	if l.Name == "" {
		return nil, fmt.Errorf("not a policy lock: it has no name")
	}
	if !nameRe.MatchString(l.Name) {
		return nil, fmt.Errorf("not a policy lock: its name %q is not a plain name (letters, digits, '_', '-' and '.')", l.Name)
	}
	if l.CookbookLocks == nil {
		l.CookbookLocks = map[string]*CookbookLock{}
	}
	// Names become directory names in the cache and the export layout:
	// only plain names are accepted, whoever wrote the lock.
	for _, n := range slices.Sorted(maps.Keys(l.CookbookLocks)) {
		if !config.ValidCookbookName(n) {
			return nil, fmt.Errorf("cookbook_locks names the cookbook %q, which is not a plain name (letters, digits, '_', '-' and '.', no '..')", n)
		}
		if l.CookbookLocks[n] == nil {
			return nil, fmt.Errorf("cookbook_locks.%s is null", n)
		}
	}
	for _, inc := range l.IncludedPolicyLocks {
		if inc == nil {
			return nil, fmt.Errorf("included_policy_locks holds a null")
		}
		if !nameRe.MatchString(inc.Name) {
			return nil, fmt.Errorf("included_policy_locks names the include %q, which is not a plain name", inc.Name)
		}
	}
	origins := l.AttributeOrigins[:0]
	for _, o := range l.AttributeOrigins {
		if o != nil {
			origins = append(origins, o)
		}
	}
	l.AttributeOrigins = origins
	return &l, nil
}

// ReadLock reads and decodes a lock file.
func ReadLock(path string) (*Lock, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	l, err := ParseLock(b)
	if err != nil {
		return nil, b, fmt.Errorf("%s: %w", path, err)
	}
	return l, b, nil
}

// WriteFileAtomic writes b to path through a temporary file and a rename.
func WriteFileAtomic(path string, b []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Sync()
	}
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, mode)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}

// dottedDecimal is Chef's dotted_decimal_identifier: three integers from
// the identifier's first 14, next 14 and next 12 hex digits.
func dottedDecimal(id string) string {
	if len(id) < 40 {
		return ""
	}
	var parts []string
	for _, r := range [][2]int{{0, 14}, {14, 28}, {28, 40}} {
		n, err := strconv.ParseUint(id[r[0]:r[1]], 16, 64)
		if err != nil {
			return ""
		}
		parts = append(parts, strconv.FormatUint(n, 10))
	}
	return strings.Join(parts, ".")
}

// digestOf is "sha256:HEX" of b.
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// inputsDigest is a sha256 over the inputs, in order.
func inputsDigest(inputs []*Input) string {
	h := sha256.New()
	for _, in := range inputs {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\n", in.Kind, in.Name, in.Path, in.Digest)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
