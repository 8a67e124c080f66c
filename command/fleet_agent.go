package command

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toquehq/toque/fleet"
)

// FleetAgentCommand is `toque fleet agent plan`: what toque fleet plan
// runs on each host, through ssh, with the toque it shipped there. It is
// not for people (its help says so, and toque's help does not list it).
type FleetAgentCommand struct {
	*Base
}

func (c *FleetAgentCommand) Synopsis() string { return "What toque fleet runs on the hosts" }

func (c *FleetAgentCommand) Help() string {
	return `
Usage: toque fleet agent -cache=DIR [-detect=DIGEST] plan

  Run by toque fleet plan on each host, through ssh: with -detect, first
  prints the host's platform and identity as the detection script does
  (DIGEST: this agent's, as the cache names it); then reads a request on
  standard input (the recipe bundle's digest and the host's attribute
  files), unpacks the recipes from the cache DIR into a fresh directory,
  runs toque plan there, and prints the outcome and the plan file on
  standard output. Not meant to be run by hand.
`
}

func (c *FleetAgentCommand) Run(args []string) int {
	var cache, detect string
	fs := c.newFlagSet("fleet agent", c.Help)
	fs.StringVar(&cache, "cache", "", "")
	fs.StringVar(&detect, "detect", "", "")
	if st := c.parseFlags(fs, args, c.Help); st >= 0 {
		return st
	}
	if fs.NArg() != 1 || fs.Arg(0) != "plan" || cache == "" || detect != "" && !isHex64(detect) {
		return c.fail(true, "usage: toque fleet agent -cache=DIR [-detect=DIGEST] plan (run by toque fleet plan, not by hand)")
	}
	if detect != "" {
		// What the detection script would have printed, had it run.
		line, err := fleet.AgentDetect(cache, detect)
		io.WriteString(c.Streams.Stdout, line)
		if err != nil {
			return 3
		}
	}
	status, stderr, dir, file := c.agentPlan(cache)
	if err := fleet.WriteAgentResponse(c.Streams.Stdout, fleet.AgentResponse{Version: Version, Status: status, Stderr: stderr, Dir: dir}, file); err != nil {
		return ExitError
	}
	return ExitOK
}

// agentPlan plans the request on standard input: the exit status of the
// plan, what it printed on standard error, the directory it planned in,
// and the plan file's bytes (nil when none was written).
func (c *FleetAgentCommand) agentPlan(cache string) (int, string, string, []byte) {
	fail := func(format string, args ...any) (int, string, string, []byte) {
		return ExitError, "Error: " + fmt.Sprintf(format, args...) + "\n", "", nil
	}
	req, err := fleet.ReadAgentRequest(c.Streams.Stdin)
	if err != nil {
		return fail("%s", err)
	}
	if !isHex64(req.Recipes) {
		return fail("the request names no recipe bundle")
	}
	data, err := os.ReadFile(filepath.Join(cache, "recipes", req.Recipes+".tar"))
	if err != nil {
		return fail("cannot read the recipes: %s", err)
	}
	run, err := os.MkdirTemp(filepath.Join(cache, "runs"), "plan.")
	if err != nil {
		return fail("cannot make a directory to plan in: %s", err)
	}
	defer os.RemoveAll(run)
	dir := filepath.Join(run, "recipes")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fail("%s", err)
	}
	if err := fleet.UnpackRecipes(data, req.Recipes, dir); err != nil {
		return fail("%s", err)
	}
	planFile := filepath.Join(run, "plan.out")
	argv := []string{"-chdir=" + dir, "plan", "-out=" + planFile, "-no-color"}
	for _, l := range req.Layers {
		if l.Name == "" || strings.ContainsAny(l.Name, "/\x00") || strings.HasPrefix(l.Name, ".") ||
			strings.HasSuffix(l.Name, ".hcl") || strings.HasSuffix(l.Name, ".hcl.json") {
			return fail("the request holds an attribute file named %q", l.Name)
		}
		f, err := os.OpenFile(filepath.Join(dir, l.Name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return fail("cannot write the attribute file %s: %s (does the recipe directory hold a file of that name?)", l.Name, err)
		}
		_, err = f.Write(l.Source)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fail("%s", err)
		}
		argv = append(argv, "-attr-file="+l.Name)
	}
	var stderr bytes.Buffer
	status := Run(c.Ctx, c.Stop, argv, Streams{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Env: c.Env})
	file, err := os.ReadFile(planFile)
	if err != nil {
		file = nil
	}
	return status, stderr.String(), dir, file
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}
