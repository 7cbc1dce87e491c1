package server

import (
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// TestCapacitySchedulerQueues: without loom.queues, the RM takes a
// Capacity Scheduler's leaf queues, each weighted by its absolute
// capacity (worked by hand below); loom.queues, when set, wins.
func TestCapacitySchedulerQueues(t *testing.T) {
	const p = "yarn.scheduler.capacity.root."
	tests := []struct {
		name string
		kv   []string
		want map[string]float64
		err  string
	}{
		{"YARN's default", []string{p + "queues", "default", p + "default.capacity", "100"}, map[string]float64{"default": 100}, ""},
		// b's 40 split 25/75: b1 10, b2 30.
		{"two levels", []string{p + "queues", "a,b", p + "a.capacity", "60", p + "b.capacity", "40",
			p + "b.queues", "b1, b2", p + "b.b1.capacity", "25", p + "b.b2.capacity", "75"},
			map[string]float64{"a": 60, "b1": 10, "b2": 30}, ""},
		// Weights 1w and 3w: 25 and 75; c's 75 split in percent 50/50.
		{"weights", []string{p + "queues", "a,c", p + "a.capacity", "1w", p + "c.capacity", "3w",
			p + "c.queues", "x,y", p + "c.x.capacity", "50", p + "c.y.capacity", "50"},
			map[string]float64{"a": 25, "x": 37.5, "y": 37.5}, ""},
		{"a zero-capacity leaf", []string{p + "queues", "a,z", p + "a.capacity", "100", p + "z.capacity", "0"},
			map[string]float64{"a": 100, "z": 0.001}, ""},
		{"loom.queues wins", []string{"loom.queues", "default,etl", p + "queues", "a", p + "a.capacity", "100"},
			map[string]float64{"default": 1, "etl": 1}, ""},
		{"capacities not adding up", []string{p + "queues", "a,b", p + "a.capacity", "60", p + "b.capacity", "30"},
			nil, "yarn.scheduler.capacity.root.queues: the capacities of root's children add up to 90, not 100"},
		{"no capacity", []string{p + "queues", "a,b", p + "a.capacity", "100"},
			nil, "yarn.scheduler.capacity.root.b.capacity: queue root.b has no capacity"},
		{"the same leaf twice", []string{p + "queues", "a,b", p + "a.capacity", "50", p + "b.capacity", "50",
			p + "a.queues", "x", p + "a.x.capacity", "100", p + "b.queues", "x", p + "b.x.capacity", "100"},
			nil, `leaf queue "x" appears twice`},
		{"absolute resources", []string{p + "queues", "a", p + "a.capacity", "[memory=1024,vcores=1]"},
			nil, "absolute resources"},
		{"weights and percentages", []string{p + "queues", "a,b", p + "a.capacity", "1w", p + "b.capacity", "50"},
			nil, "mix weights and percentages"},
		{"out of range", []string{p + "queues", "a", p + "a.capacity", "120"},
			nil, "capacity 120 must be between 0 and 100"},
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
		got, _, err := queues(c)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %v, %v; want an error with %q", tc.name, got, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !maps.EqualFunc(got, tc.want, func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }):
			t.Errorf("%s: queues %v, want %v", tc.name, got, tc.want)
		}
	}
}
