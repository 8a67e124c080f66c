// Package sshkey reads OpenSSH public keys as the known hosts and
// authorized keys types take them from recipes and find them in files:
// a key's type, its base64 blob (parsed whole, so that a truncated or
// mistyped key is refused before it reaches a file), its comment, and
// the lines of known_hosts and authorized_keys around them. It does no
// I/O, and it is not an SSH client.
package sshkey

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Key is one public key: its type ("ssh-ed25519"), its blob in base64 as
// OpenSSH writes it, and its comment ("" for none).
type Key struct {
	Type, Blob, Comment string
}

// String is the key as a line of authorized_keys or a .pub file writes
// it, without options.
func (k Key) String() string {
	s := k.Type + " " + k.Blob
	if k.Comment != "" {
		s += " " + k.Comment
	}
	return s
}

// Fingerprint is the key's SHA256 fingerprint, as ssh-keygen -l shows it.
func (k Key) Fingerprint() string {
	raw, err := base64.StdEncoding.DecodeString(k.Blob)
	if err != nil {
		return ""
	}
	pk, err := ssh.ParsePublicKey(raw)
	if err != nil {
		return ""
	}
	return ssh.FingerprintSHA256(pk)
}

// typeNames are Chef's short names of key types (ssh_known_hosts_entry's
// key_type) and ssh-keyscan's -t names.
var typeNames = map[string]string{
	"rsa":     ssh.KeyAlgoRSA,
	"dsa":     ssh.KeyAlgoDSA,
	"ecdsa":   ssh.KeyAlgoECDSA256,
	"ed25519": ssh.KeyAlgoED25519,
}

// KeyTypes lists the key types a key may have.
var KeyTypes = []string{
	ssh.KeyAlgoRSA, ssh.KeyAlgoDSA, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
	ssh.KeyAlgoED25519, ssh.KeyAlgoSKECDSA256, ssh.KeyAlgoSKED25519,
}

// TypeName is the key type a short name (rsa, ecdsa…) or a full one
// names, and whether it is one.
func TypeName(s string) (string, bool) {
	if full, ok := typeNames[s]; ok {
		return full, true
	}
	for _, t := range KeyTypes {
		if t == s {
			return t, true
		}
	}
	return "", false
}

// ScanName is ssh-keyscan's -t name of a key type.
func ScanName(full string) string {
	for short, t := range typeNames {
		if t == full {
			return short
		}
	}
	switch full {
	case ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521:
		return "ecdsa"
	case ssh.KeyAlgoSKECDSA256:
		return "ecdsa-sk"
	case ssh.KeyAlgoSKED25519:
		return "ed25519-sk"
	}
	return full
}

// ParseBlob checks that blob is the base64 of a whole public key of a
// known type, and returns its type.
func ParseBlob(blob string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(blob)
	if err != nil {
		return "", fmt.Errorf("it is not base64 (%v)", err)
	}
	pk, err := ssh.ParsePublicKey(raw)
	if err != nil {
		return "", fmt.Errorf("its key data does not parse: %v", strings.TrimPrefix(err.Error(), "ssh: "))
	}
	if _, ok := pk.(*ssh.Certificate); ok {
		return "", errors.New("it is a certificate, not a public key")
	}
	if _, ok := TypeName(pk.Type()); !ok {
		return "", fmt.Errorf("its type %s is not one toque takes (%s)", pk.Type(), strings.Join(KeyTypes, ", "))
	}
	if base64.StdEncoding.EncodeToString(raw) != blob {
		return "", errors.New("its base64 is not written as OpenSSH writes it (padding, line breaks)")
	}
	return pk.Type(), nil
}

// Parse reads "TYPE BLOB [COMMENT]", the way a .pub file holds a key, and
// checks it whole: the blob's own type must be TYPE.
func Parse(s string) (Key, error) {
	if strings.ContainsAny(s, "\n\r\x00") {
		return Key{}, errors.New("it is not one line")
	}
	f := strings.Fields(s)
	if len(f) < 2 {
		return Key{}, errors.New("it is not TYPE BASE64 [COMMENT] (as in a .pub file)")
	}
	typ, err := ParseBlob(f[1])
	if err != nil {
		return Key{}, err
	}
	if f[0] != typ {
		return Key{}, fmt.Errorf("it says %s, but the key itself is %s", f[0], typ)
	}
	return Key{Type: typ, Blob: f[1], Comment: strings.Join(f[2:], " ")}, nil
}

// HostField is how known_hosts names host at port: the host, or
// "[host]:port" for another port than 22.
func HostField(host string, port int) string {
	if port != 0 && port != 22 {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return host
}

// HashHost is OpenSSH's hashed form of a known_hosts name (HashKnownHosts,
// ssh-keygen -H): "|1|" base64(salt) "|" base64(HMAC-SHA1(salt, name)).
func HashHost(name string, salt []byte) string {
	mac := hmac.New(sha1.New, salt)
	mac.Write([]byte(name))
	return "|1|" + base64.StdEncoding.EncodeToString(salt) + "|" + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// MatchesHashed reports whether pattern is a hashed name of name.
func MatchesHashed(pattern, name string) bool {
	rest, ok := strings.CutPrefix(pattern, "|1|")
	if !ok {
		return false
	}
	s, h, ok := strings.Cut(rest, "|")
	if !ok {
		return false
	}
	salt, err1 := base64.StdEncoding.DecodeString(s)
	want, err2 := base64.StdEncoding.DecodeString(h)
	if err1 != nil || err2 != nil {
		return false
	}
	mac := hmac.New(sha1.New, salt)
	mac.Write([]byte(name))
	return hmac.Equal(mac.Sum(nil), want)
}

// KnownHostsLine is one line of a known_hosts file, split: its marker
// (@cert-authority, @revoked, or ""), its host patterns, and its key.
// OK is false for a comment, a blank line or what is no entry.
type KnownHostsLine struct {
	Marker   string
	Patterns []string
	Key      Key
	OK       bool
}

// ParseKnownHostsLine splits one line of known_hosts.
func ParseKnownHostsLine(line string) KnownHostsLine {
	f := strings.Fields(line)
	if len(f) == 0 || strings.HasPrefix(f[0], "#") {
		return KnownHostsLine{}
	}
	var l KnownHostsLine
	if strings.HasPrefix(f[0], "@") {
		l.Marker, f = f[0], f[1:]
	}
	if len(f) < 3 {
		return KnownHostsLine{}
	}
	l.Patterns = strings.Split(f[0], ",")
	l.Key = Key{Type: f[1], Blob: f[2], Comment: strings.Join(f[3:], " ")}
	l.OK = true
	return l
}

// Names reports whether the line's patterns name name exactly: a plain
// pattern equal to it (host names compare without case, as ssh does), or
// a hashed one of it. A wildcard pattern that matches it is not a naming.
func (l KnownHostsLine) Names(name string) bool {
	for _, p := range l.Patterns {
		if strings.EqualFold(p, name) || MatchesHashed(p, name) {
			return true
		}
	}
	return false
}
