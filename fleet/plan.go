package fleet

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/toquehq/toque/internal/parallel"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/resources"
)

// PlanHooks is how fleet plan reports progress; command/views implements
// it. Calls may come from several goroutines at once.
type PlanHooks interface {
	// HostPlanned is called once per host, as soon as it is planned (or
	// failed): its manifest entry, its plan when it has one, and what the
	// host's toque said on its standard error (warnings, errors).
	HostPlanned(e HostEntry, p *plan.Plan, stderr string)
}

// Planner plans the hosts of an inventory, each with its own toque, in
// parallel.
type Planner struct {
	Inventory *Inventory
	// Hosts are the aliases to plan (Inventory.Select), in order.
	Hosts    []string
	SSH      *SSH
	Agents   *Agents
	Registry *resources.Registry
	// Parallel is how many hosts are planned at once.
	Parallel int
	// SignKey signs every host's plan file (as toque plan -sign-key
	// would) when not nil. The bundle is signed by its writer.
	SignKey ed25519.PrivateKey
	// Version is this toque's version, recorded in the manifest.
	Version string
	Hooks   PlanHooks
	Logger  hclog.Logger
}

// PlanResult is fleet plan's outcome: the manifest and each host's plan
// file, for WriteBundle, and the plans decoded.
type PlanResult struct {
	Manifest Manifest
	Files    map[string][]byte
	Plans    map[string]*plan.Plan
}

// Plan plans every host. A host that cannot be planned is an entry of the
// manifest with its status and why, never an error of Plan; Plan fails
// only when nothing can be attempted (the recipes cannot be packed) or
// ctx ends (then nothing is returned).
func (pl *Planner) Plan(ctx context.Context) (*PlanResult, error) {
	recipes, err := pl.packRecipes()
	if err != nil {
		return nil, err
	}
	m := Manifest{
		ToqueVersion: pl.Version,
		PlanFormat:   plan.FormatVersion,
		Created:      time.Now().UTC(),
		Inventory:    pl.Inventory.Path,
		Agents:       map[string]AgentInfo{},
		Recipes:      map[string]string{},
		Hosts:        make([]HostEntry, len(pl.Hosts)),
	}
	for _, p := range pl.Agents.Platforms() {
		a := pl.Agents.ByPlatform[p]
		m.Agents[p] = AgentInfo{Digest: a.Digest, Version: a.Version}
	}
	for _, r := range recipes {
		m.Recipes[r.name] = r.Digest
	}
	res := &PlanResult{Files: map[string][]byte{}, Plans: map[string]*plan.Plan{}}
	var mu sync.Mutex
	parallel.For(len(pl.Hosts), max(pl.Parallel, 1), func(i int) {
		h := pl.Inventory.Host(pl.Hosts[i])
		e, file, p, stderr := pl.planHost(ctx, h, recipes[h.Recipes])
		m.Hosts[i] = e
		if ctx.Err() != nil {
			return
		}
		if file != nil {
			mu.Lock()
			res.Files[h.Alias] = file
			res.Plans[h.Alias] = p
			mu.Unlock()
		}
		if pl.Hooks != nil {
			pl.Hooks.HostPlanned(e, p, stderr)
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Manifest = m
	return res, nil
}

// packedRecipes is a recipe bundle with the name the inventory gives it.
type packedRecipes struct {
	*Recipes
	name string
}

// packRecipes archives each recipe directory the hosts plan, once.
func (pl *Planner) packRecipes() (map[string]*packedRecipes, error) {
	out := map[string]*packedRecipes{}
	for _, alias := range pl.Hosts {
		h := pl.Inventory.Host(alias)
		if out[h.Recipes] != nil {
			continue
		}
		r, err := PackRecipes(h.Recipes)
		if err != nil {
			return nil, fmt.Errorf("cannot pack the recipes of %s: %w", h.RecipesName, err)
		}
		out[h.Recipes] = &packedRecipes{r, h.RecipesName}
	}
	return out, nil
}

// HostError is a host toque could reach but could not plan or apply on
// for a reason of the host's (sudo, its cache, its platform, the agent's
// answer): Class names the kind.
type HostError struct {
	Alias  string
	Class  string
	Detail string
}

func (e *HostError) Error() string { return fmt.Sprintf("%s: %s", e.Alias, e.Detail) }

// The classes of HostError.
const (
	ClassSudo     = "sudo"
	ClassCache    = "cache"
	ClassPlatform = "platform"
	ClassAgent    = "agent"
	ClassIdentity = "identity"
)

// session is one host's connection for one command.
type session struct {
	h      *Host
	conn   *Conn
	agents *Agents
}

// open resolves and connects.
func open(ctx context.Context, s *SSH, h *Host, agents *Agents) (*session, error) {
	r, err := s.Resolve(ctx, h.Alias, h.Options)
	if err != nil {
		return nil, err
	}
	c, err := s.Connect(ctx, r)
	if err != nil {
		return nil, err
	}
	return &session{h: h, conn: c, agents: agents}, nil
}

// detect runs detectScript (and then, when the host has everything);
// stdin goes to what then runs. It returns what was detected and the
// output after its line.
//
// It is each command's first round trip: a master an earlier command left
// up that turns out to be gone is replaced by a new one, once, and the
// script runs again (it changes nothing on the host unless the new master
// presents another host key, when it fails).
func (s *session) detect(ctx context.Context, recipes, then, agentThen string, stdin []byte, max int) (*detected, []byte, *Exec, error) {
	known := s.agents.ByPlatform[s.conn.Platform]
	if known != nil && !known.Detects {
		known = nil
	}
	script := detectScript(s.agents, recipes, then, known, agentThen)
	out, ex, err := runScript(ctx, s.conn, become(s.h, script), stdin, max)
	var le *LostError
	if errors.As(err, &le) && s.conn.Reused {
		var c *Conn
		if c, err = s.conn.ssh.connect(ctx, s.conn.Route, false); err != nil {
			return nil, nil, nil, err
		}
		if c.HostKey != s.conn.HostKey {
			c.Close()
			return nil, nil, nil, &LostError{Alias: s.h.Alias, Detail: fmt.Sprintf("the master connection of an earlier command ended, and the host now presents host key %s, not %s: run the command again", c.HostKey, s.conn.HostKey)}
		}
		s.conn = c
		script = detectScript(s.agents, recipes, then, nil, "")
		out, ex, err = runScript(ctx, s.conn, become(s.h, script), stdin, max)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	d, rest, ok := parseDetect(out)
	if !ok {
		return nil, nil, ex, s.scriptFailed(out, ex, "could not look at the host")
	}
	if p, ok := Platform(d.platform()); ok {
		s.conn.Remember(p)
	}
	return d, rest, ex, nil
}

// scriptFailed words a script that did not do its part.
func (s *session) scriptFailed(out []byte, ex *Exec, what string) error {
	if why, ok := sudoTrouble(ex.Stderr); ok && s.h.Become == "sudo" {
		return &HostError{Alias: s.h.Alias, Class: ClassSudo, Detail: why}
	}
	msg := remoteError(out, ex.Stderr)
	class := ClassAgent
	if strings.Contains(string(out), "toque-error cache") || strings.Contains(string(out), "toque-error store") {
		class = ClassCache
	}
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", ex.ExitCode)
	}
	return &HostError{Alias: s.h.Alias, Class: class, Detail: what + ": " + msg}
}

// agentFor picks the agent for the detected platform.
func (s *session) agentFor(d *detected) (*Agent, error) {
	sys, machine := d.platform()
	a, err := s.agents.ForUname(sys, machine)
	if err != nil {
		return nil, &HostError{Alias: s.h.Alias, Class: ClassPlatform, Detail: err.Error()}
	}
	return a, nil
}

// store ships data into the host's cache under dir/name.
func (s *session) store(ctx context.Context, dir, name, digest, mode string, data []byte) error {
	out, ex, err := runScript(ctx, s.conn, become(s.h, storeScript(dir, name, digest, mode)), data, 64<<10)
	if err != nil {
		return err
	}
	if ex.ExitCode != 0 || !strings.Contains(string(out), "toque-stored") {
		what := "cannot store the toque agent in its cache"
		if dir == "recipes" {
			what = "cannot store the recipes in its cache"
		}
		return s.scriptFailed(out, ex, what)
	}
	return nil
}

// ensureAgent ships the agent when the host lacks it.
func (s *session) ensureAgent(ctx context.Context, d *detected) (*Agent, error) {
	a, err := s.agentFor(d)
	if err != nil {
		return nil, err
	}
	if !d.HaveAgent {
		data, err := a.Bytes()
		if err != nil {
			return nil, err
		}
		if err := s.store(ctx, "agents", a.Digest, a.Digest, "500", data); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// planHost plans one host: its manifest entry, and its plan file and
// plan when it has one.
func (pl *Planner) planHost(ctx context.Context, h *Host, r *packedRecipes) (HostEntry, []byte, *plan.Plan, string) {
	e := HostEntry{Alias: h.Alias, Recipes: r.Digest}
	stderr := ""
	fail := func(err error) (HostEntry, []byte, *plan.Plan, string) {
		e.Status = StatusError
		var ce *ConnectError
		var he *HostError
		var le *LostError
		switch {
		case errors.As(err, &ce):
			e.Status, e.Failure, e.Error = StatusUnreachable, string(ce.Class), ce.Detail
		case errors.As(err, &le):
			e.Status, e.Failure, e.Error = StatusUnreachable, "connection lost", le.Detail
		case errors.As(err, &he):
			e.Failure, e.Error = he.Class, he.Detail
		default:
			e.Failure, e.Error = ClassAgent, err.Error()
		}
		return e, nil, nil, stderr
	}
	s, err := open(ctx, pl.SSH, h, pl.Agents)
	if err != nil {
		return fail(err)
	}
	defer func() { s.conn.Close() }()
	e.HostKey = s.conn.HostKey
	req, err := json.Marshal(agentRequest{Format: AgentFormat, Recipes: r.Digest, Layers: h.Layers})
	if err != nil {
		return fail(err)
	}
	then := `exec ` + envArgs(h.Environment) + `"$A" fleet agent -cache="$C" plan`
	agentThen := `exec ` + envArgs(h.Environment) + `"$A" fleet agent -cache="$C" -detect="$a" plan`
	var out []byte
	var ex *Exec
	var d *detected
	for attempt := 0; ; attempt++ {
		d, out, ex, err = s.detect(ctx, r.Digest, then, agentThen, req, plan.MaxFileSize+(1<<20))
		if err != nil {
			return fail(err)
		}
		if d.HaveAgent && d.HaveRecipes {
			break
		}
		if attempt > 0 {
			return fail(&HostError{Alias: h.Alias, Class: ClassCache, Detail: fmt.Sprintf("what toque stored in %s is not there any more", d.Cache)})
		}
		a, err := s.ensureAgent(ctx, d)
		if err != nil {
			return fail(err)
		}
		e.Platform, e.Agent = a.Platform, a.Digest
		if !d.HaveRecipes {
			if err := s.store(ctx, "recipes", r.Digest+".tar", r.Digest, "400", r.Data); err != nil {
				return fail(err)
			}
		}
	}
	a, err := s.agentFor(d)
	if err != nil {
		return fail(err)
	}
	if d.Ran != "" && d.Ran != a.Digest {
		return fail(&HostError{Alias: h.Alias, Class: ClassAgent, Detail: fmt.Sprintf("the host ran agent %s, not %s, the one for its platform (%s)", d.Ran, a.Digest, a.Platform)})
	}
	e.Platform, e.Agent = a.Platform, a.Digest
	if pl.Logger != nil {
		pl.Logger.Debug("planned on the host", "host", h.Alias, "reused_master", s.conn.Reused, "detected_by_agent", d.Ran != "")
	}
	resp, file, err := parseAgentResponse(out)
	if err != nil {
		if why, ok := sudoTrouble(ex.Stderr); ok {
			return fail(&HostError{Alias: h.Alias, Class: ClassSudo, Detail: why})
		}
		detail := err.Error()
		if msg := remoteError(nil, ex.Stderr); msg != "" {
			detail += ": " + msg
		}
		return fail(&HostError{Alias: h.Alias, Class: ClassAgent, Detail: detail})
	}
	stderr = resp.Stderr
	if len(file) == 0 {
		return fail(&HostError{Alias: h.Alias, Class: ClassAgent, Detail: "toque could not plan on the host: " + firstLines(resp.Stderr, 6)})
	}
	f, err := plan.DecodeFile(h.Alias+"'s plan", file, plan.ReadOptions{Types: pl.Registry})
	if err != nil {
		return fail(&HostError{Alias: h.Alias, Class: ClassAgent, Detail: fmt.Sprintf("the plan the host's toque (%s) wrote cannot be read here: %v", orDev(resp.Version), err)})
	}
	if pl.SignKey != nil {
		if file, err = SignPlanFile(file, pl.SignKey); err != nil {
			return fail(err)
		}
	}
	p := f.Plan
	e.Hostname, e.MachineID, e.PlanDigest = p.Host.Hostname, p.Host.MachineID, f.Digest
	switch {
	case p.Errored:
		e.Status = StatusError
		e.Failure, e.Error = "plan", strings.Join(p.Errors, "\n")
		if resp.Dir != "" {
			e.Error = strings.ReplaceAll(e.Error, resp.Dir+"/", "")
		}
		if e.Error == "" {
			e.Error = firstLines(resp.Stderr, 6)
		}
	case p.HasChanges():
		e.Status = StatusChanges
	default:
		e.Status = StatusNoChanges
	}
	return e, file, p, stderr
}

func orDev(v string) string {
	if v == "" {
		return "a development build"
	}
	return v
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}

// Statuses counts the manifest's hosts by status.
func (m *Manifest) Statuses() map[string]int {
	out := map[string]int{}
	for _, h := range m.Hosts {
		out[h.Status]++
	}
	return out
}

// Aliases lists the manifest's hosts with the given statuses (all when
// none is given), sorted as the manifest has them.
func (m *Manifest) Aliases(statuses ...string) []string {
	var out []string
	for _, h := range m.Hosts {
		if len(statuses) == 0 || contains(statuses, h.Status) {
			out = append(out, h.Alias)
		}
	}
	return out
}

// sortedKeys is m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
