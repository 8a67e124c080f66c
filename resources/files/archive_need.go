package files

import (
	"strings"

	"github.com/toquehq/toque/resources"
)

// Meets says a remote_file whose step with work writes a file at the
// path an archive_file reads meets that archive_file's need: remote_file
// is a resources.NeedMeeter, so that a plan extracting a download made
// earlier in the same plan is accepted, the archive known at apply. It
// reads only the desired values: no I/O. (When this branch meets main's
// edit_needs.go, which declares the same method with the same rule for
// file, template and remote_file, this file goes: its rule is that one.)
func (t *remoteFileType) Meets(desired *resources.Resource, n resources.Need) bool {
	if desired == nil || n.Namespace != resources.NamespacePath || !strings.HasPrefix(n.What, archiveNeedWhat) || desired.String("path") != n.Value {
		return false
	}
	switch desired.EffectiveAction() {
	case "create", "create_if_missing":
		return true
	}
	return false
}
