package executor

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc/execproto"
	"github.com/loomrm/loom/tool/benchtarget"
)

// collector gathers reported batches.
type collector struct {
	mu      sync.Mutex
	batches [][]execproto.Completion
	all     []execproto.Completion
	cond    *sync.Cond
}

func newCollector() *collector {
	c := &collector{}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *collector) report(b []execproto.Completion) {
	c.mu.Lock()
	c.batches = append(c.batches, b)
	c.all = append(c.all, b...)
	c.cond.Broadcast()
	c.mu.Unlock()
}

func (c *collector) wait(t testing.TB, n int) []execproto.Completion {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.all) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d completions, want %d", len(c.all), n)
		}
		c.mu.Unlock()
		time.Sleep(time.Millisecond)
		c.mu.Lock()
	}
	return slices.Clone(c.all)
}

func TestBadInputIsRefused(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	small := fairness.New(1024, 1)
	if err := e.Install(execproto.Template{ID: "scan", Kind: execproto.KindNoop, Demand: small}); err != nil {
		t.Fatal(err)
	}
	e.Install(execproto.Template{ID: "big", Kind: execproto.KindNoop, Demand: fairness.New(4096, 1)})
	e.Install(execproto.Template{ID: "slow", Kind: execproto.KindSynthetic, Demand: small, Duration: time.Hour})
	e.Grant(1, small)
	e.Grant(2, small)
	if err := e.Start(2, execproto.TaskID{Template: "slow"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		err  error
		want string
	}{
		{e.Install(execproto.Template{Kind: execproto.KindNoop}), "template has no id"},
		{e.Install(execproto.Template{ID: "x", Kind: "python"}), `unknown task kind "python"`},
		{e.Install(execproto.Template{ID: "x", Kind: execproto.KindCommand}), "a command task needs a command"},
		{e.Install(execproto.Template{ID: "x", Kind: execproto.KindNoop, Demand: fairness.New(-1, 1)}), "negative demand"},
		{e.Install(execproto.Template{ID: "scan", Kind: execproto.KindNoop, Demand: fairness.New(2048, 1)}), "already installed with other contents"},
		{e.Install(execproto.Template{ID: "scan", Kind: execproto.KindNoop, Demand: small}), ""},
		{e.Grant(1, small), "lease 1 is already granted"},
		{e.Start(9, execproto.TaskID{Template: "scan"}), "lease 9 is not granted"},
		{e.Start(1, execproto.TaskID{Template: "join", Index: 4}), "template join is not installed"},
		{e.Start(1, execproto.TaskID{Template: "big"}), "does not fit lease 1"},
		{e.Start(2, execproto.TaskID{Template: "scan", Index: 1}), "lease 2 is running slow/0"},
		{e.Revoke(7), "lease 7 is not granted"},
	}
	for i, tc := range tests {
		if tc.want == "" {
			if tc.err != nil {
				t.Errorf("%d: %v", i, tc.err)
			}
			continue
		}
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%d: err = %v, want %q", i, tc.err, tc.want)
		}
	}
}

func TestCompletionsComeInBatches(t *testing.T) {
	c := newCollector()
	e := New(Options{Report: c.report, BatchSize: 64, BatchDelay: 5 * time.Millisecond})
	e.Install(execproto.Template{ID: "t", Kind: execproto.KindNoop})
	for id := range execproto.LeaseID(1000) {
		e.Grant(id, fairness.New(1024, 1))
	}
	for i := range 1000 {
		if err := e.Start(execproto.LeaseID(i), execproto.TaskID{Template: "t", Index: int32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := c.wait(t, 1000)
	seen := map[int32]bool{}
	for _, cp := range got {
		if cp.Exit != 0 || int(cp.Lease) != int(cp.Task.Index) || cp.Ended.Before(cp.Started) {
			t.Errorf("completion %+v", cp)
		}
		seen[cp.Task.Index] = true
	}
	if len(seen) != 1000 {
		t.Errorf("%d distinct tasks completed, want 1000", len(seen))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.batches) >= 1000 || len(c.batches) < 1000/64 {
		t.Errorf("%d batches for 1000 completions of batch size 64", len(c.batches))
	}
	for _, b := range c.batches {
		if len(b) > 64 {
			t.Errorf("a batch of %d", len(b))
		}
	}
	// A lease is free again once its task completed.
	if err := e.Start(3, execproto.TaskID{Template: "t", Index: 5000}); err != nil {
		t.Errorf("reusing a lease: %v", err)
	}
}

func TestSyntheticAndCommandTasks(t *testing.T) {
	c := newCollector()
	e := New(Options{Report: c.report, BatchSize: 1})
	d := fairness.New(64, 1)
	e.Install(execproto.Template{ID: "burn", Kind: execproto.KindSynthetic, Demand: d, Duration: 80 * time.Millisecond})
	e.Install(execproto.Template{ID: "exit", Kind: execproto.KindCommand, Demand: d, Command: []string{"sh", "-c", "exit {index}"}})
	e.Install(execproto.Template{ID: "sleep", Kind: execproto.KindCommand, Demand: d, Command: []string{"sleep", "100"}})
	e.Install(execproto.Template{ID: "forever", Kind: execproto.KindSynthetic, Demand: d, Duration: time.Hour})
	e.Install(execproto.Template{ID: "nap", Kind: execproto.KindSleep, Demand: d, Duration: 60 * time.Millisecond})
	for id := range execproto.LeaseID(5) {
		e.Grant(id, d)
	}
	e.Start(0, execproto.TaskID{Template: "burn"})
	e.Start(1, execproto.TaskID{Template: "exit", Index: 3})
	e.Start(2, execproto.TaskID{Template: "sleep"})
	e.Start(3, execproto.TaskID{Template: "forever"})
	e.Start(4, execproto.TaskID{Template: "nap"})
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	e.Revoke(2)
	e.Revoke(3)
	got := c.wait(t, 5)
	if time.Since(start) > 3*time.Second {
		t.Errorf("revoked tasks took %v to stop", time.Since(start))
	}
	by := map[string]execproto.Completion{}
	for _, cp := range got {
		by[cp.Task.Template] = cp
	}
	if b := by["burn"]; b.Exit != 0 || b.Ended.Sub(b.Started) < 80*time.Millisecond {
		t.Errorf("synthetic task: exit %d after %v, want 0 after at least 80ms", b.Exit, b.Ended.Sub(b.Started))
	}
	if n := by["nap"]; n.Exit != 0 || n.Ended.Sub(n.Started) < 60*time.Millisecond {
		t.Errorf("sleep task: exit %d after %v", n.Exit, n.Ended.Sub(n.Started))
	}
	if x := by["exit"]; x.Exit != 3 {
		t.Errorf("command exit {index}=3: exit %d (%s)", x.Exit, x.Err)
	}
	for _, name := range []string{"sleep", "forever"} {
		if s := by[name]; s.Exit != -1 || !strings.Contains(s.Err, "revoked") {
			t.Errorf("revoked %s: exit %d %q", name, s.Exit, s.Err)
		}
	}
	e.Close()
}

// BenchmarkSpawnNoop: no-op tasks started and completed by one executor
// on one core (GOMAXPROCS 1), on 64 leases that each run one task after
// another, as a 64-core node's would; completions are reported in
// batches. Target: at least 1,000,000 tasks/s (Canary: 136,000 per core).
func BenchmarkSpawnNoop(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var completed atomic.Int64
	e := New(Options{Report: func(cs []execproto.Completion) { completed.Add(int64(len(cs))) }, BatchSize: 1024})
	e.Install(execproto.Template{ID: "noop", Kind: execproto.KindNoop})
	const leases = 64
	for id := range execproto.LeaseID(leases) {
		e.Grant(id, fairness.New(1, 1))
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i += leases {
		for k := range min(leases, b.N-i) {
			if err := e.Start(execproto.LeaseID(k), execproto.TaskID{Template: "noop", Index: int32(i + k)}); err != nil {
				b.Fatal(err)
			}
		}
		e.flushWhenIdle() // the worker runs the round; its leases are free again
	}
	for completed.Load() < int64(b.N) {
		runtime.Gosched()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	b.ReportMetric(1e6, "target-tasks/s")
}

// BenchmarkLeaseToTaskStart: from a lease's grant to its task running.
// Target: p50 under 100 µs.
func BenchmarkLeaseToTaskStart(b *testing.B) {
	started := make(chan time.Time, 1)
	e := New(Options{Report: func(cs []execproto.Completion) {
		for _, c := range cs {
			started <- c.Started
		}
	}, BatchSize: 1})
	e.Install(execproto.Template{ID: "noop", Kind: execproto.KindNoop})
	id := execproto.LeaseID(0)
	benchtarget.Run(b, 100*time.Microsecond, func() {
		t0 := time.Now()
		e.Grant(id, fairness.New(1, 1))
		e.Start(id, execproto.TaskID{Template: "noop"})
		if s := <-started; s.Before(t0) {
			b.Fatal("started before the grant")
		}
		id++
	})
}

// flushWhenIdle reports the pending batch once every running task has
// completed: for benchmarks.
func (e *Executor) flushWhenIdle() {
	e.running.Wait()
	e.flush()
}
