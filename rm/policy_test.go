package rm

import (
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

func TestSJFRunsShortestFirst(t *testing.T) {
	// Three cores free. App 0's critical path is 30 s, app 1's 10 s: app 1's
	// two tasks go first, then one of app 0's.
	n := NodeState{Free: fairness.New(30, 3), Capacity: fairness.New(30, 3), Cluster: fairness.New(30, 3)}
	c := &Candidates{
		Apps: []AppView{{CriticalTime: 30e9, Weight: 1}, {CriticalTime: 10e9, Weight: 1}},
		Asks: []altruism.Ask{
			{App: 0, Demand: fairness.New(10, 1), Count: 5},
			{App: 1, Demand: fairness.New(10, 1), Count: 2},
		},
	}
	want := []altruism.Assignment{
		{Ask: 1, Count: 2, Phase: altruism.FromLeftover},
		{Ask: 0, Count: 1, Phase: altruism.FromLeftover},
	}
	if diff := cmp.Diff(want, SJF().Fill(n, c)); diff != "" {
		t.Errorf("SJF placements (-want +got):\n%s", diff)
	}
}
