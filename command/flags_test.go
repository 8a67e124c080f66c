package command

import (
	"errors"
	"flag"
	"io"
	"testing"
	"time"
)

func TestFlagError(t *testing.T) {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("out", "", "")
	fs.Bool("json", false, "")
	fs.Int("parallelism", 10, "")
	fs.Duration("lock-timeout", 0, "")
	cases := map[string]string{
		"-outt=x":          `plan has no option -outt. Did you mean -out?`,
		"-zzzzzz":          `plan has no option -zzzzzz.`,
		"-parallelism=x":   `-parallelism wants a whole number, not "x".`,
		"-json=maybe":      `-json wants true or false, not "maybe".`,
		"-lock-timeout=zz": `-lock-timeout wants a duration such as 30s or 5m, not "zz".`,
		"-out":             `-out needs a value: -out=VALUE.`,
	}
	for arg, want := range cases {
		err := fs.Parse([]string{arg})
		if err == nil {
			t.Fatalf("%s parsed", arg)
		}
		if got := flagError(fs, err); got != want {
			t.Errorf("%s: %q, want %q", arg, got, want)
		}
	}
	if got := flagError(fs, errors.New("odd")); got != "odd." {
		t.Errorf("unknown error: %q", got)
	}
	_ = time.Second
}
