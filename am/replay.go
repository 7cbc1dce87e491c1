package am

import (
	"fmt"
	"slices"
	"time"

	"github.com/loomrm/loom/workload"
)

// Replay turns a finished job's history back into the job it ran, as the
// simulator takes jobs: its DAG and demands as planned, each stage's
// duration the median of its tasks' measured run times (the planner's
// estimate where no task of the stage succeeded), arriving at the
// history's start. This is what a cluster records of its own jobs for a
// what-if (`loom tune --history`).
func (h History) Replay() (*workload.Job, error) {
	if h.State != StateSucceeded && h.State != StateFailed {
		return nil, fmt.Errorf("job %q is %s: only a finished job's history replays", h.Job, h.State)
	}
	runs := map[string][]time.Duration{}
	for _, t := range h.Tasks {
		if t.Succeeded && t.EndMs > t.StartMs {
			runs[t.Stage] = append(runs[t.Stage], time.Duration(t.EndMs-t.StartMs)*time.Millisecond)
		}
	}
	job := &workload.Job{Name: h.Job, Queue: "default", Weight: 1, Arrival: time.Duration(h.StartUnixMs) * time.Millisecond}
	for _, s := range h.Stages {
		d := time.Duration(s.DurationMs) * time.Millisecond
		if r := runs[s.Name]; len(r) > 0 {
			slices.Sort(r)
			d = r[len(r)/2]
		}
		job.Stages = append(job.Stages, workload.Stage{Name: s.Name, Tasks: s.Tasks, Demand: s.Demand, Duration: d,
			Parents: slices.Clone(s.Parents)})
	}
	if err := job.Validate(); err != nil {
		return nil, err
	}
	return job, nil
}
