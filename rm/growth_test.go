package rm

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

// TestShareGrowth works the processor-sharing projection by hand. The
// cluster is <100, 100>; the app asked about (id 9) has weight 1 and the
// share given. The others finish in order of work over weight, the i-th
// at t_i = t_(i-1) + (v_i - v_(i-1)) x (the weight present then), and the
// app's factor after is the weight present now over the weight left,
// capped where its dominant share would pass the whole cluster.
func TestShareGrowth(t *testing.T) {
	type other struct {
		id     AppID
		work   float64
		weight float64
		label  string
		held   bool
	}
	s := time.Second
	tests := []struct {
		name   string
		off    bool
		share  fairness.Vector
		others []other
		want   []altruism.ShareStep
	}{
		{"three others, equal weights", false, fairness.New(25, 25),
			[]other{{1, 10, 1, "", false}, {2, 20, 1, "", false}, {3, 40, 1, "", false}},
			// weight 4: A done at 10 x 4 = 40 s (4/3); B at 40 + 10 x 3
			// = 70 s (2); C at 70 + 20 x 2 = 110 s (4, the cap: 1/0.25).
			[]altruism.ShareStep{gs(40*s, 4.0/3), gs(70*s, 2), gs(110*s, 4)}},
		{"an app that sent no work stays throughout", false, fairness.New(20, 20),
			[]other{{1, 10, 1, "", false}, {2, 20, 1, "", false}, {3, 40, 1, "", false}, {4, 0, 1, "", false}},
			// weight 5, D never done: A at 10 x 5 = 50 s (5/4); B at
			// 50 + 10 x 4 = 90 s (5/3); C at 90 + 20 x 3 = 150 s (5/2).
			[]altruism.ShareStep{gs(50*s, 5.0/4), gs(90*s, 5.0/3), gs(150*s, 5.0/2)}},
		{"others finishing after the app are held up by it", false, fairness.New(25, 25),
			[]other{{1, 10, 1, "", false}, {2, 200, 1, "", false}},
			// The app (work 100) is second of three: B's v 200 is past
			// the app's 100, so B ends 1 x (200 - 100) s later than in
			// the projection where the app ends: A at 10 x 3 = 30 s (3/2),
			// B at 30 + 90 x 2 + 100 x 1 (its last 100 alone there) + 100 =
			// 410 s (3).
			[]altruism.ShareStep{gs(30*s, 1.5), gs(410*s, 3)}},
		{"weights: work over weight orders them", false, fairness.New(10, 5),
			[]other{{1, 10, 2, "", false}, {2, 20, 1, "", false}},
			// weight 4: A (v 5) at 5 x 4 = 20 s, factor 4/2; B (v 20) at
			// 20 + 15 x 2 = 50 s, factor 4 (cap 10).
			[]altruism.ShareStep{gs(20*s, 2), gs(50*s, 4)}},
		{"capped at the whole cluster", false, fairness.New(50, 50),
			[]other{{1, 10, 1, "", false}, {2, 20, 1, "", false}, {3, 40, 1, "", false}},
			[]altruism.ShareStep{gs(40*s, 4.0/3), gs(70*s, 2), gs(110*s, 2)}},
		{"held apps and other partitions are not counted", false, fairness.New(25, 25),
			[]other{{1, 10, 1, "", false}, {2, 20, 1, "gpu", false}, {3, 40, 1, "", true}},
			// Only A and the app: A at 10 x 2 = 20 s, factor 2.
			[]altruism.ShareStep{gs(20*s, 2)}},
		{"alone", false, fairness.New(25, 25), []other{{4, 0, 1, "", false}}, nil},
		{"off", true, fairness.New(25, 25), []other{{1, 10, 1, "", false}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{ShareGrowth: !tc.off})
			c.capacity = fairness.New(100, 100)
			for _, o := range tc.others {
				addApp(c, &app{id: o.id, work: o.work, weight: o.weight, label: o.label, held: o.held})
			}
			addApp(c, &app{id: 9, weight: 1, work: 100, share: tc.share})
			got := c.ShareGrowth(9)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i].After != tc.want[i].After || math.Abs(got[i].Factor-tc.want[i].Factor) > 1e-9 {
					t.Errorf("step %d: got %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
	if got := New(Config{ShareGrowth: true}).ShareGrowth(42); got != nil {
		t.Errorf("an unknown app: got %v, want nil", got)
	}
}

// TestShareGrowthThins: with more apps than maxGrowthSteps the steps are
// thinned, each kept one exact, the last always kept, factors growing.
func TestShareGrowthThins(t *testing.T) {
	c := New(Config{ShareGrowth: true})
	c.capacity = fairness.New(1000, 1000)
	const n = 100
	for i := 1; i <= n; i++ {
		addApp(c, &app{id: AppID(i), work: float64(i), weight: 1})
	}
	addApp(c, &app{id: n + 1, weight: 1, work: 1000, share: fairness.New(1, 1)})
	got := c.ShareGrowth(n + 1)
	if len(got) > maxGrowthSteps || len(got) < maxGrowthSteps/2 {
		t.Fatalf("%d steps, want at most %d and not far fewer", len(got), maxGrowthSteps)
	}
	// The i-th other has one share-second more than the one before and
	// 102 - i apps present while it finishes it (the app stays): the
	// last ends at the sum of 102 - i over i = 1..100, 5150 s, and the
	// app is alone then, factor 101.
	last := got[len(got)-1]
	if last.After != 5150*time.Second || math.Abs(last.Factor-(n+1)) > 1e-9 {
		t.Errorf("last step %v, want {1h25m50s 101}", last)
	}
	for i := 1; i < len(got); i++ {
		if got[i].After <= got[i-1].After || got[i].Factor <= got[i-1].Factor {
			t.Errorf("steps %d and %d out of order: %v", i-1, i, fmt.Sprint(got[i-1], got[i]))
		}
	}
}

// addApp puts an app in the core's tables as appAdded does, its fields
// as the test sets them.
func addApp(c *Core, a *app) {
	c.apps = append(c.apps, a)
	c.byID[a.id] = a
}

func gs(after time.Duration, f float64) altruism.ShareStep {
	return altruism.ShareStep{After: after, Factor: f}
}

// TestShareGrowthKeepsItsProjection: within ShareInterval the projection is
// not made again, and its steps come nearer by the time passed; past it,
// the projection is made from the work reported since.
func TestShareGrowthKeepsItsProjection(t *testing.T) {
	c := New(Config{ShareGrowth: true})
	c.capacity = fairness.New(100, 100)
	a := &app{id: 1, work: 10, weight: 1}
	addApp(c, a)
	addApp(c, &app{id: 2, weight: 1, work: 100, share: fairness.New(25, 25)})
	// A at 10 x 2 = 20 s.
	if got := c.ShareGrowth(2); len(got) != 1 || got[0] != gs(20*time.Second, 2) {
		t.Fatalf("at 0: %v", got)
	}
	c.now, a.work = 200*time.Millisecond, 5
	if got := c.ShareGrowth(2); len(got) != 1 || got[0] != gs(19800*time.Millisecond, 2) {
		t.Errorf("at 0.2 s, the same projection: %v, want one step at 19.8 s", got)
	}
	c.now = c.cfg.ShareInterval
	if got := c.ShareGrowth(2); len(got) != 1 || got[0] != gs(10*time.Second, 2) {
		t.Errorf("after ShareInterval, from A's 5 left: %v, want one step at 10 s", got)
	}
}
