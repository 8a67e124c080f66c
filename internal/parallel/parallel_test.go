package parallel

import (
	"sync/atomic"
	"testing"
)

// TestForCallsEachIndexOnce: every index once, at most workers at a time,
// for counts around the worker count and none.
func TestForCallsEachIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 4}, {1, 4}, {3, 1}, {3, 8}, {1000, 4}, {5, 0}} {
		calls := make([]atomic.Int32, tc.n)
		var running, most atomic.Int32
		For(tc.n, tc.workers, func(i int) {
			r := running.Add(1)
			for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
			}
			calls[i].Add(1)
			running.Add(-1)
		})
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Errorf("n=%d workers=%d: index %d called %d times", tc.n, tc.workers, i, c)
			}
		}
		if m := int(most.Load()); m > max(tc.workers, 1) {
			t.Errorf("n=%d workers=%d: %d at once", tc.n, tc.workers, m)
		}
	}
}
