// Command toque converges a host to the state its HCL recipes describe, with
// a reviewable plan in between: `toque plan -out plan.out`, then
// `toque apply plan.out`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/toquehq/toque/command"
)

func main() {
	os.Exit(realMain())
}

func realMain() int {
	// The first SIGINT (or SIGTERM) asks for a graceful stop: apply finishes
	// the resource in hand, then reports. A second one aborts.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		n := 0
		for range sigs {
			n++
			if n == 1 {
				close(stop)
				continue
			}
			cancel()
			return
		}
	}()
	return command.Run(ctx, stop, os.Args[1:], command.Streams{
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	})
}
