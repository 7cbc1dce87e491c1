package am

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

const sec = time.Second

var core = fairness.New(1024, 1)

// barrierJob: S0 (3 × 3 s) and S1 (2 × 4 s) feed the barrier S2 (1 × 1 s).
func barrierJob() *workload.Job {
	return &workload.Job{Name: "j", Stages: []workload.Stage{
		{Name: "S0", Tasks: 3, Demand: core, Duration: 3 * sec},
		{Name: "S1", Tasks: 2, Demand: core, Duration: 4 * sec},
		{Name: "S2", Tasks: 1, Demand: core, Duration: sec, Parents: []string{"S0", "S1"}},
	}}
}

func newDAG(t *testing.T, cfg Config) *DAG {
	t.Helper()
	d, err := NewDAG(barrierJob(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDecideGreedy(t *testing.T) {
	// Breadth-first: S0 and S1 (depth 1) rank 0 and 1, S2 rank 2. Only the
	// runnable stages ask, all DEFAULT.
	d := newDAG(t, Config{})
	req := d.Decide(0, fairness.New(5*1024, 5), fairness.New(10*1024, 10), 1, nil)
	want := []Ask{
		{Priority: 0, Demand: core, Kind: altruism.Default, Count: 3},
		{Priority: 1, Demand: core, Kind: altruism.Default, Count: 2},
	}
	if diff := cmp.Diff(want, req.Asks); diff != "" {
		t.Errorf("asks (-want +got):\n%s", diff)
	}
	// Demand is every task: 6 × core. Critical path: S1 (4 s) + S2 (1 s).
	if req.Demand != core.Scale(6) || req.CriticalTime != 5*sec || req.HasWake {
		t.Errorf("request = %+v", req)
	}
	// Remaining work with 10 cores: (3·3 + 2·4 + 1) s × 0.1 = 1.8.
	if req.RemainingWork < 1.8-1e-9 || req.RemainingWork > 1.8+1e-9 {
		t.Errorf("remaining work = %v, want 1.8", req.RemainingWork)
	}
}

func TestDecideAltruistic(t *testing.T) {
	// With a 5-core share the plan is T = 5 s: S1 must start now, S0 may
	// wait until 1 s. S1 ranks first (its latest start is earliest).
	d := newDAG(t, Config{Altruistic: true})
	req := d.Decide(0, fairness.New(5*1024, 5), fairness.New(10*1024, 10), 1, nil)
	want := []Ask{
		{Priority: 1, Demand: core, Kind: altruism.Altruistic, Count: 3},
		{Priority: 0, Demand: core, Kind: altruism.Default, Count: 2},
	}
	if diff := cmp.Diff(want, req.Asks); diff != "" {
		t.Errorf("asks (-want +got):\n%s", diff)
	}
	if !req.HasWake || req.Wake != sec || !req.Yielding || req.Finish != 5*sec {
		t.Errorf("request = %+v, want a wake at 1s, yielding, finish 5s", req)
	}
	// P(Altruism) = 0: everything runnable is DEFAULT.
	d = newDAG(t, Config{Altruistic: true})
	req = d.Decide(0, fairness.New(5*1024, 5), fairness.New(10*1024, 10), 0, nil)
	for _, a := range req.Asks {
		if a.Kind != altruism.Default {
			t.Errorf("P=0 asked %v", a)
		}
	}
}

func TestBindAndComplete(t *testing.T) {
	d := newDAG(t, Config{MaxAttempts: 2})
	d.Decide(0, fairness.New(5*1024, 5), fairness.New(10*1024, 10), 0, nil)
	grant := func(id int64, res fairness.Vector) (TaskRecord, bool) {
		return d.Bind(0, Grant{ID: id, Node: "n1", Resource: res, Kind: altruism.Default})
	}
	// The highest priority (lowest value) runnable stage is S0.
	rec, ok := grant(1, core)
	if !ok || rec.Stage != "S0" || rec.Task != 0 || rec.Attempt != 1 {
		t.Fatalf("first bind = %+v, %v", rec, ok)
	}
	// A container too small for any task is refused.
	if _, ok := grant(2, fairness.New(512, 1)); ok {
		t.Error("bound a task to a container it does not fit")
	}
	for id := int64(3); id <= 6; id++ {
		if _, ok := grant(id, core); !ok {
			t.Fatalf("bind %d failed", id)
		}
	}
	// S0 ×3 and S1 ×2 are running; S2 is not runnable: nothing more.
	if _, ok := grant(7, core); ok {
		t.Error("bound a task of a stage whose parents run")
	}
	if d.Running() != 5 {
		t.Errorf("running = %d, want 5", d.Running())
	}
	// Container 1 (S0 task 0) fails once: it is retried with attempt 2.
	if _, err := d.Completed(3*sec, 1, false); err != nil {
		t.Fatal(err)
	}
	rec, ok = d.Bind(3*sec, Grant{ID: 9, Resource: core})
	if !ok || rec.Stage != "S0" || rec.Task != 0 || rec.Attempt != 2 {
		t.Fatalf("retry bind = %+v, %v", rec, ok)
	}
	// It fails again: two attempts is the limit, the job fails.
	if _, err := d.Completed(4*sec, 9, false); err != nil {
		t.Fatal(err)
	}
	if err := d.Failed(); err == nil || !strings.Contains(err.Error(), `task 0 of stage "S0" failed 2 times`) {
		t.Errorf("Failed() = %v", err)
	}
	if _, err := d.Completed(4*sec, 99, true); err == nil {
		t.Error("completing an unknown container was accepted")
	}
	h := d.History()
	if len(h) != 2 || h[0].Succeeded || h[0].End != 3*sec || h[1].Attempt != 2 {
		t.Errorf("history = %+v", h)
	}
}

func TestRunToCompletion(t *testing.T) {
	// Run the job on an endless supply of one-core containers, finishing
	// each task exactly at its estimate: every task runs once, in order.
	d := newDAG(t, Config{Altruistic: true})
	now, id := time.Duration(0), int64(0)
	type end struct {
		at time.Duration
		id int64
	}
	var running []end
	for steps := 0; !d.Finished(); steps++ {
		if steps > 100 {
			t.Fatal("no progress")
		}
		req := d.Decide(now, fairness.New(5*1024, 5), fairness.New(10*1024, 10), 1, nil)
		for _, a := range req.Asks {
			if a.Kind != altruism.Default {
				continue
			}
			for i := 0; i < a.Count; i++ {
				id++
				rec, ok := d.Bind(now, Grant{ID: id, Resource: a.Demand, Kind: a.Kind})
				if !ok {
					t.Fatalf("DEFAULT ask at %v had no task", now)
				}
				dur := map[string]time.Duration{"S0": 3 * sec, "S1": 4 * sec, "S2": sec}[rec.Stage]
				running = append(running, end{now + dur, id})
			}
		}
		next := time.Duration(1 << 62)
		if req.HasWake {
			next = req.Wake
		}
		for _, r := range running {
			next = min(next, r.at)
		}
		now = next
		kept := running[:0]
		for _, r := range running {
			if r.at == now {
				if _, err := d.Completed(now, r.id, true); err != nil {
					t.Fatal(err)
				}
				continue
			}
			kept = append(kept, r)
		}
		running = kept
	}
	// T = 5 s: S1 at 0, S0 at its latest start 1, S2 at 4.
	if now != 5*sec || len(d.History()) != 6 {
		t.Errorf("finished at %v with %d tasks, want 5s and 6", now, len(d.History()))
	}
	for _, r := range d.History() {
		if r.Stage == "S0" && r.Start != sec {
			t.Errorf("S0 task started at %v, want its latest start 1s", r.Start)
		}
	}
}

// TestPreemptedTasksRunAgainWithoutFailing: a task whose container the RM
// took back runs again, and however often that happens it does not count
// towards its attempts (MaxAttempts 1 here: one failure would fail the
// job).
func TestPreemptedTasksRunAgainWithoutFailing(t *testing.T) {
	d := newDAG(t, Config{MaxAttempts: 1})
	d.Decide(0, fairness.New(5*1024, 5), fairness.New(10*1024, 10), 0, nil)
	rec, ok := d.Bind(0, Grant{ID: 1, Node: "n1", Resource: core, Kind: altruism.Default})
	if !ok || rec.Stage != "S0" || rec.Task != 0 {
		t.Fatalf("bind = %+v, %v", rec, ok)
	}
	for id := int64(1); id <= 3; id++ {
		if _, err := d.Preempted(sec*time.Duration(id), id); err != nil {
			t.Fatal(err)
		}
		if err := d.Failed(); err != nil {
			t.Fatalf("after %d preemptions: %v", id, err)
		}
		rec, ok = d.Bind(sec*time.Duration(id), Grant{ID: id + 1, Resource: core})
		if !ok || rec.Stage != "S0" || rec.Task != 0 || rec.Attempt != int(id)+1 {
			t.Fatalf("rebind after preemption %d = %+v, %v", id, rec, ok)
		}
	}
	if _, err := d.Preempted(4*sec, 99); err == nil {
		t.Error("preempting an unknown container was accepted")
	}
}

// TestDemandFromKeptCounts: the demand the AM reports comes from counts it
// keeps as tasks start and end; it must equal the job state's demand
// (every stage's pending and running tasks) bit for bit, through starts,
// successes, failures and preemptions.
func TestDemandFromKeptCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for run := 0; run < 50; run++ {
		d := newDAG(t, Config{MaxAttempts: 100})
		var running []int64
		next := int64(1)
		for step := 0; step < 60 && !d.Finished(); step++ {
			now := time.Duration(step) * sec
			if len(running) == 0 || rng.IntN(2) == 0 {
				if _, ok := d.Bind(now, Grant{ID: next, Resource: core}); ok {
					running = append(running, next)
				}
				next++
			} else {
				i := rng.IntN(len(running))
				id := running[i]
				running = append(running[:i], running[i+1:]...)
				var err error
				switch rng.IntN(4) {
				case 0:
					_, err = d.Completed(now, id, false)
				case 1:
					_, err = d.Preempted(now, id)
				default:
					_, err = d.Completed(now, id, true)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if got, want := d.Demand(), d.state.Demand(); got != want {
				t.Fatalf("run %d step %d: demand %v, the job state's %v", run, step, got, want)
			}
		}
	}
}
