package rm

import (
	"testing"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/tool/benchtarget"
)

// BenchmarkHeartbeatDecision is the RM's decision for one node heartbeat
// under carbyne: 50,000 pending tasks in 1,000 ask groups (100 apps of 10
// groups, half DEFAULT, half ALTRUISTIC) across 1,000 nodes of 32 cores
// and 128 GB. Target: median under 1 ms. Each decision is on an empty
// node; before it, the previous decision's containers are freed and the
// asks topped up to 50,000, outside the timing.
func BenchmarkHeartbeatDecision(b *testing.B) {
	c := New(Config{Policy: CarbyneCapped(altruism.EfficiencyFirst, 2), PAltruism: 1, ShareInterval: 500 * time.Millisecond})
	var now time.Duration
	must := func(acts []Action, err error) []Action {
		if err != nil {
			b.Fatal(err)
		}
		return acts
	}
	for n := range 1000 {
		must(c.Step(now, NodeUp{Node: NodeID(n), Capacity: fairness.New(131072, 32)}))
	}
	requests := make([]AppRequest, 100)
	for a := range requests {
		id := AppID(a + 1)
		must(c.Step(now, AppAdded{App: id, Queue: "default", Weight: 1}))
		req := AppRequest{App: id, RemainingWork: float64(1000 + 37*a)}
		for g := range 10 {
			kind := altruism.Default
			if g%2 == 1 {
				kind = altruism.Altruistic
			}
			d := fairness.New(float64(1024*(1+(a+g)%4)), float64(1+(a*g)%2))
			req.Asks = append(req.Asks, Ask{Priority: g, Demand: d, Kind: kind, Count: 50})
			req.Demand = req.Demand.Add(d.Scale(50))
		}
		requests[a] = req
	}
	var granted []ContainerID
	node := 0
	setup := func() {
		for _, id := range granted {
			must(c.Step(now, ContainerDone{Container: id}))
		}
		granted = granted[:0]
		for _, req := range requests {
			must(c.Step(now, req))
		}
		node = (node + 1) % 1000
		now += time.Millisecond
	}
	benchtarget.RunWithSetup(b, time.Millisecond, setup, func() {
		for _, a := range must(c.Step(now, Schedule{Nodes: []NodeID{NodeID(node)}})) {
			if al, ok := a.(*Allocated); ok {
				granted = append(granted, al.Container.ID)
			}
		}
	})
	if len(granted) == 0 {
		b.Fatal("the decision placed nothing")
	}
}
