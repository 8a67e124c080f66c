package fleet

import (
	"archive/tar"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/toquehq/toque/plan"
)

// The bundle (fleet.plan) is a tar archive:
//
//	manifest.json              the manifest, in an envelope
//	hosts/ALIAS/plan.out       each host's plan, the bytes its toque wrote
//
// manifest.json is {"toque_fleet_plan": 1, "checksum": "sha256:HEX",
// "signature": {…}, "manifest": {…}}, where checksum is the sha256 of the
// exact bytes of the "manifest" member: the bundle's digest. The manifest
// records the sha256 of every plan file, so the checksum, and a signature
// over it, cover every byte of every plan. A signature is an ed25519
// signature, by the keys of toque keygen, of BundleSignaturePrefix and the
// digest (plans sign plan.SignaturePrefix and theirs: one cannot pass for
// the other). `tar -xf fleet.plan hosts/web-01/plan.out` gives a plan file
// `toque show` and `toque apply` read.

// BundleFormat is the version of the bundle's format.
const BundleFormat = 1

// BundleSignaturePrefix starts the message a bundle's signature signs.
const BundleSignaturePrefix = "toque fleet plan signature v1\n"

// MaxBundle bounds what ReadBundle reads.
const MaxBundle = 8 << 30

const (
	manifestEntry = "manifest.json"
	envelopeName  = "toque_fleet_plan"
)

// Host statuses in the manifest.
const (
	StatusChanges     = "changes"
	StatusNoChanges   = "no-changes"
	StatusError       = "error"       // the host's plan failed (its plan.out is errored)
	StatusUnreachable = "unreachable" // toque could not plan on the host: no plan.out
)

// Manifest describes a bundle.
type Manifest struct {
	FormatVersion int `json:"format_version"`
	// ToqueVersion is the toque that made the bundle; PlanFormat the plan
	// format its plans are in.
	ToqueVersion string    `json:"toque_version"`
	PlanFormat   int       `json:"plan_format"`
	Created      time.Time `json:"created"`
	// Inventory is the inventory as named on the command line, and Limit
	// the -limit given.
	Inventory string   `json:"inventory"`
	Limit     []string `json:"limit"`
	// Agents are the agents shipped, by platform.
	Agents map[string]AgentInfo `json:"agents"`
	// Recipes are the recipe bundles shipped: the directory as the
	// inventory names it, by digest.
	Recipes map[string]string `json:"recipes"`
	Hosts   []HostEntry       `json:"hosts"`
}

// AgentInfo is one agent of the manifest.
type AgentInfo struct {
	Digest  string `json:"sha256"`
	Version string `json:"version"`
}

// HostEntry is one host of the manifest.
type HostEntry struct {
	Alias  string `json:"alias"`
	Status string `json:"status"`
	// HostKey is the host key ssh verified at plan: "ssh-ed25519 SHA256:…".
	HostKey string `json:"host_key"`
	// Hostname and MachineID are what the host's plan records.
	Hostname  string `json:"hostname"`
	MachineID string `json:"machine_id"`
	// Platform is GOOS/GOARCH; Agent the digest of the agent that planned.
	Platform string `json:"platform"`
	Agent    string `json:"agent"`
	// Recipes is the digest of the recipe bundle it planned.
	Recipes string `json:"recipes"`
	// Plan is the plan's entry in the bundle ("" without a plan);
	// PlanSHA256 the sha256 of its bytes; PlanDigest the plan's own digest,
	// as toque show prints it.
	Plan       string `json:"plan"`
	PlanSHA256 string `json:"plan_sha256"`
	PlanDigest string `json:"plan_digest"`
	// Failure and Error say why a host is unreachable (Failure is the
	// class) or its plan is errored, as one line each.
	Failure string `json:"failure"`
	Error   string `json:"error"`
}

// Bundle is a bundle read and verified.
type Bundle struct {
	Manifest Manifest
	// Digest is the manifest's checksum, "sha256:HEX".
	Digest string
	// Signer is the key that signed the bundle, nil when unsigned.
	Signer *plan.PublicKey
	// Plans are the hosts' plan files, by alias.
	Plans map[string][]byte
}

// Host finds a host's entry.
func (b *Bundle) Host(alias string) *HostEntry {
	for i := range b.Manifest.Hosts {
		if b.Manifest.Hosts[i].Alias == alias {
			return &b.Manifest.Hosts[i]
		}
	}
	return nil
}

// PlanEntry is where a host's plan sits in a bundle.
func PlanEntry(alias string) string { return "hosts/" + alias + "/plan.out" }

// Errors of ReadBundle, for errors.Is.
var (
	ErrNotBundle     = errors.New("not a toque fleet plan")
	ErrBundleEdited  = errors.New("the fleet plan was edited or damaged")
	ErrBundleVersion = errors.New("the fleet plan is of another format")
)

// WriteBundle writes a bundle: the manifest (each host's plan sha256 and
// digest filled in from plans), signed with key when not nil, and the
// plans. It returns the bundle's digest.
func WriteBundle(path string, m Manifest, plans map[string][]byte, key ed25519.PrivateKey) (string, error) {
	m.FormatVersion = BundleFormat
	for i := range m.Hosts {
		h := &m.Hosts[i]
		data, ok := plans[h.Alias]
		if !ok {
			h.Plan, h.PlanSHA256, h.PlanDigest = "", "", ""
			continue
		}
		h.Plan = PlanEntry(h.Alias)
		sum := sha256.Sum256(data)
		h.PlanSHA256 = hex.EncodeToString(sum[:])
		if h.PlanDigest == "" {
			h.PlanDigest, _ = PlanFileDigest(data)
		}
	}
	body, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	digest := "sha256:" + hexSum(body)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "{%q:%d,\"checksum\":%q,", envelopeName, BundleFormat, digest)
	if key != nil {
		sig, err := json.Marshal(signBundle(key, digest))
		if err != nil {
			return "", err
		}
		buf.WriteString(`"signature":`)
		buf.Write(sig)
		buf.WriteString(",")
	}
	buf.WriteString(`"manifest":`)
	buf.Write(body)
	buf.WriteString("}\n")

	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), ModTime: bundleTime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add(manifestEntry, buf.Bytes()); err != nil {
		return "", err
	}
	for _, h := range m.Hosts {
		if h.Plan != "" {
			if err := add(h.Plan, plans[h.Alias]); err != nil {
				return "", err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return digest, writeAtomic(path, out.Bytes(), 0o600)
}

func hexSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func signBundle(key ed25519.PrivateKey, digest string) *plan.Signature {
	pub := key.Public().(ed25519.PublicKey)
	return &plan.Signature{
		Algorithm: "ed25519",
		PublicKey: base64.StdEncoding.EncodeToString(pub),
		Value:     base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(BundleSignaturePrefix+digest))),
	}
}

// ReadBundle reads and verifies a bundle: its archive, the manifest's
// checksum and signature (under trusted keys, when trusted is not nil, a
// bundle not signed by one of them is refused before anything else is
// looked at), and every plan's sha256. Nothing in it is trusted before it
// is verified; it never panics, whatever the file holds.
func ReadBundle(path string, trusted []plan.PublicKey, trustedFrom string) (*Bundle, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrNotBundle, path)
	}
	if st.Size() > MaxBundle {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than a fleet plan holds", ErrNotBundle, path, st.Size())
	}
	tr := tar.NewReader(io.LimitReader(f, MaxBundle))
	hdr, err := tr.Next()
	if err != nil || hdr.Name != manifestEntry || hdr.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("%w: %s does not start with a manifest (a fleet plan is written by toque fleet plan -out)", ErrNotBundle, path)
	}
	env, err := readEntry(tr, hdr, 64<<20)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotBundle, path, err)
	}
	b, err := decodeManifest(path, env, trusted, trustedFrom)
	if err != nil {
		return nil, err
	}
	want := map[string]*HostEntry{}
	for i := range b.Manifest.Hosts {
		h := &b.Manifest.Hosts[i]
		if h.Plan != "" {
			want[h.Plan] = h
		}
	}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBundleEdited, path, err)
		}
		h := want[hdr.Name]
		if h == nil || hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%w: %s holds %q, which its manifest does not list", ErrBundleEdited, path, hdr.Name)
		}
		delete(want, hdr.Name)
		data, err := readEntry(tr, hdr, plan.MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBundleEdited, path, err)
		}
		if hexSum(data) != h.PlanSHA256 {
			return nil, fmt.Errorf("%w: %s: the plan of %s does not match the manifest (sha256 %s, manifest %s)", ErrBundleEdited, path, h.Alias, hexSum(data), h.PlanSHA256)
		}
		if d, err := PlanFileDigest(data); err != nil || d != h.PlanDigest {
			return nil, fmt.Errorf("%w: %s: the plan of %s has digest %q, the manifest says %s", ErrBundleEdited, path, h.Alias, d, h.PlanDigest)
		}
		b.Plans[h.Alias] = data
	}
	for name, h := range want {
		return nil, fmt.Errorf("%w: %s lacks %s, the plan of %s", ErrBundleEdited, path, name, h.Alias)
	}
	return b, nil
}

func readEntry(tr *tar.Reader, hdr *tar.Header, max int64) ([]byte, error) {
	if hdr.Size > max || hdr.Size < 0 {
		return nil, fmt.Errorf("%s is %d bytes, too large", hdr.Name, hdr.Size)
	}
	data := make([]byte, hdr.Size)
	if _, err := io.ReadFull(tr, data); err != nil {
		return nil, fmt.Errorf("%s: %v", hdr.Name, err)
	}
	return data, nil
}

// decodeManifest verifies the manifest's envelope.
func decodeManifest(path string, data []byte, trusted []plan.PublicKey, trustedFrom string) (*Bundle, error) {
	var env struct {
		Version   *int            `json:"toque_fleet_plan"`
		Checksum  string          `json:"checksum"`
		Signature json.RawMessage `json:"signature"`
		Manifest  json.RawMessage `json:"manifest"`
	}
	if err := json.Unmarshal(data, &env); err != nil || env.Version == nil {
		return nil, fmt.Errorf("%w: %s has no manifest toque can read", ErrNotBundle, path)
	}
	if *env.Version != BundleFormat {
		return nil, fmt.Errorf("%w: %s is a fleet plan of format %d; this toque reads format %d: make it again with this toque", ErrBundleVersion, path, *env.Version, BundleFormat)
	}
	digest := "sha256:" + hexSum(env.Manifest)
	if len(env.Manifest) == 0 || env.Checksum != digest {
		return nil, fmt.Errorf("%w: %s: its manifest does not match its checksum", ErrBundleEdited, path)
	}
	b := &Bundle{Digest: digest, Plans: map[string][]byte{}}
	signer, err := verifyBundleSignature(path, env.Signature, digest)
	if err != nil {
		return nil, err
	}
	b.Signer = signer
	if trusted != nil {
		if signer == nil {
			return nil, fmt.Errorf("%w: %s carries no signature, and only fleet plans signed by a key in %s are accepted; sign it with toque fleet plan -sign-key", plan.ErrUnsigned, path, trustedFrom)
		}
		ok := false
		for _, k := range trusted {
			ok = ok || bytes.Equal(k.Key, signer.Key)
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s is signed by key %s, which is not one of the %d key(s) in %s", plan.ErrUntrusted, path, signer.Fingerprint(), len(trusted), trustedFrom)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(env.Manifest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b.Manifest); err != nil {
		return nil, fmt.Errorf("%w: %s holds a manifest this toque cannot read: %v", ErrNotBundle, path, err)
	}
	seen := map[string]bool{}
	for _, h := range b.Manifest.Hosts {
		if !aliasSyntax.MatchString(h.Alias) || seen[h.Alias] {
			return nil, fmt.Errorf("%w: %s lists host %q twice or under an invalid alias", ErrBundleEdited, path, h.Alias)
		}
		seen[h.Alias] = true
		if h.Plan != "" && h.Plan != PlanEntry(h.Alias) {
			return nil, fmt.Errorf("%w: %s puts the plan of %s at %q", ErrBundleEdited, path, h.Alias, h.Plan)
		}
		if err := checkEntry(&h); err != nil {
			return nil, fmt.Errorf("%w: %s: host %s: %v", ErrBundleEdited, path, h.Alias, err)
		}
	}
	return b, nil
}

// sha256Hex and planDigestSyntax are the only shapes of a manifest's
// digests: they reach the hosts' shell scripts (fleet apply).
var (
	sha256Hex        = regexp.MustCompile(`^[0-9a-f]{64}$`)
	planDigestSyntax = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// checkEntry refuses a host entry whose fields are not what fleet plan
// writes: a status it does not know, a plan missing for a status that has
// one, digests of another shape. A manifest's checksum covers only its
// bytes; an unsigned bundle can be edited whole, so nothing of it reaches
// a host unchecked.
func checkEntry(h *HostEntry) error {
	switch h.Status {
	case StatusChanges:
		if h.Plan == "" {
			return errors.New("changes without a plan")
		}
	case StatusNoChanges, StatusError, StatusUnreachable:
	default:
		return fmt.Errorf("unknown status %q", h.Status)
	}
	if h.Plan == "" {
		if h.PlanSHA256 != "" || h.PlanDigest != "" {
			return errors.New("plan digests without a plan")
		}
		return nil
	}
	if !sha256Hex.MatchString(h.PlanSHA256) {
		return fmt.Errorf("plan_sha256 %q is not a sha256", h.PlanSHA256)
	}
	if !planDigestSyntax.MatchString(h.PlanDigest) {
		return fmt.Errorf("plan_digest %q is not a plan digest", h.PlanDigest)
	}
	return nil
}

func verifyBundleSignature(path string, raw json.RawMessage, digest string) (*plan.PublicKey, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var sig plan.Signature
	if err := json.Unmarshal(raw, &sig); err != nil || sig.Algorithm != "ed25519" {
		return nil, fmt.Errorf("%w: %s has a signature toque cannot read", plan.ErrSignature, path)
	}
	pub, err := base64.StdEncoding.DecodeString(sig.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: %s names a signing key that is not an ed25519 public key", plan.ErrSignature, path)
	}
	value, err := base64.StdEncoding.DecodeString(sig.Value)
	k := &plan.PublicKey{Key: pub}
	if err != nil || !ed25519.Verify(pub, []byte(BundleSignaturePrefix+digest), value) {
		return nil, fmt.Errorf("%w: %s claims to be signed by key %s, but the signature is not that key's signature of this fleet plan: it was changed after it was signed", plan.ErrSignature, path, k.Fingerprint())
	}
	return k, nil
}

// PlanFileDigest is the digest a plan file's envelope records (what
// toque show prints), without verifying the plan.
func PlanFileDigest(data []byte) (string, error) {
	var env struct {
		Checksum string `json:"checksum"`
	}
	if err := json.Unmarshal(data, &env); err != nil || env.Checksum == "" {
		return "", fmt.Errorf("not a plan file")
	}
	return env.Checksum, nil
}

// SignPlanFile signs a plan file's bytes with key: the bytes toque plan
// -sign-key would have written (the plan itself is unchanged; its digest
// is verified first).
func SignPlanFile(data []byte, key ed25519.PrivateKey) ([]byte, error) {
	var env struct {
		Version  int             `json:"toque_plan"`
		Checksum string          `json:"checksum"`
		Plan     json.RawMessage `json:"plan"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("not a plan file: %v", err)
	}
	if "sha256:"+hexSum(env.Plan) != env.Checksum {
		return nil, plan.ErrChecksum
	}
	enc := &plan.Encoded{FormatVersion: env.Version, Body: env.Plan, Digest: env.Checksum}
	if err := enc.Sign(key); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "toque-sign-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "plan.out")
	if err := plan.WriteEncoded(p, enc); err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// RemoveStaleBundle removes an older bundle at path before a new one is
// made, so that a failed fleet plan leaves none to apply by mistake. A
// file there that is not a bundle is left alone, and is an error.
func RemoveStaleBundle(path string) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	hdr, terr := tar.NewReader(f).Next()
	f.Close()
	if terr != nil || hdr.Name != manifestEntry {
		return fmt.Errorf("%s exists and is not a fleet plan: toque will not replace it; choose another -out", path)
	}
	return os.Remove(path)
}
