package fleet

import (
	"crypto/sha256"
	"runtime"
	"sort"

	"github.com/toquehq/toque/internal/parallel"
)

// Class is a set of hosts whose changes are identical: their plans render
// to the same text once what names the host is left out (command/views
// decides what that text is: the changes and the summary, not the host's
// name, the plan's digest or when it was made).
type Class struct {
	// Hosts are the class's hosts, in the order given to Group.
	Hosts []string
	// Text is the changes they share.
	Text string
}

// GroupChanges puts hosts whose changes render to the same text in one class.
// render gives a host's text; a host it fails for is left out and its
// error returned.
//
// Its cost is one rendering and one sha256 per host, and one map insertion
// per host: linear in the total size of the plans, whatever the number of
// classes. Hosts are rendered in parallel; only one text per class is
// kept. Classes come largest first, then in the order of their first host.
func GroupChanges(hosts []string, render func(alias string) (string, error)) ([]Class, map[string]error) {
	type rendered struct {
		sum  [32]byte
		text string
		err  error
	}
	out := make([]rendered, len(hosts))
	parallel.For(len(hosts), runtime.GOMAXPROCS(0), func(i int) {
		text, err := render(hosts[i])
		out[i] = rendered{sum: sha256.Sum256([]byte(text)), text: text, err: err}
	})
	index := map[[32]byte]int{}
	var classes []Class
	var errs map[string]error
	for i, r := range out {
		if r.err != nil {
			if errs == nil {
				errs = map[string]error{}
			}
			errs[hosts[i]] = r.err
			continue
		}
		j, ok := index[r.sum]
		if !ok {
			j = len(classes)
			index[r.sum] = j
			classes = append(classes, Class{Text: r.text})
		}
		classes[j].Hosts = append(classes[j].Hosts, hosts[i])
	}
	sort.SliceStable(classes, func(a, b int) bool { return len(classes[a].Hosts) > len(classes[b].Hosts) })
	return classes, errs
}
