package am

import (
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
)

func TestReplay(t *testing.T) {
	h := History{Job: "q5", State: StateSucceeded, StartUnixMs: 5000,
		Stages: []HistoryStage{
			{Name: "scan", Tasks: 3, DurationMs: 9000, Demand: fairness.New(2048, 1)},
			{Name: "join", Tasks: 1, DurationMs: 4000, Demand: fairness.New(4096, 1), Parents: []string{"scan"}}},
		Tasks: []HistoryTask{
			{Stage: "scan", StartMs: 0, EndMs: 2000, Succeeded: true},
			{Stage: "scan", StartMs: 0, EndMs: 7000, Succeeded: true},
			{Stage: "scan", StartMs: 100, EndMs: 3100, Succeeded: true},
			{Stage: "scan", StartMs: 0, EndMs: 500, Succeeded: false}, // a failed attempt does not count
		}}
	j, err := h.Replay()
	if err != nil {
		t.Fatal(err)
	}
	// scan: the median of 2 s, 3 s and 7 s; join never ran a task: its
	// estimate.
	if j.Name != "q5" || j.Arrival != 5*time.Second || len(j.Stages) != 2 ||
		j.Stages[0].Duration != 3*time.Second || j.Stages[1].Duration != 4*time.Second ||
		j.Stages[1].Parents[0] != "scan" || j.Stages[0].Demand != fairness.New(2048, 1) || j.Stages[0].Tasks != 3 {
		t.Errorf("replayed %+v", j)
	}
	h.State = StateRunning
	if _, err := h.Replay(); err == nil || !strings.Contains(err.Error(), "only a finished job") {
		t.Errorf("a running job replayed: %v", err)
	}
	h.State, h.Stages[1].Parents = StateSucceeded, []string{"nowhere"}
	if _, err := h.Replay(); err == nil {
		t.Error("a history naming a missing parent replayed")
	}
}
