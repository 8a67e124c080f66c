package command

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

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

// downloadDir is where the resource types cache what they download
// (remote_file, apt_repository's keys): TOQUE_CACHE_DIR/downloads, else
// STATE_DIR/cache/downloads, the state directory as env names it. It is
// created and checked where it is used.
func downloadDir(env Env) string {
	if v := env.Getenv(CacheDirEnv); v != "" {
		return filepath.Join(env.abs(v), "downloads")
	}
	return filepath.Join(stateDir(env, ""), "cache", "downloads")
}

// cacheDir is where git mirrors, fetched locks and cookbooks are kept:
// TOQUE_CACHE_DIR, else STATE_DIR/cache. The state directory and its
// cache/ are created and checked as apply checks them (apply.OpenStateDir):
// cookbooks planted there by another user would run as root.
func cacheDir(env Env, stateFlag string) (string, error) {
	if v := env.Getenv(CacheDirEnv); v != "" {
		return env.abs(v), nil
	}
	path := stateDir(env, stateFlag)
	state, err := apply.OpenStateDir(path)
	if err != nil {
		var ue *apply.UntrustedError
		if errors.As(err, &ue) {
			return "", err
		}
		return "", fmt.Errorf("toque keeps the policy cache in its state directory, %s, and cannot make or open it: %w; give -state-dir, or set TOQUE_STATE_DIR or %s, to a directory you may write", path, err, CacheDirEnv)
	}
	defer state.Close()
	cache, err := state.Subdir("cache")
	if err != nil {
		return "", err
	}
	cache.Close()
	return cache.Path(), nil
}

// readCacheDir is the cache of a command that only reads the host (plan,
// validate, graph, console): cacheDir's, or, when the state directory
// cannot be created or opened (a user other than root whose home has
// none, a read-only file system), a private temporary one the command
// removes when it ends. Such a command needs no writable state directory:
// a lock whose cookbooks are all local never touches the cache, and one
// with git or server sources fetches them again. A state directory toque
// refuses to trust is still an error: it says something is wrong.
func (b *Base) readCacheDir() (string, error) {
	dir, err := cacheDir(b.Env, "")
	var ue *apply.UntrustedError
	if err == nil || errors.As(err, &ue) {
		return dir, err
	}
	tmp, terr := os.MkdirTemp("", "toque-cache-")
	if terr != nil {
		return "", fmt.Errorf("%w (and no temporary cache could be made instead: %v); set %s to a directory you may write", err, terr, CacheDirEnv)
	}
	b.Logger.Info("no state directory for the policy cache; using a temporary one", "reason", err, "cache", tmp)
	b.atEnd(func() { os.RemoveAll(tmp) })
	return tmp, nil
}

// workspace is the policy workflow for the working directory, with the
// cache in the state directory (install, update, export).
func (b *Base) workspace(stateFlag string) (*policy.Workspace, error) {
	dir, err := cacheDir(b.Env, stateFlag)
	if err != nil {
		return nil, err
	}
	return b.workspaceIn(dir), nil
}

// workspaceIn is the policy workflow for the working directory, with its
// cache in dir.
func (b *Base) workspaceIn(dir string) *policy.Workspace {
	return policy.NewWorkspace(b.workDir(), policy.Options{
		CacheDir: dir,
		Token:    b.Env.Getenv(policy.TokenEnv),
		Logger:   b.Logger.Named("policy"),
	})
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
	// unhosted is scope with the attributes it was written from, for the
	// planner (eval.WithHost).
	unhosted *eval.Unhosted
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
		scope, attrs, d := eval.NewScope(cfg, host.Unknown())
		diags = diags.Append(d)
		if !d.HasErrors() {
			diags = diags.Append(eval.UnreadAttributes(cfg, b.Registry, scope))
		}
		l.scope = scope
		l.unhosted = &eval.Unhosted{Scope: scope, Attrs: attrs, Diags: d}
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
		dir, err := b.readCacheDir()
		if err != nil {
			return nil, l, diag.Diagnostics{}.Append(err)
		}
		ws := b.workspaceIn(dir)
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
