package fleet

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/toquehq/toque/internal/shellexec"
)

// What ssh -G prints for an alias is kept beside the masters and used
// again, instead of running ssh -G, while everything it was computed from
// is as it was: the ssh binary, every configuration file ssh reads
// (Include followed, globs expanded), the options, the environment, the
// local host name, user and working directory. A configuration whose outcome depends on
// anything else — Match exec, localnetwork, canonical, final or any
// criterion toque does not know, CanonicalizeHostname (DNS), an Include
// with tokens or variables — is never cached: ssh -G runs every time.

// resolveInputs digests what ssh -G depends on but the alias and the
// options; "" when its outcome may depend on more. It is computed once
// per SSH.
func (s *SSH) resolveInputs() string {
	s.inputsOnce.Do(func() { s.inputs = s.digestInputs() })
	return s.inputs
}

func (s *SSH) digestInputs() string {
	h := sha256.New()
	bin, err := exec.LookPath(s.binary())
	if err != nil {
		return ""
	}
	st, err := os.Stat(bin)
	if err != nil {
		return ""
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	fmt.Fprintf(h, "bin %s %d %d %d %d %d\x00", bin, sys.Dev, sys.Ino, st.Size(), st.ModTime().UnixNano(), sys.Ctim.Nano())
	// The environment ssh gets (toque's own variables, TOQUE_*, are not
	// passed on).
	env, err := shellexec.Environ(shellexec.Spec{Argv: []string{bin}})
	if err != nil {
		return ""
	}
	sort.Strings(env)
	for _, e := range env {
		fmt.Fprintf(h, "env %s\x00", e)
	}
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	fmt.Fprintf(h, "host %s uid %d wd %s\x00", host, os.Getuid(), wd)
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		return ""
	}
	w := &configWalk{h: h, home: u.HomeDir, ok: true}
	userDir := filepath.Join(u.HomeDir, ".ssh")
	if s.ConfigFile != "" {
		w.file(s.ConfigFile, userDir, 0)
	} else {
		w.file(filepath.Join(userDir, "config"), userDir, 0)
		w.file("/etc/ssh/ssh_config", "/etc/ssh", 0)
	}
	if !w.ok {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// configWalk digests ssh configuration files and what they include, and
// says whether ssh -G's outcome depends on them alone.
type configWalk struct {
	h    hash.Hash
	home string
	ok   bool
}

// matchCriteria are the Match criteria whose outcome depends on the
// alias, the options and the local user alone.
var matchCriteria = map[string]bool{"all": true, "host": true, "originalhost": true, "user": true, "localuser": true}

func (w *configWalk) file(path, base string, depth int) {
	if !w.ok {
		return
	}
	if depth > 16 {
		w.ok = false
		return
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(w.h, "file %s absent\x00", path)
		return
	case err != nil:
		w.ok = false
		return
	}
	fmt.Fprintf(w.h, "file %s %d\x00", path, len(data))
	w.h.Write(data)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() && w.ok {
		key, args := configLine(sc.Text())
		switch key {
		case "include":
			for _, a := range args {
				if strings.ContainsAny(a, "%$") {
					w.ok = false
					return
				}
				if strings.HasPrefix(a, "~/") {
					a = filepath.Join(w.home, a[2:])
				} else if strings.HasPrefix(a, "~") {
					w.ok = false
					return
				}
				if !filepath.IsAbs(a) {
					a = filepath.Join(base, a)
				}
				matches, err := filepath.Glob(a)
				if err != nil {
					w.ok = false
					return
				}
				sort.Strings(matches)
				fmt.Fprintf(w.h, "include %s %d\x00", a, len(matches))
				for _, m := range matches {
					w.file(m, base, depth+1)
				}
			}
		case "match":
			// Criteria and their arguments alternate, but for all
			// (and a negation, !criterion).
			for i := 0; i < len(args); i++ {
				c := strings.ToLower(strings.TrimPrefix(args[i], "!"))
				if !matchCriteria[c] {
					w.ok = false
					return
				}
				if c != "all" {
					i++
				}
			}
		case "canonicalizehostname":
			if len(args) == 0 || !strings.EqualFold(args[0], "no") && !strings.EqualFold(args[0], "false") {
				w.ok = false
			}
		}
	}
	if sc.Err() != nil {
		w.ok = false
	}
}

// configLine splits a line of ssh configuration into its keyword (lower
// case; "" for none) and arguments (double quotes removed).
func configLine(line string) (string, []string) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", nil
	}
	i := strings.IndexAny(line, " \t=")
	if i < 0 {
		return strings.ToLower(line), nil
	}
	key := strings.ToLower(line[:i])
	rest := strings.TrimLeft(line[i:], " \t")
	rest = strings.TrimLeft(strings.TrimPrefix(rest, "="), " \t")
	var args []string
	for rest != "" {
		var a string
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return key, append(args, "\x00unbalanced")
			}
			a, rest = rest[1:end+1], rest[end+2:]
		} else if j := strings.IndexAny(rest, " \t"); j >= 0 {
			a, rest = rest[:j], rest[j:]
		} else {
			a, rest = rest, ""
		}
		args = append(args, a)
		rest = strings.TrimLeft(rest, " \t")
	}
	return key, args
}

// resolveCachePath is where ssh -G's output for alias and opts is kept.
func (s *SSH) resolveCachePath(alias string, opts []Option) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", alias)
	for _, o := range opts {
		fmt.Fprintf(h, "%s=%s\x00", o.Name, o.Value)
	}
	return filepath.Join(s.ControlDir, "resolved-"+hex.EncodeToString(h.Sum(nil))[:16])
}

// cachedResolve is what ssh -G printed for the alias and options when
// its inputs were these, or false.
func (s *SSH) cachedResolve(alias string, opts []Option) (string, bool) {
	in := s.resolveInputs()
	if s.ControlDir == "" || in == "" {
		return "", false
	}
	data, err := os.ReadFile(s.resolveCachePath(alias, opts))
	if err != nil {
		return "", false
	}
	head, rest, ok := strings.Cut(string(data), "\n")
	if !ok || head != in {
		return "", false
	}
	return rest, true
}

// keepResolve keeps what ssh -G printed, when its inputs can be known.
func (s *SSH) keepResolve(alias string, opts []Option, out string) {
	in := s.resolveInputs()
	if s.ControlDir == "" || in == "" {
		return
	}
	p := s.resolveCachePath(alias, opts)
	tmp := fmt.Sprintf("%s.%d.tmp", p, os.Getpid())
	if err := os.WriteFile(tmp, []byte(in+"\n"+out), 0o600); err != nil {
		return
	}
	if os.Rename(tmp, p) != nil {
		os.Remove(tmp)
	}
}
