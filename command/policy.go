package command

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/apply"
	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/eval"
	"github.com/toquehq/toque/internal/diag"
	"github.com/toquehq/toque/internal/host"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/policy"
)

// CacheDirEnv overrides where policy sources are cached.
const CacheDirEnv = "TOQUE_CACHE_DIR"

// cacheDir is where git mirrors, fetched locks and cookbooks are kept:
// TOQUE_CACHE_DIR, else STATE_DIR/cache. The state directory and its
// cache/ are created and checked as apply checks them (apply.OpenStateDir):
// cookbooks planted there by another user would run as root.
func cacheDir(env Env, stateFlag string) (string, error) {
	if v := env.Getenv(CacheDirEnv); v != "" {
		return env.abs(v), nil
	}
	state, err := apply.OpenStateDir(stateDir(env, stateFlag))
	if err != nil {
		return "", err
	}
	defer state.Close()
	cache, err := state.Subdir("cache")
	if err != nil {
		return "", err
	}
	cache.Close()
	return cache.Path(), nil
}

// workspace is the policy workflow for the working directory.
func (b *Base) workspace(stateFlag string) (*policy.Workspace, error) {
	dir, err := cacheDir(b.Env, stateFlag)
	if err != nil {
		return nil, err
	}
	return policy.NewWorkspace(b.workDir(), policy.Options{
		CacheDir: dir,
		Token:    b.Env.Getenv(policy.TokenEnv),
		Logger:   b.Logger.Named("policy"),
	}), nil
}

// loaded is what loadConfig read: the configuration, and in policy mode
// the lock's revision and the policy's parsed files.
type loaded struct {
	lockRevision string
	policyName   string
	// scope is the configuration's scope without the host (node
	// attributes written with host facts unknown), as validate and graph
	// evaluate; nil when loading failed.
	scope *eval.Scope
}

// stamp records the lock's revision in a plan made in policy mode.
func (l *loaded) stamp(p *plan.Plan) {
	if l != nil && p != nil {
		p.LockRevision, p.Policy = l.lockRevision, l.policyName
	}
}

// loadConfig loads the working directory: in policy mode (policy.hcl is
// present) from policy.lock.json — refusing a missing or stale lock — and
// its cookbooks, else every recipe file of the directory; attrs are the
// command line's -attr and -attr-file, checked first (nil: none).
//
// The node attributes are written once without the host, so that errors
// in attribute blocks stop every command before the host is read.
func (b *Base) loadConfig(attrs *attrFlags) (*config.Config, *loaded, diag.Diagnostics) {
	l := &loaded{}
	cli, cliDiags := b.commandLine(attrs)
	if cliDiags.HasErrors() {
		return nil, l, cliDiags
	}
	cfg, l, diags := b.loadRecipes(l)
	if cfg != nil {
		cfg.CommandLine = cli
	}
	if cfg != nil && !diags.HasErrors() {
		scope, _, d := eval.NewScope(cfg, host.Unknown())
		diags = diags.Append(d)
		if !d.HasErrors() {
			diags = diags.Append(eval.UnreadAttributes(cfg, b.Registry, scope))
		}
		l.scope = scope
	}
	return cfg, l, cliDiags.Append(diags)
}

// loadRecipes is loadConfig's loading: the recipes, or the policy lock
// and its cookbooks.
func (b *Base) loadRecipes(l *loaded) (*config.Config, *loaded, diag.Diagnostics) {
	var cfg *config.Config
	var diags hcl.Diagnostics
	if !policy.Exists(b.workDir()) {
		cfg, diags = config.LoadDir(b.workDir(), b.Registry)
	} else {
		ws, err := b.workspace("")
		if err != nil {
			return nil, l, diag.Diagnostics{}.Append(err)
		}
		lock, in, d := ws.LoadLock(b.ReadCtx)
		b.addFiles(ws.Parser.Files())
		diags = d
		if lock == nil || diags.HasErrors() {
			return nil, l, diag.Diagnostics{}.Append(diags)
		}
		l.lockRevision, l.policyName = lock.RevisionID, lock.Name
		cfg, d = config.LoadPolicy(in, b.Registry)
		diags = append(diags, d...)
	}
	if cfg != nil && cfg.Parser != nil {
		b.addFiles(cfg.Parser.Files())
	}
	return cfg, l, diag.Diagnostics{}.Append(diags)
}

// addFiles records parsed files for the snippets of diagnostics.
func (b *Base) addFiles(files map[string]*hcl.File) {
	for k, v := range files {
		b.files[k] = v
	}
}
