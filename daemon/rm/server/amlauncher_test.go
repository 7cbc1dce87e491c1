package server

import (
	"strconv"
	"testing"
	"time"
)

// TestAMLaunchesAtMostThreadCountAtOnce: with
// yarn.resourcemanager.amlauncher.thread-count k, the RM has at most k AM
// launches under way at once; the others wait for one to end, and every
// AM is started in the end.
func TestAMLaunchesAtMostThreadCountAtOnce(t *testing.T) {
	for _, k := range []int{1, 2} {
		r := startRM(t, "yarn.resourcemanager.amlauncher.thread-count="+strconv.Itoa(k))
		nm := startNM(t, r.Addr("tracker"), 16384, 16)
		gate := make(chan struct{})
		nm.mu.Lock()
		nm.gate = gate
		nm.mu.Unlock()
		ac := clientOf(t, r, "alice")
		for range 4 {
			submit(t, ac, "default", 1024)
		}
		nm.beat()
		inStart := func() (int, int) {
			nm.mu.Lock()
			defer nm.mu.Unlock()
			return nm.inStart, nm.maxInStart
		}
		deadline := time.Now().Add(5 * time.Second)
		for n, _ := inStart(); n < k && time.Now().Before(deadline); n, _ = inStart() {
			time.Sleep(5 * time.Millisecond)
		}
		// Give any launch beyond k the time to arrive.
		time.Sleep(300 * time.Millisecond)
		if n, most := inStart(); n != k || most != k {
			t.Errorf("thread-count %d: %d launches under way, at most %d at once", k, n, most)
		}
		close(gate)
		nm.waitStarts(4)
		if _, most := inStart(); most != k {
			t.Errorf("thread-count %d: %d launches were under way at once", k, most)
		}
	}
}
