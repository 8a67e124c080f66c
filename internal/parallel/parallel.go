// Package parallel runs the iterations of a loop on a bounded number of
// goroutines: parsing pieces of a file, evaluating blocks, planning and
// checking resources. Each iteration writes only its own results (an
// index of the caller's slice), so the caller needs no lock.
package parallel

import (
	"sync"
	"sync/atomic"
)

// For calls f(i) for every i in [0, n), on at most workers goroutines
// that take the indexes in order, and returns when every call has. With
// one worker (or one iteration) it calls f in the caller's goroutine.
func For(n, workers int, f func(i int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}
