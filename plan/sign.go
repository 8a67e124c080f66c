package plan

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/toquehq/toque/internal/trust"
)

// Plan signing: `toque plan -sign-key=KEY` signs the plan it writes, and
// `toque apply -verify-key=KEYS` applies only plans signed by one of KEYS,
// so that a host can apply the plans its CI made and nobody else's.
//
// What is signed is the plan's digest: the sha256 of its canonical bytes,
// which the checksum covers. The message is SignaturePrefix followed by the
// digest ("sha256:HEX"), so a toque signature cannot be mistaken for a
// signature over anything else. The signature sits in the envelope, beside
// the checksum, with the public key that made it:
//
//	"signature": {"algorithm": "ed25519", "public_key": "BASE64", "value": "BASE64"}
//
// Key files:
//
//   - A private key is a PEM "PRIVATE KEY" block (PKCS #8, RFC 8410), as
//     `toque keygen` and `openssl genpkey -algorithm ed25519` write it. Text
//     before the block is a comment. toque refuses a private key file that
//     its group or others may read or write.
//   - Public keys are one per line: "toque-ed25519 BASE64 [comment]", where
//     BASE64 is the 32-byte key. Blank lines and lines starting with # are
//     ignored, so a file of trusted keys can list the current key and the
//     next one while keys are rotated.
//
// A key is named by its fingerprint, "SHA256:" and the unpadded base64 of
// the sha256 of the 32-byte key.

// SignaturePrefix starts the message a plan signature signs.
const SignaturePrefix = "toque plan signature v1\n"

// PublicKeyType is the first word of a public key line.
const PublicKeyType = "toque-ed25519"

// ErrSignature is returned by Read for a signed plan whose signature does
// not verify: the plan was changed after it was signed, or the signature
// was taken from another plan.
var ErrSignature = errors.New("the plan's signature does not verify")

// ErrUnsigned is returned by ReadFile under trusted keys for a plan that is
// not signed.
var ErrUnsigned = errors.New("the plan is not signed")

// ErrUntrusted is returned by ReadFile under trusted keys for a plan signed
// by another key.
var ErrUntrusted = errors.New("the plan is signed by a key that is not trusted")

// ErrKey is returned for a key file toque refuses: unreadable, malformed,
// or a private key others may read.
var ErrKey = errors.New("unusable key file")

// PublicKey is an ed25519 public key, with the comment its line gives it.
type PublicKey struct {
	Key     ed25519.PublicKey
	Comment string
}

// Fingerprint names the key: "SHA256:" and the unpadded base64 of the
// sha256 of the key.
func (k PublicKey) Fingerprint() string {
	sum := sha256.Sum256(k.Key)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// String is the key's line in a public key file.
func (k PublicKey) String() string {
	s := PublicKeyType + " " + base64.StdEncoding.EncodeToString(k.Key)
	if k.Comment != "" {
		s += " " + k.Comment
	}
	return s
}

// Signature is a plan's signature as the envelope keeps it.
type Signature struct {
	Algorithm string `json:"algorithm"`
	PublicKey string `json:"public_key"`
	Value     string `json:"value"`
}

func signedMessage(digest string) []byte {
	return []byte(SignaturePrefix + digest)
}

// Sign signs the encoded plan's digest with key; WriteEncoded then writes
// the signature in the envelope.
func (e *Encoded) Sign(key ed25519.PrivateKey) error {
	if len(key) != ed25519.PrivateKeySize {
		return fmt.Errorf("%w: not an ed25519 private key", ErrKey)
	}
	pub := key.Public().(ed25519.PublicKey)
	e.Signature = &Signature{
		Algorithm: "ed25519",
		PublicKey: base64.StdEncoding.EncodeToString(pub),
		Value:     base64.StdEncoding.EncodeToString(ed25519.Sign(key, signedMessage(e.Digest))),
	}
	return nil
}

// Signer is the public key of the signing key.
func (e *Encoded) Signer() *PublicKey {
	if e.Signature == nil {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(e.Signature.PublicKey)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil
	}
	return &PublicKey{Key: b}
}

// verifySignature checks the envelope's signature member over digest. It
// returns the signer, or nil for an unsigned plan.
func verifySignature(path string, raw json.RawMessage, digest string) (*PublicKey, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var sig Signature
	if err := json.Unmarshal(raw, &sig); err != nil {
		return nil, fmt.Errorf("%w: %s has a signature member toque cannot read (%v)", ErrSignature, path, err)
	}
	if sig.Algorithm != "ed25519" {
		return nil, fmt.Errorf("%w: %s is signed with %q; toque signs and verifies ed25519 only", ErrSignature, path, truncate(sig.Algorithm, 40))
	}
	pub, err := base64.StdEncoding.DecodeString(sig.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: %s names a signing key that is not an ed25519 public key", ErrSignature, path)
	}
	value, err := base64.StdEncoding.DecodeString(sig.Value)
	if err != nil || len(value) != ed25519.SignatureSize {
		return nil, fmt.Errorf("%w: %s has a signature that is not an ed25519 signature", ErrSignature, path)
	}
	k := &PublicKey{Key: pub}
	if !ed25519.Verify(pub, signedMessage(digest), value) {
		return nil, fmt.Errorf("%w: %s claims to be signed by key %s, but the signature is not that key's signature of this plan: the plan was changed after it was signed, or the signature was copied from another plan", ErrSignature, path, k.Fingerprint())
	}
	return k, nil
}

// trusted finds signer among o.Trusted.
func trusted(path string, signer *PublicKey, o ReadOptions) (*PublicKey, error) {
	from := o.TrustedFrom
	if from == "" {
		from = "the trusted keys"
	}
	if signer == nil {
		return nil, fmt.Errorf("%w: %s carries no signature, and this host applies only plans signed by a key in %s; sign it with 'toque plan -sign-key'", ErrUnsigned, path, from)
	}
	for i := range o.Trusted {
		if bytes.Equal(o.Trusted[i].Key, signer.Key) {
			return &o.Trusted[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %s is signed by key %s, which is not one of the %d key(s) in %s", ErrUntrusted, path, signer.Fingerprint(), len(o.Trusted), from)
}

// PublicKeyOf is the public key of a signing key.
func PublicKeyOf(key ed25519.PrivateKey, comment string) PublicKey {
	return PublicKey{Key: key.Public().(ed25519.PublicKey), Comment: comment}
}

// GenerateKey makes a new signing key from rand (crypto/rand.Reader).
func GenerateKey(rand io.Reader) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand)
	return priv, err
}

// MarshalPrivateKey encodes key as a private key file: a comment naming
// its public key, then the PEM PKCS #8 block.
func MarshalPrivateKey(key ed25519.PrivateKey, comment string) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	pub := PublicKeyOf(key, comment)
	var b bytes.Buffer
	fmt.Fprintf(&b, "toque plan signing key (ed25519); keep it secret.\nPublic key: %s\nFingerprint: %s\n", pub, pub.Fingerprint())
	if err := pem.Encode(&b, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ParsePrivateKey decodes a private key file's content.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block: want a PEM \"PRIVATE KEY\" block, as 'toque keygen' writes")
	}
	if block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("a PEM %q block: want \"PRIVATE KEY\" (PKCS #8), as 'toque keygen' writes", block.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("not a PKCS #8 private key: %v", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T key: plans are signed with ed25519 keys only", k)
	}
	return priv, nil
}

// maxKeyFile bounds what is read of a key file.
const maxKeyFile = 1 << 20

// readKeyFile reads a small regular key file, refusing mode bits in
// forbidden (for a private key, any access for group and others). With
// replaceable set, it also refuses a file another user could replace
// (internal/trust): one owned by neither root nor toque's user, or below a
// directory another user could change, as written or through a link.
func readKeyFile(path string, forbidden fs.FileMode, why string, replaceable bool) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrKey, path)
	}
	if st.Size() > maxKeyFile {
		return nil, fmt.Errorf("%w: %s is %d bytes; a key file is small", ErrKey, path, st.Size())
	}
	if perm := st.Mode().Perm(); perm&forbidden != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o: %s", ErrKey, path, perm, why)
	}
	if replaceable {
		if err := notReplaceable(path, st); err != nil {
			return nil, err
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	return data, nil
}

// notReplaceable refuses a key file, opened with stat st, that another
// user could replace: its owner (root or toque's user, from the opened
// file), and every directory above it as written and where its links
// lead.
func notReplaceable(path string, st fs.FileInfo) error {
	refuse := func(what, reason string) error {
		return fmt.Errorf("%w: %s %s; whoever can replace the trusted keys can have their plans applied: keep them in a file owned by root (or the user toque runs as), in directories only root can change (as /etc/toque)", ErrKey, what, reason)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: %s: cannot tell who owns it", ErrKey, path)
	}
	if reason := trust.Owner(sys.Uid, sys.Mode); reason != "" {
		return refuse(path, reason)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrKey, err)
	}
	dirs := []string{filepath.Dir(abs)}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		dirs = append(dirs, filepath.Dir(real))
	} else {
		return fmt.Errorf("%w: %v", ErrKey, err)
	}
	for _, d := range dirs {
		if err := trust.Ancestors(d); err != nil {
			var ue *trust.UntrustedError
			if errors.As(err, &ue) {
				return refuse(ue.Path+", a directory above "+path+",", ue.Reason)
			}
			return fmt.Errorf("%w: %v", ErrKey, err)
		}
	}
	return nil
}

// LoadSigningKey reads a private key file. It refuses a file that its
// group or others may read or write: a signing key is what makes a host
// apply a plan.
func LoadSigningKey(path string) (ed25519.PrivateKey, error) {
	data, err := readKeyFile(path, 0o077, "a signing key must be readable by its owner only (chmod 600 "+path+")", false)
	if err != nil {
		return nil, err
	}
	k, err := ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKey, path, err)
	}
	return k, nil
}

// LoadTrustedKeys reads a file of public keys, one per line. Whoever can
// add a key to it can have plans applied, so it refuses a file that its
// group or others may write, one owned by neither root nor toque's user,
// and one below a directory another user could change (as written or
// where a link leads: the state directory's rules, internal/trust); and a
// file that holds no key.
func LoadTrustedKeys(path string) ([]PublicKey, error) {
	data, err := readKeyFile(path, 0o022, "whoever may write the trusted keys may have their plans applied; make it writable by its owner only (chmod go-w "+path+")", true)
	if err != nil {
		return nil, err
	}
	keys, err := ParsePublicKeys(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKey, path, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: %s holds no public key (want lines of %q and a key, as 'toque keygen' writes to KEY.pub)", ErrKey, path, PublicKeyType)
	}
	return keys, nil
}

// ParsePublicKeys parses public key lines: "toque-ed25519 BASE64
// [comment]", skipping blank lines and # comments.
func ParsePublicKeys(data []byte) ([]PublicKey, error) {
	var keys []PublicKey
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxKeyFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if fields[0] != PublicKeyType || len(fields) < 2 {
			return nil, fmt.Errorf("line %d: want %q, a base64 key and an optional comment", n, PublicKeyType+" BASE64")
		}
		b, err := base64.StdEncoding.DecodeString(fields[1])
		if err != nil || len(b) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("line %d: the key is not the base64 of a 32-byte ed25519 public key", n)
		}
		keys = append(keys, PublicKey{Key: b, Comment: strings.Join(fields[2:], " ")})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return keys, nil
}
