package files

import "github.com/toquehq/toque/resources"

// Meets says a remote_file that writes a file at the path an
// archive_file reads meets that archive_file's need (NamespaceArchive):
// remote_file is a resources.NeedMeeter, so that a plan extracting a
// download made earlier in the same plan is accepted, the archive known
// at apply. It reads only the desired values: no I/O.
func (t *remoteFileType) Meets(desired *resources.Resource, n resources.Need) bool {
	if n.Namespace != NamespaceArchive || desired == nil {
		return false
	}
	switch desired.EffectiveAction() {
	case "create", "create_if_missing":
		return desired.String("path") == n.Value
	}
	return false
}
