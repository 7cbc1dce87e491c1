package rm

import (
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

func mustStep(t *testing.T, c *Core, now time.Duration, ev Event) []Action {
	t.Helper()
	acts, err := c.Step(now, ev)
	if err != nil {
		t.Fatalf("%T: %v", ev, err)
	}
	return acts
}

// grantsOn counts each app's grants on each node.
func grantsOn(acts []Action) map[AppID]map[NodeID]int {
	out := map[AppID]map[NodeID]int{}
	for _, a := range acts {
		if g, ok := a.(*Allocated); ok {
			if out[g.Container.App] == nil {
				out[g.Container.App] = map[NodeID]int{}
			}
			out[g.Container.App][g.Container.Node]++
		}
	}
	return out
}

// TestPartitionPlacement works by hand where each app's containers go on
// node 0 (default partition) and node 1 (partition x), each <4, 4>: app 1
// asks for 8 one-core containers in the default partition, app 2 for
// the count given in x.
func TestPartitionPlacement(t *testing.T) {
	tests := []struct {
		name      string
		exclusive bool
		app2      int
		// want: app 1 on nodes 0 and 1, app 2 on node 1, after the first
		// pass and after a second one.
		first, second [3]int
	}{
		// Exclusive: app 1 never runs on node 1, even when it is idle.
		{"exclusive, x idle", true, 0, [3]int{4, 0, 0}, [3]int{4, 0, 0}},
		{"exclusive, x busy", true, 2, [3]int{4, 0, 2}, [3]int{4, 0, 2}},
		// Non-exclusive: x lends node 1 to app 1 when no ask of its own
		// fits there; with app 2 asking, app 2 goes first and app 1
		// gets the rest of node 1 in the next pass, once app 2's asks
		// are served.
		{"non-exclusive, x idle", false, 0, [3]int{4, 4, 0}, [3]int{4, 4, 0}},
		{"non-exclusive, x busy", false, 2, [3]int{4, 0, 2}, [3]int{4, 2, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{Policy: drf{}})
			mustStep(t, c, 0, PartitionsSet{Partitions: map[string]bool{"x": tt.exclusive}})
			mustStep(t, c, 0, NodeUp{Node: 0, Capacity: fairness.New(4, 4)})
			mustStep(t, c, 0, NodeUp{Node: 1, Capacity: fairness.New(4, 4), Partition: "x"})
			mustStep(t, c, 0, AppAdded{App: 1})
			mustStep(t, c, 0, AppAdded{App: 2, Label: "x"})
			one := fairness.New(1, 1)
			mustStep(t, c, 0, AppRequest{App: 1, Asks: []Ask{{Demand: one, Count: 8}}, Demand: fairness.New(8, 8)})
			if tt.app2 > 0 {
				mustStep(t, c, 0, AppRequest{App: 2, Asks: []Ask{{Demand: one, Count: tt.app2, Label: "x"}}, Demand: fairness.New(2, 2)})
			}
			got := grantsOn(mustStep(t, c, 0, Schedule{}))
			if g := [3]int{got[1][0], got[1][1], got[2][1]}; g != tt.first {
				t.Errorf("first pass: app 1 on nodes 0, 1 and app 2 on node 1 = %v, want %v", g, tt.first)
			}
			again := grantsOn(mustStep(t, c, time.Second, Schedule{}))
			if g := [3]int{got[1][0] + again[1][0], got[1][1] + again[1][1], got[2][1] + again[2][1]}; g != tt.second {
				t.Errorf("after a second pass = %v, want %v", g, tt.second)
			}
			if n := got[2][0] + again[2][0]; n != 0 {
				t.Errorf("app 2 (partition x) got %d containers on the default node", n)
			}
		})
	}
}

// TestPartitionShares works the shares by hand: node 0 <10, 10> in the
// default partition, node 1 <10, 10> in exclusive partition x; every app
// demands <20, 20>.
func TestPartitionShares(t *testing.T) {
	tests := []struct {
		name   string
		queues []QueueConf
		apps   []AppAdded
		want   []float64 // each app's share, either kind
	}{
		{
			// Flat DRF on the whole would give each a third of 20; per
			// partition, 1 and 2 halve node 0 and 3 has node 1.
			name: "no tree",
			apps: []AppAdded{{App: 1}, {App: 2}, {App: 3, Label: "x"}},
			want: []float64{5, 5, 10},
		},
		{
			// In x, a's capacity 3 against b's 1: 7.5 and 2.5; in the
			// default partition b's app alone has all 10.
			name: "capacities per partition",
			queues: []QueueConf{
				{Name: "root.a", Weight: 1, Labels: []string{"x"}, LabelWeight: map[string]float64{"x": 3}},
				{Name: "root.b", Weight: 1, Labels: []string{"x"}, LabelWeight: map[string]float64{"x": 1}},
			},
			apps: []AppAdded{{App: 1, Queue: "root.a", Label: "x"}, {App: 2, Queue: "root.b", Label: "x"},
				{App: 3, Queue: "root.b"}},
			want: []float64{7.5, 2.5, 10},
		},
		{
			// b has no capacity in x, only access: a token weight, so a
			// takes nearly all of x.
			name: "no capacity in the partition",
			queues: []QueueConf{
				{Name: "root.a", Weight: 1, Labels: []string{"*"}, LabelWeight: map[string]float64{"x": 1}},
				{Name: "root.b", Weight: 1, Labels: []string{"x"}, LabelWeight: map[string]float64{"y": 1}},
			},
			apps: []AppAdded{{App: 1, Queue: "root.a", Label: "x"}, {App: 2, Queue: "root.b", Label: "x"}},
			want: []float64{10, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{Policy: drf{}})
			mustStep(t, c, 0, PartitionsSet{Partitions: map[string]bool{"x": true, "y": true}})
			if tt.queues != nil {
				mustStep(t, c, 0, QueuesSet{Queues: tt.queues})
			}
			mustStep(t, c, 0, NodeUp{Node: 0, Capacity: fairness.New(10, 10)})
			mustStep(t, c, 0, NodeUp{Node: 1, Capacity: fairness.New(10, 10), Partition: "x"})
			for _, a := range tt.apps {
				mustStep(t, c, 0, a)
				mustStep(t, c, 0, AppDemand{App: a.App, Demand: fairness.New(20, 20)})
			}
			c.refreshShares()
			for i, a := range tt.apps {
				s := share(t, c, a.App)
				if d := s[0] - tt.want[i]; d > 1e-3 || d < -1e-3 {
					t.Errorf("app %d: share %v, want %v of each kind", a.App, s, tt.want[i])
				}
			}
			if tt.queues != nil {
				// Shares down the tree still sum to the parent's.
				var sum fairness.Vector
				qs := c.Queues()
				for _, q := range qs {
					if q.Parent == "root" {
						sum = sum.Add(q.Share)
					}
				}
				if d := sum.Sub(qs[0].Share); d.DominantShare(c.Capacity()) > 1e-6 || d.Scale(-1).DominantShare(c.Capacity()) > 1e-6 {
					t.Errorf("root's children share %v, root %v", sum, qs[0].Share)
				}
			}
		})
	}
}

// TestPartitionRefusals: each bad input names what is wrong and changes
// nothing.
func TestPartitionRefusals(t *testing.T) {
	setup := func(t *testing.T) *Core {
		c := New(Config{Policy: drf{}})
		mustStep(t, c, 0, PartitionsSet{Partitions: map[string]bool{"x": true, "gpu": false}})
		mustStep(t, c, 0, QueuesSet{Queues: []QueueConf{
			{Name: "root.a", Weight: 1, Labels: []string{"x"}},
			{Name: "root.b", Weight: 1, Labels: []string{}},
		}})
		mustStep(t, c, 0, NodeUp{Node: 0, Capacity: fairness.New(4, 4), Partition: "x"})
		mustStep(t, c, 0, AppAdded{App: 1, Queue: "root.a", Label: "x"})
		mustStep(t, c, 0, AppAdded{App: 2, Queue: "root.b"})
		return c
	}
	one := fairness.New(1, 1)
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"an unknown label on a node", NodeUp{Node: 1, Capacity: one, Partition: "nope"}, "node label nope is not one of the cluster's"},
		{"a bad label name", PartitionsSet{Partitions: map[string]bool{"x": true, "gpu": false, "a b": true}}, `label "a b": only letters`},
		{"an empty label name", PartitionsSet{Partitions: map[string]bool{"": true, "x": true, "gpu": false}}, "a label cannot be empty"},
		{"removing a partition a node is in", PartitionsSet{Partitions: map[string]bool{"gpu": false}}, "partition x cannot be removed: node 0 is in it"},
		{"a queue without access", AppAdded{App: 3, Queue: "root.b", Label: "x"}, "queue root.b may not access node label x"},
		{"an ask without access", AppRequest{App: 2, Asks: []Ask{{Demand: one, Count: 1, Label: "gpu"}}}, "ask at priority 0: queue root.b may not access node label gpu"},
		{"an ask for an unknown label", AppRequest{App: 1, Asks: []Ask{{Demand: one, Count: 1, Label: "nope"}}}, "node label nope is not one of the cluster's"},
		{"a move to a queue without access", AppMoved{App: 1, Queue: "root.b"}, "app 1 cannot move to queue root.b: queue root.b may not access node label x"},
		{"a reload that takes the access away", QueuesSet{Queues: []QueueConf{{Name: "root.a", Weight: 1}, {Name: "root.b", Weight: 1, Labels: []string{}}}},
			""},
		{"a reload that takes the access away", QueuesSet{Queues: []QueueConf{{Name: "root.a", Weight: 1, Labels: []string{"gpu"}}, {Name: "root.b", Weight: 1}}},
			"app 1 runs in node label x, which queue root.a may not access in the new tree"},
		{"labelling a node with an unknown label", NodeLabeled{Node: 0, Partition: "y"}, "node 0: node label y is not one of the cluster's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := setup(t)
			_, err := c.Step(0, tt.ev)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want == "":
				return
			case err == nil || !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
			if p, _ := c.NodePartition(0); p != "x" {
				t.Errorf("node 0 moved to %q on a refusal", p)
			}
			if len(c.Partitions()) != 2 {
				t.Errorf("partitions %v after a refusal", c.Partitions())
			}
		})
	}
}

// TestNodeLabeledMovesCapacity: relabelling a node moves its capacity
// between partitions, and its asks follow the new partition.
func TestNodeLabeledMovesCapacity(t *testing.T) {
	c := New(Config{Policy: drf{}})
	mustStep(t, c, 0, PartitionsSet{Partitions: map[string]bool{"x": true}})
	mustStep(t, c, 0, NodeUp{Node: 0, Capacity: fairness.New(4, 4)})
	mustStep(t, c, 0, AppAdded{App: 1, Label: "x"})
	mustStep(t, c, 0, AppRequest{App: 1, Asks: []Ask{{Demand: fairness.New(1, 1), Count: 2, Label: "x", Kind: altruism.Default}}, Demand: fairness.New(2, 2)})
	if n := len(mustStep(t, c, 0, Schedule{})); n != 0 {
		t.Fatalf("%d grants for partition x with no node in it", n)
	}
	mustStep(t, c, time.Second, NodeLabeled{Node: 0, Partition: "x"})
	if got, want := c.PartitionCapacity("x"), fairness.New(4, 4); got != want {
		t.Errorf("x holds %v, want %v", got, want)
	}
	if got := c.PartitionCapacity(""); !got.IsZero() {
		t.Errorf("the default partition holds %v, want nothing", got)
	}
	if n := len(mustStep(t, c, time.Second, Schedule{})); n != 2 {
		t.Errorf("%d grants once the node is in x, want 2", n)
	}
	if _, err := c.Step(time.Second, PartitionsSet{}); err == nil || !strings.Contains(err.Error(), "node 0 is in it") {
		t.Errorf("removing x with node 0 in it: %v", err)
	}
}

// TestLentRoomIsTakenBack works by hand how a non-exclusive label gets
// its room back: node 0 (default) and node 1 (label x, non-exclusive),
// each <4, 4>; app 1 (default) fills both with eight one-unit
// containers, four lent by x. App 2 (label x) then asks for two: with
// preemption on (grace 10 s) the core asks back app 1's two youngest
// containers on node 1, takes them when the grace ends, and gives their
// room to app 2. Nothing else is asked back.
func TestLentRoomIsTakenBack(t *testing.T) {
	c := New(Config{Policy: drf{}, Preemption: &PreemptionConfig{Grace: 10 * time.Second}})
	one := fairness.New(1, 1)
	mustStep(t, c, 0, PartitionsSet{Partitions: map[string]bool{"x": false}})
	mustStep(t, c, 0, NodeUp{Node: 0, Capacity: fairness.New(4, 4)})
	mustStep(t, c, 0, NodeUp{Node: 1, Capacity: fairness.New(4, 4), Partition: "x"})
	mustStep(t, c, 0, AppAdded{App: 1})
	mustStep(t, c, 0, AppRequest{App: 1, Asks: []Ask{{Demand: one, Count: 8}}, Demand: fairness.New(8, 8)})
	if got := grantsOn(mustStep(t, c, 0, Schedule{})); got[1][0] != 4 || got[1][1] != 4 {
		t.Fatalf("app 1 got %v, want 4 on each node", got[1])
	}
	mustStep(t, c, time.Second, AppAdded{App: 2, Label: "x"})
	mustStep(t, c, time.Second, AppRequest{App: 2, Asks: []Ask{{Demand: one, Count: 2, Label: "x"}}, Demand: fairness.New(2, 2)})
	var asked []ContainerID
	for _, a := range mustStep(t, c, time.Second, Schedule{}) {
		switch a := a.(type) {
		case PreemptionAsked:
			if a.Container.Node != 1 || a.Container.App != 1 || a.Deadline != 11*time.Second {
				t.Errorf("asked back %+v, want app 1's on node 1 by 11 s", a)
			}
			asked = append(asked, a.Container.ID)
		case *Allocated:
			t.Errorf("granted %+v before any room was free", a.Container)
		}
	}
	if len(asked) != 2 || asked[0] != 8 || asked[1] != 7 {
		t.Fatalf("asked back %v, want the two youngest, 8 and 7", asked)
	}
	if acts := mustStep(t, c, 5*time.Second, Schedule{}); len(acts) != 0 {
		t.Errorf("within the grace: %v", acts)
	}
	preempted, app2 := 0, 0
	for _, a := range mustStep(t, c, 11*time.Second, Schedule{}) {
		switch a := a.(type) {
		case Preempted:
			preempted++
			if !strings.Contains(a.Reason, "node label x") {
				t.Errorf("reason %q", a.Reason)
			}
		case *Allocated:
			if a.Container.App == 2 && a.Container.Node == 1 {
				app2++
			} else {
				t.Errorf("granted %+v", a.Container)
			}
		case PreemptionAsked:
			t.Errorf("asked back %+v more", a.Container)
		}
	}
	if preempted != 2 || app2 != 2 {
		t.Errorf("%d taken and %d granted to app 2 on node 1, want 2 and 2", preempted, app2)
	}
}
