package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/loomrm/loom/workload"
)

// scaleJobs draws n TPC-DS jobs at load 1 for a cluster of m paper machines.
func scaleJobs(b *testing.B, n, m int) []*workload.Job {
	b.Helper()
	pool, err := workload.Catalogue("tpcds")
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	jobs, err := workload.Sample(pool, n, rng)
	if err != nil {
		b.Fatal(err)
	}
	cluster := workload.PaperMachine().Scale(float64(m))
	a, err := PoissonForLoad(jobs, cluster, 1)
	if err != nil {
		b.Fatal(err)
	}
	a.Assign(jobs, rng)
	return jobs
}

// BenchmarkScale runs TPC-DS with jobs and machines scaled together, to
// show how the simulator's cost grows.
func BenchmarkScale(b *testing.B) {
	for _, size := range []struct{ jobs, machines int }{{250, 100}, {1000, 400}, {2000, 800}, {4000, 1600}} {
		for _, p := range []string{"drf", "carbyne"} {
			b.Run(fmt.Sprintf("%s/jobs=%d", p, size.jobs), func(b *testing.B) {
				jobs := scaleJobs(b, size.jobs, size.machines)
				cfg := DefaultConfig()
				cfg.Machines, cfg.Policy = size.machines, p
				for b.Loop() {
					if _, err := Run(cfg, jobs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
