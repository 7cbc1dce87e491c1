package am

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/loomrm/loom/fairness"
)

// hist is a history of barrierJob written by AM attempt 1, started at
// unix ms 1000 and last written at 9000 (8 s in).
func hist(tasks ...HistoryTask) History {
	return History{Job: "j", App: "application_1_0001", Attempt: 1, State: StateRunning,
		StartUnixMs: 1000, UpdatedUnixMs: 9000,
		Stages: []HistoryStage{{Name: "S0", Tasks: 3}, {Name: "S1", Tasks: 2}, {Name: "S2", Tasks: 1, Parents: []string{"S0", "S1"}}},
		Tasks:  tasks}
}

// ht is a task attempt in a history: stage, task, attempt, state, and
// its times in seconds (end 0 while it runs).
func ht(stage string, task, attempt int, state string, start, end int64) HistoryTask {
	return HistoryTask{Stage: stage, Task: task, Attempt: attempt, Container: int64(100*task + attempt), Node: "n1",
		StartMs: start * 1000, EndMs: end * 1000, Kind: "DEFAULT", State: state, Succeeded: state == StateSucceeded}
}

type bound struct {
	Stage         string
	Task, Attempt int
}

func TestRecover(t *testing.T) {
	tests := []struct {
		name        string
		maxAttempts int
		h           History
		want        Recovery
		pending     []int   // per stage, after recovery
		binds       []bound // what one-core grants start, until none is wanted
		failed      string  // Failed() after recovery
	}{{
		name:    "nothing ran yet",
		h:       hist(),
		want:    Recovery{From: 1},
		pending: []int{3, 2, 1},
		binds:   []bound{{"S0", 0, 1}, {"S0", 1, 1}, {"S0", 2, 1}, {"S1", 0, 1}, {"S1", 1, 1}},
	}, {
		// S0 finished; S1's task 0 succeeded and task 1 was running when
		// the AM died. Only S1's task 1 runs again, as attempt 2; S2
		// waits for it.
		name: "a stage done, one task lost",
		h: hist(ht("S0", 0, 1, StateSucceeded, 0, 3), ht("S0", 1, 1, StateSucceeded, 0, 3), ht("S1", 0, 1, StateSucceeded, 0, 4),
			ht("S0", 2, 1, StateSucceeded, 3, 6), ht("S1", 1, 1, StateRunning, 4, 0)),
		want:    Recovery{From: 1, Stages: []string{"S0"}, Tasks: 4, Lost: 1},
		pending: []int{0, 1, 1},
		binds:   []bound{{"S1", 1, 2}},
	}, {
		// S0's task 1 failed then succeeded: done. Its task 2 failed once:
		// it runs again as attempt 2. Both S1 tasks were running.
		name: "failed attempts are retried after the highest attempt",
		h: hist(ht("S0", 0, 1, StateSucceeded, 0, 3), ht("S0", 1, 1, StateFailed, 0, 1), ht("S0", 2, 1, StateFailed, 0, 2),
			ht("S0", 1, 2, StateSucceeded, 1, 4), ht("S1", 0, 1, StateRunning, 5, 0), ht("S1", 1, 1, StateRunning, 5, 0)),
		want:    Recovery{From: 1, Tasks: 2, Lost: 2, Failed: 2},
		pending: []int{1, 2, 1},
		binds:   []bound{{"S0", 2, 2}, {"S1", 0, 2}, {"S1", 1, 2}},
	}, {
		// A history that already went through one recovery: task 0 of S0
		// was lost with AM 1 (KILLED) and succeeded under AM 2 as attempt
		// 2; it is done, and the next attempt of S0's task 1 is 3.
		name: "a second recovery",
		h: func() History {
			h := hist(ht("S0", 0, 1, StateKilled, 0, 2), ht("S0", 1, 1, StateKilled, 0, 2), ht("S0", 0, 2, StateSucceeded, 3, 6),
				ht("S0", 1, 2, StateRunning, 3, 0))
			h.Attempt = 2
			return h
		}(),
		want:    Recovery{From: 2, Tasks: 1, Lost: 1},
		pending: []int{2, 2, 1},
		binds:   []bound{{"S0", 1, 3}, {"S0", 2, 1}, {"S1", 0, 1}, {"S1", 1, 1}},
	}, {
		name: "every task done",
		h: hist(ht("S0", 0, 1, StateSucceeded, 0, 3), ht("S0", 1, 1, StateSucceeded, 0, 3), ht("S0", 2, 1, StateSucceeded, 0, 3),
			ht("S1", 0, 1, StateSucceeded, 0, 4), ht("S1", 1, 1, StateSucceeded, 0, 4), ht("S2", 0, 1, StateSucceeded, 4, 5)),
		want:    Recovery{From: 1, Stages: []string{"S0", "S1", "S2"}, Tasks: 6},
		pending: []int{0, 0, 0},
	}, {
		// With 2 attempts allowed, S0's task 2 had failed twice: the job
		// had failed before its AM died, and fails again at once.
		name:        "a task out of attempts",
		maxAttempts: 2,
		h:           hist(ht("S0", 2, 1, StateFailed, 0, 1), ht("S0", 2, 2, StateFailed, 1, 2)),
		want:        Recovery{From: 1, Failed: 2},
		pending:     []int{3, 2, 1},
		failed:      `task 2 of stage "S0" failed 2 times`,
		binds:       []bound{{"S0", 0, 1}, {"S0", 1, 1}, {"S0", 2, 3}, {"S1", 0, 1}, {"S1", 1, 1}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDAG(t, Config{MaxAttempts: tc.maxAttempts, AMAttempt: 7})
			got, err := d.Recover(tc.h)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("recovery (-want +got):\n%s", diff)
			}
			var pending []int
			for _, s := range d.state.Stages {
				pending = append(pending, s.Pending)
			}
			if diff := cmp.Diff(tc.pending, pending); diff != "" {
				t.Errorf("pending per stage (-want +got):\n%s", diff)
			}
			if err := d.Failed(); (err == nil) != (tc.failed == "") || err != nil && !strings.Contains(err.Error(), tc.failed) {
				t.Errorf("Failed() = %v, want %q", err, tc.failed)
			}
			if d.Finished() != (tc.binds == nil && tc.failed == "") {
				t.Errorf("Finished() = %v", d.Finished())
			}
			var binds []bound
			for id := int64(1); id < 20; id++ {
				rec, ok := d.Bind(10*sec, Grant{ID: id, Node: "n2", Resource: core})
				if !ok {
					break
				}
				if rec.AMAttempt != 7 {
					t.Errorf("bound %+v without this AM's attempt", rec)
				}
				binds = append(binds, bound{rec.Stage, rec.Task, rec.Attempt})
			}
			if diff := cmp.Diff(tc.binds, binds); diff != "" {
				t.Errorf("binds after recovery (-want +got):\n%s", diff)
			}
			// The history keeps every recovered attempt, first.
			if h := d.History(); len(h) != len(tc.h.Tasks) {
				t.Errorf("history has %d attempts, want the %d recovered", len(h), len(tc.h.Tasks))
			}
		})
	}
}

// TestRecoverKeepsTheHistory: the recovered attempts keep their numbers,
// times and AM attempt in the new attempt's history; a running one is
// KILLED at the history's last write; a task never rerun is listed once.
func TestRecoverKeepsTheHistory(t *testing.T) {
	h := hist(ht("S0", 0, 1, StateSucceeded, 0, 3), ht("S0", 1, 1, StateSucceeded, 0, 3), ht("S0", 2, 1, StateSucceeded, 0, 3),
		ht("S1", 0, 1, StateFailed, 0, 1), ht("S1", 0, 2, StateSucceeded, 1, 5), ht("S1", 1, 1, StateRunning, 2, 0))
	h.Tasks[0].AMAttempt = 1 // the others were written before am_attempt was: AM 1 ran them
	d := newDAG(t, Config{AMAttempt: 2})
	if _, err := d.Recover(h); err != nil {
		t.Fatal(err)
	}
	// AM 2 runs S1's task 1 from 10 s to 14 s, then S2 from 14 s to 15 s.
	rec, ok := d.Bind(10*sec, Grant{ID: 50, Node: "n2", Resource: core, Kind: 1})
	if !ok || rec.Stage != "S1" || rec.Task != 1 || rec.Attempt != 2 {
		t.Fatalf("bind = %+v %v", rec, ok)
	}
	mid := d.Snapshot(12 * sec)
	if mid.Stages[0].State != StateSucceeded || mid.Stages[1].State != StateRunning || mid.Stages[1].Killed != 1 ||
		mid.Stages[1].Failed != 1 || mid.Stages[1].Succeeded != 1 || mid.Stages[2].State != StateWaiting {
		t.Errorf("stages while AM 2 runs: %+v", mid.Stages)
	}
	if _, err := d.Completed(14*sec, 50, true); err != nil {
		t.Fatal(err)
	}
	if rec, ok = d.Bind(14*sec, Grant{ID: 51, Node: "n1", Resource: core}); !ok || rec.Stage != "S2" {
		t.Fatalf("bind = %+v %v", rec, ok)
	}
	if _, err := d.Completed(15*sec, 51, true); err != nil {
		t.Fatal(err)
	}
	if !d.Finished() {
		t.Fatal("not finished")
	}
	s := d.Snapshot(15 * sec)
	want := []HistoryTask{
		{Stage: "S0", Task: 0, Attempt: 1, Container: 1, Node: "n1", StartMs: 0, EndMs: 3000, Kind: "DEFAULT", State: StateSucceeded, Succeeded: true, AMAttempt: 1},
		{Stage: "S0", Task: 1, Attempt: 1, Container: 101, Node: "n1", StartMs: 0, EndMs: 3000, Kind: "DEFAULT", State: StateSucceeded, Succeeded: true, AMAttempt: 1},
		{Stage: "S0", Task: 2, Attempt: 1, Container: 201, Node: "n1", StartMs: 0, EndMs: 3000, Kind: "DEFAULT", State: StateSucceeded, Succeeded: true, AMAttempt: 1},
		{Stage: "S1", Task: 0, Attempt: 1, Container: 1, Node: "n1", StartMs: 0, EndMs: 1000, Kind: "DEFAULT", State: StateFailed, AMAttempt: 1},
		{Stage: "S1", Task: 0, Attempt: 2, Container: 2, Node: "n1", StartMs: 1000, EndMs: 5000, Kind: "DEFAULT", State: StateSucceeded, Succeeded: true, AMAttempt: 1},
		// Running at the last write (8 s): KILLED then.
		{Stage: "S1", Task: 1, Attempt: 1, Container: 101, Node: "n1", StartMs: 2000, EndMs: 8000, Kind: "DEFAULT", State: StateKilled, AMAttempt: 1},
		{Stage: "S1", Task: 1, Attempt: 2, Container: 50, Node: "n2", StartMs: 10000, EndMs: 14000, Kind: "ALTRUISTIC", State: StateSucceeded, Succeeded: true, AMAttempt: 2},
		{Stage: "S2", Task: 0, Attempt: 1, Container: 51, Node: "n1", StartMs: 14000, EndMs: 15000, Kind: "DEFAULT", State: StateSucceeded, Succeeded: true, AMAttempt: 2},
	}
	if diff := cmp.Diff(want, s.Tasks); diff != "" {
		t.Errorf("history tasks (-want +got):\n%s", diff)
	}
	if s.State != StateSucceeded {
		t.Errorf("history state %s", s.State)
	}
	for _, st := range s.Stages {
		if st.State != StateSucceeded || st.Succeeded != st.Tasks {
			t.Errorf("stage %+v", st)
		}
	}
}

// TestRecoverRoundTrip: a job half run by one DAG, snapshotted, recovers
// into another; together they run every task exactly once.
func TestRecoverRoundTrip(t *testing.T) {
	first := newDAG(t, Config{AMAttempt: 1})
	first.Decide(0, fairness.New(5*1024, 5), fairness.New(10*1024, 10), 0, nil)
	for id := int64(1); id <= 5; id++ {
		if _, ok := first.Bind(0, Grant{ID: id, Resource: core}); !ok {
			t.Fatalf("bind %d", id)
		}
	}
	for id := int64(1); id <= 3; id++ { // S0's three tasks end; S1's two run on
		if _, err := first.Completed(3*sec, id, true); err != nil {
			t.Fatal(err)
		}
	}
	h := first.Snapshot(3500 * time.Millisecond)
	h.StartUnixMs, h.UpdatedUnixMs, h.Attempt = 1_000, 4_500, 1

	second := newDAG(t, Config{AMAttempt: 2})
	rc, err := second.Recover(h)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Recovery{From: 1, Stages: []string{"S0"}, Tasks: 3, Lost: 2}, rc); diff != "" {
		t.Errorf("recovery (-want +got):\n%s", diff)
	}
	now, id := 5*sec, int64(10)
	for !second.Finished() {
		if now > time.Minute {
			t.Fatal("no progress")
		}
		second.Decide(now, fairness.New(5*1024, 5), fairness.New(10*1024, 10), 0, nil)
		var ids []int64
		for {
			id++
			if _, ok := second.Bind(now, Grant{ID: id, Resource: core}); !ok {
				break
			}
			ids = append(ids, id)
		}
		now += 4 * sec
		for _, c := range ids {
			if _, err := second.Completed(now, c, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	succeeded := map[bound]int{}
	byAM := map[int]int{}
	for _, r := range second.History() {
		if r.Succeeded {
			succeeded[bound{r.Stage, r.Task, 0}]++
			byAM[r.AMAttempt]++
		}
	}
	if len(succeeded) != 6 {
		t.Errorf("%d tasks succeeded, want 6: %v", len(succeeded), succeeded)
	}
	for k, n := range succeeded {
		if n != 1 {
			t.Errorf("%v succeeded %d times", k, n)
		}
	}
	// AM 1 ran S0; AM 2 ran S1 (again) and S2.
	if byAM[1] != 3 || byAM[2] != 3 {
		t.Errorf("successes by AM attempt %v, want 3 and 3", byAM)
	}
}

func TestRecoverRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(h *History)
		want string
	}{
		{"another job", func(h *History) { h.Job = "q5" }, `the history is of job "q5", not "j"`},
		{"an unknown stage", func(h *History) { h.Stages[1].Name = "S9" }, `the history's stage "S9" is not a stage of job "j"`},
		{"a stage twice", func(h *History) { h.Stages[1].Name = "S0" }, `lists stage "S0" twice`},
		{"a missing stage", func(h *History) { h.Stages = h.Stages[:2] }, `stage "S2" of job "j" is not in the history`},
		{"another task count", func(h *History) { h.Stages[0].Tasks = 4 }, `stage "S0" has 4 tasks in the history, 3 in job "j"`},
		{"a task of an unknown stage", func(h *History) { h.Tasks = append(h.Tasks, ht("S7", 0, 1, StateSucceeded, 0, 1)) },
			`task 0 of stage "S7": job "j" has no such stage`},
		{"a task out of range", func(h *History) { h.Tasks = append(h.Tasks, ht("S1", 2, 1, StateSucceeded, 0, 1)) },
			`task 2 of stage "S1", attempt 1: the stage has tasks 0 to 1`},
		{"attempt 0", func(h *History) { h.Tasks = append(h.Tasks, ht("S1", 1, 0, StateSucceeded, 0, 1)) }, "attempts count from 1"},
		{"an attempt twice", func(h *History) { h.Tasks = append(h.Tasks, h.Tasks[0]) }, `lists task 0 of stage "S0", attempt 1 twice`},
		{"an unknown state", func(h *History) { h.Tasks[0].State = "DONE" }, `unknown state "DONE"`},
		{"an unknown kind", func(h *History) { h.Tasks[0].Kind = "GREEDY" }, `unknown ask kind "GREEDY"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := hist(ht("S0", 0, 1, StateSucceeded, 0, 3))
			tc.edit(&h)
			d := newDAG(t, Config{})
			_, err := d.Recover(h)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Recover = %v, want an error naming %q", err, tc.want)
			}
			// A refused history leaves the DAG as it was.
			if len(d.History()) != 0 || d.state.Stages[0].Pending != 3 {
				t.Errorf("a refused recovery changed the DAG")
			}
		})
	}
	// Recovery comes before the first task.
	d := newDAG(t, Config{})
	d.Bind(0, Grant{ID: 1, Resource: core})
	if _, err := d.Recover(hist()); err == nil || !strings.Contains(err.Error(), "before any task starts") {
		t.Errorf("Recover after a bind = %v", err)
	}
}
