package command

import (
	"path/filepath"

	"github.com/hashicorp/hcl/v2"

	"github.com/toquehq/toque/config"
	"github.com/toquehq/toque/plan"
	"github.com/toquehq/toque/policy"
)

// CacheDirEnv overrides where policy sources are cached.
const CacheDirEnv = "TOQUE_CACHE_DIR"

// cacheDir is where git mirrors, fetched locks and cookbooks are kept:
// TOQUE_CACHE_DIR, else STATE_DIR/cache.
func (b *Base) cacheDir(stateFlag string) string {
	if v := b.Env.Getenv(CacheDirEnv); v != "" {
		return b.Env.abs(v)
	}
	return filepath.Join(b.stateDir(stateFlag), "cache")
}

// workspace is the policy workflow for the working directory.
func (b *Base) workspace(stateFlag string) *policy.Workspace {
	return policy.NewWorkspace(b.workDir(), policy.Options{
		CacheDir: b.cacheDir(stateFlag),
		Token:    b.Env.Getenv(policy.TokenEnv),
		Logger:   b.Logger.Named("policy"),
	})
}

// loaded is what loadConfig read: the configuration, and in policy mode
// the lock's revision and the policy's parsed files.
type loaded struct {
	lockRevision string
	extraFiles   map[string]*hcl.File
}

// files merges the config's parsed files with the policy's.
func (l *loaded) files(cfg *config.Config) map[string]*hcl.File {
	out := map[string]*hcl.File{}
	if l != nil {
		for k, v := range l.extraFiles {
			out[k] = v
		}
	}
	if cfg != nil && cfg.Parser != nil {
		for k, v := range cfg.Parser.Files() {
			out[k] = v
		}
	}
	return out
}

// stamp records the lock's revision in a plan made in policy mode.
func (l *loaded) stamp(p *plan.Plan) {
	if l != nil && p != nil {
		p.LockRevision = l.lockRevision
	}
}

// loadConfig loads the working directory: in policy mode (policy.hcl is
// present) from policy.lock.json — refusing a missing or stale lock — and
// its cookbooks, else every recipe file of the directory.
func (b *Base) loadConfig() (*config.Config, *loaded, hcl.Diagnostics) {
	if !policy.Exists(b.workDir()) {
		cfg, diags := config.LoadDir(b.workDir(), b.Registry)
		return cfg, nil, diags
	}
	ws := b.workspace("")
	lock, in, diags := ws.LoadLock(b.ReadCtx)
	l := &loaded{extraFiles: ws.Parser.Files()}
	if lock == nil || diags.HasErrors() {
		return nil, l, diags
	}
	l.lockRevision = lock.RevisionID
	cfg, d := config.LoadPolicy(in, b.Registry)
	return cfg, l, append(diags, d...)
}
