package altruism

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/benchtarget"
)

// bigJob is a 100-stage, 10,000-task DAG shaped like a large query: each
// stage reads one to three recent stages, so the DAG is about 15 stages
// deep; demands and durations vary by stage.
func bigJob(seed uint64) *Job {
	rng := rand.New(rand.NewPCG(seed, seed))
	j := &Job{Stages: make([]Stage, 100)}
	for i := range j.Stages {
		var parents []int
		if i >= 8 {
			for _, p := range rng.Perm(8)[:1+rng.IntN(3)] {
				parents = append(parents, i-1-p)
			}
		}
		j.Stages[i] = Stage{
			Demand: fairness.New(float64(1024*(1+rng.IntN(6))), float64(1+rng.IntN(2))).
				With(fairness.Disk, float64(10*rng.IntN(5))),
			Duration: time.Duration(1000+rng.IntN(30000)) * time.Millisecond,
			Parents:  parents,
			Pending:  100,
		}
	}
	return j
}

// bigAlloc is about a tenth of the paper's 100-machine cluster: room for
// some 100 tasks at once.
var bigAlloc = fairness.New(400*1024, 150).With(fairness.Disk, 2000)

// BenchmarkReversePack: the target is a median under 5 ms for a
// 100-stage, 10,000-task DAG (Carbyne's AM reported 10 ms per decision).
func BenchmarkReversePack(b *testing.B) {
	j := bigJob(1)
	benchtarget.Run(b, 5*time.Millisecond, func() { ReversePack(j, bigAlloc, 0) })
}

// BenchmarkPlannerCarry is a decision after the first: the planner also
// checks its carried plan.
func BenchmarkPlannerCarry(b *testing.B) {
	j := bigJob(1)
	var pl Planner
	pl.Plan(j, bigAlloc, 0)
	benchtarget.Run(b, 5*time.Millisecond, func() { pl.Plan(j, bigAlloc, 0) })
}

// BenchmarkEstimateCompletion is T_k alone: the forward greedy pack.
func BenchmarkEstimateCompletion(b *testing.B) {
	j := bigJob(1)
	benchtarget.Run(b, 5*time.Millisecond, func() { EstimateCompletion(j, bigAlloc, 0) })
}
