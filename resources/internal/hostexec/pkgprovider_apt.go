package hostexec

import (
	"strings"

	"github.com/toquehq/toque/internal/shellexec"
)

// Tail is the last lines of what a command printed (its errors first).
func Tail(res *shellexec.Result, lines int) string {
	if res == nil {
		return "(no output)"
	}
	text := strings.TrimSpace(strings.TrimSpace(res.Stderr) + "\n" + strings.TrimSpace(res.Stdout))
	ls := strings.Split(text, "\n")
	if len(ls) > lines {
		ls = append([]string{"…"}, ls[len(ls)-lines:]...)
	}
	if text == "" {
		return "(no output)"
	}
	return strings.Join(ls, "\n")
}
