package altruism

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/fairness"
)

// TestFillNodeIndexedAgrees: over random rounds of node passes (apps with
// shares and usage, asks of both kinds and several shapes, nodes of
// random free room), the indexed pass places exactly what FillNode
// places, for both leftover orders and with and without a cap; each
// round's placements update counts and usage before the next node, as
// the RM core does.
func TestFillNodeIndexedAgrees(t *testing.T) {
	shapes := []fairness.Vector{fairness.New(1024, 1), fairness.New(2048, 1), fairness.New(1024, 2),
		fairness.New(4096, 4).With(fairness.Disk, 50), fairness.New(512, 1).With(fairness.Disk, 10)}
	capacity := fairness.New(16384, 16).With(fairness.Disk, 200)
	var x *AskIndex // reused from trial to trial, as the RM core reuses it
	for trial := range 400 {
		rng := rand.New(rand.NewPCG(uint64(trial), 31))
		nodes := 1 + rng.IntN(6)
		cluster := capacity.Scale(float64(nodes))
		apps := make([]App, 1+rng.IntN(12))
		for i := range apps {
			apps[i] = App{Share: cluster.Scale(rng.Float64() / float64(len(apps))),
				Usage:         fairness.New(float64(rng.IntN(8192)), float64(rng.IntN(8))),
				RemainingWork: float64(rng.IntN(5)), Weight: float64(rng.IntN(3))}
		}
		var asks []Ask
		for a := range apps {
			for range rng.IntN(4) {
				asks = append(asks, Ask{App: a, Kind: AskKind(rng.IntN(2)), Priority: rng.IntN(3),
					Demand: shapes[rng.IntN(len(shapes))], Count: rng.IntN(6)})
			}
		}
		pol := NodePolicy{Order: LeftoverOrder(rng.IntN(3)), Cluster: cluster, LeftoverCap: float64(rng.IntN(3))}
		if x == nil {
			x = NewAskIndex(apps, asks)
		} else {
			x.Reset(apps, asks)
		}
		for n := range nodes {
			free := fairness.New(float64(rng.IntN(16384)), float64(rng.IntN(16))).With(fairness.Disk, float64(rng.IntN(200)))
			want := FillNode(free, capacity, apps, asks, pol)
			got := FillNodeIndexed(free, capacity, apps, asks, pol, x)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("trial %d node %d (%+v): indexed pass differs (-FillNode +indexed):\n%s", trial, n, pol, diff)
			}
			for _, as := range want {
				asks[as.Ask].Count -= as.Count
				apps[asks[as.Ask].App].Usage = apps[asks[as.Ask].App].Usage.Add(asks[as.Ask].Demand.Scale(float64(as.Count)))
			}
		}
	}
}

// TestAskIndexUpdateMatchesReset: filing one app's asks again after they
// changed (kind, demand, priority, count, the app's remaining work) must
// leave the index as a Reset over the same asks builds it, shape by
// shape (the order of the shapes aside).
func TestAskIndexUpdateMatchesReset(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	demands := []fairness.Vector{fairness.New(10, 1), fairness.New(20, 1), fairness.New(10, 3)}
	draw := func(app int) Ask {
		return Ask{App: app, Kind: AskKind(rng.IntN(2)), Priority: rng.IntN(4), Demand: demands[rng.IntN(len(demands))], Count: rng.IntN(3)}
	}
	for round := 0; round < 300; round++ {
		apps := make([]App, 2+rng.IntN(5))
		var asks []Ask
		blocks := []int{0}
		for a := range apps {
			apps[a].RemainingWork = float64(rng.IntN(4))
			for range 1 + rng.IntN(3) {
				asks = append(asks, draw(a))
			}
			blocks = append(blocks, len(asks))
		}
		x := NewAskIndex(apps, asks)
		for range 5 {
			a := rng.IntN(len(apps))
			apps[a].RemainingWork = float64(rng.IntN(4))
			for i := blocks[a]; i < blocks[a+1]; i++ {
				asks[i] = draw(a)
			}
			x.Update(apps, asks, blocks[a], blocks[a+1])
			want := NewAskIndex(apps, asks)
			if got, w := indexLists(x), indexLists(want); !reflect.DeepEqual(got, w) {
				t.Fatalf("round %d: updated index differs from a fresh one:\n got %v\nwant %v", round, got, w)
			}
		}
	}
}

// indexLists is an index's lists by kind and demand, and its defaults.
func indexLists(x *AskIndex) map[string][]int {
	out := map[string][]int{"defaults": append([]int{}, x.defaults...)}
	for k := range x.shapes {
		for _, sh := range x.shapes[k] {
			if len(sh.byPrio) == 0 && len(sh.byWork) == 0 {
				continue
			}
			out[fmt.Sprintf("%d %v prio", k, sh.demand)] = append([]int{}, sh.byPrio...)
			out[fmt.Sprintf("%d %v work", k, sh.demand)] = append([]int{}, sh.byWork...)
		}
	}
	return out
}

// TestLeftoverCapRoundMemory: an ask found over its app's leftover cap
// stays passed over for the rest of the round (NewRound to NewRound), and
// is weighed again in the next round, when its app may hold less. One
// node of 10 vcores; A (less remaining work, first by SRTF) and B each
// ask for ten 1-vcore ALTRUISTIC tasks, shares of 2 vcores, cap 2 (so at
// most 4 vcores held while taking from the leftover within the cap).
func TestLeftoverCapRoundMemory(t *testing.T) {
	capacity := fairness.New(1<<20, 10)
	task := fairness.New(1, 1)
	share := fairness.New(1, 2)
	pol := NodePolicy{Order: SRTFFirst, Cluster: capacity, LeftoverCap: 2}
	const a, b = 0, 1
	tests := []roundMemoryCase{
		// A holds 4: 4+1 > 4, over. B within the cap takes 4 (0..3 +1 <= 4),
		// then the uncapped leftover goes by SRTF: A takes the last 2.
		{"A over its cap", [2]float64{4, 0}, 6, true,
			[]Assignment{{Ask: b, Count: 4, Phase: FromLeftover}, {Ask: a, Count: 2, Phase: FromLeftover}}, []int{a, b}},
		// Same round, a second node pass: A is still over (it only grew).
		{"same round", [2]float64{6, 4}, 1, false,
			[]Assignment{{Ask: a, Count: 1, Phase: FromLeftover}}, []int{a, b}},
		// Next round A's tasks ended: within its cap it comes first again
		// and takes all 3 (0..2 +1 <= 4); nobody was found over the cap.
		{"next round", [2]float64{0, 4}, 3, true,
			[]Assignment{{Ask: a, Count: 3, Phase: FromLeftover}}, nil},
		// A round later A holds 3: one more within its cap, then over it;
		// B is over (4+1 > 4); the uncapped rest goes to A by SRTF.
		{"over again", [2]float64{3, 4}, 4, true,
			[]Assignment{{Ask: a, Count: 4, Phase: FromLeftover}}, []int{a, b}},
	}
	apps := []App{{Share: share, RemainingWork: 1}, {Share: share, RemainingWork: 5}}
	asks := []Ask{{App: a, Kind: Altruistic, Demand: task, Count: 10}, {App: b, Kind: Altruistic, Demand: task, Count: 10}}
	runRoundMemory(t, tests, capacity, apps, asks, pol, func(x *AskIndex) []uint32 { return x.overCap })
}

// TestOverShareRoundMemory works through FillNodeIndexed's memory of the
// DEFAULT asks found over their apps' shares in a round, against
// FillNode, by hand. Cluster <1M MB, 10 vcores>; apps A (remaining work
// 1) and B (5) have shares of 2 vcores and one DEFAULT ask each of
// <1 MB, 1 vcore> tasks; SRTF-first, so A is looked at first in its share.
func TestOverShareRoundMemory(t *testing.T) {
	capacity := fairness.New(1<<20, 10)
	task := fairness.New(1, 1)
	share := fairness.New(1<<10, 2)
	pol := NodePolicy{Order: SRTFFirst, Cluster: capacity}
	const a, b = 0, 1
	tests := []roundMemoryCase{
		// A holds its share: over. B takes 2 within its share, then is
		// over too. Beyond the shares DRF alternates: A and B both hold
		// 0.2 of the cluster (A, the lower index, first), then B at 0.2
		// against A's 0.3, then A at 0.3 against B's 0.3.
		{"both over after the share", [2]float64{2, 0}, 5, true,
			[]Assignment{{Ask: b, Count: 2, Phase: InShare}, {Ask: a, Count: 1, Phase: OverShare},
				{Ask: b, Count: 1, Phase: OverShare}, {Ask: a, Count: 1, Phase: OverShare}}, []int{a, b}},
		// Same round, the next node: both are remembered over; DRF gives
		// the one free vcore to B (0.3 against A's 0.4).
		{"same round", [2]float64{4, 3}, 1, false,
			[]Assignment{{Ask: b, Count: 1, Phase: OverShare}}, []int{a, b}},
		// Next round A's tasks ended: within its share it takes 2 and is
		// over; B is over; DRF gives the last vcore to A (0.2 against 0.3).
		{"next round", [2]float64{0, 3}, 3, true,
			[]Assignment{{Ask: a, Count: 2, Phase: InShare}, {Ask: a, Count: 1, Phase: OverShare}}, []int{a, b}},
		// A round in which A fills its share and B takes the last vcore
		// within its own: only A was found over.
		{"only A over", [2]float64{0, 0}, 3, true,
			[]Assignment{{Ask: a, Count: 2, Phase: InShare}, {Ask: b, Count: 1, Phase: InShare}}, []int{a}},
	}
	apps := []App{{Share: share, RemainingWork: 1}, {Share: share, RemainingWork: 5}}
	asks := []Ask{{App: a, Kind: Default, Demand: task, Count: 10}, {App: b, Kind: Default, Demand: task, Count: 10}}
	runRoundMemory(t, tests, capacity, apps, asks, pol, func(x *AskIndex) []uint32 { return x.overShare })
}

// roundMemoryCase is a node pass of apps A (0) and B (1) in a table of
// passes, some starting a round: what they hold before it, the node's free
// vcores, what it places, and which asks the index then remembers.
type roundMemoryCase struct {
	name         string
	usage        [2]float64 // vcores held by A and B
	free         float64
	newRound     bool
	want         []Assignment
	wantMemoryOf []int // asks remembered this round (memory's entries equal to the round)
}

// runRoundMemory runs the passes against FillNode and FillNodeIndexed
// over one index, checking the index's memory after each.
func runRoundMemory(t *testing.T, tests []roundMemoryCase, capacity fairness.Vector, apps []App, asks []Ask, pol NodePolicy,
	memory func(*AskIndex) []uint32) {
	t.Helper()
	x := NewAskIndex(apps, asks)
	for _, tc := range tests {
		if tc.newRound {
			x.NewRound()
		}
		apps[0].Usage, apps[1].Usage = fairness.New(0, tc.usage[0]), fairness.New(0, tc.usage[1])
		free := fairness.New(1<<19, tc.free)
		if ref := FillNode(free, capacity, apps, asks, pol); !reflect.DeepEqual(ref, tc.want) {
			t.Fatalf("%s: FillNode placed %v, the hand-worked %v", tc.name, ref, tc.want)
		}
		if got := FillNodeIndexed(free, capacity, apps, asks, pol, x); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: FillNodeIndexed placed %v, want %v", tc.name, got, tc.want)
		}
		var remembered []int
		for i, r := range memory(x) {
			if r == x.round {
				remembered = append(remembered, i)
			}
		}
		if !reflect.DeepEqual(remembered, tc.wantMemoryOf) {
			t.Errorf("%s: asks remembered %v, want %v", tc.name, remembered, tc.wantMemoryOf)
		}
	}
}
