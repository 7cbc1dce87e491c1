package am

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/loomrm/loom/altruism"
)

// Recovery is what Recover took over from an earlier AM attempt.
type Recovery struct {
	// From is the AM attempt that wrote the history.
	From int
	// Stages are the stages that had finished, in the job's order.
	Stages []string
	// Tasks counts the tasks that had succeeded: they will not run again.
	Tasks int
	// Lost counts the task attempts that were running when that AM died:
	// their tasks run again.
	Lost int
	// Failed counts the failed attempts carried over: they count against
	// MaxAttempts as before.
	Failed int
}

// Recover starts the DAG where an earlier AM attempt of the job left it,
// from that attempt's history (as MapReduce's AM recovers from its
// .jhist). It must come before the first task is bound.
//
// Every task that succeeded counts as done: its stage's pending count
// drops and its index never runs again; a stage whose tasks all succeeded
// is done. Tasks whose attempts failed or were running run again, and
// their attempt numbers continue from the highest seen, so that (stage,
// task, attempt) stays unique across AM attempts. Failed attempts count
// against MaxAttempts as if this AM had seen them; a running attempt
// becomes lost (state KILLED, ended when the history was last written)
// and does not count.
//
// Every recovered attempt stays in History and Snapshot with its
// original numbers and times, so the job's history lists each task
// execution of every AM attempt. The times keep the history's time base:
// they count from its StartUnixMs, the job's first AM start, and the
// caller must keep counting from there (daemon/am/driver does). A task without
// an AM attempt (a history written before it was recorded) is taken as
// run by the attempt that wrote the history.
//
// A history of another job, or one naming a stage the job does not have
// or holding a task that cannot be the job's, is an error that names it;
// the DAG is unchanged then.
func (d *DAG) Recover(h History) (Recovery, error) {
	if len(d.history) > 0 || d.running.len() > 0 || slices.ContainsFunc(d.attempt, func(a []int32) bool { return a != nil }) {
		return Recovery{}, fmt.Errorf("job %q: recovery must come before any task starts", d.job.Name)
	}
	if h.Job != d.job.Name {
		return Recovery{}, fmt.Errorf("the history is of job %q, not %q", h.Job, d.job.Name)
	}
	index := make(map[string]int, len(d.job.Stages))
	for i, s := range d.job.Stages {
		index[s.Name] = i
	}
	inHistory := make([]bool, len(d.job.Stages))
	for _, hs := range h.Stages {
		i, ok := index[hs.Name]
		if !ok {
			return Recovery{}, fmt.Errorf("the history's stage %q is not a stage of job %q", hs.Name, d.job.Name)
		}
		if inHistory[i] {
			return Recovery{}, fmt.Errorf("the history lists stage %q twice", hs.Name)
		}
		inHistory[i] = true
		if hs.Tasks != d.job.Stages[i].Tasks {
			return Recovery{}, fmt.Errorf("stage %q has %d tasks in the history, %d in job %q", hs.Name, hs.Tasks, d.job.Stages[i].Tasks, d.job.Name)
		}
	}
	for i, seen := range inHistory {
		if !seen {
			return Recovery{}, fmt.Errorf("stage %q of job %q is not in the history", d.job.Stages[i].Name, d.job.Name)
		}
	}
	// When the history was last written: when its running tasks were
	// last known to run.
	lastSeen := time.Duration(h.UpdatedUnixMs-h.StartUnixMs) * time.Millisecond

	rc := Recovery{From: h.Attempt}
	recs := make([]TaskRecord, 0, len(h.Tasks))
	attempt, fails := make([][]int32, len(d.job.Stages)), map[taskKey]int{}
	done := make([]map[int]bool, len(d.job.Stages))
	seen := map[[3]int]bool{}
	for _, t := range h.Tasks {
		i, ok := index[t.Stage]
		if !ok {
			return Recovery{}, fmt.Errorf("the history's task %d of stage %q: job %q has no such stage", t.Task, t.Stage, d.job.Name)
		}
		name := fmt.Sprintf("task %d of stage %q, attempt %d", t.Task, t.Stage, t.Attempt)
		if t.Task < 0 || t.Task >= d.job.Stages[i].Tasks {
			return Recovery{}, fmt.Errorf("the history's %s: the stage has tasks 0 to %d", name, d.job.Stages[i].Tasks-1)
		}
		if t.Attempt < 1 {
			return Recovery{}, fmt.Errorf("the history's %s: attempts count from 1", name)
		}
		if seen[[3]int{i, t.Task, t.Attempt}] {
			return Recovery{}, fmt.Errorf("the history lists %s twice", name)
		}
		seen[[3]int{i, t.Task, t.Attempt}] = true
		kind, err := altruism.ParseAskKind(t.Kind)
		if err != nil {
			return Recovery{}, fmt.Errorf("the history's %s: %v", name, err)
		}
		rec := TaskRecord{Stage: t.Stage, Task: t.Task, Attempt: t.Attempt, Container: t.Container, Node: t.Node,
			Start: time.Duration(t.StartMs) * time.Millisecond, End: time.Duration(t.EndMs) * time.Millisecond,
			Kind: kind, AMAttempt: t.AMAttempt}
		if rec.AMAttempt == 0 {
			rec.AMAttempt = h.Attempt
		}
		key := taskKey{i, t.Task}
		switch t.State {
		case StateSucceeded:
			rec.Succeeded = true
			if done[i] == nil {
				done[i] = map[int]bool{}
			}
			if !done[i][t.Task] {
				done[i][t.Task] = true
				rc.Tasks++
			}
		case StateFailed:
			fails[key]++
			rc.Failed++
		case StateRunning:
			rec.Lost, rec.End = true, max(lastSeen, rec.Start)
			rc.Lost++
		case StateKilled:
			rec.Lost = true
		default:
			return Recovery{}, fmt.Errorf("the history's %s: unknown state %q", name, t.State)
		}
		if attempt[i] == nil {
			attempt[i] = make([]int32, d.job.Stages[i].Tasks)
		}
		attempt[i][t.Task] = max(attempt[i][t.Task], int32(min(t.Attempt, math.MaxInt32)))
		recs = append(recs, rec)
	}

	// The history is sound: take it over.
	d.history, d.attempt, d.fails = recs, attempt, fails
	for i, js := range d.job.Stages {
		s := &d.state.Stages[i]
		d.next[i] = js.Tasks // every task left runs from the retry list
		d.retries[i] = d.retries[i][:0]
		for task := range js.Tasks {
			if !done[i][task] {
				d.retries[i] = append(d.retries[i], task)
			}
		}
		s.Pending = len(d.retries[i])
		if d.state.Done(i) {
			rc.Stages = append(rc.Stages, js.Name)
		}
	}
	d.recount()
	if d.cfg.Inputs != nil {
		d.countInputs()
	}
	// A task that had already failed as often as it may, and never
	// succeeded, failed the job before its AM died.
	keys := make([]taskKey, 0, len(fails))
	for k := range fails {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b taskKey) int {
		if a.stage != b.stage {
			return a.stage - b.stage
		}
		return a.task - b.task
	})
	for _, k := range keys {
		if fails[k] >= d.cfg.MaxAttempts && !done[k.stage][k.task] {
			d.failed = d.tooManyFailures(k)
			break
		}
	}
	d.planner.Reset()
	return rc, nil
}
