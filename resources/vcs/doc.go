// Package vcs holds the built-in types that manage a checkout of a
// version-control repository: git (Chef's git resource: a working tree
// at one exact commit of a repository, cloned, synced, checked out or
// exported).
//
// A plan resolves the recipe's revision (a branch, a tag, HEAD or a
// commit) to a commit with git ls-remote, and shows which commits a sync
// moves the working tree over, read from a temporary bare repository
// into which the plan fetches the commits only (no trees or files): the
// working tree and its repository are never written at plan. Apply
// checks out exactly the commit the plan showed; a branch that moved
// since makes the plan stale.
//
// Every git process runs through internal/shellexec with a safe
// configuration (git.go, run.go): only the https, http, ssh, git and
// file transports (no ext:: or fd:: remote helpers; file not for
// submodules), no hooks of any repository (core.hooksPath=/dev/null), no
// fsmonitor, no prompts, none of the GIT_* variables of toque's
// environment that redirect git; a URL or revision that could be read as
// an option is refused when the recipe is read, and "--" comes before
// every URL. git runs as the recipe's user, and a repository on the host
// is only ever touched by the user who owns it, so that no repository's
// own configuration runs as anyone else.
//
// It is not a general VCS layer: no Subversion, Mercurial or Perforce,
// and it does not commit or push.
package vcs
