package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/workload"
)

// TestLazyMetricsFollowTheCore runs the simulator with checkRates on: at
// every instant the usage and share it integrates lazily for each job
// must be the core's, and the jobs it counts in the core the core's apps.
// A path that changes an app's usage without touching its job fails here,
// under every policy, with queues and preemption, node labels and
// locality.
func TestLazyMetricsFollowTheCore(t *testing.T) {
	checkRates = true
	t.Cleanup(func() { checkRates = false })
	pool, err := workload.Catalogue("tpch:100g")
	if err != nil {
		t.Fatal(err)
	}
	draw := func() []*workload.Job {
		jobs, err := workload.Sample(pool, 12, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range jobs {
			j.Arrival = time.Duration(i) * 3 * time.Second
			j.Queue = []string{"root.a", "root.b"}[i%2]
		}
		return jobs
	}
	queues := func(cfg *Config) {
		cfg.Queues = &rm.QueuesSet{Queues: []rm.QueueConf{
			{Name: "root.a", Weight: 1, MinFrac: fairness.New(0.5, 0.5), Preemption: rm.PreemptionTimes{MinShareTimeout: 2 * time.Second}},
			{Name: "root.b", Weight: 1}}}
		cfg.Preemption = &rm.PreemptionConfig{Grace: time.Second}
	}
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"plain", func(*Config) {}},
		{"queues and preemption", queues},
		{"labels", func(cfg *Config) {
			queues(cfg)
			cfg.Queues.Queues[0].Labels, cfg.Queues.Queues[0].DefaultLabel = []string{"x"}, "x"
			cfg.Labels = &LabelModel{Partitions: map[string]bool{"x": false}, Machines: []string{"x", "x", "x"}}
		}},
		{"locality", func(cfg *Config) { cfg.Locality = DefaultLocality() }},
	} {
		for _, p := range Policies {
			t.Run(tc.name+"/"+p, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Machines, cfg.Policy = 10, p
				tc.set(&cfg)
				res, err := Run(cfg, draw())
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Windows) == 0 {
					t.Fatal("no fairness windows")
				}
			})
		}
	}
}
