package sim

import (
	"cmp"
	"slices"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

// MakespanBound is a lower bound on any policy's makespan for the jobs on
// a cluster of the given capacity, from the first arrival: the larger of
//   - the longest critical path, from its job's arrival: no schedule runs
//     a chain of stages faster than their durations end to end;
//   - for each resource kind and each arrival instant t, t plus the work
//     of the jobs arriving at t or later in that kind (Σ tasks × duration
//     × demand) over the cluster's capacity of it: that work cannot start
//     before t, and the cluster does no more than its capacity at once.
//
// At t = the first arrival the second term is the classic total work
// over capacity. It ignores task overheads and AM containers, so a
// simulated makespan at most a few percent above it is near optimal.
func MakespanBound(jobs []*workload.Job, cluster fairness.Vector) time.Duration {
	if len(jobs) == 0 {
		return 0
	}
	order := slices.Clone(jobs)
	slices.SortStableFunc(order, func(a, b *workload.Job) int { return cmp.Compare(a.Arrival, b.Arrival) })
	first := order[0].Arrival
	var bound time.Duration
	for _, j := range order {
		if sh, err := workload.ShapeOf(j); err == nil {
			bound = max(bound, j.Arrival-first+sh.CriticalTime)
		}
	}
	var suffix fairness.Vector
	for i := len(order) - 1; i >= 0; i-- {
		for _, s := range order[i].Stages {
			suffix = suffix.Add(s.Demand.Scale(float64(s.Tasks) * s.Duration.Seconds()))
		}
		if i > 0 && order[i-1].Arrival == order[i].Arrival {
			continue
		}
		for k := range suffix {
			if cluster[k] > 0 {
				t := order[i].Arrival - first + time.Duration(suffix[k]/cluster[k]*float64(time.Second))
				bound = max(bound, t)
			}
		}
	}
	return bound
}
