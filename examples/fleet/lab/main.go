// Command lab makes a fleet of hosts on this machine and runs a command
// with them, for examples/fleet (run.sh): each host is a network
// namespace with its own sshd, host name, machine id and overlays over
// /etc, /var, /srv, /run, /root, /home and /opt (package fleet/fleetlab),
// so what a command does on a host stays in that host. The command runs
// in the lab's network namespace, where the hosts are reachable, with
// LAB_SSH_CONFIG naming the lab's ssh configuration (its key and
// known_hosts, never your ~/.ssh); the hosts go away when it ends.
//
//	sudo go run ./examples/fleet/lab -hosts web-01,web-02,db-01 -- sh -c 'toque fleet plan'
//
// It needs Linux, root, util-linux (unshare, nsenter), iproute2,
// overlayfs and openssh-server (Debian and Ubuntu: apt-get install
// openssh-server iproute2; the machine's own sshd is neither used nor
// started).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/toquehq/toque/fleet/fleetlab"
)

func main() { os.Exit(run()) }

func run() int {
	hosts := flag.String("hosts", "web-01,web-02,web-03,db-01", "The hosts' aliases, comma-separated.")
	n := flag.Int("n", 0, "Make N hosts named node-01… instead.")
	dir := flag.String("dir", "", "A directory (outside /etc, /var, /srv, /run, /root, /home and /opt) where the lab keeps its files, in DIR/lab (default: a new directory in /tmp).")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "lab: needs root: it makes network and mount namespaces and runs an sshd per host")
		return 1
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: lab [-hosts a,b,c | -n N] [-dir DIR] -- COMMAND [ARGS...]")
		return 2
	}
	aliases := strings.Split(*hosts, ",")
	if *n > 0 {
		aliases = nil
		for i := 1; i <= *n; i++ {
			aliases = append(aliases, fmt.Sprintf("node-%02d", i))
		}
	}
	// The lab removes what it made, and only that: DIR/lab, or the
	// directory it made itself.
	base := *dir
	if base == "" {
		d, err := os.MkdirTemp("/tmp", "toque-fleet-lab-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "lab:", err)
			return 1
		}
		base = d
		defer os.RemoveAll(d)
	}
	labDir := filepath.Join(base, "lab")
	if _, err := os.Stat(labDir); err == nil {
		fmt.Fprintf(os.Stderr, "lab: %s exists: give -dir a directory without a lab in it\n", labDir)
		return 1
	}
	defer os.RemoveAll(labDir)
	l, err := fleetlab.Start(labDir, aliases)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		return 1
	}
	defer l.Close()
	fmt.Fprintf(os.Stderr, "lab: %d hosts (%s); ssh configuration %s\n", len(aliases), strings.Join(aliases, ", "), l.SSHConfig)
	// Ctrl-C goes to the command (the terminal sends it there too); the
	// lab waits for it to end, then goes away.
	signal.Ignore(syscall.SIGINT)
	cmd := l.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "LAB_SSH_CONFIG="+l.SSHConfig, "LAB_DIR="+labDir)
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "lab:", err)
		return 1
	}
	return 0
}
