package rm

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

func stepAt(t *testing.T, c *Core, now time.Duration, evs ...Event) []Action {
	t.Helper()
	var all []Action
	for _, ev := range evs {
		acts, err := c.Step(now, ev)
		if err != nil {
			t.Fatalf("%T at %v: %v", ev, now, err)
		}
		all = append(all, acts...)
	}
	return all
}

// TestPreemptionForAGuarantee works a starved queue through by hand. One
// node <100, 100>; root.a guaranteed half (min-share timeout 10 s),
// root.b nothing; grace 5 s, checks every second.
//   - 0 s: b's app 1 takes the idle cluster: 90 DEFAULT and 10
//     ALTRUISTIC containers of <1, 1>, ids 1-100; its AM runs in the
//     youngest DEFAULT one.
//   - 1 s: a's app 2 asks for 50. a holds 0 of min(50, 50): starved.
//   - 10 s: 9 s starved, nothing yet. 11 s: 10 s: b is asked for 50:
//     its 10 ALTRUISTIC ones first, then the youngest DEFAULT ones, never
//     its AM's, and not one more (b stays at its share of 50).
//   - 12 s: app 1 gives one back itself: app 2 gets that room at once.
//   - 16 s: the other 49 are taken; app 2 gets their room.
func TestPreemptionForAGuarantee(t *testing.T) {
	c := New(Config{Policy: DRF(), Preemption: &PreemptionConfig{Grace: 5 * time.Second, Interval: time.Second}})
	unit := fairness.New(1, 1)
	stepAt(t, c, 0, NodeUp{Node: 0, Capacity: full},
		QueuesSet{Queues: []QueueConf{
			{Name: "root.a", Weight: 1, MinFrac: fairness.New(0.5, 0.5), Preemption: PreemptionTimes{MinShareTimeout: 10 * time.Second}},
			{Name: "root.b", Weight: 1}}},
		AppAdded{App: 1, Queue: "root.b", User: "u"},
		AppRequest{App: 1, Demand: full, Asks: []Ask{{Priority: 1, Demand: unit, Count: 90}, {Priority: 2, Demand: unit, Count: 10, Kind: altruism.Altruistic}}})
	got := allocated(stepAt(t, c, 0, Schedule{}))
	if len(got) != 100 {
		t.Fatalf("app 1 got %d containers, want 100", len(got))
	}
	altruistic := []ContainerID{}
	for _, k := range got {
		if k.Kind == altruism.Altruistic {
			altruistic = append(altruistic, k.ID)
		}
	}
	// Its AM runs in the youngest DEFAULT one.
	var am ContainerID
	for _, k := range got {
		if k.Kind == altruism.Default {
			am = max(am, k.ID)
		}
	}
	stepAt(t, c, 0, AMContainer{Container: am})
	stepAt(t, c, time.Second, AppAdded{App: 2, Queue: "root.a", User: "v"},
		AppRequest{App: 2, Demand: fairness.New(50, 50), Asks: []Ask{{Priority: 1, Demand: unit, Count: 50}}})
	for _, at := range []time.Duration{time.Second, 5 * time.Second, 10 * time.Second} {
		if acts := stepAt(t, c, at, Schedule{}); len(acts) != 0 {
			t.Fatalf("at %v: %d actions before the timeout", at, len(acts))
		}
	}
	var asked []ContainerID
	for _, a := range stepAt(t, c, 11*time.Second, Schedule{}) {
		pa, ok := a.(PreemptionAsked)
		if !ok {
			t.Fatalf("at 11 s: %T", a)
		}
		if pa.Deadline != 16*time.Second || pa.Container.App != 1 {
			t.Errorf("asked back %+v", pa)
		}
		asked = append(asked, pa.Container.ID)
	}
	// The 10 ALTRUISTIC ones, then DEFAULT ones from the youngest down,
	// but the AM's: 40 of them.
	var want []ContainerID
	want = append(want, altruistic...)
	for id := ContainerID(100); len(want) < 50; id-- {
		if !slices.Contains(altruistic, id) && id != am {
			want = append(want, id)
		}
	}
	slices.Sort(asked)
	slices.Sort(want)
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Fatalf("asked back (-want +got):\n%s", diff)
	}
	// Nothing more is asked while they are on their way.
	if acts := stepAt(t, c, 13*time.Second, Schedule{}); len(acts) != 0 {
		t.Errorf("at 13 s: %d actions", len(acts))
	}
	stepAt(t, c, 12*time.Second, ContainerDone{Container: asked[0]})
	if got := allocated(stepAt(t, c, 12*time.Second, Schedule{})); len(got) != 1 || got[0].App != 2 {
		t.Errorf("after app 1 gave one back: %+v", got)
	}
	var taken, granted int
	for _, a := range stepAt(t, c, 16*time.Second, Schedule{}) {
		switch a := a.(type) {
		case Preempted:
			taken++
			if a.Container.App != 1 || a.Reason != "preempted for queue root.a" {
				t.Errorf("preempted %+v", a)
			}
		case *Allocated:
			granted++
			if a.Container.App != 2 {
				t.Errorf("granted %+v", a.Container)
			}
		default:
			t.Errorf("at 16 s: %T", a)
		}
	}
	if taken != 49 || granted != 49 {
		t.Errorf("at 16 s: %d taken, %d granted; want 49 and 49", taken, granted)
	}
	u1, _ := c.Usage(1)
	u2, _ := c.Usage(2)
	if u1 != fairness.New(50, 50) || u2 != fairness.New(50, 50) {
		t.Errorf("after preemption app 1 holds %v and app 2 %v, want half each", u1, u2)
	}
}

// TestPreemptionRespectsShares: a queue at or below its share is never a
// victim, nor one that forbids it; a fair-share starvation restores the
// whole share; without timeouts nothing happens.
func TestPreemptionRespectsShares(t *testing.T) {
	unit := fairness.New(1, 1)
	tests := []struct {
		name  string
		a, b  PreemptionTimes
		want  int // containers asked back from b at 20 s
		bFrom bool
	}{
		{"no timeouts", PreemptionTimes{}, PreemptionTimes{}, 0, true},
		// a's share 50, threshold 0.5: a holds 0 < 25 for 5 s: restored
		// to its whole share, 50.
		{"fair share", PreemptionTimes{FairShareTimeout: 5 * time.Second}, PreemptionTimes{}, 50, true},
		{"b forbids it", PreemptionTimes{FairShareTimeout: 5 * time.Second}, PreemptionTimes{NoPreemptFrom: true}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{Policy: DRF(), Preemption: &PreemptionConfig{Grace: time.Second}})
			stepAt(t, c, 0, NodeUp{Node: 0, Capacity: full},
				QueuesSet{Queues: []QueueConf{{Name: "root.a", Weight: 1, Preemption: tc.a}, {Name: "root.b", Weight: 1, Preemption: tc.b}}},
				AppAdded{App: 1, Queue: "root.b", User: "u"},
				AppRequest{App: 1, Demand: full, Asks: []Ask{{Priority: 1, Demand: unit, Count: 100}}})
			stepAt(t, c, 0, Schedule{})
			stepAt(t, c, time.Second, AppAdded{App: 2, Queue: "root.a", User: "v"},
				AppRequest{App: 2, Demand: full, Asks: []Ask{{Priority: 1, Demand: unit, Count: 100}}}, Schedule{})
			asked := 0
			for now := 2 * time.Second; now <= 20*time.Second; now += time.Second {
				for _, a := range stepAt(t, c, now, Schedule{}) {
					if _, ok := a.(PreemptionAsked); ok {
						asked++
					}
				}
			}
			if asked != tc.want {
				t.Errorf("asked back %d, want %d", asked, tc.want)
			}
		})
	}
}

// TestGuaranteesMetWithinTheTimeout: over random trees of leaves with
// guarantees that fit, one leaf filling the idle cluster first and the
// others asking later, every leaf holds min(guarantee, demand) (to one
// container) once the timeout and the grace have passed, and no more is
// taken than that needs (a first version asked a victim for everything it
// held: its check did not count the containers chosen before).
func TestGuaranteesMetWithinTheTimeout(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	unit := fairness.New(1, 1)
	for trial := range 100 {
		n := 2 + rng.IntN(4)
		var qs []QueueConf
		left := 1.0
		for i := range n {
			f := float64(rng.IntN(int(left*100)/max(n-i, 1)+1)) / 100
			left -= f
			qs = append(qs, QueueConf{Name: "root.q" + string(rune('a'+i)), Weight: float64(1 + rng.IntN(3)), MinFrac: fairness.New(f, f),
				Preemption: PreemptionTimes{MinShareTimeout: 2 * time.Second}})
		}
		c := New(Config{Policy: Carbyne(altruism.SRTFFirst), PAltruism: 0.5, Preemption: &PreemptionConfig{Grace: time.Second, Interval: 500 * time.Millisecond}})
		stepAt(t, c, 0, NodeUp{Node: 0, Capacity: full}, QueuesSet{Queues: qs})
		first := rng.IntN(n)
		demand := map[int]float64{}
		for i := range n {
			demand[i] = float64(1 + rng.IntN(100))
			if i == first {
				demand[i] = 100
			}
		}
		add := func(i int, now time.Duration) {
			d := demand[i]
			stepAt(t, c, now, AppAdded{App: AppID(i + 1), Queue: qs[i].Name, User: "u"},
				AppRequest{App: AppID(i + 1), Demand: unit.Scale(d), RemainingWork: d, Asks: []Ask{
					{Priority: 1, Demand: unit, Count: int(d)}, {Priority: 2, Demand: unit, Count: int(d), Kind: altruism.Altruistic}}})
		}
		add(first, 0)
		stepAt(t, c, 0, Schedule{})
		taken := 0
		for i := range n {
			if i != first {
				add(i, time.Second)
			}
		}
		// The AMs ask again for what they still lack at each step, as
		// real AMs do after their containers were taken.
		for now := time.Second; now <= 10*time.Second; now += 500 * time.Millisecond {
			for i := range n {
				u, _ := c.Usage(AppID(i + 1))
				lack := int(demand[i] - u[fairness.Memory])
				stepAt(t, c, now, AppRequest{App: AppID(i + 1), Demand: unit.Scale(demand[i]), RemainingWork: demand[i],
					Asks: []Ask{{Priority: 1, Demand: unit, Count: lack}}})
			}
			for _, a := range stepAt(t, c, now, Schedule{}) {
				if p, ok := a.(Preempted); ok {
					if p.Cause != ForQueue {
						t.Errorf("taken for a queue, cause %v", p.Cause)
					}
					taken++
				}
			}
		}
		// No churn: no more is taken than the others' guarantees need.
		need := 0.0
		for i, q := range qs {
			if i != first {
				need += min(q.MinFrac[fairness.Memory]*100, demand[i])
			}
		}
		if float64(taken) > need+1 {
			t.Fatalf("trial %d: %d containers taken where the guarantees needed %v", trial, taken, need)
		}
		for i, q := range qs {
			u, _ := c.Usage(AppID(i + 1))
			floor := min(q.MinFrac[fairness.Memory]*100, demand[i])
			if u[fairness.Memory] < floor-1 {
				t.Fatalf("trial %d: queue %s (guarantee %v, demand %v) holds %v at 10 s; first %s",
					trial, q.Name, q.MinFrac[fairness.Memory]*100, demand[i], u, qs[first].Name)
			}
		}
	}
}
