package sim

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/workload"
)

// scaleJobs draws n TPC-DS jobs (or n of the heavy-tailed mix) at load 1
// for a cluster of m paper machines.
func scaleJobs(b *testing.B, heavy bool, n, m int) []*workload.Job {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var jobs []*workload.Job
	var err error
	if heavy {
		jobs, err = workload.HeavyTailed(n, rng)
	} else {
		var pool []*workload.Job
		if pool, err = workload.Catalogue("tpcds"); err == nil {
			jobs, err = workload.Sample(pool, n, rng)
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	a, err := PoissonForLoad(jobs, workload.PaperMachine().Scale(float64(m)), 1)
	if err != nil {
		b.Fatal(err)
	}
	a.Assign(jobs, rng)
	return jobs
}

// benchPolicies narrows the scale benchmarks to some policies, e.g.
// -sim.policies drf,sjf: a policy that takes minutes need not hold up the
// others' figures.
var benchPolicies = flag.String("sim.policies", "", "scale benchmarks: run only these policies, comma-separated (default all)")

// runEvery runs the jobs under every policy (or those of -sim.policies)
// and reports each one's seconds and the slowest policy's time over
// DRF's.
func runEvery(b *testing.B, jobs []*workload.Job, machines int) {
	b.Helper()
	policies := Policies
	if *benchPolicies != "" {
		policies = strings.Split(*benchPolicies, ",")
		for _, p := range policies {
			if !slices.Contains(Policies, p) {
				b.Fatalf("-sim.policies: unknown policy %q (want some of %s)", p, strings.Join(Policies, ","))
			}
		}
	}
	for b.Loop() {
		var drf, worst float64
		for _, p := range policies {
			cfg := DefaultConfig()
			cfg.Machines, cfg.Policy = machines, p
			start := time.Now()
			if _, err := Run(cfg, jobs); err != nil {
				b.Fatal(err)
			}
			s := time.Since(start).Seconds()
			b.ReportMetric(s, p+"-s")
			if p == "drf" {
				drf = s
			} else if drf > 0 {
				worst = max(worst, s/drf)
			}
		}
		b.ReportMetric(worst, "worst/drf")
	}
}

// BenchmarkScale runs TPC-DS at load 1 with jobs and machines scaled
// together, under every policy: the curve of the simulator's cost.
// Issue 15's targets: 4,000 jobs on 1,600 machines in at most 20 s, and no
// policy over 3x DRF's time.
//
//	go test ./tool/sim -run XXX -bench Scale -benchtime 1x -timeout 60m
func BenchmarkScale(b *testing.B) {
	for _, size := range []struct{ jobs, machines int }{{250, 100}, {1000, 400}, {2000, 800}, {4000, 1600}} {
		b.Run(fmt.Sprintf("jobs=%d", size.jobs), func(b *testing.B) {
			jobs := scaleJobs(b, false, size.jobs, size.machines)
			tasks := 0
			for _, j := range jobs {
				tasks += j.TotalTasks()
			}
			b.Logf("%d jobs, %d tasks, %d machines; target at 4,000 jobs: <= 20 s per policy, worst/drf <= 3", size.jobs, tasks, size.machines)
			runEvery(b, jobs, size.machines)
		})
	}
}

// BenchmarkHeavyTail is issue 15's trace-scale target: 2,000 jobs of the
// heavy-tailed mix, about a million tasks, in at most 60 s per policy on
// 2 cores, no policy over 3x DRF's time.
func BenchmarkHeavyTail(b *testing.B) {
	const n, machines = 2000, 100
	jobs := scaleJobs(b, true, n, machines)
	tasks := 0
	for _, j := range jobs {
		tasks += j.TotalTasks()
	}
	b.Logf("%d jobs, %d tasks, %d machines; target: <= 60 s per policy, worst/drf <= 3", n, tasks, machines)
	runEvery(b, jobs, machines)
}
