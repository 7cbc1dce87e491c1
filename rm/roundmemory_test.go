package rm

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

// TestRoundMemoryMatchesScanning: the core keeps its candidates' asks
// from round to round (patched in place) and DRF its heaps of them
// (drfIndex). Over random runs of arrivals, asks, completions and
// departures, every policy must make exactly the decisions it makes when
// every round is laid out again and DRF scans every ask at every node
// (scanRounds).
func TestRoundMemoryMatchesScanning(t *testing.T) {
	shapes := []fairness.Vector{fairness.New(10, 1), fairness.New(20, 1), fairness.New(10, 3), fairness.New(5, 2), fairness.New(40, 4)}
	policies := []Policy{DRF(), Tetris(), SJF(), Carbyne(altruism.SRTFFirst)}
	for seed := uint64(1); seed <= 12; seed++ {
		for _, pol := range policies {
			run := func(scan bool) []string {
				scanRounds = scan
				defer func() { scanRounds = false }()
				rng := rand.New(rand.NewPCG(seed, 99))
				c := New(Config{Policy: pol, PAltruism: 1})
				var log []string
				do := func(now time.Duration, ev Event) {
					acts, err := c.Step(now, ev)
					if err != nil {
						t.Fatalf("seed %d %s: %T: %v", seed, pol.Name(), ev, err)
					}
					for _, a := range acts {
						log = append(log, fmt.Sprintf("%v %+v", now, a))
					}
				}
				for n := range 4 {
					do(0, NodeUp{Node: NodeID(n), Capacity: fairness.New(100, 10)})
				}
				var apps []AppID
				next := AppID(1)
				for e := 0; e < 400; e++ {
					now := time.Duration(e) * 100 * time.Millisecond
					switch r := rng.IntN(10); {
					case r == 0 || len(apps) == 0:
						do(now, AppAdded{App: next, Weight: float64(1 + rng.IntN(2))})
						apps = append(apps, next)
						next++
					case r <= 3:
						a := apps[rng.IntN(len(apps))]
						var asks []Ask
						var demand fairness.Vector
						for p := range 1 + rng.IntN(3) {
							k := Ask{Priority: p, Demand: shapes[rng.IntN(len(shapes))], Count: rng.IntN(6),
								Kind: []altruism.AskKind{altruism.Default, altruism.Altruistic}[rng.IntN(2)]}
							asks = append(asks, k)
							demand = demand.Add(k.Demand.Scale(float64(k.Count)))
						}
						do(now, AppRequest{App: a, Asks: asks, Demand: demand, RemainingWork: rng.Float64() * 10})
					case r <= 6:
						var running []ContainerID
						for id := ContainerID(1); id <= c.LastContainerID(); id++ {
							if _, ok := c.Container(id); ok {
								running = append(running, id)
							}
						}
						if len(running) > 0 {
							do(now, ContainerDone{Container: running[rng.IntN(len(running))]})
						}
					case r == 8 && rng.IntN(4) == 0:
						// Carbyne at P(Altruism) 0 runs DRF's passes: the
						// two keep their orders through one changed list.
						do(now, SetAltruism{P: float64(rng.IntN(2))})
					case r == 7 && len(apps) > 1:
						i := rng.IntN(len(apps))
						do(now, AppRemoved{App: apps[i]})
						apps = append(apps[:i], apps[i+1:]...)
					}
					do(now, Schedule{})
				}
				return log
			}
			want, got := run(true), run(false)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("seed %d %s: decisions with the round memory differ from scanning (-scanning +kept):\n%s", seed, pol.Name(), diff)
			}
			if len(want) < 50 {
				t.Fatalf("seed %d %s: only %d actions: the run tests little", seed, pol.Name(), len(want))
			}
		}
	}
}
