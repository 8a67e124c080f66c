//go:build !unix

package plan

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this system") }
