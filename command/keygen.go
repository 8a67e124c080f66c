package command

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/toquehq/toque/command/views"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/plan"
)

// The environment variables that stand for -sign-key and -verify-key.
const (
	envSignKey   = "TOQUE_SIGN_KEY"
	envVerifyKey = "TOQUE_VERIFY_KEY"
)

// KeygenCommand is `toque keygen KEYFILE`.
type KeygenCommand struct {
	*Base
}

func (c *KeygenCommand) Synopsis() string { return "Make a key pair to sign plans with" }

func (c *KeygenCommand) Help() string {
	return `
Usage: toque [-chdir=DIR] keygen [options] KEYFILE

  Makes an ed25519 key pair for signing plans: the private key in KEYFILE
  (mode 0600) and the public key in KEYFILE.pub. Neither may exist yet.

  The job that plans signs what it saves:

    toque plan -sign-key=KEYFILE -out=plan.out     (or TOQUE_SIGN_KEY=KEYFILE)

  and the host applies only plans signed by a key it trusts:

    toque apply -verify-key=trusted.pub plan.out   (or TOQUE_VERIFY_KEY=...)

  where trusted.pub holds one public key per line (copy KEYFILE.pub's line
  into it; list the old key and the new one while rotating keys).

Options:

  -comment=TEXT   A comment for the public key line (default: toque@HOST).
`
}

func (c *KeygenCommand) Run(args []string) int {
	var comment string
	fs := c.newFlagSet("keygen", c.Help)
	fs.StringVar(&comment, "comment", "", "")
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if fs.NArg() != 1 {
		return c.fail(false, "keygen takes one argument, the private key file to write: toque keygen KEYFILE")
	}
	if comment == "" {
		host, _ := os.Hostname()
		comment = "toque@" + host
	}
	if strings.ContainsAny(comment, "\n\r") {
		return c.fail(false, "-comment must be one line")
	}
	path := c.path(fs.Arg(0))
	pubPath := path + ".pub"
	key, err := plan.GenerateKey(rand.Reader)
	if err != nil {
		return c.fail(false, "cannot make a key: %s", err)
	}
	priv, err := plan.MarshalPrivateKey(key, comment)
	if err != nil {
		return c.fail(false, "cannot encode the key: %s", err)
	}
	pub := plan.PublicKeyOf(key, comment)
	// Both files are created new (never over an existing key), the
	// private one with mode 0600 from the start.
	if err := writeNew(path, priv, 0o600); err != nil {
		return c.fail(false, "cannot write the private key: %s", err)
	}
	if err := writeNew(pubPath, []byte(pub.String()+"\n"), 0o644); err != nil {
		os.Remove(path)
		return c.fail(false, "cannot write the public key: %s", err)
	}
	views.Messages{V: c.view(false)}.KeyMade(fs.Arg(0), fs.Arg(0)+".pub", pub.Fingerprint())
	return ExitOK
}

// writeNew writes a file that must not exist yet.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists already; toque keygen never replaces a key (remove it first)", path)
		}
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// keyOption is a key file named by a flag or, when the flag is not given,
// by an environment variable.
type keyOption struct {
	path string
	// from says where path came from: "-verify-key" or "TOQUE_VERIFY_KEY".
	from string
}

// isSet reports whether flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// pickKey resolves a key option: the flag when given (it must name a
// file), else the variable name of env when set and not empty.
func pickKey(env Env, flagName string, set bool, value, name string) (keyOption, error) {
	if set {
		if value == "" {
			return keyOption{}, fmt.Errorf("-%s needs a key file", flagName)
		}
		return keyOption{path: value, from: "-" + flagName}, nil
	}
	if v := env.Getenv(name); v != "" {
		return keyOption{path: v, from: name}, nil
	}
	return keyOption{}, nil
}

// readPlanFile reads and verifies a plan file, under the trusted keys of
// verify when it names a file. A key file that cannot be used is an error
// of its own (not a refused plan).
func (b *Base) readPlanFile(path string, verify keyOption) (*plan.File, diag.Diagnostics) {
	var diags diag.Diagnostics
	o := plan.ReadOptions{Types: b.Registry}
	if verify.path != "" {
		keys, err := plan.LoadTrustedKeys(b.path(verify.path))
		if err != nil {
			return nil, diags.Append(diag.Errorf("%s: %w", verify.from, err).WithKind(views.KindUsage))
		}
		o.Trusted, o.TrustedFrom = keys, verify.path
	}
	f, err := plan.ReadFile(b.ReadCtx, path, o)
	if err != nil {
		return nil, diags.Append(diag.Errorf("%w", err).WithKind(views.KindPlanRefused))
	}
	return f, nil
}

// signatureInfo says who signed a plan read from a file.
func signatureInfo(f *plan.File) *views.SignatureInfo {
	if f == nil {
		return nil
	}
	if f.Signer == nil {
		return &views.SignatureInfo{}
	}
	info := &views.SignatureInfo{Signed: true, Fingerprint: f.Signer.Fingerprint(), Trusted: f.Trusted}
	if f.TrustedKey != nil {
		info.Comment = f.TrustedKey.Comment
	}
	return info
}
