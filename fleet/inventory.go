package fleet

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/words"
)

// Inventory is a decoded fleet.hcl: the hosts, the groups, the settings
// each host ends up with, and the rollout.
//
//	ssh_config = "ssh_config"          # optional: ssh -F FILE
//	recipes    = "site"                # settings here are every host's default
//	hosts      = ["db-01", "db-02"]    # hosts without settings of their own
//
//	host "web-01" {
//	  attributes = { nginx = { port = 8081 } }
//	}
//
//	group "web" {
//	  hosts      = ["web-*"]           # names and globs of declared hosts
//	  recipes    = "site/web"          # the recipe or policy directory it runs
//	  become     = "sudo"              # sudo -n, never a prompt
//	  options    = { User = "deploy" } # ssh -o options
//	  attributes = { nginx = { workers = 4 } }
//	}
//
//	rollout {
//	  batches      = [1, "10%", "100%"]
//	  max_failures = 0
//	  parallel     = 20
//	}
//
// A setting (recipes, become, options, environment, verify_key) comes from
// the host's block, else from its groups — two groups giving one host two
// values is an error — else from the top level. Attributes are merged at
// Chef's normal level: the top level's, then each group's in the order the
// groups are declared, then the host's, a later one winning key by key.
type Inventory struct {
	// Path is the file as the user named it; Dir is its directory
	// (absolute), which relative paths in it resolve against.
	Path, Dir string
	// Name is the file's base name: the attribute files shipped to the
	// hosts are named after it (fleet.hcl#group.web), so that a plan's
	// provenance reads "-attr-file fleet.hcl#group.web:12".
	Name string
	// File is the parsed file, for the snippets of diagnostics.
	File *hcl.File
	// SSHConfig is the ssh configuration file (ssh -F), absolute; "" for
	// the user's own (~/.ssh/config).
	SSHConfig string
	Hosts     []*Host
	Groups    []*Group
	Rollout   Rollout
}

// Group is a named set of hosts.
type Group struct {
	Name string
	// Members are the aliases of its hosts, in inventory order.
	Members   []string
	DeclRange hcl.Range
}

// Host is one host with its settings resolved.
type Host struct {
	// Alias is what ssh is given: a name its configuration knows, or a
	// host name.
	Alias string
	// Groups are the groups it belongs to, in declaration order.
	Groups []string
	// Recipes is the recipe or policy directory it plans (absolute);
	// RecipesName is how the inventory wrote it.
	Recipes, RecipesName string
	// Become is "sudo" (toque runs as root through sudo -n) or "".
	Become string
	// Options are ssh -o options, in name order.
	Options []Option
	// Environment is set for toque on the host (TOQUE_STATE_DIR…).
	Environment map[string]string
	// VerifyKey is a trusted keys file on the host: its toque applies only
	// plans signed by one of its keys (apply -verify-key).
	VerifyKey string
	// Layers are its node attributes, one attribute file per place that
	// gives some, in precedence order.
	Layers    []AttrLayer
	DeclRange hcl.Range
}

// Option is one ssh -o option.
type Option struct{ Name, Value string }

// AttrLayer is the node attributes one block of the inventory gives a
// host, as an attribute file (HCL) whose lines are the inventory's: each
// value stands on the line the inventory wrote it on, so that the plan's
// provenance, "-attr-file fleet.hcl#group.web:12", is fleet.hcl's line 12.
// Values are evaluated here, with the inventory's directory for file(),
// and shipped as literals (sensitive() ones still marked).
type AttrLayer struct {
	Name   string
	Source []byte
}

// Rollout says how fleet apply goes through the hosts.
type Rollout struct {
	// Batches are batch sizes: a number of hosts, or a percentage of the
	// hosts applied ("10%"), rounded up. The last one repeats until every
	// host is done.
	Batches []Size
	// MaxFailures is how many hosts may fail before no further host is
	// started.
	MaxFailures Size
	// Parallel is how many hosts run at once.
	Parallel int
}

// Size is a count of hosts or a percentage of them.
type Size struct {
	N       int
	Percent bool
}

func (s Size) String() string {
	if s.Percent {
		return fmt.Sprintf("%d%%", s.N)
	}
	return fmt.Sprint(s.N)
}

// Of is the size among n hosts: a percentage is rounded up.
func (s Size) Of(n int) int {
	if !s.Percent {
		return s.N
	}
	return (s.N*n + 99) / 100
}

// DefaultRollout is one batch of every host, 20 at a time, stopping at the
// first failure.
func DefaultRollout() Rollout {
	return Rollout{Batches: []Size{{N: 100, Percent: true}}, Parallel: 20}
}

// BatchSizes splits n hosts into batches.
func (r Rollout) BatchSizes(n int) []int {
	var out []int
	batches := r.Batches
	if len(batches) == 0 {
		batches = DefaultRollout().Batches
	}
	for i, left := 0, n; left > 0; i++ {
		b := batches[min(i, len(batches)-1)]
		size := min(max(b.Of(n), 1), left)
		out = append(out, size)
		left -= size
	}
	return out
}

// Budget is how many of n hosts may fail before the rollout stops.
func (r Rollout) Budget(n int) int {
	if r.MaxFailures.Percent {
		return r.MaxFailures.N * n / 100 // rounded down: a budget is a promise
	}
	return r.MaxFailures.N
}

var (
	aliasSyntax = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)
	groupSyntax = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	envSyntax   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	optSyntax   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
)

// toqueOptions are the ssh options toque sets itself: an inventory may not
// change them (lower case, as ssh compares them).
var toqueOptions = map[string]string{
	"controlpath":             "toque keeps a master connection of its own per host",
	"controlmaster":           "toque keeps a master connection of its own per host",
	"batchmode":               "toque never prompts: a host that asks for a password fails",
	"remotecommand":           "toque runs its own commands",
	"requesttty":              "toque's commands run without a terminal",
	"sessiontype":             "toque runs commands",
	"stdinnull":               "toque sends plans on standard input",
	"forkafterauthentication": "toque starts its master in the background itself",
	"permitlocalcommand":      "toque runs no local command",
	"localcommand":            "toque runs no local command",
	"escapechar":              "toque's sessions have no terminal",
}

// maxHosts bounds the inventory: far above any fleet toque is meant for,
// low enough that a generated file gone wrong fails at once.
const maxHosts = 100_000

// settingNames are the attributes every level may set.
var settingNames = []string{"recipes", "become", "options", "environment", "attributes", "verify_key"}

func schemaWith(extra ...string) *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, n := range append(append([]string(nil), settingNames...), extra...) {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: n})
	}
	return s
}

var (
	topSchema = func() *hcl.BodySchema {
		s := schemaWith("ssh_config", "hosts")
		s.Blocks = []hcl.BlockHeaderSchema{
			{Type: "host", LabelNames: []string{"alias"}},
			{Type: "group", LabelNames: []string{"name"}},
			{Type: "rollout"},
		}
		return s
	}()
	hostSchema    = schemaWith("groups")
	groupSchema   = schemaWith("hosts")
	rolloutSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "batches"}, {Name: "max_failures"}, {Name: "parallel"}}}
)

// level is one place settings come from: the top level, a group or a host.
type level struct {
	kind  string // "fleet", "group", "host"
	name  string
	attrs hcl.Attributes
	rng   hcl.Range
}

func (l *level) describe() string {
	switch l.kind {
	case "group":
		return fmt.Sprintf("group %q", l.name)
	case "host":
		return fmt.Sprintf("host %q", l.name)
	}
	return "the inventory's top level"
}

// decoder holds what decoding one inventory needs.
type decoder struct {
	inv   *Inventory
	ctx   *hcl.EvalContext
	diags hcl.Diagnostics
}

// LoadInventory reads and decodes the inventory at path (as the user named
// it; abs is where to read it). Every error is reported at once.
func LoadInventory(name, abs string) (*Inventory, hcl.Diagnostics) {
	src, err := os.ReadFile(abs)
	if err != nil {
		why := err.Error()
		if os.IsNotExist(err) {
			why = "there is no such file"
		}
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read the inventory",
			Detail:   fmt.Sprintf("%s: %s. toque fleet reads fleet.hcl in the working directory, or the file -inventory names.", name, why),
		}}
	}
	return ParseInventory(src, name, filepath.Dir(abs))
}

// ParseInventory decodes an inventory's source; name names it in
// diagnostics and in provenance, dir is where its relative paths resolve.
func ParseInventory(src []byte, name, dir string) (*Inventory, hcl.Diagnostics) {
	f, diags := config.Parse(src, name)
	if diags.HasErrors() {
		return nil, diags
	}
	if d, err := filepath.Abs(dir); err == nil {
		dir = d
	}
	inv := &Inventory{Path: name, Dir: dir, Name: filepath.Base(name), File: f, Rollout: DefaultRollout()}
	fns := eval.Functions(dir)
	delete(fns, "lazy") // nothing in an inventory is known only at apply
	d := &decoder{inv: inv, ctx: &hcl.EvalContext{Functions: map[string]function.Function(fns)}}
	d.diags = diags
	d.decode(f.Body)
	return inv, d.diags
}

func (d *decoder) errorf(rng *hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: rng})
}

func (d *decoder) warnf(rng *hcl.Range, summary, format string, args ...any) {
	d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: rng})
}

// decode is the inventory's phases: declarations (hosts, groups), then
// membership, then each host's settings.
func (d *decoder) decode(body hcl.Body) {
	content, diags := body.Content(topSchema)
	d.diags = append(d.diags, diags...)
	if content == nil {
		return
	}
	top := &level{kind: "fleet", attrs: content.Attributes, rng: body.MissingItemRange()}
	if a := content.Attributes["ssh_config"]; a != nil {
		if s, ok := d.str(a); ok {
			d.inv.SSHConfig = d.path(s)
			if st, err := os.Stat(d.inv.SSHConfig); err != nil || st.IsDir() {
				d.errorf(a.Expr.Range().Ptr(), "No such ssh configuration file", "ssh_config names %s, which is not a file (%s). It is passed to ssh as -F; a relative path is read from the inventory's directory.", d.inv.SSHConfig, errOrDir(err))
			}
		}
	}

	hostLevels := map[string]*level{}
	declared := map[string]hcl.Range{}
	declare := func(alias string, rng hcl.Range) bool {
		if !aliasSyntax.MatchString(alias) || len(alias) > 253 {
			d.errorf(rng.Ptr(), "Invalid host alias", "%q cannot be a host alias: write the name ssh is given (letters, digits, '.', '_' and '-', not starting with '-' or '.'); put a user in the ssh configuration or in options = { User = \"…\" }.", words.Printable(alias))
			return false
		}
		if prev, ok := declared[alias]; ok {
			d.errorf(rng.Ptr(), "Host declared twice", "Host %q is declared here and at %s. Declare each host once; give it to several groups with the groups' hosts lists.", alias, prev)
			return false
		}
		declared[alias] = rng
		d.inv.Hosts = append(d.inv.Hosts, &Host{Alias: alias, DeclRange: rng})
		return true
	}
	type decl struct {
		alias string
		rng   hcl.Range
		lvl   *level
	}
	var decls []decl
	if a := content.Attributes["hosts"]; a != nil {
		names, rngs := d.strList(a)
		for i, n := range names {
			decls = append(decls, decl{n, rngs[i], nil})
		}
	}
	var groupBlocks []*hcl.Block
	for _, b := range content.Blocks {
		switch b.Type {
		case "host":
			hc, diags := b.Body.Content(hostSchema)
			d.diags = append(d.diags, diags...)
			lvl := &level{kind: "host", name: b.Labels[0], rng: b.DefRange}
			if hc != nil {
				lvl.attrs = hc.Attributes
			}
			decls = append(decls, decl{b.Labels[0], b.LabelRanges[0], lvl})
		case "group":
			groupBlocks = append(groupBlocks, b)
		case "rollout":
			d.rollout(b)
		}
	}
	sort.SliceStable(decls, func(i, j int) bool { return decls[i].rng.Start.Byte < decls[j].rng.Start.Byte })
	for _, dc := range decls {
		if declare(dc.alias, dc.rng) && dc.lvl != nil {
			hostLevels[dc.alias] = dc.lvl
		}
	}
	if len(d.inv.Hosts) > maxHosts {
		d.errorf(nil, "Too many hosts", "The inventory declares %d hosts; toque fleet handles at most %d in one inventory.", len(d.inv.Hosts), maxHosts)
		return
	}

	groupLevels := d.groups(groupBlocks)
	d.memberships(hostLevels, groupLevels)
	if d.diags.HasErrors() {
		return
	}
	for _, h := range d.inv.Hosts {
		var levels []*level
		levels = append(levels, top)
		for _, g := range h.Groups {
			levels = append(levels, groupLevels[g])
		}
		if l := hostLevels[h.Alias]; l != nil {
			levels = append(levels, l)
		}
		d.settle(h, levels)
	}
}

func errOrDir(err error) string {
	if err != nil {
		if os.IsNotExist(err) {
			return "there is no such file"
		}
		return err.Error()
	}
	return "it is a directory"
}

// groups decodes the group blocks: their names and member patterns.
func (d *decoder) groups(blocks []*hcl.Block) map[string]*level {
	levels := map[string]*level{}
	aliases := make([]string, len(d.inv.Hosts))
	known := map[string]bool{}
	for i, h := range d.inv.Hosts {
		aliases[i] = h.Alias
		known[h.Alias] = true
	}
	for _, b := range blocks {
		name := b.Labels[0]
		if !groupSyntax.MatchString(name) {
			d.errorf(b.LabelRanges[0].Ptr(), "Invalid group name", "%q cannot be a group name: use letters, digits, '_' and '-', starting with a letter or '_'.", words.Printable(name))
			continue
		}
		if prev, ok := levels[name]; ok {
			d.errorf(b.LabelRanges[0].Ptr(), "Group declared twice", "Group %q is declared here and at %s. Declare each group once.", name, prev.rng)
			continue
		}
		gc, diags := b.Body.Content(groupSchema)
		d.diags = append(d.diags, diags...)
		lvl := &level{kind: "group", name: name, rng: b.DefRange}
		if gc != nil {
			lvl.attrs = gc.Attributes
		}
		levels[name] = lvl
		g := &Group{Name: name, DeclRange: b.DefRange}
		d.inv.Groups = append(d.inv.Groups, g)
		a := lvl.attrs["hosts"]
		if a == nil {
			continue
		}
		pats, rngs := d.strList(a)
		in := map[string]bool{}
		for i, p := range pats {
			if !isGlob(p) {
				if !known[p] {
					d.errorf(rngs[i].Ptr(), "No such host", "Group %q lists %q, which the inventory does not declare.%s Declare it with a host block or in the top-level hosts list.", name, words.Printable(p), words.DidYouMean(p, aliases))
					continue
				}
				in[p] = true
				continue
			}
			if _, err := path.Match(p, ""); err != nil {
				d.errorf(rngs[i].Ptr(), "Invalid host pattern", "%q is not a valid glob: %s.", words.Printable(p), err)
				continue
			}
			n := 0
			for _, al := range aliases {
				if ok, _ := path.Match(p, al); ok {
					in[al] = true
					n++
				}
			}
			if n == 0 {
				d.warnf(rngs[i].Ptr(), "Pattern matches no host", "Group %q's pattern %q matches none of the %d hosts the inventory declares.", name, words.Printable(p), len(aliases))
			}
		}
		for _, al := range aliases {
			if in[al] {
				g.Members = append(g.Members, al)
			}
		}
	}
	return levels
}

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// memberships adds each host's own groups = […] to the groups' members,
// and gives each host its groups in declaration order.
func (d *decoder) memberships(hostLevels map[string]*level, groupLevels map[string]*level) {
	names := make([]string, len(d.inv.Groups))
	byName := map[string]*Group{}
	for i, g := range d.inv.Groups {
		names[i] = g.Name
		byName[g.Name] = g
	}
	order := map[string]int{}
	for i, h := range d.inv.Hosts {
		order[h.Alias] = i
	}
	for _, h := range d.inv.Hosts {
		lvl := hostLevels[h.Alias]
		if lvl == nil || lvl.attrs["groups"] == nil {
			continue
		}
		gs, rngs := d.strList(lvl.attrs["groups"])
		for i, gname := range gs {
			g := byName[gname]
			if g == nil {
				d.errorf(rngs[i].Ptr(), "No such group", "Host %q names group %q, which the inventory does not declare.%s", h.Alias, words.Printable(gname), words.DidYouMean(gname, names))
				continue
			}
			if !contains(g.Members, h.Alias) {
				g.Members = append(g.Members, h.Alias)
				sort.SliceStable(g.Members, func(a, b int) bool { return order[g.Members[a]] < order[g.Members[b]] })
			}
		}
	}
	for _, g := range d.inv.Groups {
		for _, m := range g.Members {
			h := d.inv.Hosts[order[m]]
			h.Groups = append(h.Groups, g.Name)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// settle resolves one host's settings from its levels (top, groups in
// order, host).
func (d *decoder) settle(h *Host, levels []*level) {
	if a, lvl, conflict := d.scalar(h, levels, "recipes"); conflict {
	} else if a != nil {
		if s, ok := d.str(a); ok {
			h.RecipesName = s
			h.Recipes = d.path(s)
			if st, err := os.Stat(h.Recipes); err != nil || !st.IsDir() {
				d.errorf(a.Expr.Range().Ptr(), "No such recipe directory", "%s gives host %q the recipes in %s, which is not a directory. A relative path is read from the inventory's directory.", lvl.describe(), h.Alias, h.Recipes)
			}
		}
	} else {
		d.errorf(h.DeclRange.Ptr(), "Host has no recipes", "Nothing gives host %q a recipe or policy directory: set recipes = \"DIR\" in its block, in one of its groups, or at the top level.", h.Alias)
	}
	if a, _, _ := d.scalar(h, levels, "become"); a != nil {
		if s, ok := d.str(a); ok {
			switch s {
			case "sudo":
				h.Become = "sudo"
			case "", "none":
			default:
				d.errorf(a.Expr.Range().Ptr(), "Unsupported become method", "become = %q: toque becomes root with \"sudo\" (always sudo -n, which fails rather than ask for a password), or not at all (\"none\").", words.Printable(s))
			}
		}
	}
	if a, _, _ := d.scalar(h, levels, "verify_key"); a != nil {
		if s, ok := d.str(a); ok {
			if !filepath.IsAbs(s) {
				d.errorf(a.Expr.Range().Ptr(), "Relative verify_key", "verify_key = %q names a trusted keys file on the host, so it must be an absolute path (as /etc/toque/trusted.pub).", words.Printable(s))
			}
			h.VerifyKey = s
		}
	}
	opts := d.mapSetting(h, levels, "options", func(k string) string {
		if !optSyntax.MatchString(k) {
			return "an ssh option is a word of letters and digits (ConnectTimeout, User, ProxyJump)"
		}
		if why, ok := toqueOptions[strings.ToLower(k)]; ok {
			return fmt.Sprintf("toque sets %s itself: %s", k, why)
		}
		return ""
	})
	for k, v := range opts {
		h.Options = append(h.Options, Option{k, v})
	}
	sort.Slice(h.Options, func(i, j int) bool { return h.Options[i].Name < h.Options[j].Name })
	h.Environment = d.mapSetting(h, levels, "environment", func(k string) string {
		if !envSyntax.MatchString(k) {
			return "a variable name is letters, digits and '_', not starting with a digit"
		}
		return ""
	})
	for _, lvl := range levels {
		a := lvl.attrs["attributes"]
		if a == nil {
			continue
		}
		src, diags := attrLayer(a, d.ctx)
		d.diags = append(d.diags, diags...)
		if src == nil {
			continue
		}
		name := d.inv.Name + "#all"
		if lvl.kind != "fleet" {
			name = d.inv.Name + "#" + lvl.kind + "." + lvl.name
		}
		h.Layers = append(h.Layers, AttrLayer{Name: name, Source: src})
	}
}

// scalar finds a single-valued setting: the host's, else its groups'
// (which must agree: conflict reports that they did not, an error
// already), else the top level's.
func (d *decoder) scalar(h *Host, levels []*level, name string) (a *hcl.Attribute, from *level, conflict bool) {
	for i := len(levels) - 1; i >= 0; i-- {
		if levels[i].kind == "host" && levels[i].attrs[name] != nil {
			return levels[i].attrs[name], levels[i], false
		}
	}
	var got *hcl.Attribute
	var gotVal cty.Value
	for _, lvl := range levels {
		a := lvl.attrs[name]
		if lvl.kind != "group" || a == nil {
			continue
		}
		v, diags := a.Expr.Value(d.ctx)
		if diags.HasErrors() {
			d.diags = append(d.diags, diags...)
			return nil, nil, true
		}
		if got != nil && !v.RawEquals(gotVal) {
			d.errorf(a.Expr.Range().Ptr(), "Groups disagree", "Host %q is in group %q, which sets %s here, and in %s, which sets it otherwise at %s. Set %s in the host's block, or in one of the two groups.", h.Alias, lvl.name, name, from.describe(), got.Expr.Range(), name)
			return nil, nil, true
		}
		if got == nil {
			got, from, gotVal = a, lvl, v
		}
	}
	if got != nil {
		return got, from, false
	}
	if a := levels[0].attrs[name]; a != nil && levels[0].kind == "fleet" {
		return a, levels[0], false
	}
	return nil, nil, false
}

// mapSetting merges a map setting key by key: the top level's, the
// groups' (which must agree on a key), the host's. bad says what is wrong
// with a key, "" for nothing.
func (d *decoder) mapSetting(h *Host, levels []*level, name string, bad func(string) string) map[string]string {
	type source struct {
		val string
		lvl *level
		rng hcl.Range
	}
	out := map[string]source{}
	fromGroup := map[string]source{}
	for _, lvl := range levels {
		a := lvl.attrs[name]
		if a == nil {
			continue
		}
		v, diags := a.Expr.Value(d.ctx)
		d.diags = append(d.diags, diags...)
		if diags.HasErrors() {
			continue
		}
		if v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
			d.errorf(a.Expr.Range().Ptr(), "Invalid "+name, "%s must be a map of strings, as %s = { Name = \"value\" }.", name, name)
			continue
		}
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			key := k.AsString()
			if why := bad(key); why != "" {
				d.errorf(a.Expr.Range().Ptr(), "Invalid "+strings.TrimSuffix(name, "s")+" name", "%s: %q: %s.", name, words.Printable(key), why)
				continue
			}
			s, ok := stringOf(ev)
			if !ok {
				d.errorf(a.Expr.Range().Ptr(), "Invalid "+name, "%s.%s must be a string or a number.", name, key)
				continue
			}
			src := source{s, lvl, a.Expr.Range()}
			if lvl.kind == "group" {
				if prev, ok := fromGroup[key]; ok && prev.val != s {
					d.errorf(a.Expr.Range().Ptr(), "Groups disagree", "Host %q is in group %q, which sets %s.%s here, and in %s, which sets it otherwise at %s. Set it in the host's block, or in one of the two groups.", h.Alias, lvl.name, name, key, prev.lvl.describe(), prev.rng)
					continue
				}
				fromGroup[key] = src
			}
			out[key] = src
		}
	}
	m := make(map[string]string, len(out))
	for k, s := range out {
		m[k] = s.val
	}
	return m
}

func stringOf(v cty.Value) (string, bool) {
	if v.IsNull() || !v.IsKnown() || v.IsMarked() {
		return "", false
	}
	switch v.Type() {
	case cty.String:
		return v.AsString(), true
	case cty.Number:
		return v.AsBigFloat().Text('f', -1), true
	case cty.Bool:
		if v.True() {
			return "yes", true
		}
		return "no", true
	}
	return "", false
}

// str evaluates a string attribute.
func (d *decoder) str(a *hcl.Attribute) (string, bool) {
	v, diags := a.Expr.Value(d.ctx)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return "", false
	}
	if v.IsMarked() || v.IsNull() || v.Type() != cty.String {
		d.errorf(a.Expr.Range().Ptr(), "Invalid "+a.Name, "%s must be a string.", a.Name)
		return "", false
	}
	return v.AsString(), true
}

// strList evaluates a list of strings, with each element's range when the
// list is written as a list.
func (d *decoder) strList(a *hcl.Attribute) ([]string, []hcl.Range) {
	exprs, diags := hcl.ExprList(a.Expr)
	if diags.HasErrors() {
		d.errorf(a.Expr.Range().Ptr(), "Invalid "+a.Name, "%s must be a list of strings, as %s = [\"a\", \"b\"].", a.Name, a.Name)
		return nil, nil
	}
	var out []string
	var rngs []hcl.Range
	for _, e := range exprs {
		v, diags := e.Value(d.ctx)
		d.diags = append(d.diags, diags...)
		if diags.HasErrors() {
			continue
		}
		if v.IsMarked() || v.IsNull() || v.Type() != cty.String {
			d.errorf(e.Range().Ptr(), "Invalid "+a.Name, "%s must be a list of strings.", a.Name)
			continue
		}
		out = append(out, v.AsString())
		rngs = append(rngs, e.Range())
	}
	return out, rngs
}

// path resolves p against the inventory's directory.
func (d *decoder) path(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.inv.Dir, p)
}

// rollout decodes the rollout block.
func (d *decoder) rollout(b *hcl.Block) {
	c, diags := b.Body.Content(rolloutSchema)
	d.diags = append(d.diags, diags...)
	if c == nil {
		return
	}
	r := DefaultRollout()
	if a := c.Attributes["batches"]; a != nil {
		exprs, diags := hcl.ExprList(a.Expr)
		if diags.HasErrors() || len(exprs) == 0 {
			d.errorf(a.Expr.Range().Ptr(), "Invalid batches", "batches is a non-empty list of batch sizes: numbers of hosts or percentages, as [1, \"10%%\", \"100%%\"].")
		} else {
			r.Batches = nil
			for _, e := range exprs {
				if s, ok := d.size(e, 1, "A batch size"); ok {
					r.Batches = append(r.Batches, s)
				}
			}
		}
	}
	if a := c.Attributes["max_failures"]; a != nil {
		if s, ok := d.size(a.Expr, 0, "max_failures"); ok {
			r.MaxFailures = s
		}
	}
	if a := c.Attributes["parallel"]; a != nil {
		if s, ok := d.size(a.Expr, 1, "parallel"); ok && !s.Percent {
			r.Parallel = s.N
		} else if ok {
			d.errorf(a.Expr.Range().Ptr(), "Invalid parallel", "parallel is a number of hosts.")
		}
	}
	d.inv.Rollout = r
}

// size evaluates a count (at least least) or a percentage ("10%").
func (d *decoder) size(e hcl.Expression, least int, what string) (Size, bool) {
	v, diags := e.Value(d.ctx)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return Size{}, false
	}
	bad := func() (Size, bool) {
		d.errorf(e.Range().Ptr(), "Invalid "+strings.ToLower(strings.TrimPrefix(what, "A ")), "%s is a whole number of hosts (at least %d) or a percentage of them, as \"10%%\".", what, least)
		return Size{}, false
	}
	if v.IsNull() || v.IsMarked() {
		return bad()
	}
	switch v.Type() {
	case cty.Number:
		bf := v.AsBigFloat()
		if !bf.IsInt() {
			return bad()
		}
		n, _ := bf.Int64()
		if n < int64(least) || n > maxHosts {
			return bad()
		}
		return Size{N: int(n)}, true
	case cty.String:
		s := strings.TrimSpace(v.AsString())
		num, ok := strings.CutSuffix(s, "%")
		var n int
		if _, err := fmt.Sscanf(num, "%d", &n); !ok || err != nil || fmt.Sprint(n) != num || n < least || n > 100 {
			return bad()
		}
		return Size{N: n, Percent: true}, true
	}
	return bad()
}

// Host finds a host by alias.
func (inv *Inventory) Host(alias string) *Host {
	for _, h := range inv.Hosts {
		if h.Alias == alias {
			return h
		}
	}
	return nil
}

// Group finds a group by name.
func (inv *Inventory) Group(name string) *Group {
	for _, g := range inv.Groups {
		if g.Name == name {
			return g
		}
	}
	return nil
}
