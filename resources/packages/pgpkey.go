package packages

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// rpmKeyName is the name rpm gives an OpenPGP public key it imports:
// gpg-pubkey-VERSION-RELEASE, VERSION being the last 8 hex digits of the
// key's id and RELEASE its creation time in hex (rpm -q gpg-pubkey lists
// them). It reads the first public-key packet of an ASCII-armored or
// binary key (version 4, what rpm's keys are: the id is the last 8 bytes
// of the SHA-1 fingerprint), without checking any signature: the key
// itself is what rpm --import checks. It is what yum_repository compares
// with rpm's keyring to import a key only when it is missing.
func rpmKeyName(key []byte) (string, error) {
	data := key
	if bytes.Contains(key, []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----")) {
		var err error
		if data, err = dearmor(string(key)); err != nil {
			return "", err
		}
	}
	if len(data) < 2 || data[0]&0x80 == 0 {
		return "", errors.New("not an OpenPGP key: no packet")
	}
	tag, body, err := firstPacket(data)
	if err != nil {
		return "", err
	}
	if tag != 6 {
		return "", fmt.Errorf("not an OpenPGP public key: its first packet is of type %d, not 6", tag)
	}
	if len(body) < 6 || body[0] != 4 {
		v := -1
		if len(body) > 0 {
			v = int(body[0])
		}
		return "", fmt.Errorf("an OpenPGP key of version %d: toque reads version 4 keys (rpm's)", v)
	}
	h := sha1.New()
	h.Write([]byte{0x99, byte(len(body) >> 8), byte(len(body))})
	h.Write(body)
	fp := h.Sum(nil)
	created := binary.BigEndian.Uint32(body[1:5])
	return fmt.Sprintf("gpg-pubkey-%s-%x", hex.EncodeToString(fp[len(fp)-4:]), created), nil
}

// dearmor decodes an ASCII-armored block: the base64 lines between the
// blank line after the headers and the checksum line.
func dearmor(s string) ([]byte, error) {
	_, rest, ok := strings.Cut(s, "-----BEGIN PGP PUBLIC KEY BLOCK-----")
	if !ok {
		return nil, errors.New("no armor header")
	}
	body, _, ok := strings.Cut(rest, "-----END PGP PUBLIC KEY BLOCK-----")
	if !ok {
		return nil, errors.New("the armored key has no END line")
	}
	lines := strings.Split(strings.ReplaceAll(body, "\r", ""), "\n")
	// Skip the rest of the BEGIN line and the headers, up to the blank
	// line.
	i := 1
	for i < len(lines) && strings.TrimSpace(lines[i]) != "" && strings.Contains(lines[i], ":") {
		i++
	}
	var b64 strings.Builder
	for _, l := range lines[i:] {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "=") {
			break
		}
		b64.WriteString(l)
	}
	out, err := base64.StdEncoding.DecodeString(b64.String())
	if err != nil {
		return nil, fmt.Errorf("the armored key is not base64: %w", err)
	}
	return out, nil
}

// firstPacket returns the type and body of the first OpenPGP packet, in
// the old or the new format.
func firstPacket(b []byte) (int, []byte, error) {
	short := errors.New("the key is cut short")
	if b[0]&0x40 == 0 { // old format
		tag := int(b[0]>>2) & 0x0f
		var n, off int
		switch b[0] & 3 {
		case 0:
			n, off = int(b[1]), 2
		case 1:
			if len(b) < 3 {
				return 0, nil, short
			}
			n, off = int(binary.BigEndian.Uint16(b[1:3])), 3
		case 2:
			if len(b) < 5 {
				return 0, nil, short
			}
			n, off = int(binary.BigEndian.Uint32(b[1:5])), 5
		default:
			return 0, nil, errors.New("a packet of indeterminate length")
		}
		if n < 0 || off+n > len(b) {
			return 0, nil, short
		}
		return tag, b[off : off+n], nil
	}
	tag := int(b[0] & 0x3f)
	var n, off int
	switch l := int(b[1]); {
	case l < 192:
		n, off = l, 2
	case l < 224:
		if len(b) < 3 {
			return 0, nil, short
		}
		n, off = (l-192)<<8+int(b[2])+192, 3
	case l == 255:
		if len(b) < 6 {
			return 0, nil, short
		}
		n, off = int(binary.BigEndian.Uint32(b[2:6])), 6
	default:
		return 0, nil, errors.New("a partial-length packet")
	}
	if n < 0 || off+n > len(b) {
		return 0, nil, short
	}
	return tag, b[off : off+n], nil
}
