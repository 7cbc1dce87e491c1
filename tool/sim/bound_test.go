package sim

import (
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

func TestMakespanBound(t *testing.T) {
	cl := fairness.New(1000, 10) // 10 cores
	one := fairness.New(10, 1)
	disk := one
	disk[fairness.Disk] = 5
	clDisk := cl
	clDisk[fairness.Disk] = 10
	tests := []struct {
		name    string
		cluster fairness.Vector
		jobs    []*workload.Job
		want    time.Duration
	}{
		// 40 one-core tasks of 5 s on 10 cores: 200 core-s / 10 = 20 s;
		// the critical path is 5 s.
		{"work over capacity", cl, []*workload.Job{{Name: "a", Stages: []workload.Stage{{Name: "s", Tasks: 40, Demand: one, Duration: 5 * sec}}}}, 20 * sec},
		// A chain of three 10 s stages of one task: 30 s, the work 3 s.
		{"critical path", cl, []*workload.Job{{Name: "a", Stages: []workload.Stage{
			{Name: "s0", Tasks: 1, Demand: one, Duration: 10 * sec},
			{Name: "s1", Tasks: 1, Demand: one, Duration: 10 * sec, Parents: []string{"s0"}},
			{Name: "s2", Tasks: 1, Demand: one, Duration: 10 * sec, Parents: []string{"s1"}}}}}, 30 * sec},
		// Disk binds: 10 tasks × 4 s × 5 MB/s = 200 MB over 10 MB/s = 20 s,
		// where cores give 4 s.
		{"the bottleneck kind", clDisk, []*workload.Job{{Name: "a", Stages: []workload.Stage{{Name: "s", Tasks: 10, Demand: disk, Duration: 4 * sec}}}}, 20 * sec},
		// A job at 0 with 10 core-s, one at 100 s with 100 core-s: the
		// second alone needs 10 s after it arrives: 110 s.
		{"late work", cl, []*workload.Job{
			{Name: "a", Stages: []workload.Stage{{Name: "s", Tasks: 10, Demand: one, Duration: sec}}},
			{Name: "b", Arrival: 100 * sec, Stages: []workload.Stage{{Name: "s", Tasks: 20, Demand: one, Duration: 5 * sec}}}}, 110 * sec},
		// Measured from the first arrival, not from 0.
		{"from the first arrival", cl, []*workload.Job{{Name: "a", Arrival: 50 * sec, Stages: []workload.Stage{{Name: "s", Tasks: 40, Demand: one, Duration: 5 * sec}}}}, 20 * sec},
	}
	for _, tc := range tests {
		if got := MakespanBound(tc.jobs, tc.cluster); got != tc.want {
			t.Errorf("%s: bound %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMakespanAboveBound: every policy's simulated makespan is at least
// the bound.
func TestMakespanAboveBound(t *testing.T) {
	cfg, jobs := mix(t, 5)
	bound := MakespanBound(jobs, cfg.Machine.Scale(float64(cfg.Machines)))
	if bound <= 0 {
		t.Fatal("no bound")
	}
	for _, p := range Policies {
		cfg.Policy = p
		r, err := Run(cfg, jobs)
		if err != nil {
			t.Fatal(err)
		}
		if r.Makespan < bound {
			t.Errorf("%s: makespan %v below the lower bound %v", p, r.Makespan, bound)
		}
	}
}
