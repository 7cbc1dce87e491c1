package altruism

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/packing"
)

func TestFillNode(t *testing.T) {
	node := fairness.New(100, 10)
	// A has more work left (10) than B (2). Shares are half the node each.
	apps := []App{
		{Share: fairness.New(50, 5), RemainingWork: 10},
		{Share: fairness.New(50, 5), RemainingWork: 2},
	}
	asks := []Ask{
		{App: 0, Kind: Default, Priority: 0, Demand: fairness.New(10, 1), Count: 3},
		{App: 0, Kind: Altruistic, Priority: 1, Demand: fairness.New(10, 1), Count: 5},
		{App: 1, Kind: Default, Priority: 0, Demand: fairness.New(20, 1), Count: 1},
		{App: 1, Kind: Altruistic, Priority: 1, Demand: fairness.New(5, 1), Count: 10},
	}
	shortFirst := []App{
		{Share: fairness.New(50, 5), RemainingWork: 1},
		{Share: fairness.New(50, 5), RemainingWork: 9},
	}
	shortAsks := []Ask{
		{App: 0, Kind: Default, Demand: fairness.New(10, 1), Count: 3},
		{App: 1, Kind: Default, Demand: fairness.New(20, 1), Count: 1},
	}
	tests := []struct {
		name  string
		free  fairness.Vector
		apps  []App
		asks  []Ask
		order LeftoverOrder
		want  []Assignment
	}{
		{
			// In share, by alignment with free <100,10>: B's <20,1> scores
			// 0.2·1 + 0.1·1 = 0.3 over A's <10,1> 0.2, so B first; then
			// A's three (within its <50,5>). Free is then <50,6>. The
			// leftover goes SRTF-first: B (2 < 10), six <5,1> tasks use up
			// the cores; nothing is left for A's ALTRUISTIC asks.
			name: "efficiency first",
			free: node, apps: apps, asks: asks, order: EfficiencyFirst,
			want: []Assignment{
				{Ask: 2, Count: 1, Phase: InShare},
				{Ask: 0, Count: 3, Phase: InShare},
				{Ask: 3, Count: 6, Phase: FromLeftover},
			},
		},
		{
			// In share SRTF-first: B then A, the same here. The leftover
			// <50,6> is packed: A's <10,1> aligns 0.1·0.5 + 0.1·0.6 = 0.11
			// over B's <5,1> 0.085, and keeps leading as free shrinks;
			// five take the remaining memory, and B's no longer fit.
			name: "JCT first",
			free: node, apps: apps, asks: asks, order: JCTFirst,
			want: []Assignment{
				{Ask: 2, Count: 1, Phase: InShare},
				{Ask: 0, Count: 3, Phase: InShare},
				{Ask: 1, Count: 5, Phase: FromLeftover},
			},
		},
		{
			// A already holds <10,1> of its <20,2> share: one DEFAULT task
			// fits in share, the other two are served beyond it (work
			// conservation), as nothing else asks.
			name: "DEFAULT beyond the share is served over share",
			free: node,
			apps: []App{{Share: fairness.New(20, 2), Usage: fairness.New(10, 1)}},
			asks: []Ask{{App: 0, Kind: Default, Demand: fairness.New(10, 1), Count: 3}},
			want: []Assignment{
				{Ask: 0, Count: 1, Phase: InShare},
				{Ask: 0, Count: 2, Phase: OverShare},
			},
		},
		{
			// Both apps are past their <10,1> shares, A holding 3 cores and
			// B 1 of the node's 10. Beyond the share, DRF order: the app
			// holding less goes next, ties to the lower app. Dominant
			// shares after each task (A, B): B .2, B .3, tie → A .4,
			// B .4, A .5, B .5, A .6, B .6 (B's five are done), A .7, A .8.
			name: "beyond the share, DRF order",
			free: node,
			apps: []App{
				{Share: fairness.New(10, 1), Usage: fairness.New(30, 3)},
				{Share: fairness.New(10, 1), Usage: fairness.New(10, 1)},
			},
			asks: []Ask{
				{App: 0, Kind: Default, Demand: fairness.New(10, 1), Count: 5},
				{App: 1, Kind: Default, Demand: fairness.New(10, 1), Count: 5},
			},
			want: []Assignment{
				{Ask: 1, Count: 2, Phase: OverShare},
				{Ask: 0, Count: 1, Phase: OverShare},
				{Ask: 1, Count: 1, Phase: OverShare},
				{Ask: 0, Count: 1, Phase: OverShare},
				{Ask: 1, Count: 1, Phase: OverShare},
				{Ask: 0, Count: 1, Phase: OverShare},
				{Ask: 1, Count: 1, Phase: OverShare},
				{Ask: 0, Count: 2, Phase: OverShare},
			},
		},
		{
			// A is at its share and asks two more DEFAULT tasks; B yields
			// and asks three ALTRUISTIC. The leftover goes to the
			// ALTRUISTIC asks first: A's excess waits for what remains
			// (nothing, on a three-core node).
			name: "the leftover goes to ALTRUISTIC asks before DEFAULT beyond the share",
			free: fairness.New(30, 3),
			apps: []App{
				{Share: fairness.New(10, 1), Usage: fairness.New(10, 1), RemainingWork: 1},
				{Share: fairness.New(50, 5), RemainingWork: 5},
			},
			asks: []Ask{
				{App: 0, Kind: Default, Demand: fairness.New(10, 1), Count: 2},
				{App: 1, Kind: Altruistic, Demand: fairness.New(10, 1), Count: 3},
			},
			want: []Assignment{{Ask: 1, Count: 3, Phase: FromLeftover}},
		},
		{
			// Within the shares, by alignment or by remaining work. A (work
			// 1) asks 3 DEFAULT <10,1>, B (work 9) 1 DEFAULT <20,1>; both
			// shares are <50,5>; free <30,3>. Alignment: B's 0.2·0.3 +
			// 0.1·0.3 = 0.09 beats A's 0.06, so B takes 2 of the 3 free
			// GB-units and A gets one task. SRTF: A (less work) first, its
			// three tasks fill the node; B waits for the next.
			name: "in share, efficiency first packs by alignment",
			free: fairness.New(30, 3), apps: shortFirst, asks: shortAsks, order: EfficiencyFirst,
			want: []Assignment{{Ask: 1, Count: 1, Phase: InShare}, {Ask: 0, Count: 1, Phase: InShare}},
		},
		{
			name: "in share, srtf serves the job with the least work left first",
			free: fairness.New(30, 3), apps: shortFirst, asks: shortAsks, order: SRTFFirst,
			want: []Assignment{{Ask: 0, Count: 3, Phase: InShare}},
		},
		{
			name: "a full node places nothing",
			free: fairness.New(100, 0), apps: apps, asks: asks,
			want: nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]Ask(nil), tc.asks...)
			got := FillNode(tc.free, node, tc.apps, tc.asks, NodePolicy{Order: tc.order})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("FillNode (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.asks); diff != "" {
				t.Errorf("FillNode modified its asks:\n%s", diff)
			}
		})
	}
}

func TestParseKnobs(t *testing.T) {
	for _, o := range []LeftoverOrder{EfficiencyFirst, JCTFirst, SRTFFirst} {
		got, err := ParseLeftoverOrder(o.String())
		if err != nil || got != o {
			t.Errorf("ParseLeftoverOrder(%q) = %v, %v", o, got, err)
		}
	}
	if _, err := ParseLeftoverOrder("sjf"); err == nil || err.Error() != `unknown leftover order "sjf" (want srtf, efficiency-first or jct-first)` {
		t.Errorf("ParseLeftoverOrder(sjf) error = %v", err)
	}
	for _, k := range []AskKind{Default, Altruistic} {
		got, err := ParseAskKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseAskKind(%q) = %v, %v", k, got, err)
		}
	}
	if _, err := ParseAskKind("default"); err == nil {
		t.Error("ParseAskKind is case-sensitive, as YARN enums are; want an error for \"default\"")
	}
}

func TestDecide(t *testing.T) {
	// P = 0 and P = 1 are certain; in between, the fraction over many
	// draws is near P. Each call takes exactly one draw, so two sources
	// with the same seed stay in step whatever P is.
	a := newRand(5)
	b := newRand(5)
	yes := 0
	for i := 0; i < 10000; i++ {
		if Decide(0, a) {
			t.Fatal("Decide(0) said yes")
		}
		if !Decide(1, a) {
			t.Fatal("Decide(1) said no")
		}
		if Decide(0.3, a) {
			yes++
		}
		Decide(0.9, b)
		Decide(0.1, b)
		Decide(0.5, b)
	}
	if yes < 2800 || yes > 3200 {
		t.Errorf("Decide(0.3) said yes %d times in 10000", yes)
	}
	if a.Uint64() != b.Uint64() {
		t.Error("Decide consumed a different number of draws for different P")
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

// TestAlignmentPickerAgrees: the fast picker picks exactly what
// packing.Picker picks, pass after pass, on random ask lists.
func TestAlignmentPickerAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	shapes := []fairness.Vector{fairness.New(1024, 1), fairness.New(2048, 1), fairness.New(1024, 2),
		fairness.New(4096, 4).With(fairness.Disk, 50), fairness.New(512, 1).With(fairness.Disk, 10)}
	capacity := fairness.New(16384, 16).With(fairness.Disk, 200)
	for trial := range 300 {
		for _, order := range []packing.Order{packing.ByScore, packing.ByRemainingWork} {
			n := 1 + rng.IntN(30)
			mk := func() []packing.Group {
				r := rand.New(rand.NewPCG(uint64(trial), uint64(n)))
				gs := make([]packing.Group, n)
				for i := range gs {
					gs[i] = packing.Group{Demand: shapes[r.IntN(len(shapes))], Count: r.IntN(4), Priority: r.IntN(3),
						RemainingWork: float64(r.IntN(4)), Bounded: r.IntN(2) == 0,
						Headroom: fairness.New(float64(r.IntN(8192)), float64(r.IntN(8))).With(fairness.Disk, float64(r.IntN(100)))}
				}
				return gs
			}
			slow, fast := mk(), mk()
			freeS := fairness.New(float64(rng.IntN(16384)), float64(rng.IntN(16))).With(fairness.Disk, float64(rng.IntN(200)))
			freeF := freeS
			pickFast := alignmentPicker(fast, order, &freeF, capacity)
			for step := 0; ; step++ {
				want := packing.Picker{Score: packing.Tetris(0), Order: order}.Pick(freeS, capacity, slow).Best
				got := pickFast()
				if got != want {
					t.Fatalf("trial %d order %v step %d: fast picked %d, Picker %d", trial, order, step, got, want)
				}
				if want < 0 {
					break
				}
				for _, gs := range [][]packing.Group{slow, fast} {
					gs[want].Count--
					gs[want].Headroom = gs[want].Headroom.Sub(gs[want].Demand)
				}
				freeS = freeS.Sub(slow[want].Demand)
				freeF = freeS
			}
		}
	}
}
