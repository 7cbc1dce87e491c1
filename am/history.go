package am

import (
	"cmp"
	"slices"
	"time"

	"github.com/loomrm/loom/fairness"
)

// The job history file: what an AM writes while it runs and when it ends,
// and what the RM's web UI, `loom mini` and a later attempt read. Its
// place is a history directory the RM names to the AM (like MapReduce's
// job history in the staging directory), one file per application.

// Task and stage states in a history.
const (
	StateWaiting   = "WAITING" // a parent stage has not finished
	StateRunnable  = "RUNNABLE"
	StateRunning   = "RUNNING"
	StateSucceeded = "SUCCEEDED"
	StateFailed    = "FAILED"
	// StateKilled is a task attempt that was running when its AM died; a
	// later AM attempt ran the task again.
	StateKilled = "KILLED"
)

// HistoryTask is one task attempt.
type HistoryTask struct {
	Stage     string `json:"stage"`
	Task      int    `json:"task"`
	Attempt   int    `json:"attempt"`
	Container int64  `json:"container"`
	Node      string `json:"node"`
	StartMs   int64  `json:"start_ms"` // since History.StartUnixMs
	EndMs     int64  `json:"end_ms"`   // 0 while it runs
	Kind      string `json:"kind"`     // DEFAULT or ALTRUISTIC
	State     string `json:"state"`    // RUNNING, SUCCEEDED, FAILED or KILLED
	Succeeded bool   `json:"succeeded"`
	// AMAttempt is the AM attempt that ran it; 0 when unknown (a
	// simulated job, or a history from before it was recorded).
	AMAttempt int `json:"am_attempt,omitempty"`
}

// HistoryStage is one stage of the DAG and how far it got.
type HistoryStage struct {
	Name       string          `json:"name"`
	Tasks      int             `json:"tasks"`
	Parents    []string        `json:"parents,omitempty"`
	DurationMs int64           `json:"duration_ms"`
	Demand     fairness.Vector `json:"demand"`
	State      string          `json:"state"`
	Succeeded  int             `json:"succeeded"`
	Running    int             `json:"running"`
	Failed     int             `json:"failed"`           // failed attempts
	Killed     int             `json:"killed,omitempty"` // attempts lost with their AM
}

// History is a job's history file.
type History struct {
	Job         string `json:"job"`
	App         string `json:"app,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`
	State       string `json:"state"` // RUNNING, SUCCEEDED or FAILED
	Diagnostics string `json:"diagnostics,omitempty"`
	// StartUnixMs is when the job's first AM attempt started: the tasks'
	// times count from it, across AM attempts (a recovering AM keeps the
	// history's time base).
	StartUnixMs int64 `json:"start_unix_ms"`
	// AttemptStartMs is when the AM attempt writing the history started,
	// since StartUnixMs: 0 for the first.
	AttemptStartMs int64 `json:"attempt_start_ms,omitempty"`
	// RecoveredFrom is the earlier AM attempt whose history this attempt
	// took over (am.DAG.Recover); 0 when it started afresh.
	RecoveredFrom int            `json:"recovered_from,omitempty"`
	UpdatedUnixMs int64          `json:"updated_unix_ms"`
	Stages        []HistoryStage `json:"stages"`
	Tasks         []HistoryTask  `json:"tasks"`
}

// Snapshot is the job's history at now: its DAG with each stage's state,
// every ended task attempt in order of ending, then the running ones.
func (d *DAG) Snapshot(now time.Duration) History {
	h := History{Job: d.job.Name, State: StateRunning}
	switch {
	case d.failed != nil:
		h.State, h.Diagnostics = StateFailed, d.failed.Error()
	case d.Finished():
		h.State = StateSucceeded
	}
	h.Stages = make([]HistoryStage, len(d.job.Stages))
	for i, s := range d.job.Stages {
		h.Stages[i] = HistoryStage{Name: s.Name, Tasks: s.Tasks, Parents: s.Parents,
			DurationMs: s.Duration.Milliseconds(), Demand: s.Demand}
	}
	for _, r := range d.history {
		h.Tasks = append(h.Tasks, historyTask(r, ""))
	}
	for _, r := range d.runningByStart() {
		h.Tasks = append(h.Tasks, historyTask(r.TaskRecord, StateRunning))
		h.Stages[r.stage].Running++
	}
	index := make(map[string]int, len(d.job.Stages))
	for i, s := range d.job.Stages {
		index[s.Name] = i
	}
	for _, t := range h.Tasks {
		switch t.State {
		case StateFailed:
			h.Stages[index[t.Stage]].Failed++
		case StateSucceeded:
			h.Stages[index[t.Stage]].Succeeded++
		case StateKilled:
			h.Stages[index[t.Stage]].Killed++
		}
	}
	for i := range h.Stages {
		s := &h.Stages[i]
		switch {
		case s.Succeeded >= s.Tasks:
			s.State = StateSucceeded
		case d.failed != nil && s.Failed > 0:
			s.State = StateFailed
		case s.Running > 0:
			s.State = StateRunning
		case d.state.Runnable(i):
			s.State = StateRunnable
		default:
			s.State = StateWaiting
		}
	}
	return h
}

func historyTask(r TaskRecord, state string) HistoryTask {
	t := HistoryTask{Stage: r.Stage, Task: r.Task, Attempt: r.Attempt, Container: r.Container, Node: r.Node,
		StartMs: r.Start.Milliseconds(), EndMs: r.End.Milliseconds(), Kind: r.Kind.String(), State: state,
		Succeeded: r.Succeeded, AMAttempt: r.AMAttempt}
	if state == "" {
		switch {
		case r.Succeeded:
			t.State = StateSucceeded
		case r.Lost:
			t.State = StateKilled
		default:
			t.State = StateFailed
		}
	}
	return t
}

// runningTask is a running task's record and its stage's index.
type runningTask struct {
	TaskRecord
	stage int
}

// runningByStart is the running tasks, in the order they started.
func (d *DAG) runningByStart() []runningTask {
	rs := make([]runningTask, 0, d.running.len())
	d.running.each(func(id int64, r run) {
		rs = append(rs, runningTask{d.record(id, r), int(r.stage)})
	})
	slices.SortFunc(rs, func(a, b runningTask) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Container, b.Container))
	})
	return rs
}
