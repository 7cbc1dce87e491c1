package webui

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

// fakeWhatIf answers a what-if from a formula, hand-checkable: at P the
// average JCT is 60 s − 20 s·P, the p95 twice that, Jain's index 0.95 −
// 0.1·P, the share of slowed jobs 0.04·P (meeting the 5% objective up to
// P = 1), the speedup 60 s over the average. It records what it was asked.
type fakeWhatIf struct {
	mu    sync.Mutex
	calls []whatIfCall
	fail  error
	gate  chan struct{} // when set, each call waits for a value
}

type whatIfCall struct {
	jobs, nodes int
	node        fairness.Vector
	cap, recall float64
	ps          []float64
	queue       string
	p           float64
	overrides   map[string]float64
}

func (f *fakeWhatIf) run(ctx context.Context, req WhatIfRequest) (*WhatIf, error) {
	if f.gate != nil {
		<-f.gate
	}
	f.mu.Lock()
	f.calls = append(f.calls, whatIfCall{len(req.Jobs), req.Nodes, req.Node, req.LeftoverCap, req.Recall, slices.Clone(req.Ps), req.Queue,
		req.PAltruism, req.Overrides})
	f.mu.Unlock()
	ps, leftoverCap := req.Ps, req.LeftoverCap
	if f.fail != nil {
		return nil, f.fail
	}
	w := &WhatIf{Objective: "at most 5% of jobs slowed more than 20%", Recommended: -1}
	for i, p := range ps {
		avg := time.Duration(float64(60*time.Second) - p*float64(20*time.Second))
		r := WhatIfRow{PAltruism: p, LeftoverCap: leftoverCap, AvgJCT: avg, P95JCT: 2 * avg, Jain: 0.95 - 0.1*p,
			Speedup: float64(60*time.Second) / float64(avg), Slowed: 0.04 * p}
		r.Meets = r.Slowed <= 0.05
		if r.Meets {
			w.Recommended = i
		}
		w.Rows = append(w.Rows, r)
	}
	return w, nil
}

func (f *fakeWhatIf) last() whatIfCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[len(f.calls)-1]
}

// waitWhatIf polls GET /ws/v1/loom/whatif until its state is want.
func waitWhatIf(t *testing.T, h http.Handler, want string) whatIfAnswer {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var ans whatIfAnswer
		a := serve(h, http.MethodGet, "/ws/v1/loom/whatif", "")
		if a.code != http.StatusOK {
			t.Fatalf("GET /ws/v1/loom/whatif: %d %s", a.code, a.body)
		}
		decode(t, a, &ans)
		if ans.State == want {
			return ans
		}
		if time.Now().After(deadline) {
			t.Fatalf("what-if state %q, want %q", ans.State, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWhatIf(t *testing.T) {
	job := &workload.Job{Name: "j", Stages: []workload.Stage{{Name: "s", Tasks: 2, Demand: fairness.New(1024, 1), Duration: time.Second}}}
	handler := func(f *fakeBackend, w WhatIfFunc) http.Handler {
		return newServer(f, Config{Log: zerolog.Nop(), WhatIf: w}, fakeNow).handler()
	}

	// Without the simulator, and without recorded jobs, it says so.
	f := newFakeBackend()
	if ans := waitWhatIf(t, handler(f, nil), "unavailable"); len(ans.Rows) != 0 || ans.Current != 0.8 {
		t.Errorf("unavailable: %+v", ans)
	}
	fw := &fakeWhatIf{gate: make(chan struct{}, 10)}
	h := handler(f, fw.run)
	waitWhatIf(t, h, "no-history")

	// With jobs: computing until the replay ends, then every setting and
	// the current one, on the RUNNING nodes' shape (two of 16 GB and 8
	// vcores; the LOST node does not count) at the RM's cap.
	f.recorded = []*workload.Job{job, job, job}
	waitWhatIf(t, h, "computing")
	fw.gate <- struct{}{}
	ans := waitWhatIf(t, h, "ready")
	c := fw.last()
	if c.jobs != 3 || c.nodes != 2 || c.node != fairness.New(16384, 8) || c.cap != 2 || c.recall != 0.25 {
		t.Errorf("replayed %+v, want 3 jobs on 2 nodes of <16384, 8> at cap 2, recall 0.25", c)
	}
	if want := []float64{0, 0.25, 0.5, 0.75, 0.8, 1}; !slices.Equal(c.ps, want) {
		t.Errorf("settings %v, want %v (the defaults and the current 0.8)", c.ps, want)
	}
	if len(ans.Rows) != 6 || ans.Jobs != 3 || ans.Nodes != 2 || ans.Current != 0.8 || ans.Cap != 2 || ans.Recommended != 5 {
		t.Fatalf("answer %+v", ans)
	}
	// P = 0.8: 60 − 16 = 44 s, p95 88 s, Jain 0.87, slowed 0.032.
	r := ans.Rows[4]
	if r.PAltruism != 0.8 || r.AvgJCTMs != 44000 || r.P95JCTMs != 88000 || r.Jain < 0.869999 || r.Jain > 0.870001 || r.Slowed < 0.031999 || r.Slowed > 0.032001 || !r.Meets {
		t.Errorf("row at 0.8: %+v", r)
	}
	if ans.ComputedMs != fakeNow().UnixMilli() {
		t.Errorf("computed at %d, want the clock's %d", ans.ComputedMs, fakeNow().UnixMilli())
	}

	// Nothing changed: no new replay.
	waitWhatIf(t, h, "ready")
	fw.mu.Lock()
	n := len(fw.calls)
	fw.mu.Unlock()
	if n != 1 {
		t.Errorf("%d replays with nothing changed, want 1", n)
	}
	if ans.Measured != nil {
		t.Errorf("measured %+v before any change of P(Altruism)", ans.Measured)
	}
	// A new P(Altruism) is replayed too; the old answer stands meanwhile.
	if err := f.SetAltruism(context.Background(), AltruismSet{P: 0.3}, "test"); err != nil {
		t.Fatal(err)
	}
	if ans := waitWhatIf(t, h, "computing"); len(ans.Rows) != 6 {
		t.Errorf("while recomputing, %d rows, want the last answer's 6", len(ans.Rows))
	}
	fw.gate <- struct{}{}
	waitWhatIf(t, h, "ready")
	if want := []float64{0, 0.25, 0.3, 0.5, 0.75, 1}; !slices.Equal(fw.last().ps, want) {
		t.Errorf("settings after the change %v, want %v", fw.last().ps, want)
	}
	// Measured: the fake's one succeeded app (submitted at 20 s, finished
	// at 50 s) ended between the configured 0.8 (at 0 s) and the change
	// to 0.3 (at 100 s); none has finished since.
	ans = waitWhatIf(t, h, "ready")
	want := &measuredJSON{SinceMs: nowMs, P: 0.3, FromP: 0.8, Before: jctStat{Apps: 1, AvgJCTMs: 30_000}}
	if ans.Measured == nil || *ans.Measured != *want {
		t.Errorf("measured %+v, want %+v", ans.Measured, want)
	}

	// One queue's view: its override varies, its jobs alone (none yet:
	// no history), the cluster's P and the overrides as they are.
	waitQ := func(q, want string) whatIfAnswer {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			var ans whatIfAnswer
			decode(t, serve(h, http.MethodGet, "/ws/v1/loom/whatif?queue="+q, ""), &ans)
			if ans.State == want {
				return ans
			}
			if time.Now().After(deadline) {
				t.Fatalf("queue %s: state %q, want %q", q, ans.State, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitQ("etl", "no-history")
	etlJob := job.Clone()
	etlJob.Queue = "etl"
	f.recorded = append(f.recorded, etlJob)
	waitQ("etl", "computing")
	fw.gate <- struct{}{}
	if ans := waitQ("etl", "ready"); ans.Queue != "etl" || ans.Current != 0.3 || len(ans.Rows) != 6 {
		t.Errorf("etl's view: %+v", ans)
	}
	if c := fw.last(); c.queue != "etl" || c.p != 0.3 || c.jobs != 4 || len(c.overrides) != 0 {
		t.Errorf("etl's replay asked %+v, want queue etl at the cluster's 0.3 over all 4 jobs", c)
	}
	if a := serve(h, http.MethodGet, "/ws/v1/loom/whatif?queue=ghost", ""); a.code != http.StatusBadRequest {
		t.Errorf("an unknown queue: %d %s", a.code, a.body)
	}
	// The cluster's view is kept apart (it recomputes: a job was added).
	fw.gate <- struct{}{}
	waitWhatIf(t, h, "ready")

	// A failed replay says why.
	f2 := newFakeBackend()
	f2.recorded = []*workload.Job{job}
	bad := &fakeWhatIf{fail: errors.New("the simulator refused the jobs")}
	if ans := waitWhatIf(t, handler(f2, bad.run), "failed"); ans.Error != "the simulator refused the jobs" {
		t.Errorf("failed: %+v", ans)
	}
}
