package plan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/internal/parallel"
	"github.com/toquehq/toque/resources"
)

// The plan file is one JSON document, the envelope
//
//	{"toque_plan": 2, "checksum": "sha256:HEX", "signature": {…}, "plan": {…}}
//
// where checksum is the sha256 of the exact bytes of the "plan" member, which
// are the plan's canonical JSON (encoding/json of Plan). Digest is the same
// sha256: what a reviewer approves is what the file holds. "signature" is
// present when the plan was signed (sign.go): an ed25519 signature over the
// digest, and the public key that made it.

// MaxFileSize is the largest plan file Read reads (1 GiB): far above what
// planning 10,000 resources with a megabyte of content each makes, and low
// enough that a mistaken path (a log, a device) is refused at once instead
// of filling memory. Write refuses to write a larger plan.
const MaxFileSize = 1 << 30

// ErrNotPlan is returned by Read for a file that is not a toque plan file
// (not a regular file, not JSON, or not the plan envelope).
var ErrNotPlan = errors.New("not a toque plan file")

// ErrTooLarge is returned by Read for a file larger than MaxFileSize.
var ErrTooLarge = errors.New("the plan file is too large")

// ErrChecksum is returned by Read for a plan file whose content does not
// match its checksum: it was edited, truncated or damaged.
var ErrChecksum = errors.New("the plan file does not match its checksum")

// ErrErrored is returned by Applicable for a plan that failed part-way.
var ErrErrored = errors.New("the plan is errored")

// VersionError is returned by Read for a plan file written in a format this
// build cannot read.
type VersionError struct {
	Path      string
	Got, Want int
}

func (e *VersionError) Error() string {
	if e.Got == 1 {
		return fmt.Sprintf("%s was made by an older, incompatible version of toque (plan format 1; this build reads format %d). Format 1 kept the text it showed reviewers beside the values apply runs, so what it showed cannot be trusted to be what runs: make a new plan with this build", e.Path, e.Want)
	}
	return fmt.Sprintf("%s was made by an incompatible version of toque (plan format %d; this build reads format %d): make a new plan with this build", e.Path, e.Got, e.Want)
}

// HostError is returned by VerifyHost for a plan made on another host.
type HostError struct {
	// Plan is the host the plan was made on; Here is this host.
	Plan, Here Host
}

func (e *HostError) Error() string {
	return fmt.Sprintf("the plan was made on %s, but this host is %s: a plan can only be applied on the host it was made on",
		describeHost(e.Plan), describeHost(e.Here))
}

func describeHost(h Host) string {
	name := strconv.Quote(h.Hostname)
	if h.MachineID != "" {
		return fmt.Sprintf("%s (machine id %s)", name, h.MachineID)
	}
	return name
}

// envelopeKey is the member that marks a JSON document as a plan file.
const envelopeKey = "toque_plan"

// canonical is the plan's canonical JSON: the bytes its checksum and digest
// cover, each resource with the seal of what it hides (HiddenDigest).
func (p *Plan) canonical() ([]byte, error) {
	p = p.sealed()
	if len(p.Resources) < parallelEncodeMin {
		return json.Marshal(p)
	}
	// Encoding a large plan is a fifth of its planning time; the resources
	// are encoded on every CPU and spliced into the plan's own encoding.
	// The bytes are exactly json.Marshal(p)'s: the same encoder writes each
	// element, and Resources is the last field of Plan.
	parts := make([][]byte, len(p.Resources))
	errs := make([]error, len(p.Resources))
	parallel.For(len(parts), runtime.GOMAXPROCS(0), func(i int) { parts[i], errs[i] = json.Marshal(p.Resources[i]) })
	shallow := *p
	shallow.Resources = nil
	head, err := json.Marshal(&shallow)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	const tail = `"resources":null}`
	if !bytes.HasSuffix(head, []byte(tail)) {
		return json.Marshal(p) // the struct changed shape: stay correct
	}
	size := len(head) + len(parts)
	for _, b := range parts {
		size += len(b)
	}
	out := make([]byte, 0, size)
	out = append(out, head[:len(head)-len("null}")]...)
	out = append(out, '[')
	for i, b := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return append(out, ']', '}'), nil
}

// parallelEncodeMin is the number of resources from which canonical encodes
// them in parallel.
const parallelEncodeMin = 512

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Digest is "sha256:HEX" over the plan's canonical JSON, the same bytes the
// plan file's checksum covers. It is what reviewers approve, and it is the
// same before writing and after reading the file back.
func (p *Plan) Digest() string {
	b, err := p.canonical()
	if err != nil {
		// A plan that cannot be encoded cannot be written either; its
		// digest says so rather than colliding with a real one.
		return "sha256:(unencodable plan: " + err.Error() + ")"
	}
	return digestOf(b)
}

// Write writes p to path atomically: a temporary file in the same
// directory, mode 0600, synced, then renamed over path. An empty plan is
// written too, so an old plan file cannot be applied by mistake.
func Write(path string, p *Plan) error {
	if p == nil {
		return fmt.Errorf("write plan %s: no plan", path)
	}
	enc, err := p.Encode()
	if err != nil {
		return err
	}
	return WriteEncoded(path, enc)
}

// Encoded is a plan's canonical bytes and their digest, computed once so
// that a command which both prints the digest and writes the file encodes a
// large plan only once, and the signature over that digest, when signed.
type Encoded struct {
	FormatVersion int
	Body          []byte
	Digest        string
	// Signature is set by Sign.
	Signature *Signature
}

// Encode computes p's canonical bytes and digest. The Encoded value
// describes p as it is now; changing p afterwards does not change it.
func (p *Plan) Encode() (*Encoded, error) {
	body, err := p.canonical()
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	return &Encoded{FormatVersion: p.FormatVersion, Body: body, Digest: digestOf(body)}, nil
}

// WriteEncoded is Write for a plan already encoded (and perhaps signed).
func WriteEncoded(path string, enc *Encoded) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "{%q:%d,\"checksum\":%q,", envelopeKey, enc.FormatVersion, enc.Digest)
	if enc.Signature != nil {
		sig, err := json.Marshal(enc.Signature)
		if err != nil {
			return fmt.Errorf("write plan %s: %w", path, err)
		}
		buf.WriteString(`"signature":`)
		buf.Write(sig)
		buf.WriteString(",")
	}
	buf.WriteString(`"plan":`)
	buf.Write(enc.Body)
	buf.WriteString("}\n")
	if buf.Len() > MaxFileSize {
		return fmt.Errorf("write plan %s: %w: the plan is %d bytes, and a plan file holds at most %d (1 GiB); plan fewer resources at once", path, ErrTooLarge, buf.Len(), MaxFileSize)
	}

	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	ok = true
	// Make the rename durable; a directory that cannot be synced (some
	// file systems) does not make the write fail.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// File is a plan file as Read verified it.
type File struct {
	Plan *Plan
	// Digest is the plan's digest: the checksum verified over the file's
	// own bytes (what Plan.Digest computes again when toque wrote them).
	Digest string
	// Signer is the key that signed the plan, nil when it is not signed.
	// Its signature over Digest was verified.
	Signer *PublicKey
	// Trusted is set when ReadOptions.Trusted was given and holds Signer;
	// TrustedKey is that entry (with the comment its key file gives it).
	Trusted    bool
	TrustedKey *PublicKey
}

// ReadOptions say how ReadFile reads a plan file.
type ReadOptions struct {
	// Trusted, when not nil, are the only keys whose plans are accepted:
	// an unsigned plan, or one signed by another key, is refused (with
	// ErrUnsigned or ErrUntrusted) before the plan itself is decoded. An
	// empty, non-nil list refuses every plan.
	Trusted []PublicKey
	// TrustedFrom names where Trusted came from, for messages.
	TrustedFrom string
	// Types are this build's resource types, which the plan is checked
	// against (every resource's type and action). Required.
	Types *resources.Registry
}

// Read reads and verifies a plan file: the envelope, the format version,
// the checksum, a signature if there is one, and that the plan does not
// contradict itself (check), with this build's resource types. Its errors can be told apart with errors.Is
// (ErrNotPlan, ErrTooLarge, ErrChecksum, ErrSignature, ErrInconsistent, fs
// errors such as fs.ErrNotExist) and errors.As (*VersionError). It never
// panics, whatever the file holds.
func Read(path string, types *resources.Registry) (*Plan, error) {
	p, _, err := ReadWithDigest(path, types)
	return p, err
}

// ReadWithDigest is Read that also returns the plan's digest: the checksum
// it verified over the file's own bytes. For a file toque wrote, that is
// what Digest computes again by encoding the plan; a file re-serialised by
// hand (and re-checksummed) has a digest of its own, and it is that digest
// a signature, -expect-digest and the apply journal are about.
func ReadWithDigest(path string, types *resources.Registry) (*Plan, string, error) {
	f, err := ReadFile(context.Background(), path, ReadOptions{Types: types})
	if err != nil {
		return nil, "", err
	}
	return f.Plan, f.Digest, nil
}

// ReadFile is Read with options (trusted signing keys) and a context that
// stops reading a large file.
//
// Only a regular file is read, and at most MaxFileSize bytes of it: a named
// pipe, a device, a socket or a directory is refused before it is opened
// for reading, so a path such as /dev/zero or a FIFO nobody writes to
// fails at once instead of blocking or filling memory.
func ReadFile(ctx context.Context, path string, o ReadOptions) (*File, error) {
	data, err := readCapped(ctx, path)
	if err != nil {
		return nil, err
	}
	return decode(path, data, o)
}

// DecodeFile is ReadFile for a plan file's bytes already in memory (one
// entry of a fleet bundle), named name in errors: the same checks, in the
// same order.
func DecodeFile(name string, data []byte, o ReadOptions) (*File, error) {
	if len(data) > MaxFileSize {
		return nil, tooLarge(name, int64(len(data)))
	}
	return decode(name, data, o)
}

// readCapped reads path when it is a regular file of at most MaxFileSize
// bytes.
func readCapped(ctx context.Context, path string) ([]byte, error) {
	// Stat first, so that a device or a pipe is never opened: opening has
	// side effects on some (a tape rewinds, a FIFO waits for a writer).
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	if err := regularPlanFile(path, st); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should path have become a FIFO since the Stat, opening
	// it does not wait for a writer; the Stat of the open file refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	if err := regularPlanFile(path, st); err != nil {
		return nil, err
	}
	// Read at most one byte more than allowed: a file that grew after the
	// Stat is refused too.
	buf := make([]byte, 0, min(st.Size(), MaxFileSize)+1)
	r := io.LimitReader(f, MaxFileSize+1)
	const chunk = 4 << 20
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read plan %s: %w", path, err)
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, chunk)
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), len(buf)+chunk)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read plan: %w", err)
		}
	}
	if len(buf) > MaxFileSize {
		return nil, tooLarge(path, int64(len(buf)))
	}
	return buf, nil
}

// regularPlanFile refuses what cannot be a plan file: anything but a
// regular file, and a file larger than MaxFileSize.
func regularPlanFile(path string, st fs.FileInfo) error {
	m := st.Mode()
	if !m.IsRegular() {
		what := "not a regular file"
		switch {
		case m.IsDir():
			what = "a directory"
		case m&fs.ModeNamedPipe != 0:
			what = "a named pipe (FIFO)"
		case m&fs.ModeSocket != 0:
			what = "a socket"
		case m&fs.ModeCharDevice != 0:
			what = "a character device"
		case m&fs.ModeDevice != 0:
			what = "a block device"
		}
		return fmt.Errorf("%w: %s is %s; a plan file is a regular file written by 'toque plan -out'", ErrNotPlan, path, what)
	}
	if st.Size() > MaxFileSize {
		return tooLarge(path, st.Size())
	}
	return nil
}

func tooLarge(path string, size int64) error {
	return fmt.Errorf("%w: %s is %d bytes or more, and a plan file holds at most %d (1 GiB); it is not a plan toque wrote", ErrTooLarge, path, size, MaxFileSize)
}

// decode verifies and decodes a plan file's bytes.
func decode(path string, data []byte, o ReadOptions) (*File, error) {
	var env struct {
		Version   json.RawMessage `json:"toque_plan"`
		Checksum  *string         `json:"checksum"`
		Signature json.RawMessage `json:"signature"`
		Plan      json.RawMessage `json:"plan"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		if looksLikePlan(data) {
			return nil, fmt.Errorf("%w: %s is damaged or truncated (%v)", ErrChecksum, path, err)
		}
		return nil, fmt.Errorf("%w: %s is not a JSON document of the plan format (%v)", ErrNotPlan, path, err)
	}
	if len(env.Version) == 0 {
		return nil, fmt.Errorf("%w: %s has no %q member", ErrNotPlan, path, envelopeKey)
	}
	var version int
	if err := json.Unmarshal(env.Version, &version); err != nil {
		return nil, fmt.Errorf("%w: %s has a %q member that is not a format version: %s", ErrNotPlan, path, envelopeKey, truncate(string(env.Version), 40))
	}
	if version != FormatVersion {
		return nil, &VersionError{Path: path, Got: version, Want: FormatVersion}
	}
	if env.Checksum == nil || len(env.Plan) == 0 {
		return nil, fmt.Errorf("%w: %s has no checksum or no plan", ErrChecksum, path)
	}
	if got := digestOf(env.Plan); got != *env.Checksum {
		return nil, fmt.Errorf("%w: %s was edited or damaged after it was written (checksum %s, content %s)", ErrChecksum, path, truncate(*env.Checksum, 80), got)
	}
	digest := *env.Checksum
	f := &File{Digest: digest}
	// The signature is checked before the plan is decoded: under trusted
	// keys, nothing of an unsigned or foreign plan is looked at.
	signer, err := verifySignature(path, env.Signature, digest)
	if err != nil {
		return nil, err
	}
	f.Signer = signer
	if o.Trusted != nil {
		k, err := trusted(path, signer, o)
		if err != nil {
			return nil, err
		}
		f.Trusted, f.TrustedKey = true, k
	}
	var p Plan
	if err := json.Unmarshal(env.Plan, &p); err != nil {
		return nil, fmt.Errorf("%w: %s holds a plan this build cannot decode: %v", ErrNotPlan, path, err)
	}
	if p.FormatVersion != version {
		return nil, &VersionError{Path: path, Got: p.FormatVersion, Want: FormatVersion}
	}
	if o.Types == nil {
		return nil, fmt.Errorf("read plan %s: no resource types to check it against (ReadOptions.Types)", path)
	}
	if err := p.check(o.Types); err != nil {
		return nil, fmt.Errorf("%w: %s: %v; the planner never writes this, so the plan was edited after it was made and its checksum computed again", ErrInconsistent, path, err)
	}
	f.Plan = &p
	return f, nil
}

// looksLikePlan reports whether data starts like a plan file's envelope.
func looksLikePlan(data []byte) bool {
	head := data
	if len(head) > 64 {
		head = head[:64]
	}
	return bytes.Contains(head, []byte(`"`+envelopeKey+`"`))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// VerifyHost checks that p was made on the host id names: hostnames and
// machine ids must be equal. A hostname alone does not tell two hosts
// apart, so a plan without a machine id, or a host without one, is refused.
func VerifyHost(p *Plan, id host.Identity) error {
	here := Host{Hostname: id.Hostname, MachineID: id.MachineID}
	switch {
	case p.Host.Hostname != here.Hostname:
		return &HostError{Plan: p.Host, Here: here}
	case here.MachineID == "":
		return fmt.Errorf("this host has no machine id (/etc/machine-id is missing or empty), so toque cannot check that the plan was made here: create one (systemd-machine-id-setup, or dbus-uuidgen --ensure=/etc/machine-id), then make a new plan with toque plan and apply that")
	case p.Host.MachineID == "":
		return fmt.Errorf("the plan records no machine id (it was made where /etc/machine-id was missing), so toque cannot check that it was made on this host: make a new plan here with toque plan and apply that")
	case p.Host.MachineID != here.MachineID:
		return &HostError{Plan: p.Host, Here: here}
	}
	return nil
}

// Applicable reports whether p may be applied: an errored plan is refused
// with its errors.
func Applicable(p *Plan) error {
	if p == nil {
		return fmt.Errorf("%w: no plan", ErrErrored)
	}
	if p.Errored {
		if len(p.Errors) == 0 {
			return fmt.Errorf("%w: planning failed, so it cannot be applied; fix the errors and make a new plan", ErrErrored)
		}
		return fmt.Errorf("%w: planning failed, so it cannot be applied; fix the errors and make a new plan:\n  %s", ErrErrored, strings.Join(p.Errors, "\n  "))
	}
	return nil
}
