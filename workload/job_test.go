package workload

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/fairness"
)

var oneCore = fairness.New(1024, 1)

func st(name string, parents ...string) Stage {
	return Stage{Name: name, Tasks: 2, Demand: oneCore, Duration: time.Second, Parents: parents}
}

func TestGraph(t *testing.T) {
	// a → c, b → c, c → d: the order takes the lowest ready index first.
	j := &Job{Name: "j", Stages: []Stage{st("c", "a", "b"), st("a"), st("d", "c"), st("b")}}
	g, err := j.Graph()
	if err != nil {
		t.Fatal(err)
	}
	want := &Graph{
		Parents:  [][]int{{1, 3}, nil, {0}, nil},
		Children: [][]int{{2}, {0}, nil, {0}},
		Order:    []int{1, 3, 0, 2},
	}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("Graph (-want +got):\n%s", diff)
	}
}

func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name string
		job  Job
		want []string // every line must appear in the error
	}{
		{
			name: "cycle is named in data-flow order",
			job:  Job{Name: "j", Stages: []Stage{st("a", "c"), st("b", "a"), st("c", "b"), st("d", "c")}},
			want: []string{`job "j": cycle: a -> b -> c -> a`},
		},
		{
			name: "two-stage cycle behind a root",
			job:  Job{Name: "j", Stages: []Stage{st("root"), st("x", "root", "y"), st("y", "x")}},
			want: []string{`job "j": cycle: x -> y -> x`},
		},
		{
			name: "unknown parent",
			job:  Job{Name: "j", Stages: []Stage{st("a"), st("b", "a", "nope")}},
			want: []string{`job "j": stage "b": unknown parent "nope"`},
		},
		{
			name: "self parent and duplicate parent",
			job:  Job{Name: "j", Stages: []Stage{st("a", "a"), st("b"), st("c", "b", "b")}},
			want: []string{`stage "a" names itself as a parent`, `stage "c" names parent "b" twice`},
		},
		{
			name: "duplicate stage names",
			job:  Job{Name: "j", Stages: []Stage{st("a"), st("a")}},
			want: []string{`job "j": stage "a" is defined twice (stages #0 and #1)`},
		},
		{
			name: "counts, durations and demands",
			job: Job{Name: "j", Stages: []Stage{
				{Name: "zero", Tasks: 0, Demand: oneCore, Duration: time.Second},
				{Name: "neg", Tasks: -3, Demand: oneCore, Duration: -time.Second},
				{Name: "free", Tasks: 1, Duration: time.Second},
				{Name: "minus", Tasks: 1, Demand: fairness.New(-1, 1), Duration: time.Second},
			}},
			want: []string{
				`stage "zero": task count 0 must be positive`,
				`stage "neg": task count -3 must be positive`,
				`stage "neg": task duration -1s must be positive`,
				`stage "free": demand is zero; a task must need some resource`,
				`stage "minus": demand <memory-mb=-1, vcores=1> has a negative amount`,
			},
		},
		{
			name: "job-level problems",
			job:  Job{Name: " ", Weight: math.NaN(), Arrival: -time.Second},
			want: []string{`job has no name`, `weight NaN must be a finite number`, `arrival -1s is negative`, `job has no stages`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.job.Validate()
			if err == nil {
				t.Fatal("Validate accepted the job")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestCheckFits(t *testing.T) {
	small := fairness.New(4096, 4)
	big := fairness.New(65536, 2)
	j := &Job{Name: "j", Stages: []Stage{
		{Name: "ok", Tasks: 1, Demand: fairness.New(2048, 2), Duration: time.Second},
		// No node has 8 cores.
		{Name: "wide", Tasks: 1, Demand: fairness.New(1024, 8), Duration: time.Second},
		// Memory fits big, cores fit small, but no node has both.
		{Name: "split", Tasks: 1, Demand: fairness.New(8192, 3), Duration: time.Second},
		{Name: "gpu", Tasks: 1, Demand: fairness.New(1, 1).With(fairness.GPU, 1), Duration: time.Second},
	}}
	err := j.CheckFits([]fairness.Vector{small, big})
	if err == nil {
		t.Fatal("CheckFits accepted tasks no node can hold")
	}
	for _, w := range []string{
		`stage "wide": a task needs vcores=8 but the largest node has 4`,
		`stage "split": a task needs <memory-mb=8192, vcores=3>, which no single node offers at once`,
		`stage "gpu": a task needs yarn.io/gpu=1 but the largest node has 0`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not say %q:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), `"ok"`) {
		t.Errorf("stage ok fits, but is reported:\n%v", err)
	}
	if err := (&Job{Name: "j"}).CheckFits(nil); err == nil || !strings.Contains(err.Error(), "no nodes") {
		t.Errorf("CheckFits with no nodes = %v", err)
	}
}

func TestShapeOf(t *testing.T) {
	// a (3 s) and b (1 s) feed c (2 s), a barrier; c feeds d (1 s); e is
	// alone (10 s). Critical path: a → c → d, 3 stages, 3+2+1 = 6 s; but
	// e alone is 10 s, so the critical time is 10 s.
	mk := func(name string, d time.Duration, tasks int, parents ...string) Stage {
		return Stage{Name: name, Tasks: tasks, Demand: oneCore, Duration: d, Parents: parents}
	}
	j := &Job{Name: "j", Stages: []Stage{
		mk("a", 3*time.Second, 4), mk("b", time.Second, 2), mk("c", 2*time.Second, 1, "a", "b"),
		mk("d", time.Second, 1, "c"), mk("e", 10*time.Second, 1),
	}}
	got, err := ShapeOf(j)
	if err != nil {
		t.Fatal(err)
	}
	// Work: 4·3 + 2·1 + 1·2 + 1·1 + 1·10 = 27 task-seconds.
	want := Shape{Stages: 5, Barriers: 1, CriticalPath: 3, CriticalTime: 10 * time.Second, Tasks: 9, Work: 27}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ShapeOf (-want +got):\n%s", diff)
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{15, 20, 35, 40, 50}
	tests := []struct{ p, want float64 }{
		{5, 15}, {30, 20}, {40, 20}, {50, 35}, {95, 50}, {100, 50},
	}
	for _, tc := range tests {
		if got := Percentile(xs, tc.p); got != tc.want {
			t.Errorf("Percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("Percentile of nothing should be NaN")
	}
}

// TestScaleTime: every stage's duration is multiplied, none below a
// millisecond, and the rest of the job is left as it was.
func TestScaleTime(t *testing.T) {
	j := &Job{Name: "j", Stages: []Stage{{Name: "a", Tasks: 3, Duration: 10 * time.Second},
		{Name: "b", Tasks: 1, Duration: 40 * time.Millisecond, Parents: []string{"a"}}}}
	j.ScaleTime(0.02)
	if got := []time.Duration{j.Stages[0].Duration, j.Stages[1].Duration}; got[0] != 200*time.Millisecond || got[1] != time.Millisecond {
		t.Errorf("scaled by 0.02: %v, want [200ms 1ms] (0.8 ms kept at a millisecond)", got)
	}
	if j.Stages[0].Tasks != 3 || len(j.Stages[1].Parents) != 1 {
		t.Errorf("scaling changed more than durations: %+v", j.Stages)
	}
}
