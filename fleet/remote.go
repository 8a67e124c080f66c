package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toquehq/toque/internal/shellexec"
)

// What runs on a host: short POSIX sh scripts that find (or make) the
// per-user cache, report what is there, store what toque sends, and exec
// the agent. They need sh, uname, id, cat, mkdir, chmod, mv and sha256sum
// (coreutils or busybox), and sudo for become = "sudo".
//
// The cache is /var/cache/toque/fleet for root (become or not), else
// ${XDG_CACHE_HOME:-$HOME/.cache}/toque/fleet, made 0700:
//
//	agents/SHA256          toque binaries, named by their digest
//	recipes/SHA256.tar     recipe bundles, named by their digest
//	runs/plan.XXXXXX/      a plan in progress (removed when it ends)
//	applies/SHA256/        a plan applied (its plan.out), kept 30 days
//
// A binary is verified (sha256sum) before it is moved to its name, and
// only its owner can write the cache: a later run trusts the name.

// cacheFind is the scripts' common start: it names the cache, $C.
const cacheFind = `set -u
umask 077
export LC_ALL=C
if [ "$(id -u)" = 0 ]; then C=/var/cache/toque/fleet; else C="${XDG_CACHE_HOME:-$HOME/.cache}/toque/fleet"; fi
`

// cacheDirs are the cache's directories, which every script makes (0700)
// when missing; CacheDirs is the agent's own way.
var cacheDirs = []string{"agents", "recipes", "runs", "applies"}

// cacheSetup is cacheFind, then the cache's directories made.
const cacheSetup = cacheFind + `mkdir -p "$C/agents" "$C/recipes" "$C/runs" "$C/applies" || { echo "toque-error cache cannot make the cache $C"; exit 3; }
chmod 700 "$C" "$C/agents" "$C/recipes" "$C/runs" "$C/applies" 2>/dev/null
`

// become wraps script to run as root through sudo -n when host says so.
func become(h *Host, script string) string {
	if h.Become != "sudo" {
		return script
	}
	return "exec sudo -n /bin/sh -c " + shQuote(script)
}

// envArgs is `env NAME=VALUE…` for the host's environment, "" for none.
func envArgs(env map[string]string) string {
	if len(env) == 0 {
		return ""
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("env")
	for _, k := range keys {
		b.WriteString(" " + shQuote(k+"="+env[k]))
	}
	return b.String() + " "
}

// detectScript reports the host's platform, identity and what its cache
// holds of the agents (one per platform) and, with recipes set, of that
// recipe bundle; with then set (a command using "$A", the agent), it runs
// it when everything is there, in the same round trip.
//
// With known set too (the agent for the platform this connection found
// earlier) and agentThen (a command using "$A" and "$a", whose agent
// prints the detection line itself: fleet agent -detect), a cache holding
// that agent and the recipes runs agentThen at once: the warm case then
// costs the host one process besides the agent (id), not seven.
func detectScript(agents *Agents, recipes, then string, known *Agent, agentThen string) string {
	var b strings.Builder
	b.WriteString(cacheFind)
	if recipes != "" && then != "" && known != nil && agentThen != "" {
		fmt.Fprintf(&b, `a=%s; A="$C/agents/$a"
if [ -x "$A" ] && [ ! -L "$A" ] && [ -f "$C/recipes/%s.tar" ]; then %s; fi
`, known.Digest, recipes, agentThen)
	}
	b.WriteString(strings.TrimPrefix(cacheSetup, cacheFind))
	b.WriteString("u=$(uname -sm)\ncase \"$u\" in\n")
	for _, p := range agents.Platforms() {
		for _, m := range unameMachines[p] {
			fmt.Fprintf(&b, "  \"Linux %s\") a=%s ;;\n", m, agents.ByPlatform[p].Digest)
		}
	}
	b.WriteString("  *) a= ;;\nesac\n")
	b.WriteString(`A="$C/agents/$a"
ha=no; [ -n "$a" ] && [ -x "$A" ] && [ ! -L "$A" ] && ha=yes
`)
	hr := "yes"
	if recipes != "" {
		fmt.Fprintf(&b, "hr=no; [ -f \"$C/recipes/%s.tar\" ] && hr=yes\n", recipes)
		hr = "$hr"
	}
	fmt.Fprintf(&b, `m=$(cat /etc/machine-id 2>/dev/null) || m=
printf 'toque-detect\tuname=%%s\tuid=%%s\thostname=%%s\tmachine_id=%%s\tagent=%%s\trecipes=%%s\tcache=%%s\n' "$u" "$(id -u)" "$(uname -n)" "$m" "$ha" "%s" "$C"
`, hr)
	if then != "" {
		fmt.Fprintf(&b, "if [ $ha = yes ] && [ %s = yes ]; then %s; fi\n", hr, then)
	}
	return b.String()
}

// detectMarker is in every binary whose fleet agent takes -detect
// (Agent.Detects): an older agent must be run by the detection script.
const detectMarker = "toque-fleet-agent-detect/1"

// AgentDetect is what fleet agent -detect prints first: detectScript's
// line, for the host the agent runs on, whose cache (made 0700 where
// missing, as the scripts do) is cache and which holds the recipes and
// this agent, digest ran. A cache it cannot make is a toque-error line
// and an error.
func AgentDetect(cache, ran string) (string, error) {
	for _, d := range append([]string{""}, cacheDirs...) {
		p := filepath.Join(cache, d)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return "toque-error cache cannot make the cache " + cache + "\n", err
		}
		os.Chmod(p, 0o700)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", err
	}
	m, _ := os.ReadFile("/etc/machine-id")
	field := func(s string) string { return strings.NewReplacer("\t", " ", "\n", " ").Replace(s) }
	return fmt.Sprintf("toque-detect\tuname=%s %s\tuid=%d\thostname=%s\tmachine_id=%s\tagent=yes\trecipes=yes\tcache=%s\tran=%s\n",
		field(unix.ByteSliceToString(u.Sysname[:])), field(unix.ByteSliceToString(u.Machine[:])), os.Getuid(),
		field(unix.ByteSliceToString(u.Nodename[:])), field(strings.TrimSpace(string(m))), field(cache), field(ran)), nil
}

// unameMachines are uname -m's names of each platform.
var unameMachines = map[string][]string{
	"linux/amd64": {"x86_64"},
	"linux/arm64": {"aarch64", "arm64"},
}

// detected is what detectScript printed.
type detected struct {
	Uname, Hostname, MachineID, Cache string
	UID                               int
	HaveAgent, HaveRecipes            bool
	// Ran is the digest of the agent that printed the line (fleet agent
	// -detect), "" when the script did.
	Ran string
}

// parseDetect reads detectScript's line from the start of out, and
// returns the rest.
func parseDetect(out []byte) (*detected, []byte, bool) {
	line, rest, _ := bytes.Cut(out, []byte("\n"))
	fields := strings.Split(string(line), "\t")
	if len(fields) < 2 || fields[0] != "toque-detect" {
		return nil, out, false
	}
	d := &detected{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "uname":
			d.Uname = v
		case "uid":
			d.UID, _ = strconv.Atoi(v)
		case "hostname":
			d.Hostname = v
		case "machine_id":
			d.MachineID = strings.TrimSpace(v)
		case "agent":
			d.HaveAgent = v == "yes"
		case "recipes":
			d.HaveRecipes = v == "yes"
		case "cache":
			d.Cache = v
		case "ran":
			d.Ran = v
		}
	}
	return d, rest, true
}

// platform is the host's GOOS/GOARCH, from uname -sm.
func (d *detected) platform() (sys, machine string) {
	sys, machine, _ = strings.Cut(d.Uname, " ")
	return sys, machine
}

// storeScript stores what comes on standard input under dir/name, after
// checking its sha256 is digest.
func storeScript(dir, name, digest string, mode string) string {
	return cacheSetup + fmt.Sprintf(`d="$C/%s"; t="$d/.tmp.$$"
if ! cat > "$t"; then rm -f "$t"; echo "toque-error store cannot write to $d"; exit 3; fi
s=$(sha256sum "$t" 2>&1) || { rm -f "$t"; echo "toque-error store sha256sum failed: $s"; exit 3; }
s=${s%%%% *}
if [ "$s" != %s ]; then rm -f "$t"; echo "toque-error store what arrived has sha256 $s, not %s"; exit 4; fi
chmod %s "$t" && mv -f "$t" "$d/%s" || { rm -f "$t"; echo "toque-error store cannot move it into $d"; exit 3; }
echo toque-stored
`, dir, digest, digest, mode, name)
}

// remoteError is what a script said went wrong (a toque-error line),
// with its standard error.
func remoteError(out []byte, stderr string) string {
	var msgs []string
	for _, l := range strings.Split(string(out), "\n") {
		if m, ok := strings.CutPrefix(l, "toque-error "); ok {
			_, m, _ = strings.Cut(m, " ")
			msgs = append(msgs, m)
		}
	}
	if s := strings.TrimSpace(stderr); s != "" {
		msgs = append(msgs, lastLines(s, 3))
	}
	return strings.Join(msgs, ": ")
}

// sudoTrouble recognises sudo's own failures in a script's standard
// error: sudo -n never prompts, so a host that wants a password fails.
func sudoTrouble(stderr string) (string, bool) {
	switch {
	case strings.Contains(stderr, "a password is required"):
		return "sudo asks for a password, and toque runs sudo -n, which never prompts: let the user run sudo without a password (NOPASSWD), or connect as root", true
	case strings.Contains(stderr, "a terminal is required"):
		return "sudo wants a terminal (requiretty or a password prompt), and toque runs sudo -n without one: allow the user sudo without a password and without a terminal", true
	case strings.Contains(stderr, "is not in the sudoers file"), strings.Contains(stderr, "is not allowed to execute"):
		return "the user may not run commands as root with sudo: " + lastLines(strings.TrimSpace(stderr), 1), true
	case strings.Contains(stderr, "sudo: not found"), strings.Contains(stderr, "sudo: command not found"):
		return "become = \"sudo\", but the host has no sudo", true
	}
	return "", false
}

// agentRequest is what fleet agent plan reads on its standard input.
type agentRequest struct {
	Format int `json:"format"`
	// Recipes is the digest of the recipe bundle to plan.
	Recipes string `json:"recipes"`
	// Layers are the attribute files, in precedence order.
	Layers []AttrLayer `json:"layers"`
}

// AgentResponse heads what fleet agent plan prints: its exit status,
// what it printed on standard error (diagnostics, warnings), and how many
// bytes of plan file follow.
type AgentResponse struct {
	Format    int    `json:"toque_fleet_agent"`
	Version   string `json:"version"`
	Status    int    `json:"status"`
	Stderr    string `json:"stderr"`
	PlanBytes int    `json:"plan_bytes"`
	// Dir is the directory the recipes were planned in: paths in the
	// plan's errors are shown relative to it.
	Dir string `json:"dir"`
}

// AgentFormat is the version of the agent's request and response.
const AgentFormat = 1

// ReadAgentRequest decodes the request fleet agent plan gets.
func ReadAgentRequest(r io.Reader) (*AgentRequestData, error) {
	var req agentRequest
	dec := json.NewDecoder(io.LimitReader(r, 64<<20))
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("cannot read the request: %v", err)
	}
	if req.Format != AgentFormat {
		return nil, fmt.Errorf("the request is of format %d; this toque reads format %d", req.Format, AgentFormat)
	}
	return &AgentRequestData{Recipes: req.Recipes, Layers: req.Layers}, nil
}

// AgentRequestData is a decoded request.
type AgentRequestData struct {
	Recipes string
	Layers  []AttrLayer
}

// WriteAgentResponse writes the response head and the plan file.
func WriteAgentResponse(w io.Writer, resp AgentResponse, planFile []byte) error {
	resp.Format = AgentFormat
	resp.PlanBytes = len(planFile)
	b, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.Write(b)
	bw.WriteByte('\n')
	bw.Write(planFile)
	return bw.Flush()
}

// parseAgentResponse reads fleet agent plan's output.
func parseAgentResponse(out []byte) (*AgentResponse, []byte, error) {
	head, rest, ok := bytes.Cut(out, []byte("\n"))
	if !ok {
		return nil, nil, fmt.Errorf("the agent's answer ended early")
	}
	var resp AgentResponse
	if err := json.Unmarshal(head, &resp); err != nil || resp.Format == 0 {
		return nil, nil, fmt.Errorf("the agent answered something toque cannot read: %q", lastLines(string(head), 1))
	}
	if resp.Format != AgentFormat {
		return nil, nil, fmt.Errorf("the agent answers in format %d; this toque reads format %d", resp.Format, AgentFormat)
	}
	if len(rest) != resp.PlanBytes {
		return nil, nil, fmt.Errorf("the agent announced a plan of %d bytes and sent %d", resp.PlanBytes, len(rest))
	}
	return &resp, rest, nil
}

// applyScript stores the plan arriving on standard input and execs the
// agent's toque apply on it, after printing its process id (which is the
// apply's: exec keeps it) so that Ctrl-C can reach it.
func applyScript(agentDigest, planSHA, digest string, h *Host) string {
	verify := ""
	if h.VerifyKey != "" {
		verify = " -verify-key=" + shQuote(h.VerifyKey)
	}
	return cacheSetup + fmt.Sprintf(`find "$C/applies" "$C/runs" -mindepth 1 -maxdepth 1 -mtime +30 -exec rm -rf {} + 2>/dev/null
D="$C/applies/"%s; mkdir -p "$D" || { echo "toque-error cache cannot make $D"; exit 3; }
if ! cat > "$D/plan.out.tmp"; then rm -f "$D/plan.out.tmp"; echo "toque-error cache cannot write the plan to $D"; exit 3; fi
mv -f "$D/plan.out.tmp" "$D/plan.out" || exit 3
echo "toque-apply-pid $$"
exec %s"$C/agents/"%s apply -json -no-color -expect-digest=%s%s "$D/plan.out"
`, shQuote(planSHA), envArgs(h.Environment), shQuote(agentDigest), shQuote(digest), verify)
}

// interruptScript sends SIGINT to the apply whose pid applyScript
// printed, if that process is still the apply of that plan.
func interruptScript(pid int, planSHA string) string {
	return fmt.Sprintf(`p=%d
if grep -q %s /proc/$p/cmdline 2>/dev/null; then kill -INT $p && echo toque-signalled; fi
`, pid, shQuote("applies/"+planSHA))
}

// runScript runs a script on conn, collecting its standard output up to
// max bytes.
func runScript(ctx context.Context, c *Conn, script string, stdin []byte, max int) ([]byte, *Exec, error) {
	out := &shellexec.LimitedBuffer{Max: max}
	ex, err := c.Run(ctx, script, stdin, out)
	return out.Bytes(), ex, err
}
