package fleet

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// The agent is toque itself: the same toque, built static for the host's
// OS and architecture, copied to the host into a per-user cache under
// its sha256, and run there. `make release` builds them
// (dist/toque-linux-amd64, dist/toque-linux-arm64).

// modulePath is toque's module: an agent must be a build of it.
const modulePath = "github.com/toquehq/toque"

// AgentArchs are the platforms toque fleet ships agents for, as GOOS/GOARCH.
var AgentArchs = []string{"linux/amd64", "linux/arm64"}

// Agent is a toque binary for hosts of one OS and architecture.
type Agent struct {
	// Platform is GOOS/GOARCH: "linux/amd64".
	Platform string
	Path     string
	// Digest is the hex sha256 of the binary: its name in the hosts'
	// caches.
	Digest string
	Size   int64
	// Version is the toque version the binary was built as, "" when it
	// does not say.
	Version string
	// Detects is set when the binary's fleet agent takes -detect (it
	// holds detectMarker): fleet plan then runs it at once on a host
	// known to have it.
	Detects bool

	once sync.Once
	data []byte
	err  error
}

// Bytes is the binary's content, read once.
func (a *Agent) Bytes() ([]byte, error) {
	a.once.Do(func() {
		a.data, a.err = os.ReadFile(a.Path)
		if a.err == nil {
			sum := sha256.Sum256(a.data)
			if hex.EncodeToString(sum[:]) != a.Digest {
				a.err = fmt.Errorf("%s changed while toque ran", a.Path)
			}
		}
	})
	return a.data, a.err
}

// Agents are the agent binaries this run can ship, by platform.
type Agents struct {
	ByPlatform map[string]*Agent
	// Searched says where they were looked for, for the error of a host
	// whose platform has none.
	Searched string
}

// AgentDirEnv names a directory holding toque-linux-amd64 and
// toque-linux-arm64 (what make release writes to dist/).
const AgentDirEnv = "TOQUE_AGENT_DIR"

// FindAgents finds the agent for each platform: toque-GOOS-GOARCH in dir
// (TOQUE_AGENT_DIR) when given, else beside this toque (self), else this
// toque itself for its own platform when it is a static Linux build.
// Every binary is checked to be a toque build for its platform. With
// cache set (a private directory: the ssh control directory), each
// binary's digest is kept there and used again while the file's identity,
// size, modification and change times are the same; Agent.Bytes checks
// it again before the binary is shipped.
func FindAgents(dir, self, selfPlatform, cache string) (*Agents, error) {
	as := &Agents{ByPlatform: map[string]*Agent{}}
	var where []string
	if dir != "" {
		where = append(where, dir)
	} else if self != "" {
		where = append(where, filepath.Dir(self))
	}
	for _, d := range where {
		for _, p := range AgentArchs {
			path := filepath.Join(d, "toque-"+strings.ReplaceAll(p, "/", "-"))
			if _, err := os.Stat(path); err != nil {
				continue
			}
			a, err := inspectAgent(path, p, false, cache)
			if err != nil {
				return nil, err
			}
			as.ByPlatform[p] = a
		}
	}
	searched := strings.Join(where, ", ")
	if dir == "" && self != "" && as.ByPlatform[selfPlatform] == nil {
		if a, err := inspectAgent(self, selfPlatform, true, cache); err == nil {
			as.ByPlatform[selfPlatform] = a
		} else {
			searched += fmt.Sprintf(" (this toque, %s, cannot be shipped: %v)", self, err)
		}
	}
	as.Searched = searched
	return as, nil
}

// Platforms lists the platforms with an agent, sorted.
func (as *Agents) Platforms() []string {
	var out []string
	for p := range as.ByPlatform {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// ForUname picks the agent for a host's `uname -sm`.
func (as *Agents) ForUname(sysname, machine string) (*Agent, error) {
	p, ok := Platform(sysname, machine)
	if !ok {
		return nil, fmt.Errorf("toque has no agent for %s %s: it ships to Linux on x86_64 and aarch64", sysname, machine)
	}
	a := as.ByPlatform[p]
	if a == nil {
		return nil, fmt.Errorf("no toque agent for %s (%s %s) in %s: build the agents with make release and point %s at dist/", p, sysname, machine, as.Searched, AgentDirEnv)
	}
	return a, nil
}

// Platform maps uname -s and -m to GOOS/GOARCH.
func Platform(sysname, machine string) (string, bool) {
	if sysname != "Linux" {
		return "", false
	}
	switch machine {
	case "x86_64", "amd64":
		return "linux/amd64", true
	case "aarch64", "arm64":
		return "linux/arm64", true
	}
	return "", false
}

// inspectAgent checks that path is a toque build for platform (an ELF
// for its machine, whose build info names toque's module) and, with
// static set, that it needs no dynamic loader; and digests it.
func inspectAgent(path, platform string, static bool, cache string) (*Agent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s is not an ELF binary: %v", path, err)
	}
	want := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}[platform]
	if ef.Machine != want {
		return nil, fmt.Errorf("%s is a binary for %s, not %s", path, ef.Machine, platform)
	}
	if static {
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				return nil, errors.New("it is linked dynamically (built with cgo); make release builds static agents")
			}
		}
	}
	bi, err := buildinfo.Read(f)
	if err != nil || bi.Main.Path != modulePath {
		return nil, fmt.Errorf("%s is not a build of toque", path)
	}
	a := &Agent{Platform: platform, Path: path, Version: versionOf(bi)}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	kept, id := digestCache(cache, path, st)
	if kept != nil {
		a.Size, a.Digest, a.Detects = st.Size(), kept.digest, kept.detects
		return a, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	h := sha256.New()
	m := &markerScan{marker: []byte(detectMarker)}
	n, err := io.Copy(io.MultiWriter(h, m), f)
	if err != nil {
		return nil, err
	}
	a.Size, a.Digest, a.Detects = n, hex.EncodeToString(h.Sum(nil)), m.found
	if st2, err := f.Stat(); err == nil && id != "" && n == st.Size() {
		// Kept only when the file did not change while it was read.
		if fileID(path, st2) == id {
			keepDigest(cache, path, id, a)
		}
	}
	return a, nil
}

// keptDigest is an agent's digest as kept in the cache.
type keptDigest struct {
	digest  string
	detects bool
}

// digestCache is the digest kept for the file at path, when the file is
// the one it was computed from, and the file's identity (device, inode,
// size, modification and change times) to keep it under; "" when the
// file's identity cannot be known.
func digestCache(cache, path string, st os.FileInfo) (*keptDigest, string) {
	id := fileID(path, st)
	if cache == "" || id == "" {
		return nil, id
	}
	data, err := os.ReadFile(digestCachePath(cache, path))
	if err != nil {
		return nil, id
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 3 || lines[0] != id || len(lines[1]) != 64 {
		return nil, id
	}
	return &keptDigest{digest: lines[1], detects: lines[2] == "detects"}, id
}

// fileID is what identifies a file's content without reading it: its
// path, device, inode, size, modification and change times ("" when they
// cannot be known). Writing to a file changes its change time, which no
// one can set.
func fileID(path string, st os.FileInfo) string {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s %d %d %d %d %d", path, sys.Dev, sys.Ino, st.Size(), st.ModTime().UnixNano(), sys.Ctim.Nano())
}

func digestCachePath(cache, path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(cache, "agent-"+hex.EncodeToString(sum[:8]))
}

// keepDigest keeps an agent's digest for digestCache.
func keepDigest(cache, path, id string, a *Agent) {
	detects := "-"
	if a.Detects {
		detects = "detects"
	}
	p := digestCachePath(cache, path)
	tmp := fmt.Sprintf("%s.%d.tmp", p, os.Getpid())
	if os.WriteFile(tmp, []byte(id+"\n"+a.Digest+"\n"+detects+"\n"), 0o600) != nil {
		return
	}
	if os.Rename(tmp, p) != nil {
		os.Remove(tmp)
	}
}

// markerScan looks for marker in what is written to it.
type markerScan struct {
	marker []byte
	tail   []byte // the end of what came before, shorter than marker
	found  bool
}

func (m *markerScan) Write(p []byte) (int, error) {
	if m.found {
		return len(p), nil
	}
	n := len(m.marker) - 1
	// A marker across the boundary starts in tail and ends in p's first
	// n bytes.
	joined := append(m.tail, p[:min(len(p), n)]...)
	if bytes.Contains(joined, m.marker) || bytes.Contains(p, m.marker) {
		m.found = true
		return len(p), nil
	}
	if len(p) >= n {
		m.tail = append(m.tail[:0], p[len(p)-n:]...)
	} else {
		m.tail = append([]byte(nil), joined[max(0, len(joined)-n):]...)
	}
	return len(p), nil
}

// versionOf finds -X …/command.Version=V in the build's flags.
func versionOf(bi *buildinfo.BuildInfo) string {
	for _, s := range bi.Settings {
		if s.Key != "-ldflags" {
			continue
		}
		const key = modulePath + "/command.Version="
		if i := strings.Index(s.Value, key); i >= 0 {
			v := s.Value[i+len(key):]
			if j := strings.IndexAny(v, " '\""); j >= 0 {
				v = v[:j]
			}
			return v
		}
	}
	return ""
}
