package rm

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

var cmpApprox = cmpopts.EquateApprox(1e-9, 1e-12)

// step applies events and fails the test on an error.
func step(t *testing.T, c *Core, evs ...Event) []Action {
	t.Helper()
	var all []Action
	for _, ev := range evs {
		acts, err := c.Step(0, ev)
		if err != nil {
			t.Fatalf("%T: %v", ev, err)
		}
		all = append(all, acts...)
	}
	return all
}

func allocated(acts []Action) []Container {
	var out []Container
	for _, a := range acts {
		if al, ok := a.(*Allocated); ok {
			out = append(out, al.Container)
		}
	}
	return out
}

func TestStepErrors(t *testing.T) {
	c := New(Config{})
	step(t, c, NodeUp{Node: 0, Capacity: fairness.New(100, 10)}, AppAdded{App: 1})
	tests := []struct {
		ev   Event
		want string
	}{
		{NodeUp{Node: -1, Capacity: fairness.New(1, 1)}, "node -1: a node id cannot be negative"},
		{NodeUp{Node: 3, Capacity: fairness.Vector{}}, "node 3: capacity <memory-mb=0, vcores=0> must be positive"},
		{NodeLost{Node: 9}, "node 9 is not registered"},
		{AppAdded{App: 1}, "app 1 is already running"},
		{AppAdded{App: 2, Weight: -1}, "app 2: weight -1 must be positive"},
		{AppRequest{App: 7}, "app 7 is not running"},
		{AppRequest{App: 1, Asks: []Ask{{Priority: 3, Demand: fairness.New(1, 1), Count: -2}}}, "app 1: ask at priority 3 has a negative count -2"},
		{AppRequest{App: 1, Asks: []Ask{{Priority: 3, Count: 1}}}, "app 1: ask at priority 3: capability <memory-mb=0, vcores=0> must be positive"},
		{AppRequest{App: 1, Asks: []Ask{{Priority: 3, Demand: fairness.New(1, 1), Kind: 9, Count: 1}}}, "app 1: ask at priority 3 has unknown kind 9"},
		{ContainerDone{Container: 42}, "container 42 is not running"},
		{AppRemoved{App: 5}, "app 5 is not running"},
		{Schedule{Nodes: []NodeID{4}}, "node 4 is not registered"},
		{SetAltruism{P: 1.5}, "P(Altruism) 1.5 must be between 0 and 1"},
		{ContainerRecovered{Container{ID: 3, App: 1, Node: 8, Resource: fairness.New(1, 1)}}, "node 8 is not registered"},
		{ContainerRecovered{Container{ID: 3, App: 6, Node: 0, Resource: fairness.New(1, 1)}}, "app 6 is not running"},
		{ContainerRecovered{Container{ID: 0, App: 1, Node: 0, Resource: fairness.New(1, 1)}}, "container 0: an id must be positive"},
		{ContainerRecovered{Container{ID: 3, App: 1, Node: 0}}, "container 3: resource <memory-mb=0, vcores=0> must be positive"},
	}
	for _, tc := range tests {
		_, err := c.Step(0, tc.ev)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%T: error = %v, want %q", tc.ev, err, tc.want)
		}
	}
}

func TestSharesAreDRF(t *testing.T) {
	// The DRF paper's example on one node of <18 GB, 9 cores>.
	c := New(Config{})
	step(t, c,
		NodeUp{Node: 0, Capacity: fairness.New(18, 9)},
		AppAdded{App: 1}, AppAdded{App: 2},
		AppRequest{App: 1, Demand: fairness.New(400, 100)},
		AppRequest{App: 2, Demand: fairness.New(100, 300)},
	)
	for app, want := range map[AppID]fairness.Vector{1: fairness.New(12, 3), 2: fairness.New(2, 6)} {
		got, err := c.Share(app)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmpApprox); diff != "" {
			t.Errorf("share of app %d (-want +got):\n%s", app, diff)
		}
	}
}

func TestScheduleDRFPolicy(t *testing.T) {
	// One node <100, 10>. App 1 asks 8 tasks <10,1>, app 2 asks 8 tasks
	// <5,1>. DRF order by dominant share of usage (both cores-dominant):
	// 1, 2 alternate (ties to the lower app): 1,2,1,2,... ten cores,
	// five each.
	c := New(Config{Policy: DRF()})
	step(t, c,
		NodeUp{Node: 0, Capacity: fairness.New(100, 10)},
		AppAdded{App: 1}, AppAdded{App: 2},
		AppRequest{App: 1, Asks: []Ask{{Priority: 1, Demand: fairness.New(10, 1), Count: 8}}, Demand: fairness.New(80, 8)},
		AppRequest{App: 2, Asks: []Ask{{Priority: 1, Demand: fairness.New(5, 1), Count: 8}}, Demand: fairness.New(40, 8)},
	)
	got := allocated(step(t, c, Schedule{}))
	per := map[AppID]int{}
	for i, k := range got {
		per[k.App]++
		if want := AppID(1 + i%2); k.App != want {
			t.Errorf("container %d went to app %d, want %d", i, k.App, want)
		}
	}
	if per[1] != 5 || per[2] != 5 {
		t.Errorf("allocations per app = %v, want 5 and 5", per)
	}
	if u, _ := c.Usage(1); u != fairness.New(50, 5) {
		t.Errorf("usage of app 1 = %v", u)
	}
	// The node is full: nothing more, and the asks were decremented.
	if more := allocated(step(t, c, Schedule{})); len(more) != 0 {
		t.Errorf("a full node allocated %d more", len(more))
	}
	// Both hold half the cores (app 1 <50,5>, app 2 <25,5>): dominant
	// shares 0.5 each. Freeing one of app 2's leaves it at 0.4, the lower,
	// so it gets the core back.
	var two ContainerID
	for _, k := range got {
		if k.App == 2 {
			two = k.ID
		}
	}
	step(t, c, ContainerDone{Container: two})
	if again := allocated(step(t, c, Schedule{})); len(again) != 1 || again[0].App != 2 {
		t.Errorf("after a free core: %+v, want one container for app 2", again)
	}
}

func TestNodeLostAndAppRemoved(t *testing.T) {
	c := New(Config{Policy: DRF()})
	step(t, c,
		NodeUp{Node: 0, Capacity: fairness.New(100, 2)},
		NodeUp{Node: 1, Capacity: fairness.New(100, 2)},
		AppAdded{App: 1},
		AppRequest{App: 1, Asks: []Ask{{Priority: 1, Demand: fairness.New(10, 1), Count: 4}}, Demand: fairness.New(40, 4)},
	)
	got := allocated(step(t, c, Schedule{}))
	if len(got) != 4 {
		t.Fatalf("allocated %d, want 4", len(got))
	}
	lost := step(t, c, NodeLost{Node: 1})
	if len(lost) != 2 {
		t.Fatalf("node loss reported %d containers, want 2", len(lost))
	}
	for _, a := range lost {
		l := a.(Lost)
		if l.Container.Node != 1 || !strings.Contains(l.Reason, "node 1 lost") {
			t.Errorf("lost %+v", l)
		}
	}
	if u, _ := c.Usage(1); u != fairness.New(20, 2) {
		t.Errorf("usage after node loss = %v, want <20,2>", u)
	}
	if c.Capacity() != fairness.New(100, 2) {
		t.Errorf("capacity after node loss = %v", c.Capacity())
	}
	gone := step(t, c, AppRemoved{App: 1})
	if len(gone) != 2 || c.Used() != (fairness.Vector{}) {
		t.Errorf("app removal freed %d, used now %v", len(gone), c.Used())
	}
}

// twoKinds is the node and asks of TestScheduleCarbyneKinds: on <100, 10>,
// app 1 (share 5 cores) asks 3 DEFAULT and 10 ALTRUISTIC; app 2 asks 10
// ALTRUISTIC and has less work left. It returns the allocations of one
// scheduling round, counted by kind, phase and app.
func twoKinds(t *testing.T, c *Core, before ...Event) map[string]int {
	t.Helper()
	d := fairness.New(10, 1)
	step(t, c,
		NodeUp{Node: 0, Capacity: fairness.New(100, 10)},
		AppAdded{App: 1}, AppAdded{App: 2},
		AppRequest{App: 1, Demand: fairness.New(130, 13), RemainingWork: 9, Asks: []Ask{
			{Priority: 0, Demand: d, Kind: altruism.Default, Count: 3},
			{Priority: 1, Demand: d, Kind: altruism.Altruistic, Count: 10},
		}},
		AppRequest{App: 2, Demand: fairness.New(100, 10), RemainingWork: 1, Asks: []Ask{
			{Priority: 0, Demand: d, Kind: altruism.Altruistic, Count: 10},
		}},
	)
	step(t, c, before...)
	count := map[string]int{}
	for _, k := range allocated(step(t, c, Schedule{})) {
		count[k.Kind.String()+"/"+k.Phase.String()+"/"+string(rune('0'+k.App))]++
	}
	return count
}

func TestScheduleCarbyneKinds(t *testing.T) {
	// The DEFAULT three go in share; the leftover seven go to app 2 first.
	c := New(Config{Policy: Carbyne(altruism.EfficiencyFirst), PAltruism: 1})
	want := map[string]int{"DEFAULT/in-share/1": 3, "ALTRUISTIC/leftover/2": 7}
	if diff := cmp.Diff(want, twoKinds(t, c)); diff != "" {
		t.Errorf("allocations (-want +got):\n%s", diff)
	}
}

func TestSetAltruism(t *testing.T) {
	c := New(Config{PAltruism: 1})
	step(t, c, SetAltruism{P: 0.25})
	if c.PAltruism() != 0.25 {
		t.Errorf("PAltruism = %v", c.PAltruism())
	}
}

func TestSetPolicy(t *testing.T) {
	c := New(Config{Policy: Carbyne(altruism.EfficiencyFirst)})
	step(t, c, SetPolicy{Policy: DRF()})
	if c.Policy().Name() != "drf" {
		t.Errorf("policy = %s, want drf", c.Policy().Name())
	}
	if _, err := c.Step(0, SetPolicy{}); err == nil {
		t.Error("a nil policy was accepted")
	}
}

func TestParsePolicy(t *testing.T) {
	for _, name := range []string{"carbyne", "drf", "tetris", "sjf"} {
		p, err := ParsePolicy(name, altruism.EfficiencyFirst)
		if err != nil || p.Name() != name {
			t.Errorf("ParsePolicy(%q) = %v, %v", name, p, err)
		}
	}
	if _, err := ParsePolicy("fifo", altruism.EfficiencyFirst); err == nil || !strings.Contains(err.Error(), `unknown policy "fifo"`) {
		t.Errorf("ParsePolicy(fifo) error = %v", err)
	}
}

func TestShareInterval(t *testing.T) {
	// Two apps on <100, 10>. Shares are recomputed at once when an app
	// starts demanding, but a mere change of demand waits 500 ms, as YARN's
	// fair scheduler recomputes fair shares on an interval.
	c := New(Config{})
	at := func(now time.Duration, ev Event) {
		if _, err := c.Step(now, ev); err != nil {
			t.Fatal(err)
		}
	}
	share := func(id AppID) fairness.Vector {
		s, err := c.Share(id)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	at(0, NodeUp{Node: 0, Capacity: fairness.New(100, 10)})
	at(0, AppAdded{App: 1})
	at(0, AppAdded{App: 2})
	at(0, AppDemand{App: 1, Demand: fairness.New(100, 10)})
	at(0, AppDemand{App: 2, Demand: fairness.New(100, 10)})
	if got := share(1); got != fairness.New(50, 5) {
		t.Fatalf("share at 0 = %v, want <50,5>", got)
	}
	// App 2 now wants only <20, 2>: DRF would give app 1 <80, 8>, but not
	// before the interval has passed.
	at(100*time.Millisecond, AppDemand{App: 2, Demand: fairness.New(20, 2)})
	if got := share(1); got != fairness.New(50, 5) {
		t.Errorf("share at 100ms = %v, want the old <50,5>", got)
	}
	at(500*time.Millisecond, AppDemand{App: 1, Demand: fairness.New(90, 9)})
	if got := share(1); got != fairness.New(80, 8) {
		t.Errorf("share at 500ms = %v, want <80,8>", got)
	}
	// App 2 stops demanding: at once, app 1 may have everything it asks.
	at(600*time.Millisecond, AppDemand{App: 2})
	if got := share(1); got != fairness.New(90, 9) {
		t.Errorf("share after app 2 stopped = %v, want <90,9>", got)
	}
}

func TestReturningShapeReachesSettledNodes(t *testing.T) {
	// A node with <5, 3> free is settled by an ask it cannot fit. A shape
	// that was asked for before (and served) is asked for again: it fits
	// the settled node, which must be visited again.
	c := New(Config{Policy: DRF()})
	small := fairness.New(2, 1)
	step(t, c,
		NodeUp{Node: 0, Capacity: fairness.New(100, 4)},
		AppAdded{App: 1},
		AppRequest{App: 1, Asks: []Ask{{Priority: 1, Demand: small, Count: 1}}, Demand: small},
	)
	if got := allocated(step(t, c, Schedule{})); len(got) != 1 {
		t.Fatalf("first small ask: %d containers", len(got))
	}
	big := fairness.New(93, 1)
	step(t, c, AppRequest{App: 1, Asks: []Ask{{Priority: 1, Demand: big, Count: 1}}, Demand: big})
	if got := allocated(step(t, c, Schedule{})); len(got) != 1 {
		t.Fatalf("big ask: %d containers", len(got))
	}
	// Free now <5, 2>: a <10,1> ask does not fit, and settles the node.
	step(t, c, AppRequest{App: 1, Asks: []Ask{{Priority: 1, Demand: fairness.New(10, 1), Count: 1}}, Demand: big})
	if got := allocated(step(t, c, Schedule{})); len(got) != 0 {
		t.Fatalf("an ask that does not fit got %d containers", len(got))
	}
	step(t, c, AppRequest{App: 1, Asks: []Ask{{Priority: 1, Demand: small, Count: 1}}, Demand: big})
	if got := allocated(step(t, c, Schedule{})); len(got) != 1 {
		t.Errorf("the returning shape got %d containers on the settled node, want 1", len(got))
	}
}

// TestContainerRecovered: after an RM restart, containers the nodes report
// hold their room and count in their apps' usage; new grants are numbered
// past both the epoch's first id and every recovered one.
func TestContainerRecovered(t *testing.T) {
	c := New(Config{Policy: DRF(), FirstContainer: 2 << 40})
	step(t, c, NodeUp{Node: 0, Capacity: fairness.New(4096, 4)}, AppAdded{App: 1, Weight: 1},
		ContainerRecovered{Container{ID: 5, App: 1, Node: 0, Resource: fairness.New(1024, 1)}},
		ContainerRecovered{Container{ID: 2<<40 + 7, App: 1, Node: 0, Resource: fairness.New(1024, 2)}})
	if _, err := c.Step(0, ContainerRecovered{Container{ID: 5, App: 1, Node: 0, Resource: fairness.New(1, 1)}}); err == nil ||
		err.Error() != "container 5 is already known" {
		t.Errorf("recovering container 5 twice: %v", err)
	}
	if u, _ := c.Usage(1); u != fairness.New(2048, 3) {
		t.Errorf("usage %v, want the two recovered containers' 2048 MB and 3 vcores", u)
	}
	if c.Used() != fairness.New(2048, 3) {
		t.Errorf("used %v", c.Used())
	}
	// One vcore is left: a 1-vcore ask gets it, with the next id.
	got := allocated(step(t, c, AppRequest{App: 1, Asks: []Ask{{Priority: 1, Demand: fairness.New(512, 1), Count: 3}},
		Demand: fairness.New(3584, 6)}, Schedule{}))
	if len(got) != 1 || got[0].ID != 2<<40+8 {
		t.Errorf("granted %+v, want one container numbered %d", got, 2<<40+8)
	}
	// Done, it frees its room like any other.
	step(t, c, ContainerDone{Container: 5})
	if c.Used() != fairness.New(1536, 3) {
		t.Errorf("used %v after container 5 ended", c.Used())
	}
}

// TestCarbyneAtZeroIsDRF: at P(Altruism) 0 the core runs DRF's node pass,
// and turning the knob up live brings Carbyne's back. On twoKinds's asks
// DRF gives each container to the app holding least, whatever the ask's
// kind, alternating from app 1 (tie to the lower priority value, then the
// lower app): 5 + 5 cores, app 1's DEFAULT three first; all placed as DRF
// places (phase "leftover", the baselines' phase). Carbyne, with P = 1,
// gives the in-share / leftover split of TestScheduleCarbyneKinds.
func TestCarbyneAtZeroIsDRF(t *testing.T) {
	zero := map[string]int{"DEFAULT/leftover/1": 3, "ALTRUISTIC/leftover/1": 2, "ALTRUISTIC/leftover/2": 5}
	c := New(Config{Policy: Carbyne(altruism.EfficiencyFirst), PAltruism: 0})
	if diff := cmp.Diff(zero, twoKinds(t, c)); diff != "" {
		t.Errorf("P=0 allocations (-want +got):\n%s", diff)
	}
	c = New(Config{Policy: Carbyne(altruism.EfficiencyFirst), PAltruism: 0})
	raised := twoKinds(t, c, SetAltruism{P: 1})
	if diff := cmp.Diff(map[string]int{"DEFAULT/in-share/1": 3, "ALTRUISTIC/leftover/2": 7}, raised); diff != "" {
		t.Errorf("P raised to 1 live (-want +got):\n%s", diff)
	}
}

// TestQueueAltruism: a queue's override of P(Altruism) is what its apps'
// AMs are told, the cluster's value for every other queue; clearing it
// brings the cluster's back. With the cluster at 0 and an override above
// 0, the core keeps Carbyne's node pass (twoKinds's asks, all in queue
// "etl": the in-share / leftover split, not DRF's).
func TestQueueAltruism(t *testing.T) {
	c := New(Config{Policy: Carbyne(altruism.EfficiencyFirst), PAltruism: 0, QueuePAltruism: map[string]float64{"etl": 0.5}})
	step(t, c, AppAdded{App: 7, Queue: "etl"}, AppAdded{App: 8, Queue: "adhoc"})
	for _, tc := range []struct {
		ev   []Event
		want [2]float64 // apps 7 and 8
	}{
		{nil, [2]float64{0.5, 0}},
		{[]Event{SetAltruism{P: 0.25}}, [2]float64{0.5, 0.25}},
		{[]Event{SetAltruism{Queue: "adhoc", P: 1}}, [2]float64{0.5, 1}},
		{[]Event{SetAltruism{Queue: "etl", Clear: true}}, [2]float64{0.25, 1}},
	} {
		step(t, c, tc.ev...)
		for i, id := range []AppID{7, 8} {
			if p, err := c.PAltruismOf(id); err != nil || p != tc.want[i] {
				t.Errorf("after %v: app %d P = %v, %v; want %v", tc.ev, id, p, err, tc.want[i])
			}
		}
	}
	if _, err := c.PAltruismOf(99); err == nil {
		t.Error("P(Altruism) of an unknown app")
	}
	if _, err := c.Step(0, SetAltruism{Clear: true}); err == nil {
		t.Error("cleared the cluster's P(Altruism)")
	}
	if _, err := c.Step(0, SetAltruism{Queue: "etl", P: 2}); err == nil {
		t.Error("a queue's P(Altruism) of 2 was taken")
	}
	if got := c.QueuePAltruism(); len(got) != 1 || got["adhoc"] != 1 {
		t.Errorf("overrides %v, want adhoc: 1", got)
	}

	d := New(Config{Policy: Carbyne(altruism.EfficiencyFirst), PAltruism: 0, QueuePAltruism: map[string]float64{"": 1}})
	if diff := cmp.Diff(map[string]int{"DEFAULT/in-share/1": 3, "ALTRUISTIC/leftover/2": 7}, twoKinds(t, d)); diff != "" {
		t.Errorf("cluster at 0, queue at 1: allocations (-want +got):\n%s", diff)
	}
}

// TestAppMoved: a moved app takes its new queue's weight in DRF at once
// and its P(Altruism) override. Two apps on <100, 10>, each demanding the
// whole node: equal weights share 5 cores each; app 2 moved to a queue of
// weight 3 gets 3/4 of the node, 7.5 cores, and the queue's P.
func TestAppMoved(t *testing.T) {
	c := New(Config{Policy: DRF(), PAltruism: 1, QueuePAltruism: map[string]float64{"gold": 0.5}})
	step(t, c, NodeUp{Node: 0, Capacity: fairness.New(100, 10)},
		AppAdded{App: 1, Queue: "default"}, AppAdded{App: 2, Queue: "default"},
		AppDemand{App: 1, Demand: fairness.New(100, 10)}, AppDemand{App: 2, Demand: fairness.New(100, 10)}, Schedule{})
	if s, _ := c.Share(2); s != fairness.New(50, 5) {
		t.Errorf("share before the move %v, want <50, 5>", s)
	}
	step(t, c, AppMoved{App: 2, Queue: "gold", Weight: 3}, Schedule{})
	if s, _ := c.Share(2); s != fairness.New(75, 7.5) {
		t.Errorf("share after the move %v, want <75, 7.5>", s)
	}
	if p, _ := c.PAltruismOf(2); p != 0.5 {
		t.Errorf("P after the move %v, want gold's 0.5", p)
	}
	if _, err := c.Step(0, AppMoved{App: 9, Queue: "gold"}); err == nil {
		t.Error("moved an unknown app")
	}
	if _, err := c.Step(0, AppMoved{App: 2, Queue: "gold", Weight: -1}); err == nil {
		t.Error("moved an app to a negative weight")
	}
}
