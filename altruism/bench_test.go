package altruism_test

import (
	"testing"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/tool/bench"
	"github.com/loomrm/loom/tool/benchtarget"
)

// BenchmarkReversePack: the target is a median under 5 ms for a
// 100-stage, 10,000-task DAG (Carbyne's AM reported 10 ms per decision).
func BenchmarkReversePack(b *testing.B) {
	j := bench.SyntheticDAG(1)
	benchtarget.Run(b, 5*time.Millisecond, func() { altruism.ReversePack(j, bench.SyntheticAlloc, 0) })
}

// BenchmarkPlannerCarry is a decision after the first: the planner also
// checks its carried plan.
func BenchmarkPlannerCarry(b *testing.B) {
	j := bench.SyntheticDAG(1)
	var pl altruism.Planner
	pl.Plan(j, bench.SyntheticAlloc, 0)
	benchtarget.Run(b, 5*time.Millisecond, func() { pl.Plan(j, bench.SyntheticAlloc, 0) })
}

// BenchmarkEstimateCompletion is T_k alone: the forward greedy pack.
func BenchmarkEstimateCompletion(b *testing.B) {
	j := bench.SyntheticDAG(1)
	benchtarget.Run(b, 5*time.Millisecond, func() { altruism.EstimateCompletion(j, bench.SyntheticAlloc, 0) })
}
