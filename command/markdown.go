package command

import (
	"errors"
	"flag"
	"fmt"

	"github.com/toquehq/toque/command/views"
)

// markdownFlags are the Markdown options shared by plan and show.
type markdownFlags struct {
	markdown    bool
	changesOnly bool
	maxBytes    int
	set         map[string]bool
}

func (m *markdownFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&m.markdown, "markdown", false, "Print the plan as Markdown for a pull-request comment.")
	fs.BoolVar(&m.changesOnly, "changes-only", false, "With -markdown: leave out unchanged and skipped resources.")
	fs.IntVar(&m.maxBytes, "max-bytes", views.DefaultMarkdownBytes, "With -markdown: the output's size limit in bytes.")
}

// check validates the Markdown flags after parsing; asJSON is whether
// -json was given too.
func (m *markdownFlags) check(fs *flag.FlagSet, asJSON bool) error {
	m.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { m.set[f.Name] = true })
	if !m.markdown {
		for _, name := range []string{"changes-only", "max-bytes"} {
			if m.set[name] {
				return fmt.Errorf("-%s only applies with -markdown", name)
			}
		}
		return nil
	}
	if asJSON {
		return errors.New("-markdown and -json cannot be used together: choose one output format")
	}
	if m.maxBytes < 1 {
		return fmt.Errorf("-max-bytes must be a positive number of bytes (got %d); the default is %d", m.maxBytes, views.DefaultMarkdownBytes)
	}
	return nil
}

// options are the Markdown options the flags give; planFile is named in
// the note of a truncated comment.
func (m *markdownFlags) options(planFile string) views.MarkdownOptions {
	return views.MarkdownOptions{ChangesOnly: m.changesOnly, MaxBytes: m.maxBytes, PlanFile: planFile}
}
