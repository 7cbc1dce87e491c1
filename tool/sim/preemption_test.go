package sim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/workload"
)

// TestPreemptionInTheSimulator works a starved queue by hand on one node
// of 10 cores. job1 (root.b) runs ten 10-second tasks from 0 s; job2
// (root.a, guaranteed half, starved after 2 s) asks for five 1-second
// tasks at 1 s. With preemption (grace 1 s): asked back at 3 s, taken at
// 4 s, job2 runs 4-5 s; job1's five taken tasks run again 5-15 s. Without
// it job2 waits for job1's tasks to end at 10 s and ends at 11 s.
func TestPreemptionInTheSimulator(t *testing.T) {
	tests := []struct {
		name       string
		preemption *rm.PreemptionConfig
		want       []time.Duration
		taken      int
	}{
		{"preemption", &rm.PreemptionConfig{Grace: sec}, []time.Duration{15 * sec, 5 * sec}, 5},
		{"none", nil, []time.Duration{10 * sec, 11 * sec}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tenCores()
			cfg.Policy = "drf"
			cfg.Queues = &rm.QueuesSet{Queues: []rm.QueueConf{
				{Name: "root.a", Weight: 1, MinFrac: fairness.New(0.5, 0.5), Preemption: rm.PreemptionTimes{MinShareTimeout: 2 * sec}},
				{Name: "root.b", Weight: 1}}}
			cfg.Preemption = tc.preemption
			res, err := Run(cfg, []*workload.Job{
				{Name: "job1", Queue: "root.b", Stages: []workload.Stage{stage("S0", 10, 10*sec)}},
				{Name: "job2", Queue: "root.a", Arrival: sec, Stages: []workload.Stage{stage("S0", 5, sec)}},
			})
			if err != nil {
				t.Fatal(err)
			}
			got := []time.Duration{res.Jobs[0].Finish, res.Jobs[1].Finish}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("finish times (-want +got):\n%s", diff)
			}
			if res.Preemptions != tc.taken {
				t.Errorf("%d containers preempted, want %d", res.Preemptions, tc.taken)
			}
		})
	}
}
