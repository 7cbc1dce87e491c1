package altruism

import (
	"math/rand/v2"
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
