package command

import (
	"errors"

	"github.com/toquehq/toque/apply"
)

// checkPlanFileFlags validates the flags that only apply with a plan file
// (-expect-digest, -json) before anything is read. It returns the event
// writer for -json (nil without it), the expected digest ("" without
// -expect-digest) and a usage error.
func (c *ApplyCommand) checkPlanFileFlags(a applyArgs, set map[string]bool, nargs int) (*apply.EventWriter, string, error) {
	var ev *apply.EventWriter
	if a.json {
		ev = apply.NewEventWriter(c.Streams.Stdout, nil)
	}
	want := ""
	if set["expect-digest"] {
		d, err := parseDigest(a.expectDigest)
		if err != nil {
			return ev, "", err
		}
		want = d
	}
	if nargs == 0 {
		switch {
		case set["expect-digest"]:
			return ev, "", errors.New("-expect-digest needs a plan file: toque apply -expect-digest=HEX PLANFILE (without one, apply makes a new plan, which nobody reviewed)")
		case a.json:
			return ev, "", errors.New("-json needs a plan file: toque apply -json PLANFILE (apply without one asks for confirmation, which a JSON stream cannot)")
		}
	}
	return ev, want, nil
}

// fail prints err on stderr and, with -json (ev not nil), writes the final
// error event; it returns code.
func (c *ApplyCommand) fail(ev *apply.EventWriter, kind string, code int, err error) int {
	c.errorf("%s", err)
	if ev != nil {
		ev.Error(kind, err, code)
	}
	return code
}

// exitCodeOf maps an error Apply returned to the exit status (see the
// apply package doc).
func exitCodeOf(err error) int {
	switch apply.ErrorKind(err) {
	case apply.ErrorKindStale:
		return ExitStale
	case apply.ErrorKindLockHeld:
		return ExitLockHeld
	case apply.ErrorKindInterrupted:
		return ExitInterrupted
	}
	return ExitError
}
