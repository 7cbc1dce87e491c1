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

// full is the one node of these tests, and every app's demand: each
// app's dominant share is then its fraction of either kind.
var full = fairness.New(100, 100)

func share(t *testing.T, c *Core, id AppID) fairness.Vector {
	t.Helper()
	s, err := c.Share(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestQueueShares works each tree's split by hand: one node <100, 100>,
// every app demanding all of it unless the case says otherwise.
func TestQueueShares(t *testing.T) {
	type app struct {
		queue, user string
		demand      fairness.Vector
	}
	tests := []struct {
		name   string
		queues []QueueConf
		apps   []app
		want   []float64 // each app's share of either kind
	}{
		{
			// root.a and root.b halve the cluster; a.x and a.y halve a's
			// half. Flat DRF would give each app a third.
			name: "down two levels",
			queues: []QueueConf{{Name: "root.a", Weight: 1}, {Name: "root.a.x", Weight: 1},
				{Name: "root.a.y", Weight: 1}, {Name: "root.b", Weight: 1}},
			apps: []app{{"root.a.x", "u", full}, {"root.a.y", "u", full}, {"root.b", "u", full}},
			want: []float64{25, 25, 50},
		},
		{
			// Users u and v halve the leaf; u's two apps halve u's half.
			name:   "users, then apps",
			queues: []QueueConf{{Name: "root.q", Weight: 1}},
			apps:   []app{{"root.q", "u", full}, {"root.q", "u", full}, {"root.q", "v", full}},
			want:   []float64{25, 25, 50},
		},
		{
			// Weights 3 and 1: 75 and 25.
			name:   "weights",
			queues: []QueueConf{{Name: "root.a", Weight: 3}, {Name: "root.b", Weight: 1}},
			apps:   []app{{"root.a", "u", full}, {"root.b", "u", full}},
			want:   []float64{75, 25},
		},
		{
			// a may hold 30% of the cluster: b takes the other 70.
			name:   "a maximum",
			queues: []QueueConf{{Name: "root.a", Weight: 1, MaxFrac: fairness.New(0.3, 0.3)}, {Name: "root.b", Weight: 1}},
			apps:   []app{{"root.a", "u", full}, {"root.b", "u", full}},
			want:   []float64{30, 70},
		},
		{
			// An absolute maximum of <20, 100>: a is held to 20 memory,
			// and so to 20 cpu (its demand's proportions).
			name:   "an absolute maximum in one kind",
			queues: []QueueConf{{Name: "root.a", Weight: 1, Max: fairness.New(20, 0)}, {Name: "root.b", Weight: 1}},
			apps:   []app{{"root.a", "u", full}, {"root.b", "u", full}},
			want:   []float64{20, 80},
		},
		{
			// a is guaranteed 60%: 60 and 40 (see fairness's tests).
			name:   "a guarantee",
			queues: []QueueConf{{Name: "root.a", Weight: 1, MinFrac: fairness.New(0.6, 0.6)}, {Name: "root.b", Weight: 1}},
			apps:   []app{{"root.a", "u", full}, {"root.b", "u", full}},
			want:   []float64{60, 40},
		},
		{
			// b has no apps: a takes all (elasticity), though b weighs 9.
			name:   "an idle queue lends its share",
			queues: []QueueConf{{Name: "root.a", Weight: 1}, {Name: "root.b", Weight: 9}},
			apps:   []app{{"root.a", "u", full}},
			want:   []float64{100},
		},
		{
			// a's app wants 10: b's two apps share the other 90, and b's
			// max of 50 then holds them to 25 each; 40 stays free.
			name:   "demand and maximum together",
			queues: []QueueConf{{Name: "root.a", Weight: 1}, {Name: "root.b", Weight: 1, MaxFrac: fairness.New(0.5, 0.5)}},
			apps: []app{{"root.a", "u", fairness.New(10, 10)}, {"root.b", "u", full},
				{"root.b", "v", full}},
			want: []float64{10, 25, 25},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{})
			step(t, c, NodeUp{Node: 0, Capacity: full}, QueuesSet{Queues: tc.queues})
			for i, a := range tc.apps {
				id := AppID(i + 1)
				step(t, c, AppAdded{App: id, Queue: a.queue, User: a.user}, AppRequest{App: id, Demand: a.demand})
			}
			for i, w := range tc.want {
				if got := share(t, c, AppID(i+1)); cmp.Diff(fairness.New(w, w), got, cmpApprox) != "" {
					t.Errorf("app %d: share %v, want %v", i+1, got, fairness.New(w, w))
				}
			}
		})
	}
}

// TestQueueMaximumHoldsGrants: a queue at 30% of a node gets no more than
// 30 containers of <1, 1>, even when nobody else asks (the leftover does
// not lift a maximum), under every policy.
func TestQueueMaximumHoldsGrants(t *testing.T) {
	for _, name := range []string{"carbyne", "drf", "tetris", "sjf"} {
		t.Run(name, func(t *testing.T) {
			pol, err := ParsePolicy(name, altruism.SRTFFirst)
			if err != nil {
				t.Fatal(err)
			}
			c := New(Config{Policy: pol, PAltruism: 1})
			step(t, c, NodeUp{Node: 0, Capacity: full},
				QueuesSet{Queues: []QueueConf{{Name: "root.a", Weight: 1, MaxFrac: fairness.New(0.3, 0.3)}, {Name: "root.b", Weight: 1}}},
				AppAdded{App: 1, Queue: "root.a", User: "u"},
				AppRequest{App: 1, Demand: full, RemainingWork: 100, Asks: []Ask{
					{Priority: 1, Demand: fairness.New(1, 1), Count: 60},
					{Priority: 2, Demand: fairness.New(1, 1), Count: 60, Kind: altruism.Altruistic}}})
			got := len(allocated(step(t, c, Schedule{})))
			if got != 30 {
				t.Errorf("granted %d containers to a queue limited to 30", got)
			}
			// One ends: one more fits, and no more.
			cs := allocated(step(t, c, Schedule{}))
			if len(cs) != 0 {
				t.Fatalf("a second pass granted %d", len(cs))
			}
			var first ContainerID = 1
			step(t, c, ContainerDone{Container: first})
			if got := len(allocated(step(t, c, Schedule{}))); got != 1 {
				t.Errorf("after one container ended: granted %d, want 1", got)
			}
		})
	}
}

func TestQueuesSetErrors(t *testing.T) {
	c := New(Config{})
	good := []QueueConf{{Name: "root.a", Weight: 1}, {Name: "root.a.x", Weight: 1}}
	step(t, c, NodeUp{Node: 0, Capacity: full}, QueuesSet{Queues: good}, AppAdded{App: 1, Queue: "root.a.x", User: "u"})
	tests := []struct {
		ev   Event
		want string
	}{
		{QueuesSet{Queues: []QueueConf{{Name: "a", Weight: 1}}}, `queue "a": a queue's name is its full path under root (root.a.b)`},
		{QueuesSet{Queues: []QueueConf{{Name: "root..a", Weight: 1}}}, `queue "root..a": a part of its path is empty`},
		{QueuesSet{Queues: []QueueConf{{Name: "root.a", Weight: 1}, {Name: "root.a", Weight: 2}}}, "queue root.a is listed twice"},
		{QueuesSet{Queues: []QueueConf{{Name: "root.a", Weight: 0}}}, "queue root.a: weight 0 must be positive"},
		{QueuesSet{Queues: []QueueConf{{Name: "root.a.x", Weight: 1}}}, "queue root.a.x: its parent root.a is not listed before it"},
		{QueuesSet{Queues: []QueueConf{{Name: "root.a", Weight: 1, MinFrac: fairness.New(-1, 0)}}}, "queue root.a: a negative guarantee or limit"},
		{QueuesSet{Queues: []QueueConf{{Name: "root.b", Weight: 1}}}, "app 1 runs in queue root.a.x, which is not a leaf queue of the new tree"},
		{AppAdded{App: 2, Queue: "root.a"}, "app 2: queue root.a is a parent queue; apps go to leaf queues"},
		{AppAdded{App: 2, Queue: "root.zz"}, "app 2: queue root.zz is not in the tree"},
		{AppMoved{App: 1, Queue: "root.a"}, "app 1: queue root.a is a parent queue; apps go to leaf queues"},
	}
	for _, tc := range tests {
		_, err := c.Step(0, tc.ev)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: error = %v, want %q", tc.ev, err, tc.want)
		}
	}
	// The refused reloads left the tree as it was.
	if qs := c.Queues(); len(qs) != 3 || qs[2].Name != "root.a.x" || qs[2].Apps != 1 {
		t.Errorf("after refused reloads the tree is %+v", qs)
	}
}

// TestQueueUsageFollowsApps: a queue's usage is its apps' holdings, up the
// tree, through grants, moves, ends and a reload.
func TestQueueUsageFollowsApps(t *testing.T) {
	c := New(Config{Policy: DRF()})
	step(t, c, NodeUp{Node: 0, Capacity: full},
		QueuesSet{Queues: []QueueConf{{Name: "root.a", Weight: 1}, {Name: "root.a.x", Weight: 1}, {Name: "root.b", Weight: 1}}},
		AppAdded{App: 1, Queue: "root.a.x", User: "u"},
		AppRequest{App: 1, Demand: full, Asks: []Ask{{Priority: 1, Demand: fairness.New(10, 10), Count: 3}}})
	if got := len(allocated(step(t, c, Schedule{}))); got != 3 {
		t.Fatalf("granted %d, want 3", got)
	}
	usage := func() map[string]float64 {
		m := map[string]float64{}
		for _, q := range c.Queues() {
			m[q.Name] = q.Usage[fairness.Memory]
		}
		return m
	}
	if diff := cmp.Diff(map[string]float64{"root": 30, "root.a": 30, "root.a.x": 30, "root.b": 0}, usage()); diff != "" {
		t.Errorf("after grants (-want +got):\n%s", diff)
	}
	step(t, c, AppMoved{App: 1, Queue: "root.b"})
	if diff := cmp.Diff(map[string]float64{"root": 30, "root.a": 0, "root.a.x": 0, "root.b": 30}, usage()); diff != "" {
		t.Errorf("after the move (-want +got):\n%s", diff)
	}
	step(t, c, ContainerDone{Container: 1}, QueuesSet{Queues: []QueueConf{{Name: "root.b", Weight: 2}}})
	if diff := cmp.Diff(map[string]float64{"root": 20, "root.b": 20}, usage()); diff != "" {
		t.Errorf("after an end and a reload (-want +got):\n%s", diff)
	}
	step(t, c, AppRemoved{App: 1})
	if diff := cmp.Diff(map[string]float64{"root": 0, "root.b": 0}, usage()); diff != "" {
		t.Errorf("after the app ended (-want +got):\n%s", diff)
	}
}

// TestQueueTreeProperties: over random trees, apps and passes, shares down
// the tree add up to no more than the parent's, no queue's share or usage
// passes its maximum, no user passes its leaf's user limit, and a queue whose guarantees fit gets
// min(guarantee, demand) in the kinds it uses.
func TestQueueTreeProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const eps = 1e-6
	for trial := range 200 {
		var qs []QueueConf
		leaves := []string{}
		var add func(parent string, depth int, budget float64)
		add = func(parent string, depth int, budget float64) {
			n := 1 + rng.IntN(3)
			for i := range n {
				q := QueueConf{Name: fmt.Sprintf("%s.q%d", parent, i), Weight: float64(1 + rng.IntN(4))}
				if rng.IntN(3) == 0 {
					f := 0.2 + 0.8*rng.Float64()
					q.MaxFrac = fairness.New(f, f)
				}
				if rng.IntN(3) == 0 {
					f := budget / float64(n) * rng.Float64()
					q.MinFrac = fairness.New(f, f)
				}
				if rng.IntN(3) == 0 {
					q.UserLimitFactor = 0.5 + 2*rng.Float64()
				}
				qs = append(qs, q)
				if depth < 2 && rng.IntN(2) == 0 {
					add(q.Name, depth+1, q.MinFrac[fairness.Memory])
				} else {
					leaves = append(leaves, q.Name)
				}
			}
		}
		add("root", 0, 1)
		c := New(Config{Policy: Carbyne(altruism.SRTFFirst), PAltruism: 0.5})
		cap := fairness.New(float64(50+rng.IntN(200)), float64(10+rng.IntN(60)))
		step(t, c, NodeUp{Node: 0, Capacity: cap}, QueuesSet{Queues: qs})
		for id := AppID(1); id <= AppID(1+rng.IntN(8)); id++ {
			task := fairness.New(float64(1+rng.IntN(8)), float64(1+rng.IntN(4)))
			n := 1 + rng.IntN(40)
			step(t, c, AppAdded{App: id, Queue: leaves[rng.IntN(len(leaves))], User: fmt.Sprint("u", rng.IntN(2))},
				AppRequest{App: id, Demand: task.Scale(float64(n)), RemainingWork: float64(n), Asks: []Ask{
					{Priority: 1, Demand: task, Count: n}, {Priority: 2, Demand: task, Count: n, Kind: altruism.Altruistic}}})
		}
		step(t, c, Schedule{})
		for k, held := range c.tree.userUsage {
			if m, ok := c.userLimit(k.q); ok && !held.FitsIn(m.Add(fairness.New(eps, eps))) {
				t.Fatalf("trial %d: user %s holds %v in %s, above its user limit %v", trial, k.user, held, c.tree.qs[k.q].conf.Name, m)
			}
		}
		views := c.Queues()
		byName := map[string]QueueView{}
		for _, v := range views {
			byName[v.Name] = v
		}
		sums := map[string]fairness.Vector{}
		for _, v := range views {
			if !v.Share.FitsIn(v.Max.Add(fairness.New(eps, eps))) || !v.Usage.FitsIn(v.Max.Add(fairness.New(eps, eps))) {
				t.Fatalf("trial %d: queue %s: share %v usage %v above its maximum %v", trial, v.Name, v.Share, v.Usage, v.Max)
			}
			if v.Parent != "" {
				sums[v.Parent] = sums[v.Parent].Add(v.Share)
			}
		}
		for p, s := range sums {
			if !s.FitsIn(byName[p].Share.Add(fairness.New(eps, eps))) {
				t.Fatalf("trial %d: the children of %s hold shares %v above its %v", trial, p, s, byName[p].Share)
			}
			var guaranteed fairness.Vector
			for _, v := range views {
				if v.Parent == p {
					guaranteed = guaranteed.Add(v.Min.Min(v.Demand))
				}
			}
			if !guaranteed.FitsIn(byName[p].Share) {
				continue // the floors were scaled down
			}
			for _, v := range views {
				floor := v.Min.Min(v.Demand)
				if v.Parent == p && !v.Demand.IsZero() && (v.Share[0] < floor[0]-eps || v.Share[1] < floor[1]-eps) {
					t.Fatalf("trial %d: queue %s: share %v below min(guarantee, demand) %v", trial, v.Name, v.Share, floor)
				}
			}
		}
	}
}

// TestMaxRunningApps: past a queue's or a user's bound an app waits with
// no share and no grants, says why, and starts when a running one ends,
// oldest first; a running app moves only where it may run.
func TestMaxRunningApps(t *testing.T) {
	c := New(Config{Policy: DRF()})
	one := []Ask{{Priority: 1, Demand: fairness.New(1, 1), Count: 1}}
	step(t, c, NodeUp{Node: 0, Capacity: full},
		QueuesSet{Queues: []QueueConf{{Name: "root.a", Weight: 1, MaxRunningApps: 2}, {Name: "root.a.x", Weight: 1},
			{Name: "root.b", Weight: 1}}, UserMaxApps: map[string]int{"bob": 1}})
	add := func(id AppID, queue, user string) {
		step(t, c, AppAdded{App: id, Queue: queue, User: user}, AppRequest{App: id, Demand: full, Asks: one})
	}
	add(1, "root.a.x", "ann")
	add(2, "root.a.x", "ann")
	add(3, "root.a.x", "ann") // root.a runs 2
	add(4, "root.b", "bob")
	add(5, "root.b", "bob") // bob runs 1
	waiting := func() map[AppID]string {
		m := map[AppID]string{}
		for id := AppID(1); id <= 5; id++ {
			if why, err := c.Waiting(id); err == nil && why != "" {
				m[id] = why
			}
		}
		return m
	}
	want := map[AppID]string{3: "queue root.a runs 2 apps, its maxRunningApps", 5: "user bob runs 1 apps, the user's maxRunningApps"}
	if diff := cmp.Diff(want, waiting()); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}
	// Apps 1, 2 and 4 share the node: a's two a half between them, b's
	// one the other half; the waiting ones nothing and no container.
	for id, w := range map[AppID]float64{1: 25, 2: 25, 3: 0, 4: 50, 5: 0} {
		if got := share(t, c, id); cmp.Diff(fairness.New(w, w), got, cmpApprox) != "" {
			t.Errorf("app %d: share %v, want %v", id, got, fairness.New(w, w))
		}
	}
	granted := map[AppID]int{}
	for _, ct := range allocated(step(t, c, Schedule{})) {
		granted[ct.App]++
	}
	if diff := cmp.Diff(map[AppID]int{1: 1, 2: 1, 4: 1}, granted); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	// A running app cannot move into a queue at its bound.
	step(t, c, AppAdded{App: 6, Queue: "root.b", User: "cat"})
	if _, err := c.Step(0, AppMoved{App: 6, Queue: "root.a.x"}); err == nil || err.Error() != "app 6 cannot move to queue root.a.x: queue root.a runs 2 apps, its maxRunningApps" {
		t.Errorf("moving into a full queue: %v", err)
	}
	// App 1 ends: app 3 starts; bob's app 4 ends: app 5 starts.
	step(t, c, AppRemoved{App: 1}, AppRemoved{App: 4})
	if got := waiting(); len(got) != 0 {
		t.Errorf("after two ends, still waiting: %v", got)
	}
	granted = map[AppID]int{}
	for _, ct := range allocated(step(t, c, Schedule{})) {
		granted[ct.App]++
	}
	if diff := cmp.Diff(map[AppID]int{3: 1, 5: 1}, granted); diff != "" {
		t.Errorf("grants after the ends (-want +got):\n%s", diff)
	}
}

// TestFIFOQueue: a FIFO leaf's share goes to its apps oldest first. root.f
// (FIFO) and root.d halve <100, 100>; in f, app 1 demands 30, app 2 all,
// app 3 all: 30, 20, 0. d's app 4 gets its 50.
func TestFIFOQueue(t *testing.T) {
	c := New(Config{})
	step(t, c, NodeUp{Node: 0, Capacity: full},
		QueuesSet{Queues: []QueueConf{{Name: "root.f", Weight: 1, FIFO: true}, {Name: "root.d", Weight: 1}}})
	for id, q := range []string{"root.f", "root.f", "root.f", "root.d"} {
		d := full
		if id == 0 {
			d = fairness.New(30, 30)
		}
		step(t, c, AppAdded{App: AppID(id + 1), Queue: q, User: fmt.Sprint("u", id)}, AppRequest{App: AppID(id + 1), Demand: d})
	}
	for id, w := range map[AppID]float64{1: 30, 2: 20, 3: 0, 4: 50} {
		if got := share(t, c, id); cmp.Diff(fairness.New(w, w), got, cmpApprox) != "" {
			t.Errorf("app %d: share %v, want %v", id, got, fairness.New(w, w))
		}
	}
}

// TestUserLimitFactor works the Capacity Scheduler's user-limit-factor by
// hand: one node <100, 100>, root.a and root.b each guaranteed half; user
// u alone in a asks for 100 one-unit containers, b is idle. Without a
// limit a takes the idle half too (100); with factor 1 u holds a's
// capacity (50); with 1.5, 75; a second user v in a gets the rest of a's
// share, up to its own limit.
func TestUserLimitFactor(t *testing.T) {
	tests := []struct {
		name   string
		factor float64
		users  []string
		want   []int // containers each user holds after a pass
	}{
		{"no limit", 0, []string{"u"}, []int{100}},
		{"factor 1", 1, []string{"u"}, []int{50}},
		{"factor 1.5", 1.5, []string{"u"}, []int{75}},
		{"factor 1, two users", 1, []string{"u", "v"}, []int{50, 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{Policy: drf{}})
			half := fairness.New(0.5, 0.5)
			mustStep(t, c, 0, QueuesSet{Queues: []QueueConf{
				{Name: "root.a", Weight: 1, MinFrac: half, UserLimitFactor: tt.factor},
				{Name: "root.b", Weight: 1, MinFrac: half}}})
			mustStep(t, c, 0, NodeUp{Node: 0, Capacity: fairness.New(100, 100)})
			for i, u := range tt.users {
				id := AppID(i + 1)
				mustStep(t, c, 0, AppAdded{App: id, Queue: "root.a", User: u})
				mustStep(t, c, 0, AppRequest{App: id, Asks: []Ask{{Demand: fairness.New(1, 1), Count: 100}}, Demand: fairness.New(100, 100)})
			}
			got := make([]int, len(tt.users))
			for _, a := range mustStep(t, c, 0, Schedule{}) {
				if g, ok := a.(*Allocated); ok {
					got[g.Container.App-1]++
				}
			}
			for range 3 { // later passes take no more
				for _, a := range mustStep(t, c, time.Second, Schedule{}) {
					if g, ok := a.(*Allocated); ok {
						got[g.Container.App-1]++
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("containers per user %v, want %v", got, tt.want)
			}
		})
	}
}
