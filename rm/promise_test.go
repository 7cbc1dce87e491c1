package rm

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

// TestLeftoverRank works the first promise through by hand. The cluster is
// <100, 100>; an app's fluid span is the larger of its remaining critical
// path and its remaining work over its dominant share. Its first call with
// a share keeps the span then; while now - first + span (its finish) is
// above the limit, (1 + slack) x the first span, its rank is its work x
// (limit / finish)^2.
func TestLeftoverRank(t *testing.T) {
	type call struct {
		now      time.Duration
		work     float64
		share    float64 // dominant, of the cluster
		critical time.Duration
		want     float64
	}
	tests := []struct {
		name  string
		slack float64
		calls []call
	}{
		{"on time, then late as the share shrinks", 1.5, []call{
			// First: span max(20 s, 10 / 0.1 = 100 s) = 100 s, kept from 0.
			{0, 10, 0.1, 20 * time.Second, 10},
			// 50 s in, 5 left at 0.1: 50 + 50 = 100 <= 250.
			{50 * time.Second, 5, 0.1, 20 * time.Second, 5},
			// The share falls to 0.02: 50 + 250 = 300 > 250, late:
			// 5 x (250 / 300)^2 = 3.4722...
			{50 * time.Second, 5, 0.02, 20 * time.Second, 5 * 25.0 / 36},
			// Back to 0.1 at 200 s with 1 left: 200 + max(20, 10) = 220 <= 250.
			{200 * time.Second, 1, 0.1, 20 * time.Second, 1},
			// Its critical path alone can make it late: 10 + 490 =
			// 500 > 250, 1 x (1/2)^2.
			{10 * time.Second, 1, 0.1, 490 * time.Second, 0.25},
		}},
		{"the line itself is not late", 1, []call{
			{0, 4, 0.1, 0, 4},                 // 40 s
			{40 * time.Second, 4, 0.1, 0, 4},  // 40 + 40 = 80 = 2 x 40
			{120 * time.Second, 4, 0.1, 0, 1}, // 160 > 80: 4 x (1/2)^2
		}},
		{"off", 0, []call{
			{0, 10, 0.1, 0, 10},
			{500 * time.Second, 10, 0.01, 0, 10},
		}},
		{"no share yet: no promise until it has one", 1, []call{
			{0, 10, 0, 0, 10},
			// First with a share at 100 s: span 100 s from 100 s.
			{100 * time.Second, 10, 0.1, 0, 10},
			{150 * time.Second, 10, 0.1, 0, 10},  // 50 + 100 <= 200
			{400 * time.Second, 10, 0.1, 0, 2.5}, // 300 + 100 = 400 > 200: 10 x (1/2)^2
		}},
		{"a sliver of a share is a year, not an overflow", 1, []call{
			{0, 100, 1e-12, 0, 100},
			// 1 h + a year <= 2 years: on time.
			{time.Hour, 100, 1e-12, 0, 100},
			// Then a share: 1 s, far inside the year promised.
			{2 * time.Hour, 1, 1, 0, 1},
		}},
		{"a stock AM sends no work: 0 either way", 1.5, []call{
			{0, 0, 0.1, 0, 0},
			{time.Hour, 0, 0.1, 0, 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{PromiseSlack: tc.slack})
			c.capacity = fairness.New(100, 100)
			a := &app{}
			for i, k := range tc.calls {
				c.now, a.work, a.critical = k.now, k.work, k.critical
				a.share = fairness.New(100*k.share, 100*k.share)
				if got := c.leftoverRank(a); math.Abs(got-k.want) > 1e-9 {
					t.Errorf("call %d (%+v): rank %v, want %v", i, k, got, k.want)
				}
			}
		})
	}
}

// TestLateAppGoesFirstForTheLeftover: one node <10, 10>. At 0 s app 1
// (demand the node, remaining work 10, i.e. the whole cluster for 10 s) is
// alone: share the node, first span 10 s. At 1 s apps 2 and 3 arrive with
// the same demand: shares a third each, so app 1's span is 30 s and its
// finish 1 + 30 = 31 s. Apps 1 and 2 (remaining work 8) each ask 10
// ALTRUISTIC <1, 1>; the node is all leftover, and the lower rank takes
// it all. App 1 ranks 10 until late, then 10 x (limit / 31)^2 with limit
// (1 + slack) x 10 s: slack 1, 4.16 (app 1 first); 1.5, 6.50 (app 1); 2,
// 9.37 (app 2); 2.1 and 3, not late (app 2); 0, off (app 2).
func TestLateAppGoesFirstForTheLeftover(t *testing.T) {
	node := fairness.New(10, 10)
	unit := fairness.New(1, 1)
	for _, tc := range []struct {
		slack float64
		want  AppID
	}{{0, 2}, {1, 1}, {1.5, 1}, {2, 2}, {2.1, 2}, {3, 2}} {
		t.Run(fmt.Sprint(tc.slack), func(t *testing.T) {
			c := New(Config{PAltruism: 1, PromiseSlack: tc.slack})
			stepAt(t, c, 0, NodeUp{Node: 0, Capacity: node}, AppAdded{App: 1, Queue: "default", User: "u"},
				AppRequest{App: 1, Demand: node, RemainingWork: 10, CriticalTime: time.Second})
			if got := allocated(stepAt(t, c, 0, Schedule{})); len(got) != 0 {
				t.Fatalf("granted %+v with nothing asked", got)
			}
			asks := []Ask{{Priority: 1, Demand: unit, Count: 10, Kind: altruism.Altruistic}}
			got := allocated(stepAt(t, c, time.Second,
				AppAdded{App: 2, Queue: "default", User: "v"}, AppAdded{App: 3, Queue: "default", User: "w"},
				AppRequest{App: 2, Demand: node, Asks: asks, RemainingWork: 8, CriticalTime: time.Second},
				AppRequest{App: 3, Demand: node, RemainingWork: 50, CriticalTime: time.Second},
				AppRequest{App: 1, Demand: node, Asks: asks, RemainingWork: 10, CriticalTime: time.Second},
				Schedule{}))
			if len(got) != 10 {
				t.Fatalf("granted %d containers, want the node's 10", len(got))
			}
			for _, k := range got {
				if k.App != tc.want || k.Phase != altruism.FromLeftover {
					t.Fatalf("granted %+v; want all 10 to app %d from the leftover", got, tc.want)
				}
			}
			// What operators see: app 1 promised 10 s at 0, its finish now
			// 31 s (before this pass's grants); app 2 promised at 1 s, a
			// third of the node for work 8: 24 s, finish 24 s.
			p1, err := c.Promise(1)
			if err != nil {
				t.Fatal(err)
			}
			p2, _ := c.Promise(2)
			limit := time.Duration((1 + tc.slack) * float64(10*time.Second))
			want1 := PromiseState{Kept: true, Span: 10 * time.Second, Finish: 31 * time.Second, Limit: limit, Late: 31*time.Second > limit}
			want2 := PromiseState{Kept: true, Span: 24 * time.Second, Finish: 24 * time.Second, Limit: time.Duration((1 + tc.slack) * float64(24*time.Second))}
			if tc.slack == 0 {
				want1, want2 = PromiseState{}, PromiseState{}
			}
			if p1 != want1 || p2 != want2 {
				t.Errorf("promises %+v, %+v; want %+v, %+v", p1, p2, want1, want2)
			}
			if _, err := c.Promise(9); err == nil {
				t.Error("Promise(9) of no app: no error")
			}
		})
	}
}

// TestFirstPromiseWaitsForAFreshShare: the daemon RM steps at heartbeats,
// so an AM's first request can be scheduled before the shares count it.
// One node <10, 10>. App 1 is added at 0 with its AM's demand <1, 1>
// alone and scheduled: its share is <1, 1>. At 100 ms its AM asks, with a
// demand of the whole node and remaining work 5 (half the cluster for
// 10 s): the shares are not due again until 500 ms, so no promise is kept
// at 100 ms (at the stale share of a tenth it would be 50 s). At 600 ms
// the shares count the ask: a share of the node, a span of 5 s.
func TestFirstPromiseWaitsForAFreshShare(t *testing.T) {
	node := fairness.New(10, 10)
	c := New(Config{PAltruism: 1, PromiseSlack: 1.5})
	stepAt(t, c, 0, NodeUp{Node: 0, Capacity: node}, AppAdded{App: 1, Queue: "default", User: "u"},
		AppDemand{App: 1, Demand: fairness.New(1, 1)}, Schedule{})
	asks := []Ask{{Priority: 1, Demand: fairness.New(1, 1), Count: 9, Kind: altruism.Altruistic}}
	stepAt(t, c, 100*time.Millisecond, AppRequest{App: 1, Demand: node, Asks: asks, RemainingWork: 5, CriticalTime: time.Second}, Schedule{})
	if p, err := c.Promise(1); err != nil || p.Kept {
		t.Fatalf("at 100 ms: promise %+v, %v; want none before the shares count the ask", p, err)
	}
	stepAt(t, c, 600*time.Millisecond, Schedule{})
	p, err := c.Promise(1)
	want := PromiseState{Kept: true, Span: 5 * time.Second, Finish: 5 * time.Second, Limit: 12500 * time.Millisecond}
	if err != nil || p != want {
		t.Errorf("at 600 ms: promise %+v, %v; want %+v", p, err, want)
	}
}

// TestLateAppRecallsUpToItsShare: recall takes one ask's room per round,
// but for an app late for its first promise, room for every DEFAULT ask
// it is owed up to its share. One node <100, 100>, Recall 0.25. At 0 s
// app 1 (demand the node) alone gets 10 DEFAULT and 90 ALTRUISTIC
// containers of <1, 1>, ids 11-100 from the leftover. At 1 s app 2 asks
// for five <2, 2> (demand <10, 10>: its share, a tenth), remaining work
// 0.4 and critical path 4 s: promised max(4 s, 0.4 / 0.1) = 4 s. Its
// recall wait is 1 s; at 2 s nothing has started, so its fluid finish is
// 4 s + the time since its promise. With slack 0.01 (line 4.04 s) that is
// late: the ten youngest leftover-paid containers (91-100) go and all five
// asks are placed; with slack 1.5 (line 10 s) or off, one ask's room (99,
// 100) and one grant, as before.
func TestLateAppRecallsUpToItsShare(t *testing.T) {
	unit, two := fairness.New(1, 1), fairness.New(2, 2)
	for _, tc := range []struct {
		slack   float64
		late    bool
		taken   []ContainerID
		granted int
	}{
		{0.01, true, []ContainerID{91, 92, 93, 94, 95, 96, 97, 98, 99, 100}, 5},
		{1.5, false, []ContainerID{99, 100}, 1},
		{0, false, []ContainerID{99, 100}, 1},
	} {
		t.Run(fmt.Sprint(tc.slack), func(t *testing.T) {
			c := New(Config{PAltruism: 1, Recall: 0.25, PromiseSlack: tc.slack})
			stepAt(t, c, 0, NodeUp{Node: 0, Capacity: full}, AppAdded{App: 1, Queue: "default", User: "u"},
				AppRequest{App: 1, Demand: full, CriticalTime: 100 * time.Second, RemainingWork: 100,
					Asks: []Ask{{Priority: 1, Demand: unit, Count: 10}, {Priority: 2, Demand: unit, Count: 90, Kind: altruism.Altruistic}}})
			if got := allocated(stepAt(t, c, 0, Schedule{})); len(got) != 100 {
				t.Fatalf("app 1 got %d containers, want 100", len(got))
			}
			stepAt(t, c, time.Second, AppAdded{App: 2, Queue: "default", User: "v"},
				AppRequest{App: 2, Demand: fairness.New(10, 10), Asks: []Ask{{Priority: 1, Demand: two, Count: 5}},
					RemainingWork: 0.4, CriticalTime: 4 * time.Second},
				Schedule{})
			stepAt(t, c, 1500*time.Millisecond, Schedule{})
			var taken []ContainerID
			granted := 0
			for _, a := range stepAt(t, c, 2*time.Second, Schedule{}) {
				switch a := a.(type) {
				case Preempted:
					taken = append(taken, a.Container.ID)
					why, cause := "recalled from the leftover for app 2, below its share for 1s", RecallBelowShare
					if tc.late {
						why, cause = why+" and late for its first promise", RecallLate
					}
					if a.Reason != why || a.Cause != cause {
						t.Errorf("reason %q (%v), want %q (%v)", a.Reason, a.Cause, why, cause)
					}
				case *Allocated:
					if a.Container.App != 2 || a.Container.Resource != two || a.Container.Phase != altruism.InShare {
						t.Errorf("granted %+v, want <2, 2> for app 2 from its share", a.Container)
					}
					granted++
				}
			}
			slices.Sort(taken)
			if !slices.Equal(taken, tc.taken) || granted != tc.granted {
				t.Errorf("taken %v and %d granted, want %v and %d", taken, granted, tc.taken, tc.granted)
			}
			p, err := c.Promise(2)
			if err != nil {
				t.Fatal(err)
			}
			if tc.slack > 0 && (p.Span != 4*time.Second || p.Finish <= 4*time.Second) {
				t.Errorf("promise %+v: want a span of 4 s and a finish past it", p)
			}
			if p.Late != tc.late {
				t.Errorf("promise %+v: late %v, want %v", p, p.Late, tc.late)
			}
		})
	}
}

// TestPromiseSurvivesARestart: a pass that takes a first promise says so
// (Promised), once; a new core given it (AppPromise, in its own time)
// keeps that promise instead of taking a fresh one. One node <10, 10>; at
// 0 s app 1 asks with a demand of the node and remaining work 10: its
// span is 10 s, promised at 0 s (the shares count its ask at once: it is
// the first app). The second core starts 100 s later on the wall clock, so
// the promise is at -100 s in its time; at its 5 s (105 s in all) the app
// still has work 10 at a share of the node: finish 105 + 10 = 115 s,
// past the line of (1 + 1.5) x 10 = 25 s: late. A fresh promise there would
// have been 10 s from 5 s, on time.
func TestPromiseSurvivesARestart(t *testing.T) {
	node := fairness.New(10, 10)
	unit := fairness.New(1, 1)
	req := AppRequest{App: 1, Demand: node, RemainingWork: 10, CriticalTime: time.Second,
		Asks: []Ask{{Priority: 1, Demand: unit, Count: 1}}}
	c := New(Config{PAltruism: 1, PromiseSlack: 1.5})
	stepAt(t, c, 0, NodeUp{Node: 0, Capacity: node}, AppAdded{App: 1, Queue: "default", User: "u"}, req)
	var got []Promised
	for _, now := range []time.Duration{0, time.Second} {
		for _, a := range stepAt(t, c, now, Schedule{}) {
			if p, ok := a.(Promised); ok {
				got = append(got, p)
			}
		}
	}
	want := Promised{App: 1, At: 0, Span: 10 * time.Second}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("Promised actions %+v, want one %+v", got, want)
	}

	d := New(Config{PAltruism: 1, PromiseSlack: 1.5})
	stepAt(t, d, 0, NodeUp{Node: 0, Capacity: node}, AppAdded{App: 1, Queue: "default", User: "u"},
		AppPromise{App: 1, At: want.At - 100*time.Second, Span: want.Span}, req)
	for _, a := range stepAt(t, d, 5*time.Second, Schedule{}) {
		if p, ok := a.(Promised); ok {
			t.Errorf("the restored app was promised afresh: %+v", p)
		}
	}
	p, err := d.Promise(1)
	wantState := PromiseState{Kept: true, Span: 10 * time.Second, Finish: 115 * time.Second, Limit: 25 * time.Second, Late: true}
	if err != nil || p != wantState {
		t.Errorf("restored promise %+v, %v; want %+v", p, err, wantState)
	}

	for _, tc := range []struct {
		ev   AppPromise
		want string
	}{
		{AppPromise{App: 9, Span: time.Second}, "app 9"},
		{AppPromise{App: 1, Span: 0}, "a promised span of 0s is not in"},
		{AppPromise{App: 1, Span: maxSpan + 1}, "is not in"},
		{AppPromise{App: 1, At: time.Hour, Span: time.Second}, "a promise taken at 1h0m0s is after now"},
	} {
		if _, err := d.Step(5*time.Second, tc.ev); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.ev, err, tc.want)
		}
	}
}
