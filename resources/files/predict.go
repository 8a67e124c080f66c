package files

import (
	"github.com/toquehq/toque/resources"
)

// predictKind is the file-system types' prediction: the framework's, and
// a thing created is of kind (Extra "kind"), as Load would read it.
func predictKind(current *resources.State, step *resources.Step, kind string) *resources.State {
	st := resources.PredictFromChanges(current, step)
	if step.Kind == resources.Create {
		if st.Extra == nil {
			st.Extra = map[string]string{}
		}
		st.Extra["kind"] = kind
		r := *fsr(st)
		r.parentMissing = false
		st.Local = &r
	}
	return st
}

// Predict is the file's and the template's: a created file is a regular
// file.
func (t *fileType) Predict(_ *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	return predictKind(current, step, "file"), nil
}

// Predict is the directory's: a created directory is a directory.
func (t *directoryType) Predict(_ *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	return predictKind(current, step, "directory"), nil
}

// Predict is the link's: a created link is a symbolic link, or a name of
// its source (a hard link).
func (t *linkType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	kind := "symlink"
	if desired.String("link_type") == "hard" {
		kind = "file"
	}
	return predictKind(current, step, kind), nil
}

// Predict is the template's: the file's.
func (t *templateType) Predict(desired *resources.Resource, current *resources.State, step *resources.Step) (*resources.State, error) {
	return t.file.Predict(desired, current, step)
}
