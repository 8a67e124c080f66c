package files

import (
	"context"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"

	"github.com/toquehq/toque/resources"
	"github.com/toquehq/toque/resources/internal/props"
)

// Foresees is what the file-system types' Load reads of the plan's
// predicted host (resources.Foreseer): their path.
func (t *fileType) Foresees(desired *resources.Resource) []resources.Need {
	return pathNeed(desired)
}

func (t *templateType) Foresees(desired *resources.Resource) []resources.Need {
	return pathNeed(desired)
}

// Foresees: an editor of a file a package of the plan ships edits the
// file the package ships.
func (t *editType) Foresees(desired *resources.Resource) []resources.Need {
	return pathNeed(desired)
}

func (t *directoryType) Foresees(desired *resources.Resource) []resources.Need {
	return pathNeed(desired)
}

func pathNeed(desired *resources.Resource) []resources.Need {
	return []resources.Need{{Namespace: resources.NamespacePath, Value: desired.String("path")}}
}

// foreseen is the state of path as an earlier step of the plan predicts
// it (resources.ForesightOf: a file a package ships), when the host lacks
// it (f found nothing there, not even a link) and a step predicts it;
// nil otherwise, for Load to report what the host has. It is what Load
// will read once that step has run: the same values (content, mode,
// owner, group, as the archive gives them) and the same kind, so that
// the reading right before the resource converges matches the plan's.
// A regular file whose content the plan does not know (a package keeps
// only its configuration and unit files' content) is an error naming it:
// the plan would have to guess.
func foreseen(ctx context.Context, path string, f *found, needContent bool) (*resources.State, error) {
	if f.exists || f.link != "" {
		return nil, nil
	}
	p := resources.ForesightOf(ctx).Lookup(resources.NamespacePath, path)
	if p == nil {
		return nil, nil
	}
	mode, err := strconv.ParseUint(p.Fact("mode"), 8, 32)
	if err != nil {
		return nil, fmt.Errorf("%s: %s predicts it with mode %q", path, p.By, p.Fact("mode"))
	}
	st := &resources.State{Exists: true, Values: map[string]cty.Value{}, Extra: map[string]string{}}
	st.Extra["kind"] = p.Fact("kind")
	switch p.Fact("kind") {
	case "directory", "file":
	case "symlink":
		st.Extra["link_target"] = p.Fact("target")
		return st, nil
	case "hardlink":
		st.Extra["kind"] = "file"
		return nil, fmt.Errorf("%s is a hard link to %s in %s: toque does not plan a file over a package's hard link; manage it after the package is installed", path, p.Fact("target"), p.By)
	default:
		return st, nil
	}
	uid := predictedID(p.Fact("owner"), p.Fact("uid"), props.LookupUID)
	gid := predictedID(p.Fact("group"), p.Fact("gid"), props.LookupGID)
	setOwnerValues(st.Values, statInfo{mode: uint32(mode) & MaxMode, uid: uid, gid: gid}, true)
	fsw(st).ownerUID, fsw(st).ownerKnown = int(uid), true
	fsw(st).foreseenBy = p.By
	if p.Fact("kind") == "directory" {
		return st, nil
	}
	if !needContent {
		// Its owner and mode are all the resource reads (a file whose
		// recipe sets no content).
		return st, nil
	}
	data := p.Content
	if data == nil && p.ReadContent != nil {
		b, err := p.ReadContent()
		if err != nil {
			return nil, fmt.Errorf("%s is shipped by %s: %w", path, p.By, err)
		}
		data = b
	}
	if data == nil && p.Fact("sha256") == "" {
		return nil, fmt.Errorf("%s is made by %s, whose content the plan does not know: a resource that reads it cannot be planned before it has run. Manage its owner and mode only, or its content in a later apply", path, p.By)
	}
	if data == nil {
		return nil, fmt.Errorf("%s is shipped by %s, which the plan knows only by size and digest (%s bytes, sha256 %s): toque keeps the content of a package's configuration files and units only. Manage it once the package is installed (a later apply), or manage a configuration file instead",
			path, p.By, p.Fact("size"), p.Fact("sha256"))
	}
	content := cty.StringVal(string(data))
	st.Values["content"] = content
	if !utf8.Valid(data) || content.AsString() != string(data) {
		st.Extra["content_bytes"] = "not normalised UTF-8"
	}
	if mode&0o004 == 0 {
		st.Private = map[string]string{"content": "content not shown: " + p.By + " installs it so that not every user of this host may read it (mode " + p.Fact("mode") + ")"}
	}
	return st, nil
}

// predictedID is the id dpkg gives a file of an archive entry: the id of
// the user (group) it names when the host has one of that name, else
// the entry's number.
func predictedID(name, num string, lookup func(string) (int, error)) uint32 {
	if name != "" {
		if id, err := lookup(name); err == nil {
			return uint32(id)
		}
	}
	n, _ := strconv.ParseUint(num, 10, 32)
	return uint32(n)
}

// withForeseen says, in the reason of a step planned from a prediction
// (foreseen), where the thing comes from: "shipped by package[nginx]
// (nginx-common 1.22.1-9+deb12u9): content differs"; a content change
// notes that its diff is against the file that step ships.
func withForeseen(step *resources.Step, err error, current *resources.State) (*resources.Step, error) {
	by := fsr(current).foreseenBy
	if err != nil || step == nil || by == "" {
		return step, err
	}
	what := "shipped by " + by
	if current.Extra["kind"] == "directory" {
		what = "created by " + by
	}
	if step.Reason == "" {
		step.Reason = what
	} else {
		step.Reason = what + ": " + step.Reason
	}
	for i := range step.Changes {
		if step.Changes[i].Property == "content" && step.Changes[i].Note == "" {
			step.Changes[i].Note = "the diff is against the file " + by + " ships"
		}
	}
	return step, nil
}
