package files

import "github.com/toquehq/toque/resources"

// PrivilegeError says why toque, as the user it runs as, could not carry
// out step on the file at path as the file type carries one out (another
// owner, a group it is not in, a mode of a file it does not own, a
// directory it may not write), or nil; fileState is the file type's
// reading of path (its Load). A type that edits a file through the file
// type, and shows the edit as its own changes, asks it at plan time, so
// that apply never fails half-way on a permission the plan could see
// missing. A step whose groups include "content" rewrites the file.
func PrivilegeError(step *resources.Step, fileState *resources.State, path string) error {
	return privilegeError(step, fileState, path)
}
