package sim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/workload"
)

// TestQueuesInTheSimulator works a queue tree by hand: one node of 10
// cores, three jobs of ten 1-second one-core tasks, all at 0; job1 in
// root.a, job2 and job3 in root.b (weights 1 and 1). DRF down the tree
// gives a 5 cores and b 5: job1 ends at 2 s; b did 10 of its 20 tasks by
// then and has all 10 cores for the other 10: both end at 3 s. Without
// the tree each job is a third of the cluster and all three end at 3 s.
func TestQueuesInTheSimulator(t *testing.T) {
	jobs := func() []*workload.Job {
		return []*workload.Job{
			{Name: "job1", Queue: "a", Stages: []workload.Stage{stage("S0", 10, sec)}},
			{Name: "job2", Queue: "root.b", Stages: []workload.Stage{stage("S0", 10, sec)}},
			{Name: "job3", Queue: "b", Stages: []workload.Stage{stage("S0", 10, sec)}},
		}
	}
	tests := []struct {
		name   string
		queues []rm.QueueConf
		want   []time.Duration
		queue  []string
	}{
		{"a tree", []rm.QueueConf{{Name: "root.a", Weight: 1}, {Name: "root.b", Weight: 1}},
			[]time.Duration{2 * sec, 3 * sec, 3 * sec}, []string{"root.a", "root.b", "root.b"}},
		{"no tree", nil, []time.Duration{3 * sec, 3 * sec, 3 * sec}, []string{"", "", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tenCores()
			cfg.Policy, cfg.Queues = "drf", &rm.QueuesSet{Queues: tc.queues}
			res, err := Run(cfg, jobs())
			if err != nil {
				t.Fatal(err)
			}
			var got []time.Duration
			var queues []string
			for _, j := range res.Jobs {
				got = append(got, j.Finish)
				queues = append(queues, j.Queue)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("finish times (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.queue, queues); diff != "" {
				t.Errorf("queues (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJobsWithoutAQueueTakeTheLeavesInTurn: jobs that name no queue go to
// the leaves in arrival order, round and round.
func TestJobsWithoutAQueueTakeTheLeavesInTurn(t *testing.T) {
	cfg := tenCores()
	cfg.Queues = &rm.QueuesSet{Queues: []rm.QueueConf{{Name: "root.a", Weight: 1}, {Name: "root.a.x", Weight: 1}, {Name: "root.a.y", Weight: 1}, {Name: "root.b", Weight: 1}}}
	var jobs []*workload.Job
	for i, n := range []string{"j0", "j1", "j2", "j3"} {
		jobs = append(jobs, &workload.Job{Name: n, Arrival: time.Duration(i) * sec, Stages: []workload.Stage{stage("S0", 1, sec)}})
	}
	res, err := Run(cfg, jobs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range res.Jobs {
		got = append(got, j.Queue)
	}
	if diff := cmp.Diff([]string{"root.a.x", "root.a.y", "root.b", "root.a.x"}, got); diff != "" {
		t.Errorf("queues (-want +got):\n%s", diff)
	}
}

// TestNodeLabelsInTheSimulator works node labels by hand: two machines
// of 10 cores, machine 1 in label x; root.a runs in x (its default
// label), root.b in the default partition. job1 (root.a) has ten 1 s
// one-core tasks, job2 (root.b) thirty. job1 has machine 1 and ends at
// 1 s. With x exclusive job2 has machine 0 alone: 30 tasks on 10 cores
// end at 3 s. With x non-exclusive x lends machine 1 to job2 once job1
// is done: 10 tasks by 1 s, then 20 on 20 cores, ending at 2 s.
func TestNodeLabelsInTheSimulator(t *testing.T) {
	for _, tc := range []struct {
		name      string
		exclusive bool
		want      []time.Duration
	}{
		{"exclusive", true, []time.Duration{sec, 3 * sec}},
		{"non-exclusive", false, []time.Duration{sec, 2 * sec}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tenCores()
			cfg.Machines = 2
			cfg.Policy = "drf"
			cfg.Queues = &rm.QueuesSet{Queues: []rm.QueueConf{
				{Name: "root.a", Weight: 1, Labels: []string{"x"}, DefaultLabel: "x"},
				{Name: "root.b", Weight: 1, Labels: []string{}}}}
			cfg.Labels = &LabelModel{Partitions: map[string]bool{"x": tc.exclusive}, Machines: []string{"", "x"}}
			res, err := Run(cfg, []*workload.Job{
				{Name: "job1", Queue: "a", Stages: []workload.Stage{stage("S0", 10, sec)}},
				{Name: "job2", Queue: "b", Stages: []workload.Stage{stage("S0", 30, sec)}},
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []time.Duration
			for _, j := range res.Jobs {
				got = append(got, j.Finish)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("finish times (-want +got):\n%s", diff)
			}
		})
	}
}
