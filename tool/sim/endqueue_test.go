package sim

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/loomrm/loom/rm"
)

// TestEndQueueOrder pushes and pops tasks in a random interleaving and
// checks every pop against the least task held, by end then container:
// the simulator's order of simultaneous ends depends on it. The cases
// cover the simulator's own pattern (time moving forward, container ids
// growing, a few run times, so ends tie often) and tasks that break a
// lane's order (ids out of order, time standing still), which the queue
// must put in their place.
func TestEndQueueOrder(t *testing.T) {
	byEnd := func(a, b task) int {
		return cmp.Or(cmp.Compare(a.end, b.end), cmp.Compare(a.cid, b.cid))
	}
	runs := []time.Duration{time.Second, 2 * time.Second, 1500 * time.Millisecond, 4 * time.Second, 40 * time.Second}
	tests := []struct {
		name string
		// next draws a task's start and container, given the last start.
		next func(rng *rand.Rand, now time.Duration, cid rm.ContainerID) (time.Duration, rm.ContainerID)
	}{
		{"as the simulator starts tasks", func(rng *rand.Rand, now time.Duration, cid rm.ContainerID) (time.Duration, rm.ContainerID) {
			return now + time.Duration(rng.IntN(3))*500*time.Millisecond, cid + 1
		}},
		{"ids out of order", func(rng *rand.Rand, now time.Duration, cid rm.ContainerID) (time.Duration, rm.ContainerID) {
			return now + time.Duration(rng.IntN(2))*time.Second, rm.ContainerID(rng.IntN(1 << 20))
		}},
		{"starts out of order", func(rng *rand.Rand, now time.Duration, cid rm.ContainerID) (time.Duration, rm.ContainerID) {
			return time.Duration(rng.IntN(40)) * time.Second, cid + 1
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			var q endQueue
			var held []task // what the queue should hold, sorted
			pops := 0
			pop := func() {
				if p, ok := q.peek(); !ok || p != held[0] {
					t.Fatalf("peek %d: got %+v (%v), want %+v", pops, p, ok, held[0])
				}
				got, want := q.pop(), held[0]
				held = held[1:]
				if got != want {
					t.Fatalf("pop %d: got end %v container %d, want end %v container %d", pops, got.end, got.cid, want.end, want.cid)
				}
				pops++
			}
			now, cid := time.Duration(0), rm.ContainerID(0)
			for range 5000 {
				now, cid = tc.next(rng, now, cid)
				tk := task{cid: cid, end: now + runs[rng.IntN(len(runs))]}
				q.push(tk, now)
				i, _ := slices.BinarySearchFunc(held, tk, byEnd)
				held = slices.Insert(held, i, tk)
				for rng.IntN(3) == 0 && len(held) > 0 {
					pop()
				}
				if q.Len() != len(held) {
					t.Fatalf("Len %d, want %d", q.Len(), len(held))
				}
			}
			for len(held) > 0 {
				pop()
			}
			if _, ok := q.peek(); ok || q.Len() != 0 {
				t.Fatalf("%d tasks left after %d pops", q.Len(), pops)
			}
		})
	}
}
