package vcs

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/internal/words"
	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/hostexec"
	"github.com/toquehq/toque/resources/internal/props"
)

// Plan: sync makes (clones) a missing working tree and moves an existing
// one to the commit revision resolves to, setting the remote's URL when
// it differs; checkout and export make a missing one and leave an
// existing one as it is.
func (t *gitType) Plan(action string, desired *resources.Resource, current *resources.State) (*resources.Step, error) {
	dest := desired.String("destination")
	kind := current.Extra[xKind]
	switch action {
	case "sync", "checkout", "export":
	default:
		return nil, resources.UnknownAction(t.schema, action)
	}
	switch {
	case action == "export" && kind != kindAbsent:
		return &resources.Step{Kind: resources.NoOp, Reason: fmt.Sprintf("%s exists; export leaves it as it is", dest)}, nil
	case kind == "file", kind == "symbolic link":
		return nil, fmt.Errorf("%s is a %s, not a directory: git makes a working tree only in a missing or empty directory", dest, kind)
	case kind == kindDirectory:
		return nil, fmt.Errorf("%s is a directory that is neither empty nor a git repository (it has no .git directory): toque does not clone over it; empty it, or choose another destination", dest)
	case action == "checkout" && kind == kindRepository:
		return &resources.Step{Kind: resources.NoOp, Reason: "a working tree exists; checkout leaves it as it is (sync moves it)"}, nil
	}
	if p := current.Extra[xProblem]; p != "" {
		return nil, errors.New(p)
	}
	if why := current.Extra[xUnresolved]; why != "" {
		return nil, &resources.PropertyError{Property: "revision", Err: errors.New(why)}
	}
	var step *resources.Step
	if kind == kindRepository {
		step = t.planSync(desired, current)
	} else {
		step = t.planCreate(action, desired, current)
	}
	if step.Kind.IsWork() && desired.IsSet("user") && hostexec.EffectiveUID() != 0 {
		if uid, err := props.LookupUID(desired.String("user")); err == nil && uid != os.Geteuid() {
			return nil, hostexec.NeedsRoot("running git as user " + desired.String("user"))
		}
	}
	return step, nil
}

// target is the change of revision to the commit Load resolved (unknown
// while revision or repository is known only at apply), with the
// target's subject as its note.
func targetChange(desired *resources.Resource, current *resources.State) resources.Change {
	c := resources.Change{Property: "revision", Before: cty.NilVal, After: cty.UnknownVal(cty.String)}
	if v, ok := current.Values["revision"]; ok {
		c.Before = v
	}
	target := current.Extra[xTarget]
	for _, p := range []string{"revision", "repository"} {
		if v, ok := desired.Values[p]; ok && v != cty.NilVal && !v.IsWhollyKnown() {
			target = "" // known at apply (lazy): Load could not resolve it
		}
	}
	if target == "" {
		return c
	}
	c.After = cty.StringVal(target)
	rev := desired.String("revision")
	what := rev
	switch ref := current.Extra[xTargetRef]; {
	case ref == "":
		what = "commit"
	case strings.HasPrefix(ref, "refs/heads/"):
		what = "branch " + strings.TrimPrefix(ref, "refs/heads/")
		if rev == "HEAD" {
			what = "HEAD, branch " + strings.TrimPrefix(ref, "refs/heads/")
		}
	case strings.HasPrefix(ref, "refs/tags/"):
		what = "tag " + strings.TrimPrefix(ref, "refs/tags/")
	}
	c.Note = fmt.Sprintf("%s at %s: %s", what, short(target), readingOf(current).subject)
	if as := current.Extra[xReadAs]; as != "" {
		c.Note += " (read as " + as + "; apply reads it again as that user)"
	}
	return c
}

func (t *gitType) planCreate(action string, desired *resources.Resource, current *resources.State) *resources.Step {
	dest := desired.String("destination")
	repo := resources.Change{Property: "repository", Before: cty.NilVal, After: desired.Get("repository")}
	rev := targetChange(desired, current)
	changes := []resources.Change{repo, rev}
	what := "clones"
	if action == "export" {
		what = "exports (a clone without .git)"
		changes = []resources.Change{rev}
	}
	reason := fmt.Sprintf("%s does not exist: %s %s at %s", dest, what, shownURL(desired), shownTarget(rev))
	if current.Extra[xKind] == kindEmpty {
		reason = fmt.Sprintf("%s is an empty directory: %s %s into it at %s", dest, what, shownURL(desired), shownTarget(rev))
	}
	if desired.Bool("enable_submodules") {
		reason += ", with its submodules"
	}
	step := &resources.Step{Kind: resources.Create, Reason: reason, Changes: changes, Groups: t.schema.Groups(changes)}
	if current.Extra[xParent] == "missing" {
		step.Needs = append(step.Needs, resources.Need{Namespace: resources.NamespacePath, Value: props.ParentDir(dest), What: "directory"})
	}
	step.Provides = append(step.Provides, resources.Need{Namespace: resources.NamespacePath, Value: dest, What: "directory"})
	return step
}

func (t *gitType) planSync(desired *resources.Resource, current *resources.State) *resources.Step {
	var changes []resources.Change
	var why []string
	for _, c := range resources.Diff(desired, current) {
		if c.Property == "repository" {
			changes = append(changes, c)
			why = append(why, "the remote "+desired.String("remote")+" has another URL")
		}
	}
	rev := targetChange(desired, current)
	if !rev.After.IsKnown() || current.Values["revision"] == cty.NilVal || !current.Values["revision"].RawEquals(rev.After) {
		commits := resources.Change{Property: "commits", Before: current.Values["commits"], After: cty.UnknownVal(cty.String)}
		if rev.After.IsKnown() {
			commits.After = cty.StringVal(readingOf(current).arriving)
		}
		if commits.Before == cty.NilVal {
			commits.Before = cty.StringVal("")
		}
		head := "no commit"
		if v := current.Values["revision"]; v != cty.NilVal {
			head = short(v.AsString())
		}
		w := fmt.Sprintf("moves from %s to %s", head, shownTarget(rev))
		if n := strings.Count(readingOf(current).arriving, "\n"); rev.After.IsKnown() && n > 0 && !strings.HasPrefix(readingOf(current).arriving, "(") {
			w += fmt.Sprintf(" (%s)", countCommits(readingOf(current).arriving))
		}
		if d := current.Extra[xDirty]; d != "" {
			discards := "discards the local changes to " + countFiles(strings.Split(d, "\x00")) + " (git checkout --force)"
			w += "; " + discards
			rev.Note = strings.TrimPrefix(rev.Note+"; "+discards, "; ")
		}
		why = append(why, w)
		changes = append(changes, rev, commits)
	}
	if len(changes) == 0 {
		return &resources.Step{Kind: resources.NoOp, Reason: "already at " + shownTarget(rev) + " (" + desired.String("revision") + ")"}
	}
	return &resources.Step{Kind: resources.Update, Reason: strings.Join(why, "; "), Changes: changes, Groups: t.schema.Groups(changes)}
}

func shownURL(desired *resources.Resource) string {
	v := desired.Get("repository")
	if !v.IsKnown() {
		return "the repository (known at apply)"
	}
	return props.RedactURL(v.AsString())
}

func shownTarget(rev resources.Change) string {
	if !rev.After.IsKnown() {
		return "the commit revision names (known at apply)"
	}
	return short(rev.After.AsString())
}

func countCommits(lines string) string {
	n := strings.Count(lines, "\n")
	if i := strings.LastIndex(strings.TrimSuffix(lines, "\n"), "\n… and "); i >= 0 {
		return fmt.Sprintf("more than %d commits", shownCommits)
	}
	if n == 1 {
		return "1 commit"
	}
	return fmt.Sprintf("%d commits", n)
}

// countFiles words a list of paths: "2 tracked files (a, b)".
func countFiles(files []string) string {
	shown := files
	if len(shown) > 5 {
		shown = shown[:5]
	}
	list := words.Join(shown, "")
	if len(files) > 5 {
		list = strings.Join(shown, ", ") + fmt.Sprintf(" and %d more", len(files)-5)
	}
	if len(files) == 1 {
		return "1 tracked file (" + list + ")"
	}
	return fmt.Sprintf("%d tracked files (%s)", len(files), list)
}

// readingOf is current's gitReading, for reading only (a zero one when
// Load left none).
func readingOf(current *resources.State) *gitReading {
	if g, ok := current.Local.(*gitReading); ok {
		return g
	}
	return &gitReading{}
}
