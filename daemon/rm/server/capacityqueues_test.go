package server

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rm"
)

// TestCapacitySchedulerQueues: without loom.queues, the RM takes a
// Capacity Scheduler's tree: each queue weighted by its capacity among
// its siblings, guaranteed its absolute capacity (its capacity times its
// parents', worked by hand below) and held to its absolute maximum
// capacity; apps name leaves by their own names; loom.queues, when set,
// wins.
func TestCapacitySchedulerQueues(t *testing.T) {
	const p = "yarn.scheduler.capacity.root."
	type q struct {
		name             string
		weight, min, max float64 // min and max: of the cluster's memory
	}
	tests := []struct {
		name   string
		kv     []string
		want   []q
		leaves map[string]float64
		err    string
	}{
		{"YARN's default", []string{p + "queues", "default", p + "default.capacity", "100"},
			[]q{{"root.default", 100, 1, 1}}, map[string]float64{"default": 1}, ""},
		// b's 40 split 25/75: b1 10, b2 30; b held to 50, b2 to 80% of
		// b's 50: 40.
		{"two levels", []string{p + "queues", "a,b", p + "a.capacity", "60", p + "b.capacity", "40", p + "b.maximum-capacity", "50",
			p + "b.queues", "b1, b2", p + "b.b1.capacity", "25", p + "b.b2.capacity", "75", p + "b.b2.maximum-capacity", "80"},
			[]q{{"root.a", 60, 0.6, 1}, {"root.b", 40, 0.4, 0.5}, {"root.b.b1", 25, 0.1, 0.5}, {"root.b.b2", 75, 0.3, 0.4}},
			map[string]float64{"a": 1, "b1": 1, "b2": 1}, ""},
		{"loom.queues wins", []string{"loom.queues", "default,etl", p + "queues", "a", p + "a.capacity", "100"},
			nil, map[string]float64{"default": 1, "etl": 1}, ""},
		{"capacities not adding up", []string{p + "queues", "a,b", p + "a.capacity", "60", p + "b.capacity", "30"},
			nil, nil, "90"},
		// As Hadoop: a queue without a capacity has 0; it runs on idle
		// capacity only, with the least weight the core takes.
		{"no capacity", []string{p + "queues", "a,b", p + "a.capacity", "100"},
			[]q{{"root.a", 100, 1, 1}, {"root.b", 1e-5, 0, 1}}, map[string]float64{"a": 1, "b": 1}, ""},
		{"the same leaf twice", []string{p + "queues", "a,b", p + "a.capacity", "50", p + "b.capacity", "50",
			p + "a.queues", "x", p + "a.x.capacity", "100", p + "b.queues", "x", p + "b.x.capacity", "100"},
			nil, nil, "root.b.x"},
		{"weights and percentages", []string{p + "queues", "a,b", p + "a.capacity", "1w", p + "b.capacity", "50"},
			nil, nil, "root.a"},
		{"out of range", []string{p + "queues", "a", p + "a.capacity", "120"},
			nil, nil, "120"},
	}
	for _, tc := range tests {
		c := hadoopconf.New(Defaults)
		for i := 0; i < len(tc.kv); i += 2 {
			c.Set(tc.kv[i], tc.kv[i+1])
		}
		if tc.kv[0] != "loom.queues" {
			// As read from capacity-scheduler.xml, loom.queues unset.
			c = hadoopconf.New(Defaults)
			var xml strings.Builder
			xml.WriteString("<configuration>")
			for i := 0; i < len(tc.kv); i += 2 {
				xml.WriteString("<property><name>" + tc.kv[i] + "</name><value>" + tc.kv[i+1] + "</value></property>")
			}
			xml.WriteString("</configuration>")
			if err := c.Load("capacity-scheduler.xml", strings.NewReader(xml.String())); err != nil {
				t.Fatal(err)
			}
		}
		tree, _, err := loadQueueTree(c)
		var got []q
		var leaves map[string]float64
		if err == nil && tree != nil {
			var set rm.QueuesSet
			if set, err = CoreQueues(tree); err == nil {
				for _, x := range set.Queues {
					got = append(got, q{x.Name, x.Weight, x.MinFrac[fairness.Memory], x.MaxFrac[fairness.Memory]})
				}
			}
		}
		if err == nil {
			leaves, _, err = queues(c, tree)
		}
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %v, %v; want an error with %q", tc.name, got, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		default:
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(q{}), cmpopts.EquateApprox(1e-9, 1e-12)); diff != "" {
				t.Errorf("%s: core queues (-want +got):\n%s", tc.name, diff)
			}
			if !maps.Equal(leaves, tc.leaves) {
				t.Errorf("%s: queues apps may name %v, want %v", tc.name, leaves, tc.leaves)
			}
		}
	}
}
