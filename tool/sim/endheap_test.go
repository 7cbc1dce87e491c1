package sim

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/loomrm/loom/rm"
)

// TestEndHeapOrder pushes and pops tasks in a random interleaving and
// checks every pop against the least task held, by end then container:
// the simulator's order of simultaneous ends depends on it.
func TestEndHeapOrder(t *testing.T) {
	byEnd := func(a, b task) int {
		return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.cid, b.cid))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var h endHeap
	var held []task // what the heap should hold, sorted
	pops := 0
	pop := func() {
		got, want := h.pop(), held[0]
		held = held[1:]
		if got != want {
			t.Fatalf("pop %d: got end %v container %d, want end %v container %d", pops, got.end, got.cid, want.end, want.cid)
		}
		pops++
	}
	for cid := rm.ContainerID(1); cid <= 3000; cid++ {
		// Few distinct ends, so that ties on end are common.
		tk := task{cid: rm.ContainerID(rng.IntN(1 << 20)), end: time.Duration(rng.IntN(40)) * time.Second}
		h.push(tk)
		i, _ := slices.BinarySearchFunc(held, tk, byEnd)
		held = slices.Insert(held, i, tk)
		for rng.IntN(3) == 0 && len(held) > 0 {
			pop()
		}
	}
	for len(held) > 0 {
		pop()
	}
	if len(h) != 0 {
		t.Fatalf("%d tasks left in the heap after %d pops", len(h), pops)
	}
}
