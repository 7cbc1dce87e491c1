package tune

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/tool/sim"
	"github.com/loomrm/loom/workload"
)

// TestJudge: one setting against P = 0, job by job, worked by hand.
func TestJudge(t *testing.T) {
	ref := &sim.Result{Jobs: []sim.JobResult{
		{Name: "a", Finish: 10 * time.Second}, {Name: "b", Finish: 20 * time.Second},
		{Name: "c", Finish: 40 * time.Second}, {Name: "d", Finish: 10 * time.Second}}}
	got := &sim.Result{Jobs: []sim.JobResult{
		{Name: "a", Finish: 5 * time.Second},   // 0.5x
		{Name: "b", Finish: 26 * time.Second},  // 1.3x: slowed more than 20%
		{Name: "c", Finish: 20 * time.Second},  // 0.5x
		{Name: "d", Finish: 11 * time.Second}}} // 1.1x: slowed, within 20%
	cases := []struct {
		obj   Objective
		meets bool
	}{
		{Objective{MaxSlowed: 0.25, SlowdownOver: 0.2}, true},   // 1 of 4 = 25%
		{Objective{MaxSlowed: 0.2, SlowdownOver: 0.2}, false},   // 25% > 20%
		{Objective{MaxSlowed: 0.25, SlowdownOver: 0.05}, false}, // b and d: 50%
	}
	for _, tc := range cases {
		row := judge(Setting{1, 2}, got, ref, tc.obj)
		// avg JCT 80 s / 4 = 20 s at P = 0, 62 s / 4 = 15.5 s here.
		if row.AvgJCT != 15500*time.Millisecond || row.Worst != 1.3 || row.Meets != tc.meets {
			t.Errorf("%v: %+v; want avg 15.5 s, worst 1.3, meets %v", tc.obj, row, tc.meets)
		}
		if want := 20.0 / 15.5; row.Speedup < want-1e-9 || row.Speedup > want+1e-9 {
			t.Errorf("speedup %g, want %g", row.Speedup, want)
		}
	}
	if row := judge(Setting{1, 2}, got, ref, Objective{MaxSlowed: 0, SlowdownOver: 0.05}); row.Slowed != 0.5 {
		t.Errorf("slowed %g, want 0.5 (b and d beyond 5%%)", row.Slowed)
	}
}

func smallWorkload(t *testing.T) ([]*workload.Job, sim.Config) {
	t.Helper()
	pool, err := workload.Catalogue("tpch:100g")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	jobs, err := workload.Sample(pool, 10, rng)
	if err != nil {
		t.Fatal(err)
	}
	workload.Arrivals{Poisson: true, Mean: 30 * time.Second}.Assign(jobs, rng)
	cfg := sim.DefaultConfig()
	cfg.Machines = 5
	return jobs, cfg
}

// TestRun replays a small TPC-H mix: P = 0 is its own reference, the
// recommendation keeps the objective and is the fastest that does, and
// the answer is the same on one worker or two.
func TestRun(t *testing.T) {
	jobs, cfg := smallWorkload(t)
	obj := Objective{MaxSlowed: 0.1, SlowdownOver: 0.2}
	settings := Grid(DefaultPs, []float64{2})
	res, err := Run(cfg, jobs, settings, obj, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != len(settings) || res.Jobs != len(jobs) {
		t.Fatalf("%d rows for %d settings, %d jobs", len(res.Rows), len(settings), res.Jobs)
	}
	p0 := res.Rows[0]
	if p0.PAltruism != 0 || p0.Speedup != 1 || p0.Slowed != 0 || p0.Worst != 1 || !p0.Meets {
		t.Errorf("P = 0 against itself: %+v", p0)
	}
	if res.Recommended < 0 {
		t.Fatal("no setting recommended, yet P = 0 always meets the objective")
	}
	best := res.Rows[res.Recommended]
	for _, r := range res.Rows {
		if r.Meets && r.AvgJCT < best.AvgJCT {
			t.Errorf("recommended %v (%v), but %v meets the objective at %v", best.Setting, best.AvgJCT, r.Setting, r.AvgJCT)
		}
		if r.Meets != (r.Slowed <= obj.MaxSlowed) {
			t.Errorf("%v: meets %v with %g slowed", r.Setting, r.Meets, r.Slowed)
		}
	}
	for _, r := range res.Rows {
		t.Logf("%-14v avg %-8v p95 %-8v jain %.3f speedup %.2fx slowed %.0f%% worst %.2fx meets %v",
			r.Setting, r.AvgJCT.Round(time.Millisecond), r.P95JCT.Round(time.Millisecond), r.Jain, r.Speedup, 100*r.Slowed, r.Worst, r.Meets)
	}
	one, err := Run(cfg, jobs, settings, obj, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one.Rows, res.Rows) || one.Recommended != res.Recommended {
		t.Error("one worker and two give different answers")
	}
}

func TestRunRefuses(t *testing.T) {
	jobs, cfg := smallWorkload(t)
	for _, tc := range []struct {
		jobs     []*workload.Job
		settings []Setting
		obj      Objective
		want     string
	}{
		{nil, Grid(DefaultPs, []float64{2}), Objective{0.05, 0.2}, "no jobs"},
		{jobs, nil, Objective{0.05, 0.2}, "no settings"},
		{jobs, Grid([]float64{1.5}, []float64{2}), Objective{0.05, 0.2}, "p-altruism"},
		{jobs, Grid(DefaultPs, []float64{-1}), Objective{0.05, 0.2}, "leftover-cap"},
		{jobs, Grid(DefaultPs, []float64{2}), Objective{2, 0.2}, "not in [0, 1]"},
	} {
		if _, err := Run(cfg, tc.jobs, tc.settings, tc.obj, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: %v, want an error saying %q", tc.settings, tc.obj, err, tc.want)
		}
	}
}

func TestWritePlots(t *testing.T) {
	r := &Result{Jobs: 3, Objective: Objective{0.05, 0.2}, Recommended: 1, Rows: []Row{
		{Setting: Setting{0, 2}, AvgJCT: 10 * time.Second, Jain: 0.99},
		{Setting: Setting{1, 2}, AvgJCT: 7 * time.Second, Jain: 0.9, Slowed: 0.03}}}
	base := t.TempDir() + "/tune.svg"
	paths, err := WritePlots(base, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || !strings.HasSuffix(paths[0], "tune-jain.svg") || !strings.HasSuffix(paths[1], "tune-slowed.svg") {
		t.Fatalf("paths %v", paths)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "P=1 cap=2") {
			t.Errorf("%s: not an SVG with the settings' labels (%v)", p, err)
		}
	}
	if _, err := WritePlots(base, &Result{}); err == nil {
		t.Error("plotted nothing without an error")
	}
}

func TestLoadHistory(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, h am.History) {
		t.Helper()
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stage := []am.HistoryStage{{Name: "s", Tasks: 2, DurationMs: 1000, Demand: fairness.New(1024, 1)}}
	// Three finished jobs a minute apart, one still running, one broken.
	for i, app := range []string{"application_1_0001", "application_1_0002", "application_1_0003"} {
		write(app+".json", am.History{Job: "j", App: app, State: am.StateSucceeded, StartUnixMs: int64(60000 * (i + 1)), Stages: stage})
	}
	write("application_1_0004.json", am.History{Job: "j", App: "application_1_0004", State: am.StateRunning, StartUnixMs: 999999, Stages: stage})
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o644)

	jobs, skipped, err := LoadHistory(dir, HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 || jobs[0].Arrival != 0 || jobs[2].Arrival != 2*time.Minute || jobs[0].Name != "j (application_1_0001)" {
		t.Errorf("jobs %v", jobs)
	}
	if len(skipped) != 2 {
		t.Errorf("skipped %v, want the running job and the broken file", skipped)
	}
	if jobs, _, _ := LoadHistory(dir, HistoryOptions{Jobs: 2}); len(jobs) != 2 || jobs[1].Name != "j (application_1_0003)" || jobs[0].Arrival != 0 {
		t.Errorf("the 2 most recent: %v", jobs)
	}
	if jobs, _, _ := LoadHistory(dir, HistoryOptions{Since: 90 * time.Second}); len(jobs) != 2 {
		t.Errorf("within 90 s of the newest: %v", jobs)
	}
	if _, _, err := LoadHistory(t.TempDir(), HistoryOptions{}); err == nil || !strings.Contains(err.Error(), "no job histories") {
		t.Errorf("an empty dir: %v", err)
	}
}

// TestRunQueue: the what-if for one queue varies that queue's override
// alone and judges its jobs alone. With queue etl's override as the
// setting and the cluster at P(Altruism) 1, the rows hold etl's jobs;
// the P = 0 row judges against itself; a queue with no job is refused.
func TestRunQueue(t *testing.T) {
	jobs, cfg := smallWorkload(t)
	etl := 0
	for i, j := range jobs {
		if i%2 == 0 {
			j.Queue = "etl"
			etl++
		}
	}
	cfg.PAltruism = 1
	res, err := Run(cfg, jobs, Grid([]float64{0, 1}, []float64{2}), Objective{MaxSlowed: 1, SlowdownOver: 0.2}, Options{Queue: "etl"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows[0].Speedup != 1 || res.Rows[0].Slowed != 0 {
		t.Errorf("P = 0 against itself: %+v", res.Rows[0])
	}
	whole, err := Run(cfg, jobs, Grid([]float64{0, 1}, []float64{2}), Objective{MaxSlowed: 1, SlowdownOver: 0.2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows[1].AvgJCT == whole.Rows[1].AvgJCT {
		t.Errorf("the queue's rows average %v, the same as the whole cluster's: not its %d jobs alone", res.Rows[1].AvgJCT, etl)
	}
	if _, err := Run(cfg, jobs, Grid([]float64{0, 1}, []float64{2}), Objective{MaxSlowed: 1}, Options{Queue: "ghost"}); err == nil ||
		!strings.Contains(err.Error(), `no job of queue "ghost"`) {
		t.Errorf("a queue with no job: %v", err)
	}
}
