package rm

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

func TestTetrisBalancesItsTerms(t *testing.T) {
	// An empty node <100, 10>. A asks <40,4> ×2 with the most work left
	// (10); B asks <10,1> ×1 with none left.
	//   alignment: A 0.4·1 + 0.4·1 = 0.8, B 0.1 + 0.1 = 0.2
	//   work term: A 1 − 10/10 = 0,       B 1 − 0/10 = 1
	//   ε = (0.8 + 0.2) / (0 + 1) = 1, so A scores 0.8, B 1.2: B first.
	// Pure alignment (or a small fixed work weight) would start A.
	// Then A twice: <90,9> → <50,5> → <10,1>.
	n := NodeState{Free: fairness.New(100, 10), Capacity: fairness.New(100, 10), Cluster: fairness.New(100, 10)}
	c := &Candidates{
		Apps: []AppView{{RemainingWork: 10, Weight: 1}, {RemainingWork: 0, Weight: 1}},
		Asks: []altruism.Ask{
			{App: 0, Demand: fairness.New(40, 4), Count: 2},
			{App: 1, Demand: fairness.New(10, 1), Count: 1},
		},
	}
	want := []altruism.Assignment{
		{Ask: 1, Count: 1, Phase: altruism.FromLeftover},
		{Ask: 0, Count: 2, Phase: altruism.FromLeftover},
	}
	if diff := cmp.Diff(want, Tetris().Fill(n, c)); diff != "" {
		t.Errorf("Tetris placements (-want +got):\n%s", diff)
	}
}

func TestSJFRunsShortestRemainingWorkFirst(t *testing.T) {
	// Three cores free. App 0 has 5 units of work left but a critical
	// path of 10 s; app 1 has 50 units left on a 1 s critical path (a
	// wide job). SRTF goes by work: app 0 first, three of its tasks; a
	// critical-path order would have put app 1's two tasks first.
	n := NodeState{Free: fairness.New(30, 3), Capacity: fairness.New(30, 3), Cluster: fairness.New(30, 3)}
	c := &Candidates{
		Apps: []AppView{{RemainingWork: 5, CriticalTime: 10e9, Weight: 1}, {RemainingWork: 50, CriticalTime: 1e9, Weight: 1}},
		Asks: []altruism.Ask{
			{App: 0, Demand: fairness.New(10, 1), Count: 5},
			{App: 1, Demand: fairness.New(10, 1), Count: 2},
		},
	}
	want := []altruism.Assignment{
		{Ask: 0, Count: 3, Phase: altruism.FromLeftover},
	}
	if diff := cmp.Diff(want, SJF().Fill(n, c)); diff != "" {
		t.Errorf("SJF placements (-want +got):\n%s", diff)
	}
}

// picks are leftover placements of the asks given, one task each, merged
// as a node pass merges them.
func picks(as ...int) []altruism.Assignment {
	var out []altruism.Assignment
	for _, a := range as {
		out = appendPlacement(out, a, altruism.FromLeftover)
	}
	return out
}

func TestTetrisFairnessKnob(t *testing.T) {
	// A cluster and node of <100, 10>, empty. Three apps, each with a
	// share of <30, 3> (dominant share 0.3), each asking for one-core
	// tasks. App 0 holds <20, 2> elsewhere (deficit share − usage = 0.1),
	// app 1 nothing (0.3), app 2 <10, 1> (0.2). Alignments are equal, so
	// Tetris's work term decides: app 0 (work 1) before app 2 (5) before
	// app 1 (9). Each pick recomputes the deficits; ties go to the lower
	// app; a placed task lowers its app's deficit by 0.1.
	cl := fairness.New(100, 10)
	share := fairness.New(30, 3)
	apps := []AppView{
		{Share: share, Usage: fairness.New(20, 2), RemainingWork: 1, Weight: 1},
		{Share: share, Usage: fairness.Vector{}, RemainingWork: 9, Weight: 1},
		{Share: share, Usage: fairness.New(10, 1), RemainingWork: 5, Weight: 1},
	}
	asks := []altruism.Ask{
		{App: 0, Demand: fairness.New(10, 1), Count: 3},
		{App: 1, Demand: fairness.New(10, 1), Count: 4},
		{App: 2, Demand: fairness.New(10, 1), Count: 3},
	}
	tests := []struct {
		f    float64
		want []altruism.Assignment
	}{
		// Every app considered: by work, 0 ×3, 2 ×3, 1 ×4 fill 10 cores.
		{0, picks(0, 0, 0, 2, 2, 2, 1, 1, 1, 1)},
		// Only the app furthest below its share. Deficits (0.1, 0.3, 0.2):
		// 1 → (.1, .2, .2); tie → 1 → (.1, .1, .2); 2 → (.1, .1, .1);
		// tie → 0 → (0, .1, .1); 1; 2; then all at 0: 0, 1, 2 (app 2 is
		// done); all at −0.1 between apps 0 and 1: 0.
		{1, picks(1, 1, 2, 0, 1, 2, 0, 1, 2, 0)},
		// ⌈(1−f)·N⌉ of the N apps with a fitting task, by deficit; Tetris's
		// score within. N = 3 → 2 apps: {1, 2} → 2 → (.1, .3, .1);
		// {1, 0} (tie to the lower) → 0 → (0, .3, .1); {1, 2} → 2;
		// {1, 0} → 0 → (−.1, .3, 0); {1, 2} → 2 (done). N = 2 → 1 app:
		// app 1 until its deficit −0.1 (four tasks, done), then app 0.
		{0.5, picks(2, 0, 2, 0, 2, 1, 1, 1, 1, 0)},
	}
	for _, tc := range tests {
		n := NodeState{Free: cl, Capacity: cl, Cluster: cl}
		c := &Candidates{Apps: apps, Asks: asks}
		if diff := cmp.Diff(tc.want, TetrisFair(tc.f).Fill(n, c)); diff != "" {
			t.Errorf("f=%g placements (-want +got):\n%s", tc.f, diff)
		}
	}
}

func TestDRFPicksByShareThenPriorityThenApp(t *testing.T) {
	// A cluster of <100, 10>; every placement goes to the fitting ask of
	// the app with the lowest dominant share over its weight, ties to the
	// lower priority value, then the lower app, then the earlier ask; a
	// placement raises its app's share at once.
	cl := fairness.New(100, 10)
	tests := []struct {
		name string
		free fairness.Vector
		apps []AppView
		asks []altruism.Ask
		want []altruism.Assignment
	}{
		{
			// Shares 0, 0, 0.1/2 = 0.05. Apps 0 and 1 tie at 0: app 1's
			// priority-1 ask (2) first → app 1 at 0.3, free <20,2>; app 0
			// (1) → 0.1, free <10,1>; app 2 (0.05) takes the last core.
			name: "share, then priority, weighted",
			free: fairness.New(50, 5),
			apps: []AppView{{Weight: 1}, {Weight: 1}, {Usage: fairness.New(10, 1), Weight: 2}},
			asks: []altruism.Ask{
				{App: 1, Priority: 2, Demand: fairness.New(10, 1), Count: 2},
				{App: 0, Priority: 2, Demand: fairness.New(10, 1), Count: 2},
				{App: 1, Priority: 1, Demand: fairness.New(30, 3), Count: 1},
				{App: 2, Priority: 0, Demand: fairness.New(10, 1), Count: 3},
			},
			want: picks(2, 1, 3),
		},
		{
			// Equal shares and priorities: the lower app, although its ask
			// comes second. 0 (ask 1) → 0.1; app 1 (ask 0) → 0.1; tie
			// again → app 0.
			name: "lower app on a tie",
			free: fairness.New(30, 3),
			apps: []AppView{{Weight: 1}, {Weight: 1}},
			asks: []altruism.Ask{
				{App: 1, Priority: 2, Demand: fairness.New(10, 1), Count: 2},
				{App: 0, Priority: 2, Demand: fairness.New(10, 1), Count: 2},
			},
			want: picks(1, 0, 1),
		},
		{
			// One app, two asks at one priority: the earlier ask first,
			// then the other fills what is left.
			name: "earlier ask of an app",
			free: fairness.New(30, 3),
			apps: []AppView{{Weight: 1}},
			asks: []altruism.Ask{
				{App: 0, Priority: 1, Demand: fairness.New(20, 2), Count: 1},
				{App: 0, Priority: 1, Demand: fairness.New(10, 1), Count: 2},
			},
			want: picks(0, 1),
		},
		{
			// App 0 (share 0) places one <20,2> task and rises to 0.2,
			// above app 1's 0.1, but its next task no longer fits <5,1>:
			// app 1's small ask takes the rest.
			name: "an ask that stops fitting",
			free: fairness.New(25, 3),
			apps: []AppView{{Weight: 1}, {Usage: fairness.New(10, 1), Weight: 1}},
			asks: []altruism.Ask{
				{App: 0, Priority: 1, Demand: fairness.New(20, 2), Count: 2},
				{App: 1, Priority: 1, Demand: fairness.New(5, 1), Count: 3},
			},
			want: picks(0, 1),
		},
	}
	for _, tc := range tests {
		n := NodeState{Free: tc.free, Capacity: cl, Cluster: cl}
		c := &Candidates{Apps: tc.apps, Asks: tc.asks}
		if diff := cmp.Diff(tc.want, DRF().Fill(n, c)); diff != "" {
			t.Errorf("%s: placements (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestDRFRoundMemoryMatchesFreshPasses: within a round DRF keeps its
// demands' fits and the apps' shares from node to node. Over random rounds, the placements it
// makes node after node must be those of a pass that remembers nothing
// (hand-built candidates, gen 0), with the core's bookkeeping between
// nodes: counts lowered and usage raised by what was granted, which may
// be less than was placed (a queue's room), and in narrowed rounds counts
// lowered for one node only (locality, limits, partitions).
func TestDRFRoundMemoryMatchesFreshPasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cl := fairness.New(1000, 100)
	shapes := []fairness.Vector{fairness.New(10, 1), fairness.New(20, 1), fairness.New(10, 3)}
	for round := 0; round < 500; round++ {
		apps := make([]AppView, 1+rng.IntN(6))
		for i := range apps {
			apps[i] = AppView{Usage: fairness.New(float64(rng.IntN(5)*10), float64(rng.IntN(5))), Weight: float64(1 + rng.IntN(3))}
		}
		var asks []altruism.Ask
		for a := range apps {
			for range rng.IntN(4) {
				asks = append(asks, altruism.Ask{App: a, Priority: rng.IntN(3), Demand: shapes[rng.IntN(len(shapes))], Count: 1 + rng.IntN(4)})
			}
		}
		narrowed := round%3 == 0
		kept := &Candidates{Apps: slices.Clone(apps), Asks: slices.Clone(asks), gen: uint64(round + 1)}
		for node := 0; node < 6; node++ {
			n := NodeState{Free: fairness.New(float64(10*rng.IntN(6)), float64(rng.IntN(7))), Capacity: fairness.New(100, 10), Cluster: cl}
			outstanding := make([]int, len(kept.Asks))
			for i := range kept.Asks {
				outstanding[i] = kept.Asks[i].Count
				if narrowed && rng.IntN(3) == 0 {
					kept.Asks[i].Count = rng.IntN(kept.Asks[i].Count + 1)
				}
			}
			fresh := &Candidates{Apps: slices.Clone(kept.Apps), Asks: slices.Clone(kept.Asks)}
			want := DRF().Fill(n, fresh)
			got := DRF().Fill(n, kept)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("round %d node %d: placements with the round's memory differ from a fresh pass (-fresh +kept):\n%s", round, node, diff)
			}
			granted := make([]int, len(kept.Asks))
			for _, as := range got { // the core's grant, at times short of the placement
				k := &kept.Asks[as.Ask]
				if rng.IntN(4) == 0 {
					as.Count = rng.IntN(as.Count + 1)
				}
				granted[as.Ask] += as.Count
				kept.Apps[k.App].Usage = kept.Apps[k.App].Usage.Add(k.Demand.Scale(float64(as.Count)))
				kept.usageChanged(k.App)
			}
			for i := range kept.Asks {
				kept.Asks[i].Count = outstanding[i] - granted[i]
			}
		}
	}
}
