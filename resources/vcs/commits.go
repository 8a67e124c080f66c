package vcs

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// What a plan shows of the commits a sync moves over: it fetches, into a
// temporary bare repository made for that read and removed after it, the
// commits only (a partial clone with --filter=tree:0: no trees, no files),
// at most fetchDepth of them back from each end, and lists up to
// shownCommits on each side. Neither the working tree nor its repository
// is written at plan; no cache outlives the read, so nothing another user
// could change is ever read by root, and a user's plan uses that user's
// credentials.
const (
	fetchDepth   = 200
	shownCommits = 50
)

// readCommits fetches target (and head, when set) into a temporary
// repository, as user, and records what a reviewer reads: the target's
// subject, the commits a sync brings (Extra arriving) and those it leaves
// behind (Values commits). A commit id that the repository does not have
// is recorded as unresolved.
func (t *gitType) readCommits(ctx context.Context, url, target, head string, as identity, timeout time.Duration, st *resources.State) error {
	tmp, err := tempRepo(url, target, as.user, as.group)
	if tmp != "" {
		defer os.RemoveAll(tmp)
	}
	if err != nil {
		return fmt.Errorf("reading the commits of %s: %w", props.RedactURL(url), err)
	}
	g := gitRun{dir: tmp, user: as.user, group: as.group, url: url, timeout: timeout, fileSubmodules: t.fileSubmodules}
	fetch := func(commit string) error {
		g.args = []string{"fetch", "--quiet", "--no-tags", "--depth=" + fmt.Sprint(fetchDepth), "--filter=tree:0", "--", "origin", commit}
		_, err := g.run(ctx)
		return err
	}
	if err := fetch(target); err != nil {
		if st.Extra[xTargetRef] == "" {
			st.Extra[xUnresolved] = fmt.Sprintf("%s has no commit %s (%v)", props.RedactURL(url), target, err)
			return nil
		}
		return fmt.Errorf("fetching %s of %s: %w", target, props.RedactURL(url), err)
	}
	log := func(max int, rng string) ([]string, bool) {
		g.args = []string{"log", "--no-decorate", "--format=%H%x09%s", fmt.Sprintf("--max-count=%d", max), "--end-of-options", rng}
		out, err := g.run(ctx)
		if err != nil {
			return nil, false
		}
		return strings.Split(strings.TrimRight(out, "\n"), "\n"), true
	}
	if lines, ok := log(1, target); ok && len(lines) == 1 {
		_, subject, _ := strings.Cut(lines[0], "\t")
		gitReadingOf(st).subject = cleanSubject(subject)
	}
	if head == "" || head == target {
		return nil
	}
	_ = fetch(head) // a commit the remote no longer has (force-pushed away, or local): its side stays unknown
	arriving, ok := log(fetchDepth+1, head+".."+target)
	if !ok {
		gitReadingOf(st).arriving = fmt.Sprintf("(the commits between are not known: %s is not in %s's history — a local commit, or one a force-push removed)\n", short(head), props.RedactURL(url))
		st.Values["commits"] = cty.StringVal("")
		return nil
	}
	leaving, _ := log(fetchDepth+1, target+".."+head)
	gitReadingOf(st).arriving = commitLines(arriving)
	st.Values["commits"] = cty.StringVal(commitLines(leaving))
	return nil
}

// commitLines is the text of log lines (id TAB subject): one line per
// commit, its id shortened, the first shownCommits of them.
func commitLines(lines []string) string {
	var b strings.Builder
	n := 0
	for _, l := range lines {
		if l == "" {
			continue
		}
		n++
		if n > shownCommits {
			continue
		}
		id, subject, _ := strings.Cut(l, "\t")
		fmt.Fprintf(&b, "%s %s\n", short(id), cleanSubject(subject))
	}
	if n > shownCommits {
		more := fmt.Sprint(n - shownCommits)
		if n > fetchDepth {
			more = fmt.Sprintf("%d or more", fetchDepth-shownCommits)
		}
		fmt.Fprintf(&b, "… and %s more\n", more)
	}
	return b.String()
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// cleanSubject is a subject as one line of valid UTF-8 (renderers escape
// the rest).
func cleanSubject(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// tempRepo makes an empty bare repository in the system's temporary
// directory whose remote origin is url, set up for a partial clone of
// commits only, owned by user (and group) when set. Its caller removes
// it; the path is returned even with an error, for that.
func tempRepo(url, target, user, group string) (string, error) {
	dir, err := os.MkdirTemp("", "toque-git-")
	if err != nil {
		return "", err
	}
	format := ""
	if len(target) == 64 {
		format = "\tobjectformat = sha256\n"
	}
	quoted := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(url)
	config := "[core]\n\trepositoryformatversion = 1\n\tbare = true\n" +
		"[extensions]\n\tpartialClone = origin\n" + format +
		"[remote \"origin\"]\n\turl = \"" + quoted + "\"\n\tpromisor = true\n\tpartialclonefilter = tree:0\n"
	for _, d := range []string{"objects", "refs", "refs/heads", "refs/tags"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return dir, err
		}
	}
	for name, content := range map[string]string{"HEAD": "ref: refs/heads/main\n", "config": config} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return dir, err
		}
	}
	if user == "" && group == "" {
		return dir, nil
	}
	uid, gid := -1, -1
	if user != "" {
		if uid, err = props.LookupUID(user); err != nil {
			return dir, err
		}
	}
	if group != "" {
		if gid, err = props.LookupGID(group); err != nil {
			return dir, err
		}
	}
	return dir, filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
