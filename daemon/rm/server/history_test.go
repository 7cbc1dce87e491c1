package server

import (
	"reflect"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

// TestReplayRecordRoundTrips: a recorded job survives the state store
// (an RM restart) as it was.
func TestReplayRecordRoundTrips(t *testing.T) {
	j := &workload.Job{Name: "q5 (application_1_0001)", Queue: "etl", Weight: 1, Arrival: 1795548384 * time.Millisecond,
		Stages: []workload.Stage{
			{Name: "scan", Tasks: 40, Duration: 2300 * time.Millisecond, Demand: fairness.New(2048, 1)},
			{Name: "join", Tasks: 4, Duration: 900 * time.Millisecond, Demand: fairness.New(4096, 1), Parents: []string{"scan"}}}}
	got := decodeReplay(encodeReplay(j))
	if !reflect.DeepEqual(got, j) {
		t.Errorf("round trip: %+v, want %+v", got, j)
	}
	if decodeReplay(nil) != nil || encodeReplay(nil) != nil || decodeReplay([]byte(`{"jobs": [`)) != nil {
		t.Error("nothing, or a broken record, must read back as no replay")
	}
}
