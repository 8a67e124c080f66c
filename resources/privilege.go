package resources

// NeedsRootError is what only root may do, found while toque runs as
// another user: giving a file to another owner, writing in a directory
// that user may not write, running a command as another user. The planner
// leaves such a resource out of the plan (which then cannot be applied)
// and says so in one line; the rest of the plan is still shown. Root never
// meets one.
type NeedsRootError struct {
	// Reason is the whole sentence: "giving /srv/x to owner root needs
	// root, and toque runs as uid 65534: run it as root (or leave the
	// property out)".
	Reason string
}

func (e *NeedsRootError) Error() string { return e.Reason }
