package am

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRunTable drives the table and a map side by side through puts in
// and out of id order, repeated puts, takes of running, ended and unknown
// containers, and enough ends to sweep many times; after every step the
// two must hold the same tasks.
func TestRunTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var tab runTable
	want := map[int64]run{}
	next := int64(1)
	check := func(step int) {
		t.Helper()
		if tab.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, tab.len(), len(want))
		}
		var ids []int64
		tab.each(func(id int64, r run) {
			ids = append(ids, id)
			if w, ok := want[id]; !ok || w != r {
				t.Fatalf("step %d: container %d holds %+v, want %+v (filed %v)", step, id, r, w, ok)
			}
		})
		if !slices.IsSorted(ids) || len(ids) != len(want) {
			t.Fatalf("step %d: each gave %v, want %d ids in order", step, ids, len(want))
		}
	}
	for step := 0; step < 5000; step++ {
		switch op := rng.IntN(10); {
		case op < 5: // a new container, mostly the next id
			id := next
			if rng.IntN(8) == 0 && next > 1 {
				id = 1 + rng.Int64N(next) // an older id, maybe filed
			} else {
				next++
			}
			r := run{stage: int32(rng.IntN(4)), task: int32(step), attempt: 1, node: "n"}
			tab.put(id, r)
			want[id] = r
		default: // an end, of a running container or not
			id := 1 + rng.Int64N(next)
			r, ok := tab.take(id)
			w, wok := want[id]
			if ok != wok || r != w {
				t.Fatalf("step %d: take(%d) = %+v %v, want %+v %v", step, id, r, ok, w, wok)
			}
			delete(want, id)
		}
		check(step)
	}
}

func TestRunTableCases(t *testing.T) {
	a, b := run{stage: 0, task: 1}, run{stage: 2, task: 5}
	for _, tc := range []struct {
		name string
		do   func(*runTable) (run, bool)
		want run
		ok   bool
		live int
	}{
		{"unknown in an empty table", func(t *runTable) (run, bool) { return t.take(3) }, run{}, false, 0},
		{"filed then taken", func(t *runTable) (run, bool) { t.put(3, a); return t.take(3) }, a, true, 0},
		{"taken twice", func(t *runTable) (run, bool) { t.put(3, a); t.take(3); return t.take(3) }, run{}, false, 0},
		{"an older id filed after a newer one", func(t *runTable) (run, bool) { t.put(9, a); t.put(4, b); return t.take(4) }, b, true, 1},
		{"a repeated put replaces", func(t *runTable) (run, bool) { t.put(4, a); t.put(4, b); return t.take(4) }, b, true, 0},
		{"a put over an ended slot revives it", func(t *runTable) (run, bool) {
			t.put(4, a)
			t.put(5, a)
			t.take(4)
			t.put(4, b)
			return t.take(4)
		}, b, true, 1},
	} {
		var tab runTable
		r, ok := tc.do(&tab)
		if r != tc.want || ok != tc.ok || tab.len() != tc.live {
			t.Errorf("%s: got %+v %v live %d, want %+v %v live %d", tc.name, r, ok, tab.len(), tc.want, tc.ok, tc.live)
		}
	}
}
