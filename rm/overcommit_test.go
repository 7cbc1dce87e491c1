package rm

import (
	"math/rand/v2"
	"testing"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

// TestNeverOvercommits: whatever apps ask for, of whatever kinds and
// shapes, under every policy, no node ever holds more than its capacity
// in any resource.
func TestNeverOvercommits(t *testing.T) {
	policies := map[string]Policy{"carbyne": Carbyne(altruism.EfficiencyFirst), "capped": CarbyneCapped(altruism.EfficiencyFirst, 2),
		"drf": DRF()}
	for name, pol := range policies {
		for seed := uint64(0); seed < 200; seed++ {
			rng := rand.New(rand.NewPCG(seed, 7))
			c := New(Config{Policy: pol, PAltruism: 1})
			nodes := 1 + rng.IntN(4)
			for n := range nodes {
				step(t, c, NodeUp{Node: NodeID(n), Capacity: fairness.New(4096, 4)})
			}
			apps := 1 + rng.IntN(10)
			for a := 1; a <= apps; a++ {
				step(t, c, AppAdded{App: AppID(a), Weight: 1})
			}
			var live []ContainerID
			shapes := []fairness.Vector{fairness.New(1024, 1), fairness.New(2048, 1), fairness.New(256, 1), fairness.New(64, 1)}
			for round := 0; round < 30; round++ {
				a := AppID(1 + rng.IntN(apps))
				var asks []Ask
				var demand fairness.Vector
				for k := 0; k < 1+rng.IntN(3); k++ {
					ask := Ask{Priority: rng.IntN(3), Demand: shapes[rng.IntN(len(shapes))], Kind: altruism.AskKind(rng.IntN(2)), Count: rng.IntN(6)}
					asks = append(asks, ask)
					demand = demand.Add(ask.Demand.Scale(float64(ask.Count)))
				}
				u, _ := c.Usage(a)
				step(t, c, AppRequest{App: a, Asks: asks, Demand: demand.Add(u), RemainingWork: rng.Float64()})
				var ids []NodeID
				if rng.IntN(2) == 0 {
					ids = []NodeID{NodeID(rng.IntN(nodes))}
				}
				for _, ct := range allocated(step(t, c, Schedule{Nodes: ids})) {
					live = append(live, ct.ID)
				}
				for len(live) > 0 && rng.IntN(3) == 0 {
					i := rng.IntN(len(live))
					step(t, c, ContainerDone{Container: live[i]})
					live = append(live[:i], live[i+1:]...)
				}
				for _, n := range c.nodes {
					if n != nil && !n.used.FitsIn(n.capacity) {
						t.Fatalf("%s seed %d round %d: node %d holds %v of %v", name, seed, round, n.id, n.used, n.capacity)
					}
				}
			}
		}
	}
}
