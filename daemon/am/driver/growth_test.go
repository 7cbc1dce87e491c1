package driver

import (
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/altruism"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestReadGrowth: the RM's projected share reaches the planner as sent;
// steps out of order, at negative offsets or with a factor that is not a
// finite growth are refused by name, never planned with.
func TestReadGrowth(t *testing.T) {
	step := func(ms int64, f float64) *pb.LoomShareStepProto {
		return &pb.LoomShareStepProto{AfterMs: proto.Int64(ms), Factor: proto.Float64(f)}
	}
	got, err := readGrowth([]*pb.LoomShareStepProto{step(20000, 2), step(50000, 4)})
	want := []altruism.ShareStep{{After: 20 * time.Second, Factor: 2}, {After: 50 * time.Second, Factor: 4}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	if got, err := readGrowth(nil); got != nil || err != nil {
		t.Errorf("none sent: got %v, %v; want nil, nil", got, err)
	}
	for _, tc := range []struct {
		name  string
		steps []*pb.LoomShareStepProto
		want  string
	}{
		{"negative offset", []*pb.LoomShareStepProto{step(-1, 2)}, "step 0: after_ms -1 is not an offset from now"},
		{"past any duration", []*pb.LoomShareStepProto{step(math.MaxInt64, 2)}, "is not an offset from now"},
		{"out of order", []*pb.LoomShareStepProto{step(5000, 2), step(4000, 3)}, "step 1: after_ms 4000 comes before the step before it (5000)"},
		{"shrinking", []*pb.LoomShareStepProto{step(5000, 0.5)}, "factor 0.5 is not a finite growth of at least 1"},
		{"NaN", []*pb.LoomShareStepProto{step(5000, math.NaN())}, "factor NaN"},
		{"infinite", []*pb.LoomShareStepProto{step(5000, math.Inf(1))}, "factor +Inf"},
	} {
		if _, err := readGrowth(tc.steps); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestGrowthSince: the AM decides (altruism.StepsSince) a while after the RM's reply; the steps
// come that much nearer, and those already due apply from now, the last
// of them kept.
func TestGrowthSince(t *testing.T) {
	steps := []altruism.ShareStep{{After: time.Second, Factor: 1.5}, {After: 2 * time.Second, Factor: 2}, {After: 5 * time.Second, Factor: 3}}
	got := altruism.StepsSince(steps, 2500*time.Millisecond)
	want := []altruism.ShareStep{{After: 0, Factor: 2}, {After: 2500 * time.Millisecond, Factor: 3}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("2.5 s on: got %v, want %v", got, want)
	}
	if got := altruism.StepsSince(steps, 0); len(got) != 3 || got[0] != steps[0] {
		t.Errorf("at once: got %v, want the steps as sent", got)
	}
	if steps[0].After != time.Second {
		t.Errorf("the reply's steps were changed in place: %v", steps)
	}
}
