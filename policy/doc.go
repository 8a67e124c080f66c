// Package policy is toque's policy workflow: it reads policy.hcl, resolves it
// into policy.lock.json (install, update), fetches included policy locks from
// their sources (a local path, a git repository, a policy server, a URL),
// merges them with the including policy and reports every conflict at once,
// checks that a lock is not older than its inputs, materialises the locked
// cookbooks for planning, and exports a lock in the policy server layout.
// It owns a cookbook's identity: the content identifier (CookbookIdentifier)
// that locks pin and that stale checks recompute.
//
// Sources are fetched with the git binary (called by argv, through
// internal/shellexec) and net/http; fetched things are kept in a cache
// directory: bare git mirrors, files read from git at a commit, and
// cookbooks by content identifier.
//
// It is not the loader of recipes (config reads cookbooks' HCL: metadata,
// recipe paths, attribute files, run-list items; it hashes nothing) nor a
// planner: command/ asks this package for a verified lock and the cookbook
// directories, then hands them to config.LoadPolicy and the planner. It
// renders nothing; errors that users see are hcl.Diagnostics.
package policy
