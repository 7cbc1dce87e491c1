// Package altruism is Carbyne's intra-job and leftover policy:
//
//   - T_k: when a job would finish if it packed its remaining DAG greedily
//     within its allocation A_k;
//   - reverse packing: every pending task's latest start that still meets
//     T_k;
//   - the split at an instant: DEFAULT asks for tasks that must start now,
//     ALTRUISTIC asks for the runnable rest, and the leftover the job
//     yields;
//   - P(Altruism), and the order in which a node's leftover is handed out.
//
// The package is pure: time is an argument, randomness a seeded source, and
// nothing here starts goroutines or does I/O. The AM core and the simulator
// both drive it.
package altruism

import (
	"fmt"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

// Stage is one stage of a job as it stands at a decision.
type Stage struct {
	Demand   fairness.Vector // per task
	Duration time.Duration   // estimated, per task
	Parents  []int
	// Pending counts tasks not started yet.
	Pending int
	// Running groups the tasks running now by their expected finish.
	Running []Run
}

// Run is Count tasks expected to finish at Finish. A task past its
// estimate is taken to finish at the moment of the decision.
type Run struct {
	Finish time.Duration
	Count  int
}

// Job is the remaining DAG of one job. The driver owns it and updates
// Pending and Running as tasks start and finish.
type Job struct {
	Stages []Stage
}

// NewJob builds the planner's view of a validated workload job with every
// task pending.
func NewJob(w *workload.Job) (*Job, error) {
	g, err := w.Graph()
	if err != nil {
		return nil, err
	}
	j := &Job{Stages: make([]Stage, len(w.Stages))}
	for i, s := range w.Stages {
		j.Stages[i] = Stage{
			Demand:   s.Demand,
			Duration: s.Duration,
			Parents:  append([]int(nil), g.Parents[i]...),
			Pending:  s.Tasks,
		}
	}
	return j, nil
}

// Check reports a malformed job: parents out of range, negative counts or
// non-positive durations. The planner assumes a checked, acyclic job.
func (j *Job) Check() error {
	for i, s := range j.Stages {
		for _, p := range s.Parents {
			if p < 0 || p >= len(j.Stages) || p == i {
				return fmt.Errorf("stage %d: parent %d is not another stage of the job", i, p)
			}
		}
		if s.Pending < 0 {
			return fmt.Errorf("stage %d: %d pending tasks", i, s.Pending)
		}
		if s.Duration <= 0 {
			return fmt.Errorf("stage %d: task duration %v must be positive", i, s.Duration)
		}
		for _, r := range s.Running {
			if r.Count <= 0 {
				return fmt.Errorf("stage %d: a run of %d tasks", i, r.Count)
			}
		}
	}
	return nil
}

// Done reports whether stage i has no task pending or running.
func (j *Job) Done(i int) bool {
	return j.Stages[i].Pending == 0 && len(j.Stages[i].Running) == 0
}

// doneStages counts the stages with nothing pending or running.
func (j *Job) doneStages() int {
	n := 0
	for i := range j.Stages {
		if j.Done(i) {
			n++
		}
	}
	return n
}

// Finished reports whether every stage is done.
func (j *Job) Finished() bool {
	for i := range j.Stages {
		if !j.Done(i) {
			return false
		}
	}
	return true
}

// Runnable reports whether stage i has pending tasks and every parent is
// done.
func (j *Job) Runnable(i int) bool {
	if j.Stages[i].Pending == 0 {
		return false
	}
	for _, p := range j.Stages[i].Parents {
		if !j.Done(p) {
			return false
		}
	}
	return true
}

// Usage is the demand of the running tasks.
func (j *Job) Usage() fairness.Vector {
	var u fairness.Vector
	for _, s := range j.Stages {
		for _, r := range s.Running {
			u = u.Add(s.Demand.Scale(float64(r.Count)))
		}
	}
	return u
}

// Demand is the job's demand for DRF: running plus pending tasks, every
// stage included, runnable or not.
func (j *Job) Demand() fairness.Vector {
	var d fairness.Vector
	for _, s := range j.Stages {
		n := s.Pending
		for _, r := range s.Running {
			n += r.Count
		}
		d = d.Add(s.Demand.Scale(float64(n)))
	}
	return d
}

// RemainingWork is the one definition of a job's remaining work, used for
// the SRTF order: the sum over remaining tasks of duration × dominant
// demand (the task's dominant share of capacity). A pending task counts
// its whole duration, a running one the time until its expected finish.
// The unit is share-seconds: 1 means the whole cluster for one second.
func (j *Job) RemainingWork(capacity fairness.Vector, now time.Duration) float64 {
	var w float64
	for _, s := range j.Stages {
		ds := s.Demand.DominantShare(capacity)
		t := time.Duration(s.Pending) * s.Duration
		for _, r := range s.Running {
			if r.Finish > now {
				t += time.Duration(r.Count) * (r.Finish - now)
			}
		}
		w += t.Seconds() * ds
	}
	return w
}

// children inverts the parent lists.
func (j *Job) children() [][]int {
	c := make([][]int, len(j.Stages))
	for i, s := range j.Stages {
		for _, p := range s.Parents {
			c[p] = append(c[p], i)
		}
	}
	return c
}

// finishOf is when a run is expected to end, never before now.
func finishOf(r Run, now time.Duration) time.Duration {
	return max(r.Finish, now)
}
