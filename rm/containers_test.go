package rm

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestContainerTable runs random puts and deletes against a map: IDs
// mostly increasing, as the core hands them out, some from an earlier
// epoch far below and some far above (a restart's recovered containers),
// so that the window moves, empties and re-anchors over IDs the map
// holds. Every lookup, the count and the ID-ordered walk must agree.
func TestContainerTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var tab containerTable
	ref := map[ContainerID]Container{}
	next := ContainerID(1 << 40)
	var live []ContainerID
	for step := 0; step < 200000; step++ {
		switch r := rng.IntN(100); {
		case r < 50 || len(live) == 0:
			var id ContainerID
			switch rng.IntN(50) {
			case 0:
				id = ContainerID(1 + rng.IntN(1<<20)) // an earlier epoch
			case 1:
				id = next + ContainerID(pageSize*maxPages+rng.IntN(1<<30)) // beyond the window
			default:
				next += ContainerID(1 + rng.IntN(3))
				id = next
			}
			if _, ok := ref[id]; ok {
				continue
			}
			k := Container{ID: id, App: AppID(rng.IntN(10)), Priority: step}
			if got := tab.Put(k); *got != k {
				t.Fatalf("step %d: Put(%d) stored %+v", step, id, *got)
			}
			ref[id] = k
			live = append(live, id)
		default:
			// Mostly the oldest, as containers end roughly in order.
			i := rng.IntN(min(len(live), 1+rng.IntN(64)))
			id := live[i]
			live = slices.Delete(live, i, i+1)
			want, old := ref[id], tab.Get(id)
			tab.Delete(id)
			delete(ref, id)
			if old == nil || *old != want {
				t.Fatalf("step %d: Get(%d) = %v before Delete (or changed by it), want %+v", step, id, old, want)
			}
			if tab.Get(id) != nil {
				t.Fatalf("step %d: %d still there after Delete", step, id)
			}
		}
		if tab.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, tab.Len(), len(ref))
		}
		if step%5000 == 0 {
			checkTable(t, step, &tab, ref)
		}
	}
	checkTable(t, -1, &tab, ref)
	for id := range ref {
		tab.Delete(id)
	}
	if tab.Len() != 0 || len(tab.pages) != 0 {
		t.Fatalf("emptied table: Len %d, %d pages", tab.Len(), len(tab.pages))
	}
}

func checkTable(t *testing.T, step int, tab *containerTable, ref map[ContainerID]Container) {
	t.Helper()
	for id, k := range ref {
		if got := tab.Get(id); got == nil || *got != k {
			t.Fatalf("step %d: Get(%d) = %v, want %+v", step, id, got, k)
		}
	}
	var walked []ContainerID
	tab.All(func(k *Container) { walked = append(walked, k.ID) })
	want := make([]ContainerID, 0, len(ref))
	for id := range ref {
		want = append(want, id)
	}
	slices.Sort(want)
	if !slices.Equal(walked, want) {
		t.Fatalf("step %d: All walked %d containers, want %d in ID order", step, len(walked), len(want))
	}
}
