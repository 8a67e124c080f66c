package files

import (
	"strings"

	"github.com/toquehq/toque/resources"
)

// fileNeedWhat starts the What of an editor's need of its file: "the file
// /etc/app.ini".
const fileNeedWhat = "the file "

// An editor of a file that does not exist yet waits for the resource that
// creates it (resources.Need with AtApply): a file, template or
// remote_file declared before it, whose step with work leaves a regular
// file at its path. The planner accepts the editor's step only when such
// a resource comes first, and apply plans the edit right before the
// editor converges, once the file exists.

// meetsFile reports whether a step with work of desired (a file type at
// path, whose action creates or writes it) meets n, an editor's need of
// the file at a path.
func meetsFile(desired *resources.Resource, n resources.Need) bool {
	if desired == nil || n.Namespace != resources.NamespacePath || !strings.HasPrefix(n.What, fileNeedWhat) || desired.String("path") != n.Value {
		return false
	}
	switch desired.EffectiveAction() {
	case "create", "create_if_missing", "touch":
		return true
	}
	return false
}

// Meets is the file's (resources.NeedMeeter): it makes the file an editor
// of its path waits for.
func (t *fileType) Meets(desired *resources.Resource, n resources.Need) bool {
	return meetsFile(desired, n)
}

// Meets is the template's: the file's.
func (t *templateType) Meets(desired *resources.Resource, n resources.Need) bool {
	return meetsFile(desired, n)
}

// Meets is remote_file's: the file's.
func (t *remoteFileType) Meets(desired *resources.Resource, n resources.Need) bool {
	return meetsFile(desired, n)
}

// KnownFrom is the editors' (resources.Awaiter): the content an editor
// waits for is known from no fact of its reading but the file's, which
// pre-flight compares exactly.
func (t *editType) KnownFrom(property, fact string) bool { return false }
