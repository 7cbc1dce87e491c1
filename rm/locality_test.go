package rm

import (
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
)

// TestLocalityWhere: how a node suits an ask, by hand: delays as YARN's
// Capacity Scheduler counts them.
func TestLocalityWhere(t *testing.T) {
	loc := &Locality{Hosts: map[string]int{"h1": 2}, Racks: map[string]int{"r1": 2}, Relax: true}
	strict := &Locality{Hosts: map[string]int{"h1": 2}, Racks: map[string]int{"r1": 2}}
	// 3 hosts and 1 rack named on a 100-node cluster: the default
	// off-switch wait is count*4/100, at least the node delay.
	wide := &Locality{Hosts: map[string]int{"a": 1, "b": 1, "c": 1}, Racks: map[string]int{"r9": 3}, Relax: true}
	yarn := LocalityDelays{Node: 40, Rack: -1}
	fixed := LocalityDelays{Node: 40, Rack: 20}
	tests := []struct {
		name       string
		d          LocalityDelays
		loc        *Locality
		count      int
		missed     int
		host, rack string
		nodes      int
		want       Placement
		may        int
	}{
		{"no locality", yarn, nil, 3, 0, "h9", "r9", 100, Anywhere, 3},
		{"delay scheduling off", LocalityDelays{Node: -1}, loc, 3, 0, "h9", "r9", 100, Anywhere, 3},
		{"node-local: up to the host's count", yarn, loc, 3, 0, "h1", "r1", 100, NodeLocal, 2},
		{"node-local: up to the ask's count", yarn, loc, 1, 0, "h1", "r1", 100, NodeLocal, 1},
		{"its rack before the node delay", yarn, loc, 3, 39, "h2", "r1", 100, OffSwitch, 0},
		{"its rack at the node delay", yarn, loc, 3, 40, "h2", "r1", 100, RackLocal, 2},
		{"node delay capped at the cluster's size", yarn, loc, 3, 10, "h2", "r1", 10, RackLocal, 2},
		{"another rack at the node delay, fixed rack delay", fixed, loc, 3, 59, "h9", "r9", 100, OffSwitch, 0},
		{"another rack after node+rack delays", fixed, loc, 3, 60, "h9", "r9", 100, OffSwitch, 3},
		{"node+rack delays capped at the cluster's size", fixed, loc, 3, 50, "h9", "r9", 50, OffSwitch, 3},
		{"no relax: never off its racks", fixed, strict, 3, 1000, "h9", "r9", 100, OffSwitch, 0},
		{"no relax: its rack still", fixed, strict, 3, 40, "h2", "r1", 100, RackLocal, 2},
		// ceil(10 * 4/100) = 1, below the node delay 40: waits 40.
		{"YARN's off-switch wait, few containers", yarn, wide, 10, 39, "h9", "r1", 100, OffSwitch, 0},
		{"YARN's off-switch wait reached", yarn, wide, 10, 40, "h9", "r1", 100, OffSwitch, 10},
		// 2000 * 4/100 = 80 > 40: waits 80.
		{"YARN's off-switch wait, many containers", yarn, wide, 2000, 79, "h9", "r1", 100, OffSwitch, 0},
		{"YARN's off-switch wait, many containers, reached", yarn, wide, 2000, 80, "h9", "r1", 100, OffSwitch, 2000},
	}
	for _, tc := range tests {
		p, may := tc.d.where(tc.loc, tc.count, tc.missed, 0, tc.host, tc.rack, tc.nodes)
		if p != tc.want || may != tc.may {
			t.Errorf("%s: %v %d, want %v %d", tc.name, p, may, tc.want, tc.may)
		}
	}
}

// TestDelayScheduling walks the core through delay scheduling on three
// nodes (h1, h2 on rack r1; h3 on r2), node delay 2, rack delay 1.
func TestDelayScheduling(t *testing.T) {
	node := fairness.New(4096, 4)
	task := fairness.New(1024, 1)
	setup := func() *Core {
		c := New(Config{Policy: DRF(), Locality: &LocalityDelays{Node: 2, Rack: 1}})
		step(t, c, NodeUp{Node: 0, Capacity: node, Host: "h1", Rack: "/r1"},
			NodeUp{Node: 1, Capacity: node, Host: "h2", Rack: "/r1"},
			NodeUp{Node: 2, Capacity: node, Host: "h3", Rack: "/r2"},
			AppAdded{App: 1})
		return c
	}
	wants := func(hosts map[string]int, racks map[string]int) AppRequest {
		return AppRequest{App: 1, Demand: task.Scale(2), Asks: []Ask{{Priority: 1, Demand: task, Count: 2,
			Locality: &Locality{Hosts: hosts, Racks: racks, Relax: true}}}}
	}
	type grant struct {
		node  NodeID
		place Placement
	}
	got := func(acts []Action) []grant {
		var out []grant
		for _, ct := range allocated(acts) {
			out = append(out, grant{ct.Node, ct.Placement})
		}
		return out
	}

	// Its host comes up: both containers there, node-local.
	c := setup()
	step(t, c, wants(map[string]int{"h3": 2}, map[string]int{"/r2": 2}))
	if g := got(step(t, c, Schedule{Nodes: []NodeID{0}}, Schedule{Nodes: []NodeID{1}})); len(g) != 0 {
		t.Fatalf("h1 and h2 took %v of an ask for h3, before any delay", g)
	}
	if g := got(step(t, c, Schedule{Nodes: []NodeID{2}})); len(g) != 2 || g[0] != (grant{2, NodeLocal}) || g[1] != (grant{2, NodeLocal}) {
		t.Errorf("h3 took %v, want both containers node-local", g)
	}

	// Its host never comes: h1 is skipped twice (missed 1, 2); at missed
	// 2 = the node delay its rack /r2 would do, but h1 is on /r1; off
	// its racks it waits node+rack = 3; the fourth visit places both.
	c = setup()
	step(t, c, wants(map[string]int{"h3": 2}, map[string]int{"/r2": 2}))
	for visit := 1; visit <= 3; visit++ {
		if g := got(step(t, c, Schedule{Nodes: []NodeID{0}})); len(g) != 0 {
			t.Fatalf("visit %d to h1 placed %v, want none before 3 missed opportunities", visit, g)
		}
	}
	if g := got(step(t, c, Schedule{Nodes: []NodeID{0}})); len(g) != 2 || g[0] != (grant{0, OffSwitch}) {
		t.Errorf("the fourth visit to h1 placed %v, want both off-switch", g)
	}

	// Rack-local: an ask for h2 and /r1 whose host is full. h1 is on
	// /r1: after the node delay (2 missed), h1 takes them rack-local.
	c = setup()
	step(t, c, AppAdded{App: 2}, AppRequest{App: 2, Demand: node, Asks: []Ask{{Priority: 1, Demand: node, Count: 1}}})
	step(t, c, Schedule{Nodes: []NodeID{1}}) // app 2 fills h2
	step(t, c, wants(map[string]int{"h2": 2}, map[string]int{"/r1": 2}))
	if g := got(step(t, c, Schedule{Nodes: []NodeID{0}}, Schedule{Nodes: []NodeID{0}})); len(g) != 0 {
		t.Fatalf("h1 placed %v before the node delay", g)
	}
	if g := got(step(t, c, Schedule{Nodes: []NodeID{0}})); len(g) != 2 || g[0] != (grant{0, RackLocal}) {
		t.Errorf("h1 placed %v after the node delay, want both rack-local", g)
	}

	// A pass over every node (the simulator's) visits h1, h2, h3 in
	// order: two missed, then node-local on h3. A node that held an ask
	// back is not settled: a later full pass visits it again.
	c = setup()
	step(t, c, wants(map[string]int{"h3": 1}, map[string]int{"/r2": 1}))
	if g := got(step(t, c, Schedule{})); len(g) != 1 || g[0] != (grant{2, NodeLocal}) {
		t.Errorf("a full pass placed %v, want one node-local container on h3", g)
	}
	// The second container's locality is spent (h3's count is 0 now):
	// it waits out the delays on the next passes, then goes anywhere.
	var placed []grant
	for range 4 {
		placed = append(placed, got(step(t, c, Schedule{}))...)
	}
	if len(placed) != 1 || placed[0].place != OffSwitch {
		t.Errorf("the rest placed %v over four full passes, want one off-switch container", placed)
	}
}

// TestLocalityStaysAcrossAllocates: an AM's allocate call that repeats
// its asks keeps their missed opportunities (YARN counts them per
// scheduler key), and the core's locality counts are its own copy.
func TestLocalityStaysAcrossAllocates(t *testing.T) {
	c := New(Config{Policy: DRF(), Locality: &LocalityDelays{Node: 2, Rack: 0}})
	// Three nodes, so that the delays are not capped below 2.
	step(t, c, NodeUp{Node: 0, Capacity: fairness.New(4096, 4), Host: "h1", Rack: "/r1"},
		NodeUp{Node: 1, Capacity: fairness.New(4096, 4), Host: "h2", Rack: "/r1"},
		NodeUp{Node: 2, Capacity: fairness.New(4096, 4), Host: "h3", Rack: "/r1"}, AppAdded{App: 1})
	loc := &Locality{Hosts: map[string]int{"h9": 1}, Relax: true}
	req := AppRequest{App: 1, Demand: fairness.New(1024, 1), Asks: []Ask{{Priority: 1, Demand: fairness.New(1024, 1), Count: 1, Locality: loc}}}
	step(t, c, req, Schedule{Nodes: []NodeID{0}})
	step(t, c, req) // the AM asks again, unchanged
	if g := allocated(step(t, c, Schedule{Nodes: []NodeID{0}})); len(g) != 0 {
		t.Fatalf("placed %v after one missed opportunity", g)
	}
	step(t, c, req)
	if g := allocated(step(t, c, Schedule{Nodes: []NodeID{0}})); len(g) != 1 || g[0].Placement != OffSwitch {
		t.Errorf("placed %v after two missed opportunities across allocate calls, want one off-switch", g)
	}
	if loc.Hosts["h9"] != 1 {
		t.Errorf("the caller's locality was changed: %v", loc.Hosts)
	}
}

// TestLocalityDelaysInTime: with NodeTime, an ask waits in time, not in
// node visits: three passes over three nodes at t=0 place nothing off its
// host; at NodeTime+RackTime after its first skip it goes anywhere.
func TestLocalityDelaysInTime(t *testing.T) {
	c := New(Config{Policy: DRF(), Locality: &LocalityDelays{Node: 40, Rack: -1, NodeTime: 2 * time.Second, RackTime: time.Second}})
	for i, h := range []string{"h1", "h2", "h3"} {
		if _, err := c.Step(0, NodeUp{Node: NodeID(i), Capacity: fairness.New(4096, 4), Host: h, Rack: "/r1"}); err != nil {
			t.Fatal(err)
		}
	}
	req := AppRequest{App: 1, Demand: fairness.New(1024, 1), Asks: []Ask{{Priority: 1, Demand: fairness.New(1024, 1), Count: 1,
		Locality: &Locality{Hosts: map[string]int{"h9": 1}, Racks: map[string]int{"/r9": 1}, Relax: true}}}}
	at := func(now time.Duration, evs ...Event) []Container {
		t.Helper()
		var out []Container
		for _, ev := range evs {
			acts, err := c.Step(now, ev)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, allocated(acts)...)
		}
		return out
	}
	at(0, AppAdded{App: 1}, req)
	if g := at(0, Schedule{}, Schedule{}, Schedule{}); len(g) != 0 {
		t.Fatalf("placed %v at once, after 9 node visits", g)
	}
	if g := at(2999*time.Millisecond, Schedule{}); len(g) != 0 {
		t.Fatalf("placed %v before NodeTime+RackTime", g)
	}
	if g := at(3*time.Second, Schedule{}); len(g) != 1 || g[0].Placement != OffSwitch {
		t.Errorf("at 3 s placed %v, want one off-switch container", g)
	}
}
