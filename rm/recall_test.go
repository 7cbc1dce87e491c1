package rm

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

// TestRecall works the promise recall through by hand. One node <100,
// 100>. At 0 s app 1 asks for 10 DEFAULT and 90 ALTRUISTIC containers of
// <1, 1>: alone, it gets them all, ids 1-10 from its share and 11-100
// from the leftover. At 1 s app 2 arrives with one DEFAULT ask of <2, 2>
// and a remaining critical path of 4 s: its share is <2, 2>, the node is
// full. With Recall 0.25 it may wait 1 s, so at 1 s and 1.5 s nothing
// happens and the core says it is due at 2 s; at 2 s the two youngest
// leftover-paid containers (100, 99) are taken and app 2 gets their room
// in the same step, from its share.
func TestRecall(t *testing.T) {
	unit := fairness.New(1, 1)
	two := fairness.New(2, 2)
	cases := []struct {
		name   string
		cfg    Config
		am     ContainerID // app 1's AM container, 0 for none
		asks1  []Ask
		taken  []ContainerID // at 2 s
		due    time.Duration // PreemptionDue after the 1 s pass
		hasDue bool
	}{
		{"recall 0.25: the youngest leftover-paid go", Config{PAltruism: 1, Recall: 0.25}, 0,
			[]Ask{{Priority: 1, Demand: unit, Count: 10}, {Priority: 2, Demand: unit, Count: 90, Kind: altruism.Altruistic}},
			[]ContainerID{99, 100}, 2 * time.Second, true},
		{"never an AM's", Config{PAltruism: 1, Recall: 0.25}, 100,
			[]Ask{{Priority: 1, Demand: unit, Count: 10}, {Priority: 2, Demand: unit, Count: 90, Kind: altruism.Altruistic}},
			[]ContainerID{98, 99}, 2 * time.Second, true},
		{"off", Config{PAltruism: 1}, 0,
			[]Ask{{Priority: 1, Demand: unit, Count: 10}, {Priority: 2, Demand: unit, Count: 90, Kind: altruism.Altruistic}},
			nil, 0, false},
		{"P(Altruism) 0 is DRF: nothing recalled", Config{PAltruism: 0, Recall: 0.25}, 0,
			[]Ask{{Priority: 1, Demand: unit, Count: 10}, {Priority: 2, Demand: unit, Count: 90, Kind: altruism.Altruistic}},
			nil, 0, false},
		// All of app 1's containers were paid by its share (it was alone,
		// its share the node): none is borrowed, app 2 waits for an end.
		{"nothing borrowed", Config{PAltruism: 1, Recall: 0.25}, 0,
			[]Ask{{Priority: 1, Demand: unit, Count: 100}},
			nil, 2 * time.Second, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(tc.cfg)
			stepAt(t, c, 0, NodeUp{Node: 0, Capacity: full}, AppAdded{App: 1, Queue: "default", User: "u"},
				AppRequest{App: 1, Demand: full, Asks: tc.asks1, CriticalTime: 100 * time.Second})
			got := allocated(stepAt(t, c, 0, Schedule{}))
			if len(got) != 100 {
				t.Fatalf("app 1 got %d containers, want 100", len(got))
			}
			for _, k := range got {
				if tc.cfg.PAltruism == 1 && k.Kind == altruism.Altruistic && k.Phase != altruism.FromLeftover {
					t.Fatalf("container %d: ALTRUISTIC from %v, want the leftover", k.ID, k.Phase)
				}
			}
			if tc.am != 0 {
				stepAt(t, c, 0, AMContainer{Container: tc.am})
			}
			acts := stepAt(t, c, time.Second, AppAdded{App: 2, Queue: "default", User: "v"},
				AppRequest{App: 2, Demand: two, Asks: []Ask{{Priority: 1, Demand: two, Count: 1}}, CriticalTime: 4 * time.Second},
				Schedule{})
			if len(acts) != 0 {
				t.Fatalf("at 1 s: %d actions, want none", len(acts))
			}
			due, ok := c.PreemptionDue()
			if ok != tc.hasDue || due != tc.due {
				t.Errorf("PreemptionDue = %v, %v; want %v, %v", due, ok, tc.due, tc.hasDue)
			}
			if acts := stepAt(t, c, 1500*time.Millisecond, Schedule{}); len(acts) != 0 {
				t.Fatalf("at 1.5 s: %d actions, want none", len(acts))
			}
			var taken []ContainerID
			var granted []Container
			for _, a := range stepAt(t, c, 2*time.Second, Schedule{}) {
				switch a := a.(type) {
				case Preempted:
					taken = append(taken, a.Container.ID)
					if a.Container.App != 1 || a.Reason != "recalled from the leftover for app 2, below its share for 1s" || a.Cause != RecallBelowShare {
						t.Errorf("preempted %+v", a)
					}
				case *Allocated:
					granted = append(granted, a.Container)
				default:
					t.Errorf("at 2 s: %T", a)
				}
			}
			slices.Sort(taken)
			if !slices.Equal(taken, tc.taken) {
				t.Errorf("taken %v, want %v", taken, tc.taken)
			}
			if len(tc.taken) == 0 {
				if len(granted) != 0 {
					t.Errorf("granted %+v with nothing taken", granted)
				}
				return
			}
			if len(granted) != 1 || granted[0].App != 2 || granted[0].Resource != two || granted[0].Phase != altruism.InShare {
				t.Errorf("granted %+v, want one <2, 2> for app 2 from its share", granted)
			}
		})
	}
}

// TestRecallTakesFromTheMostServed: two apps borrow; the one holding the
// most for its share gives first. One node <100, 100>, Recall 0.25.
//   - 0 s: app 1 (demand the node) alone: 10 DEFAULT and 60 ALTRUISTIC
//     containers of <1, 1>, ids 1-70 (11-70 from the leftover).
//   - 0.5 s: app 3 (demand the node too): shares 50 each; it gets 5
//     DEFAULT and 25 ALTRUISTIC, ids 71-100 (76-100 from the leftover).
//   - 1 s: app 2 asks for <2, 2>, critical path 4 s: shares 49, 49, 2;
//     app 1 holds 70/49 of its share, app 3 30/49.
//   - 2 s: app 1's two youngest (70, 69) are taken, not the cluster's
//     youngest (app 3's 100, 99).
//   - 2.1 s: app 4 asks for <1, 1> with no critical path (a stock AM):
//     it may wait 0, but a round ran at 2 s, so nothing is taken before
//     2.5 s (ShareInterval, 500 ms); then app 1's next youngest, 68.
func TestRecallTakesFromTheMostServed(t *testing.T) {
	unit := fairness.New(1, 1)
	c := New(Config{PAltruism: 1, Recall: 0.25})
	stepAt(t, c, 0, NodeUp{Node: 0, Capacity: full}, AppAdded{App: 1, Queue: "default", User: "u"},
		AppRequest{App: 1, Demand: full, CriticalTime: 100 * time.Second,
			Asks: []Ask{{Priority: 1, Demand: unit, Count: 10}, {Priority: 2, Demand: unit, Count: 60, Kind: altruism.Altruistic}}})
	if got := allocated(stepAt(t, c, 0, Schedule{})); len(got) != 70 {
		t.Fatalf("app 1 got %d containers, want 70", len(got))
	}
	stepAt(t, c, 500*time.Millisecond, AppAdded{App: 3, Queue: "default", User: "w"},
		AppRequest{App: 3, Demand: full, CriticalTime: 100 * time.Second,
			Asks: []Ask{{Priority: 1, Demand: unit, Count: 5}, {Priority: 2, Demand: unit, Count: 25, Kind: altruism.Altruistic}}})
	got := allocated(stepAt(t, c, 500*time.Millisecond, Schedule{}))
	if len(got) != 30 || got[0].ID != 71 || got[29].ID != 100 {
		t.Fatalf("app 3 got %d containers, want ids 71-100", len(got))
	}
	stepAt(t, c, time.Second, AppAdded{App: 2, Queue: "default", User: "v"},
		AppRequest{App: 2, Demand: fairness.New(2, 2), Asks: []Ask{{Priority: 1, Demand: fairness.New(2, 2), Count: 1}}, CriticalTime: 4 * time.Second},
		Schedule{})
	var taken []ContainerID
	for _, a := range stepAt(t, c, 2*time.Second, Schedule{}) {
		if p, ok := a.(Preempted); ok {
			taken = append(taken, p.Container.ID)
		}
	}
	slices.Sort(taken)
	if !slices.Equal(taken, []ContainerID{69, 70}) {
		t.Errorf("taken %v, want [69 70] (app 1's youngest)", taken)
	}
	acts := stepAt(t, c, 2100*time.Millisecond, AppAdded{App: 4, Queue: "default", User: "x"},
		AppRequest{App: 4, Demand: unit, Asks: []Ask{{Priority: 1, Demand: unit, Count: 1}}}, Schedule{})
	if len(acts) != 0 {
		t.Fatalf("at 2.1 s: %d actions, want none before the next round", len(acts))
	}
	if due, ok := c.PreemptionDue(); !ok || due != 2500*time.Millisecond {
		t.Errorf("PreemptionDue = %v, %v; want 2.5s", due, ok)
	}
	var kinds []string
	for _, a := range stepAt(t, c, 2500*time.Millisecond, Schedule{}) {
		switch a := a.(type) {
		case Preempted:
			kinds = append(kinds, fmt.Sprintf("taken %d", a.Container.ID))
		case *Allocated:
			kinds = append(kinds, fmt.Sprintf("granted app %d", a.Container.App))
		}
	}
	if want := []string{"taken 68", "granted app 4"}; !slices.Equal(kinds, want) {
		t.Errorf("at 2.5 s: %v, want %v", kinds, want)
	}
}

// TestWithDefaultTracksAsks checks the core's list of apps with DEFAULT
// asks outstanding against a count over every app's asks, and each app's
// count of leftover-paid containers (the only ones recall looks at)
// against a count over the running containers, after each of 2,000
// random steps (asks replaced, passes granting them, containers ending,
// apps leaving and arriving).
func TestWithDefaultTracksAsks(t *testing.T) {
	maxLeftovers := 0
	randomSteps(t, 2000, func(step int, c *Core) {
		var want []AppID
		for _, a := range c.apps {
			n := 0
			for _, k := range a.asks {
				if k.Kind == altruism.Default && k.Label == "" {
					n += k.Count
				}
			}
			if a.defaults != n {
				t.Fatalf("step %d: app %d counts %d DEFAULT asks, has %d", step, a.id, a.defaults, n)
			}
			if n > 0 {
				want = append(want, a.id)
			}
		}
		var got []AppID
		for _, a := range c.withDefault {
			got = append(got, a.id)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: withDefault %v, want %v", step, got, want)
		}
		leftovers := map[AppID]int{}
		c.conts.All(func(k *Container) {
			if k.Phase == altruism.FromLeftover {
				leftovers[k.App]++
			}
		})
		for _, a := range c.apps {
			if a.leftovers != leftovers[a.id] {
				t.Fatalf("step %d: app %d counts %d leftover-paid containers, holds %d", step, a.id, a.leftovers, leftovers[a.id])
			}
			maxLeftovers = max(maxLeftovers, a.leftovers)
		}
	})
	if maxLeftovers == 0 {
		t.Error("no app ever held a leftover-paid container: the count was never tried")
	}
}

// randomSteps drives a core through random steps (apps arriving and
// leaving, asks replaced, passes granting them, containers ending) on two
// nodes, calling check after each.
func randomSteps(t *testing.T, steps int, check func(step int, c *Core)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 9))
	c := New(Config{PAltruism: 1, Recall: 0.25})
	stepAt(t, c, 0, NodeUp{Node: 0, Capacity: full}, NodeUp{Node: 1, Capacity: full})
	var live []AppID
	var conts []ContainerID
	next := AppID(1)
	for step := 0; step < steps; step++ {
		now := time.Duration(step) * time.Millisecond
		switch r := rng.IntN(10); {
		case r < 2 || len(live) == 0:
			stepAt(t, c, now, AppAdded{App: next, Queue: "default", User: "u"})
			live = append(live, next)
			next++
		case r < 5:
			id := live[rng.IntN(len(live))]
			asks := []Ask{{Priority: 1, Demand: fairness.New(1, 1), Count: rng.IntN(4)},
				{Priority: 2, Demand: fairness.New(2, 1), Count: rng.IntN(6), Kind: altruism.Altruistic}}
			stepAt(t, c, now, AppRequest{App: id, Demand: fairness.New(30, 30), Asks: asks, CriticalTime: time.Second})
		case r < 7:
			conts = append(conts, func() (ids []ContainerID) {
				for _, k := range allocated(stepAt(t, c, now, Schedule{})) {
					ids = append(ids, k.ID)
				}
				return ids
			}()...)
		case r < 9 && len(conts) > 0:
			i := rng.IntN(len(conts))
			if _, running := c.Container(conts[i]); running {
				stepAt(t, c, now, ContainerDone{Container: conts[i]})
			}
			conts = slices.Delete(conts, i, i+1)
		default:
			i := rng.IntN(len(live))
			stepAt(t, c, now, AppRemoved{App: live[i]})
			live = slices.Delete(live, i, i+1)
		}
		check(step, c)
	}
}

// TestRecallRoomMatchesFullSort checks recallRoom, which sorts apps and
// only the containers of those it walks, against the order it keeps:
// every candidate container sorted by its app's held share (most first),
// then id (youngest first), walked until a node has room. Apps here hold
// equal shares often, so ties between apps are walked by id across them.
func TestRecallRoomMatchesFullSort(t *testing.T) {
	found, ties := 0, 0
	randomSteps(t, 2000, func(step int, c *Core) {
		if step%4 != 0 {
			return
		}
		helds := map[float64]int{}
		for _, b := range c.apps {
			if b.leftovers > 0 {
				helds[b.usage.DominantShare(c.capacity)/max(b.share.DominantShare(c.capacity), 1e-9)]++
			}
		}
		for _, n := range helds {
			if n > 1 {
				ties++
			}
		}
		for _, a := range c.apps {
			for _, d := range []fairness.Vector{fairness.New(1, 1), fairness.New(30, 30), fairness.New(90, 90)} {
				node, ids := c.recallRoom(a, d)
				wantNode, wantIDs := recallRoomByFullSort(c, a, d)
				if node != wantNode || !slices.Equal(ids, wantIDs) {
					t.Fatalf("step %d, app %d, demand %v: recallRoom took %v on node %d, the full sort %v on node %d",
						step, a.id, d, ids, node, wantIDs, wantNode)
				}
				if len(ids) > 0 {
					found++
				}
			}
		}
	})
	if found == 0 || ties == 0 {
		t.Errorf("%d recalls found, %d steps with apps holding equal shares: the order was not tried", found, ties)
	}
}

// recallRoomByFullSort is recallRoom's order by brute force.
func recallRoomByFullSort(c *Core, a *app, demand fairness.Vector) (NodeID, []ContainerID) {
	for _, n := range c.nodes {
		if n != nil && n.part == "" && demand.FitsIn(n.capacity.Sub(n.used)) {
			return 0, nil
		}
	}
	type victim struct {
		k    *Container
		held float64
	}
	held := map[AppID]float64{}
	for _, b := range c.apps {
		if b != a {
			held[b.id] = b.usage.DominantShare(c.capacity) / max(b.share.DominantShare(c.capacity), 1e-9)
		}
	}
	var cands []victim
	c.conts.All(func(k *Container) {
		h, other := held[k.App]
		if _, asked := c.pre.asked[k.ID]; other && k.Phase == altruism.FromLeftover && !c.pre.ams[k.ID] && !asked {
			cands = append(cands, victim{k, h})
		}
	})
	slices.SortFunc(cands, func(x, y victim) int { return cmp.Or(cmp.Compare(y.held, x.held), cmp.Compare(y.k.ID, x.k.ID)) })
	freed := map[NodeID]fairness.Vector{}
	for j, v := range cands {
		n := c.nodes[v.k.Node]
		if n == nil || n.part != "" {
			continue
		}
		freed[v.k.Node] = freed[v.k.Node].Add(v.k.Resource)
		if demand.FitsIn(n.capacity.Sub(n.used).Add(freed[v.k.Node])) {
			var out []ContainerID
			for _, w := range cands[:j+1] {
				if w.k.Node == v.k.Node {
					out = append(out, w.k.ID)
				}
			}
			return v.k.Node, out
		}
	}
	return 0, nil
}
