// Command toque converges a host to the state its HCL recipes describe, with
// a reviewable plan in between: `toque plan -out plan.out`, then
// `toque apply plan.out`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/toquehq/toque/command"
)

// abortGrace is how long toque waits, after the second Ctrl-C, for the
// cancellation to end it before it exits anyway.
const abortGrace = 3 * time.Second

func main() {
	stopProfiling := startProfiling()
	st := realMain()
	stopProfiling()
	os.Exit(st)
}

func realMain() int {
	// The first SIGINT (or SIGTERM) asks for a graceful stop: apply finishes
	// the resource in hand, then reports. A second one aborts: the context
	// is cancelled (child processes are killed), and if toque has not
	// ended within abortGrace — something did not heed the cancellation —
	// it exits anyway, as does a third signal.
	//
	// SIGPIPE is caught rather than fatal: a closed stdout (toque plan |
	// head) then makes writes fail with EPIPE, which the views treat as the
	// reader having seen enough, after the plan file was written.
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		n := 0
		for range sigs {
			n++
			switch n {
			case 1:
				close(stop)
			case 2:
				cancel()
				time.AfterFunc(abortGrace, func() {
					fmt.Fprintln(os.Stderr, "toque: aborted")
					os.Exit(command.ExitInterrupted)
				})
			default:
				fmt.Fprintln(os.Stderr, "toque: aborted")
				os.Exit(command.ExitInterrupted)
			}
		}
	}()
	return command.Run(ctx, stop, os.Args[1:], command.Streams{
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	})
}
