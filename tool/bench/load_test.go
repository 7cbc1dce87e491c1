package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestAppTasksSpread(t *testing.T) {
	for _, c := range []struct{ apps, total int }{{100, 100000}, {5, 500}, {1, 7}, {3, 3}, {7, 100}, {100, 150}} {
		n := AppTasks(c.apps, c.total)
		sum := 0
		for _, x := range n {
			if x < 1 {
				t.Errorf("AppTasks(%d, %d) gives an app %d tasks", c.apps, c.total, x)
			}
			sum += x
		}
		if len(n) != c.apps || sum != c.total {
			t.Errorf("AppTasks(%d, %d) = %v: %d apps, %d tasks", c.apps, c.total, n, len(n), sum)
		}
	}
	if n := AppTasks(100, 100000); n[0] != 100 || n[99] < 1890 || n[99] > 1910 {
		t.Errorf("AppTasks(100, 100000) spans %d to %d, want 100 to about 1,900", n[0], n[99])
	}
}

// TestLoadSmall runs the load test small and fast: every task completes
// exactly once, nothing is lost, and the report carries its figures.
func TestLoadSmall(t *testing.T) {
	o := DefaultLoadOptions()
	o.Nodes, o.Apps, o.Tasks = 50, 5, 500
	o.TaskTime, o.Heartbeat, o.AMInterval = 200*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
	o.Timeout = time.Minute
	var last int
	o.Progress = func(done, total int) {
		if done < last || total != 500 {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last = done
	}
	rep, err := RunLoad(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if f := rep.Failures(); len(f) > 0 {
		t.Fatalf("failures: %v", f)
	}
	if rep.TasksOnce != 500 || rep.TasksTwice != 0 || rep.AppsSucceeded != 5 || rep.RMTaskSuccesses != 500 {
		t.Errorf("tasks once %d, twice %d; apps %d; RM successes %d", rep.TasksOnce, rep.TasksTwice, rep.AppsSucceeded, rep.RMTaskSuccesses)
	}
	if rep.Allocations < 500 || rep.RMAllocations != rep.Allocations+5 {
		t.Errorf("AMs received %d containers, the RM allocated %d", rep.Allocations, rep.RMAllocations)
	}
	if last != 500 {
		t.Errorf("progress ended at %d", last)
	}
	if rep.Heartbeats == 0 || rep.HeartbeatP50 <= 0 || rep.HeartbeatP99 < rep.HeartbeatP50 || rep.HBMax < rep.HeartbeatP99 ||
		rep.DecisionCount == 0 || rep.DecisionP99 <= 0 || rep.AllocationsPerSecond <= 0 || rep.AllocationsMedian <= 0 ||
		rep.RMHeartbeats < rep.Heartbeats || rep.RMHeartbeatP99 <= 0 || rep.RMHeartbeatP99 < rep.RMHeartbeatP50 ||
		rep.Allocates == 0 || rep.Wall <= 0 {
		t.Errorf("figures missing: %+v", rep)
	}
	// Every task's container is timed from its ask, once more for each
	// task run again; 500 tasks on 200 vcores run in three waves, so the
	// last wave's tasks waited at least the shortest task (100 ms).
	if rep.AskToGrant < 500 || rep.AskToGrant > 500+rep.Retried || rep.FirstGrant != 5 ||
		rep.AskToGrantP99 < 100*time.Millisecond || rep.AskToGrantP50 > rep.AskToGrantP99 ||
		rep.FirstGrantP50 <= 0 || rep.FirstGrantP99 < rep.FirstGrantP50 || rep.FirstGrantP99 > rep.AskToGrantP99 {
		t.Errorf("ask to grant: %d containers, p50 %v, p99 %v; first of %d apps: p50 %v, p99 %v (%d retried)", rep.AskToGrant,
			rep.AskToGrantP50, rep.AskToGrantP99, rep.FirstGrant, rep.FirstGrantP50, rep.FirstGrantP99, rep.Retried)
	}
	// A heartbeat answered after the interval is missed: there is one
	// exactly when the slowest was.
	if rep.HeartbeatsMissed < 0 || rep.HeartbeatsMissed > rep.HeartbeatOverTarget || rep.HBMax <= o.Heartbeat && rep.HeartbeatsMissed != 0 ||
		rep.HBMax > o.Heartbeat && rep.HeartbeatsMissed == 0 {
		t.Errorf("%d heartbeats counted as missed, the slowest took %v against a %v interval", rep.HeartbeatsMissed, rep.HBMax, o.Heartbeat)
	}
	for _, want := range []string{"heartbeat round trip p99", "< 10ms", "allocations/s, median of seconds", "heartbeats answered after the interval (100ms)",
		"tasks completed exactly once", "500/500", "scheduling latency, ask to grant p50 / p99", "apps FINISHED SUCCEEDED", "5/5"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

// TestLoadCountsLostTasks checks that the checks can fail: a run cut
// short by its timeout reports tasks never completed and apps lost.
func TestLoadCountsLostTasks(t *testing.T) {
	o := DefaultLoadOptions()
	o.Nodes, o.Apps, o.Tasks = 4, 2, 40
	o.TaskTime, o.Heartbeat, o.AMInterval = 5*time.Second, 100*time.Millisecond, 50*time.Millisecond
	o.Timeout = 1500 * time.Millisecond
	rep, err := RunLoad(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.TasksOnce == 40 || rep.TasksNever == 0 || rep.AppsSucceeded == 2 || len(rep.Failures()) == 0 {
		t.Errorf("a timed-out run passed: once %d, never %d, apps %d, failures %v", rep.TasksOnce, rep.TasksNever, rep.AppsSucceeded, rep.Failures())
	}
}

func TestHistQuantile(t *testing.T) {
	before := map[string]float64{}
	after := map[string]float64{
		`h_bucket{le="0.001"}`: 50, `h_bucket{le="0.002"}`: 90, `h_bucket{le="0.004"}`: 100, `h_bucket{le="+Inf"}`: 100, "h_count": 100,
	}
	h := histDelta(before, after, "h", "")
	if got := h.quantile(0.5); got != time.Millisecond {
		t.Errorf("p50 %v, want 1ms", got)
	}
	if got := h.quantile(0.95); got != 3*time.Millisecond {
		t.Errorf("p95 %v, want 3ms", got)
	}
	// A labelled series, beside another one: only its own buckets, less
	// what the first scrape had. 40 new calls: 30 under 1 ms, 10 in
	// (1, 2] ms; p50 is 2/3 of the first bucket, p99 0.96 of the second.
	const hb = `method="nodeHeartbeat",protocol="ResourceTracker"`
	const alloc = `method="allocate",protocol="ApplicationMasterProtocol"`
	before = map[string]float64{`h_bucket{` + hb + `,le="0.001"}`: 10, `h_bucket{` + hb + `,le="0.002"}`: 10, `h_bucket{` + hb + `,le="+Inf"}`: 10, `h_count{` + hb + `}`: 10}
	after = map[string]float64{
		`h_bucket{` + hb + `,le="0.001"}`: 40, `h_bucket{` + hb + `,le="0.002"}`: 50, `h_bucket{` + hb + `,le="+Inf"}`: 50, `h_count{` + hb + `}`: 50,
		`h_bucket{` + alloc + `,le="0.001"}`: 0, `h_bucket{` + alloc + `,le="0.002"}`: 0, `h_bucket{` + alloc + `,le="+Inf"}`: 900, `h_count{` + alloc + `}`: 900,
	}
	h = histDelta(before, after, "h", hb)
	if h.count != 40 {
		t.Fatalf("%v calls, want 40", h.count)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 666667 * time.Nanosecond}, {0.99, 1960 * time.Microsecond}} {
		if got := h.quantile(c.q); (got - c.want).Abs() > time.Microsecond {
			t.Errorf("labelled q%v %v, want %v", c.q, got, c.want)
		}
	}
}

// The report prints issue 19's scale targets beside their figures: the
// allocation rate at 10,000 NMs and more, the RM's memory when it ran
// apart.
func TestLoadTableScaleTargets(t *testing.T) {
	for _, tc := range []struct {
		name          string
		nodes, tasks  int // tasks 0: the 20 a node
		perSecond     float64
		rss           uint64
		alloc, memory string // the rows' endings; "" for no row
	}{
		{name: "10K met", nodes: 10000, perSecond: 11500, rss: 900 << 20,
			alloc: ">= 10000 met (", memory: "900 MiB < 2048 MiB met"},
		{name: "10K missed", nodes: 10000, perSecond: 9000, rss: 3 << 30,
			alloc: ">= 10000 MISSED (", memory: "3072 MiB < 2048 MiB MISSED"},
		{name: "below 10K, the RM in this process", nodes: 1000, perSecond: 1200, alloc: "1200", memory: ""},
		{name: "10K, heartbeats only", nodes: 10000, tasks: 20, perSecond: 1, rss: 96 << 20,
			alloc: "1 (no target: 20 tasks cannot fill the 40000 slots once)", memory: "96 MiB < 2048 MiB met"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks := tc.tasks
			if tasks == 0 {
				tasks = 20 * tc.nodes
			}
			r := &LoadReport{Options: LoadOptions{Nodes: tc.nodes, NodeVCores: 4, Tasks: tasks, Heartbeat: time.Second},
				AllocationsPerSecond: tc.perSecond, RMPeakRSS: tc.rss}
			var out bytes.Buffer
			if err := r.WriteTable(&out); err != nil {
				t.Fatal(err)
			}
			var allocRow, memRow string
			for _, l := range strings.Split(out.String(), "\n") {
				l = strings.Join(strings.Fields(l), " ") // the table's padding aside
				switch {
				case strings.HasPrefix(l, "allocations/s, over the run"):
					allocRow = l
				case strings.HasPrefix(l, "the RM's peak RSS"):
					memRow = l
				}
			}
			if !strings.Contains(allocRow, tc.alloc) {
				t.Errorf("allocations row %q, want it to hold %q", allocRow, tc.alloc)
			}
			if (tc.nodes < 10000 || tc.tasks > 0) && strings.Contains(allocRow, ">=") {
				t.Errorf("allocations row %q has a target below 10,000 NMs", allocRow)
			}
			if tc.memory == "" && memRow != "" || tc.memory != "" && !strings.Contains(memRow, tc.memory) {
				t.Errorf("memory row %q, want %q", memRow, tc.memory)
			}
		})
	}
}
