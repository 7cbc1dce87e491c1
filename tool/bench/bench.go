// Package bench holds the speed targets the issues set, the synthetic
// inputs they are measured on, and the timing that reports a median beside
// each target. `loom bench` and the Go benchmarks share it, so both
// measure the same thing.
package bench

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

// SyntheticDAG is a 100-stage, 10,000-task DAG shaped like a large query:
// each stage reads one to three of the eight stages before it, so the DAG
// is about 15 stages deep; demands and durations vary by stage.
func SyntheticDAG(seed uint64) *altruism.Job {
	rng := rand.New(rand.NewPCG(seed, seed))
	j := &altruism.Job{Stages: make([]altruism.Stage, 100)}
	for i := range j.Stages {
		var parents []int
		if i >= 8 {
			for _, p := range rng.Perm(8)[:1+rng.IntN(3)] {
				parents = append(parents, i-1-p)
			}
		}
		j.Stages[i] = altruism.Stage{
			Demand: fairness.New(float64(1024*(1+rng.IntN(6))), float64(1+rng.IntN(2))).
				With(fairness.Disk, float64(10*rng.IntN(5))),
			Duration: time.Duration(1000+rng.IntN(30000)) * time.Millisecond,
			Parents:  parents,
			Pending:  100,
		}
	}
	return j
}

// SyntheticAlloc is about a tenth of the paper's 100-machine cluster: room
// for some 100 of SyntheticDAG's tasks at once.
var SyntheticAlloc = fairness.New(400*1024, 150).With(fairness.Disk, 2000)

// DRFClaims are 1,000 apps over three resources of a 100-machine cluster,
// with mixed weights, task shapes and demands.
func DRFClaims(seed uint64) (fairness.Vector, []fairness.Claim) {
	rng := rand.New(rand.NewPCG(seed, seed))
	capacity := fairness.New(100*128*1024, 100*20).With(fairness.Disk, 100*500)
	claims := make([]fairness.Claim, 1000)
	for k := range claims {
		task := fairness.New(float64(1024*(1+rng.IntN(8))), float64(1+rng.IntN(4))).
			With(fairness.Disk, float64(rng.IntN(50)))
		claims[k] = fairness.Claim{Weight: float64(1 + rng.IntN(3)), Task: task,
			Demand: task.Scale(float64(1 + rng.IntN(200)))}
	}
	return capacity, claims
}

// Median times op runs times and returns the median, after one warm-up
// run when there are several (a single run of a minutes-long target needs
// no warming). Medians, because these 2-core machines are noisy.
func Median(runs int, op func() error) (time.Duration, error) {
	if runs > 1 {
		if err := op(); err != nil {
			return 0, err
		}
	}
	samples := make([]time.Duration, 0, runs)
	for i := 0; i < runs; i++ {
		start := time.Now()
		if err := op(); err != nil {
			return 0, err
		}
		samples = append(samples, time.Since(start))
	}
	slices.Sort(samples)
	return samples[len(samples)/2], nil
}

// PeakRSS is the process's peak resident memory (VmHWM) in bytes, from
// /proc; where /proc is missing it falls back to what the Go runtime has
// taken from the system.
func PeakRSS() uint64 {
	if n, err := vmHWM("/proc/self/status"); err == nil {
		return n
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Sys
}
