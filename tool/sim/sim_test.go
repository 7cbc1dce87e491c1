package sim

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

var update = flag.Bool("update", false, "rewrite the golden decision logs")

const sec = time.Second

var oneCore = fairness.New(1024, 1)

func stage(name string, tasks int, d time.Duration, parents ...string) workload.Stage {
	return workload.Stage{Name: name, Tasks: tasks, Demand: oneCore, Duration: d, Parents: parents}
}

// twoJobs is the Carbyne Figure 2 style example of altruism's own tests
// (altruism.TestTwoJobExample), here run through the whole pipeline: RM
// core, AM cores, one node of 10 cores, virtual clock.
func twoJobs() []*workload.Job {
	return []*workload.Job{
		{Name: "job1", Stages: []workload.Stage{stage("S0", 3, 3*sec), stage("S1", 2, 4*sec), stage("S2", 1, sec, "S0", "S1")}},
		{Name: "job2", Stages: []workload.Stage{stage("S0", 8, sec)}},
	}
}

func tenCores() Config {
	cfg := DefaultConfig()
	cfg.Machines, cfg.Machine = 1, fairness.New(64*1024, 10)
	return cfg
}

func TestTwoJobExample(t *testing.T) {
	// Hand-computed in altruism.TestTwoJobExample: DRF with greedy jobs
	// finishes job 1 at 5 s and job 2 at 2 s (average 3.5 s); Carbyne
	// lets job 1 yield S0 until 1 s, so job 2 finishes at 1 s (average 3).
	tests := []struct {
		policy string
		want   []time.Duration
	}{
		{"drf", []time.Duration{5 * sec, 2 * sec}},
		{"carbyne", []time.Duration{5 * sec, 1 * sec}},
	}
	for _, tc := range tests {
		cfg := tenCores()
		cfg.Policy = tc.policy
		r, err := Run(cfg, twoJobs())
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range r.Jobs {
			if j.JCT() != tc.want[i] {
				t.Errorf("%s: %s JCT = %v, want %v", tc.policy, j.Name, j.JCT(), tc.want[i])
			}
		}
	}
}

// TestAMContainers: with AM containers modelled, a job's DAG starts
// AMStartup after its AM container is granted, and the AM holds its
// container until the job ends. Hand-computed on one node of 10 cores:
//   - no AM: job2 (8 one-second tasks) ends at 1 s and job1 at 5 s, as in
//     TestTwoJobExample under drf.
//   - AM of 1 core, startup 0.5 s: both AMs get a core at 0 and decide
//     at 0.5 s with 8 cores left; DRF gives each 5 cores, its AM's
//     included. job2's 8 tasks run 4 + 4: it ends at 2.5 s. job1 runs
//     S0's 3 tasks (to 3.5 s) and one of S1's (to 4.5 s); when job2 ends
//     at 2.5 s, S1's second task starts, to 6.5 s; S2 then runs to 7.5 s.
func TestAMContainers(t *testing.T) {
	tests := []struct {
		name    string
		am      fairness.Vector
		startup time.Duration
		want    []time.Duration
	}{
		{"no AM", fairness.Vector{}, 0, []time.Duration{5 * sec, 2 * sec}},
		{"AM of one core", fairness.New(256, 1), 500 * time.Millisecond, []time.Duration{7500 * time.Millisecond, 2500 * time.Millisecond}},
	}
	for _, tc := range tests {
		cfg := tenCores()
		cfg.Policy, cfg.AM, cfg.AMStartup = "drf", tc.am, tc.startup
		r, err := Run(cfg, twoJobs())
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range r.Jobs {
			if j.JCT() != tc.want[i] {
				t.Errorf("%s: %s JCT = %v, want %v", tc.name, j.Name, j.JCT(), tc.want[i])
			}
		}
	}
}

// mix is a small seeded workload: 6 TPC-H 50g jobs arriving at load 1.5 on
// 3 machines.
func mix(t *testing.T, seed uint64) (Config, []*workload.Job) {
	t.Helper()
	pool, err := workload.Catalogue("tpch:50g")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	jobs, err := workload.Sample(pool, 6, rng)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Machines, cfg.Seed = 3, seed
	a, err := PoissonForLoad(jobs, cfg.Machine.Scale(3), 1.5)
	if err != nil {
		t.Fatal(err)
	}
	a.Assign(jobs, rng)
	return cfg, jobs
}

func runLogged(t *testing.T, cfg Config, jobs []*workload.Job) (*Result, string) {
	t.Helper()
	var log bytes.Buffer
	cfg.Log = &log
	r, err := Run(cfg, jobs)
	if err != nil {
		t.Fatal(err)
	}
	return r, log.String()
}

// TestGolden: the same workload, seed and policy give byte-identical
// decision logs, equal to the ones checked in. Run with -update after a
// deliberate change of policy, and review the diff.
func TestGolden(t *testing.T) {
	for _, policy := range Policies {
		t.Run(policy, func(t *testing.T) {
			cfg, jobs := mix(t, 7)
			cfg.Policy, cfg.PAltruism = policy, 0.75
			_, first := runLogged(t, cfg, jobs)
			_, second := runLogged(t, cfg, jobs)
			if first != second {
				t.Fatal("two runs of the same workload and seed logged different decisions")
			}
			path := filepath.Join("testdata", "golden", policy+".log")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(first), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./sim -run Golden -update to create it)", err)
			}
			if first != string(want) {
				t.Errorf("decision log differs from %s; first differing line: %s", path, firstDiff(string(want), first))
			}
		})
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return "want " + al[i] + ", got " + bl[i]
		}
	}
	return "one log is a prefix of the other"
}

func TestSeedMatters(t *testing.T) {
	cfg, jobs := mix(t, 7)
	cfg.PAltruism = 0.5
	_, a := runLogged(t, cfg, jobs)
	cfg.Seed = 8
	_, b := runLogged(t, cfg, jobs)
	if a == b {
		t.Error("P(Altruism) = 0.5 with two seeds logged the same decisions")
	}
}

// TestEveryTaskRunsOnce checks each policy's run against the workload:
// every job finishes, every task runs exactly once (once more for each
// time the core took its container back: Carbyne's recall), no job
// finishes before its critical path allows, and the window metrics are
// sane.
func TestEveryTaskRunsOnce(t *testing.T) {
	for _, policy := range Policies {
		t.Run(policy, func(t *testing.T) {
			cfg, jobs := mix(t, 3)
			cfg.Policy = policy
			r, log := runLogged(t, cfg, jobs)
			total := 0
			for i, j := range r.Jobs {
				total += j.Tasks
				if j.Failed != "" || j.Finish <= j.Arrival {
					t.Fatalf("%s: %+v", j.Name, j)
				}
				// r.Jobs is in arrival order; find the workload job.
				for _, w := range jobs {
					if w.Name == j.Name {
						sh, _ := workload.ShapeOf(w)
						if j.JCT() < sh.CriticalTime {
							t.Errorf("%s finished in %v, faster than its critical path %v", j.Name, j.JCT(), sh.CriticalTime)
						}
					}
				}
				_ = i
			}
			if r.Decisions != total+r.Preemptions || strings.Count(log, "\n") != total+r.Preemptions {
				t.Errorf("%d decisions and %d log lines for %d tasks and %d preemptions", r.Decisions, strings.Count(log, "\n"), total, r.Preemptions)
			}
			seen := map[string]bool{}
			again := 0
			for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
				f := strings.Fields(line)
				key := f[1] + " " + f[2] + " " + f[3]
				if seen[key] {
					again++
				}
				seen[key] = true
			}
			if again != r.Preemptions || len(seen) != total {
				t.Errorf("%d distinct tasks started, %d started again; want %d and %d (the preemptions)", len(seen), again, total, r.Preemptions)
			}
			for _, w := range r.Windows {
				for k, u := range w.Utilisation {
					if u < 0 || u > 1+1e-9 {
						t.Errorf("window %v: utilisation of %v is %v", w.Start, fairness.Kind(k), u)
					}
				}
				if w.Jobs > 0 && (w.Jain <= 0 || w.Jain > 1+1e-9) {
					t.Errorf("window %v: Jain's index %v", w.Start, w.Jain)
				}
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	ok := twoJobs()
	big := []*workload.Job{{Name: "big", Stages: []workload.Stage{
		{Name: "s", Tasks: 1, Demand: fairness.New(1024, 64), Duration: sec}}}}
	tests := []struct {
		name string
		mod  func(*Config)
		jobs []*workload.Job
		want string
	}{
		{"no machines", func(c *Config) { c.Machines = 0 }, ok, "machines 0: the cluster needs at least one"},
		{"bad policy", func(c *Config) { c.Policy = "fifo" }, ok, `unknown policy "fifo"`},
		{"bad P", func(c *Config) { c.PAltruism = 2 }, ok, "p-altruism: 2 is not between 0 and 1"},
		{"bad policy", func(c *Config) { c.Policy = "fifo" }, ok, `unknown policy "fifo" (want drf, tetris, sjf, carbyne)`},
		{"negative leftover cap", func(c *Config) { c.LeftoverCap = -1 }, ok, "leftover-cap: -1 must be a finite multiple"},
		{"negative recall", func(c *Config) { c.Recall = -0.5 }, ok, "recall: -0.5 must be a finite multiple of a job's critical path"},
		{"NaN recall", func(c *Config) { c.Recall = math.NaN() }, ok, "recall: NaN must be a finite multiple"},
		{"bad misestimate", func(c *Config) { c.Misestimate = 80 }, ok, "misestimation 80% must be between -50 and 50"},
		{"no jobs", func(*Config) {}, nil, "the workload has no jobs"},
		{"AM too big", func(c *Config) { c.AM = fairness.New(1024, 11) }, ok, "the AM container <memory-mb=1024, vcores=11> does not fit"},
		{"task too big", func(*Config) {}, big, `stage "s": a task needs vcores=64 but the largest node has 10`},
		{"duplicate names", func(*Config) {}, append(twoJobs(), twoJobs()[0]), `job name "job1" appears twice`},
		{"misestimate makes it too big", func(c *Config) { c.Misestimate = 50 }, []*workload.Job{{Name: "j", Stages: []workload.Stage{
			{Name: "s", Tasks: 1, Demand: fairness.New(1024, 8), Duration: sec}}}}, "with demands misestimated by +50%"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tenCores()
			tc.mod(&cfg)
			_, err := Run(cfg, tc.jobs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestRunSweeps(t *testing.T) {
	cfg := tenCores()
	cfg.Machines = 4
	steps := 0
	sweeps, err := RunSweeps(cfg, []string{"drf"}, twoJobs(), func(done, total int) {
		steps++
		if total != 30 || done != 2*steps {
			t.Errorf("progress %d of %d at step %d", done, total, steps)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]float64{
		"load":        {1, 1.5, 2, 4, 6},
		"misestimate": {-50, -25, 0, 25, 50},
		"p-altruism":  {0, 0.25, 0.5, 0.75, 1},
	}
	if len(sweeps) != 3 {
		t.Fatalf("%d sweeps", len(sweeps))
	}
	for _, s := range sweeps {
		var xs []float64
		for _, p := range s.Points {
			xs = append(xs, p.X)
			if len(p.Improvements) != 1 || p.Improvements[0].Against != "drf" || len(p.Summaries) != 2 {
				t.Errorf("%s %g: %+v", s.Knob, p.X, p)
			}
		}
		if fmt.Sprint(xs) != fmt.Sprint(want[s.Knob]) {
			t.Errorf("%s points %v, want %v", s.Knob, xs, want[s.Knob])
		}
		var buf bytes.Buffer
		if err := s.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), "avg JCT vs drf") {
			t.Errorf("%s table:\n%s", s.Knob, buf.String())
		}
	}
	// At P(Altruism) = 0 Carbyne is DRF on this example: the same JCTs.
	if f := sweeps[2].Points[0].Improvements[0].Average; f != 1 {
		t.Errorf("P=0 factor against drf = %v, want 1", f)
	}
}

func TestPoissonForLoad(t *testing.T) {
	// Work per job (task-seconds × dominant share of <64 GB, 10 cores>):
	// job 1 (3·3 + 2·4 + 1) s × 0.1 = 1.8, job 2 8 s × 0.1 = 0.8; mean 1.3.
	// Load 1 brings that much every 1.3 s; load 2 every 0.65 s.
	cluster := tenCores().Machine
	for _, tc := range []struct {
		load float64
		mean time.Duration
	}{{1, 1300 * time.Millisecond}, {2, 650 * time.Millisecond}} {
		a, err := PoissonForLoad(twoJobs(), cluster, tc.load)
		if err != nil || !a.Poisson || a.Mean != tc.mean {
			t.Errorf("load %g: %+v, %v; want Poisson with mean %v", tc.load, a, err, tc.mean)
		}
	}
	if _, err := PoissonForLoad(twoJobs(), cluster, 0); err == nil {
		t.Error("load 0 accepted")
	}
}

func TestRunPoliciesAndReports(t *testing.T) {
	for _, bad := range [][]string{nil, {"fifo"}, {"drf", "drf"}} {
		if _, err := RunPolicies(tenCores(), bad, twoJobs(), RunOptions{}); err == nil {
			t.Errorf("policies %v accepted", bad)
		}
	}
	logs := map[string]*bytes.Buffer{"drf": {}, "carbyne": {}}
	o, err := RunPolicies(tenCores(), []string{"drf", "carbyne"}, twoJobs(), RunOptions{
		Log: func(p string) io.Writer { return logs[p] },
	})
	if err != nil {
		t.Fatal(err)
	}
	// Carbyne's factor against DRF on the two-job example: average JCT
	// 3.5 s / 3 s.
	if len(o.Improvements) != 1 || math.Abs(o.Improvements[0].Average-3.5/3) > 1e-9 {
		t.Errorf("improvements %+v, want one against drf of 1.1667", o.Improvements)
	}
	for p, l := range logs {
		if strings.Count(l.String(), "\n") != 14 { // 6 + 8 tasks
			t.Errorf("%s logged %d decisions, want 14", p, strings.Count(l.String(), "\n"))
		}
	}
	// By size: job 2 (8 task-seconds) then job 1 (18): DRF 2 s and 5 s,
	// Carbyne 1 s and 5 s.
	if len(o.Sizes) != 2 || o.Sizes[0].MaxWork != 8 || o.Sizes[1].MinWork != 18 ||
		o.Sizes[0].AvgJCT[0].AvgJCT != 2 || o.Sizes[0].AvgJCT[1].AvgJCT != 1 ||
		o.Sizes[1].AvgJCT[0].AvgJCT != 5 || o.Sizes[1].AvgJCT[1].AvgJCT != 5 {
		t.Errorf("size classes %+v", o.Sizes)
	}
	var buf bytes.Buffer
	if err := o.WriteTables(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"factor of improvement", "drf", "carbyne", "1.17x", "By job size"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, buf.String())
		}
	}
	r := NewReport("two jobs", tenCores(), o, nil)
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil || back["workload"] != "two jobs" {
		t.Errorf("report JSON: %v, %s", err, data)
	}
	if len(r.Policies) != 2 || r.Policies[1].AvgJCT != 3 || len(r.Policies[1].Jobs) != 2 || len(r.SizeClasses) != 2 {
		t.Errorf("report %+v", r.Policies)
	}
}

// TestGrantTakenBackInTheSamePass: a pass may grant a leftover-paid
// container that the AM cannot use (its asks were out of date) and, in
// the same pass, take it back for a job below its share (recall takes the
// youngest leftover-paid container first). The simulator then has nothing
// to release and no task to run again; it used to release it anyway and
// stop with "container N is not running". This is the TPC-DS batch
// frontier's P(Altruism) 0.25, leftover cap 4 point (loom sim --catalogue
// tpcds --arrivals batch --p-altruism 0.25 --leftover-cap 4), where it
// first happened.
func TestGrantTakenBackInTheSamePass(t *testing.T) {
	if testing.Short() {
		t.Skip("250 TPC-DS jobs")
	}
	pool, err := workload.Catalogue("tpcds")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := workload.Sample(pool, 250, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.PAltruism, cfg.LeftoverCap, cfg.Seed = 0.25, 4, 1
	res, err := Run(cfg, jobs)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, j := range res.Jobs {
		if j.Finish <= 0 {
			t.Errorf("%s did not finish", j.Name)
		}
	}
}
