package workload

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
)

// tpchWant is one expected stage, read by hand off queries.yaml (parents)
// and cloudlab_profiles.json (tasks, runtime rounded to the millisecond).
type tpchWant struct {
	name     string
	tasks    int
	duration time.Duration
	parents  []string
}

func tpchCheckStages(t *testing.T, j *Job, want []tpchWant) {
	t.Helper()
	if len(j.Stages) != len(want) {
		t.Fatalf("%s: %d stages, want %d", j.Name, len(j.Stages), len(want))
	}
	for i, w := range want {
		s := j.Stages[i]
		if s.Name != w.name {
			t.Errorf("%s: stage #%d is %q, want %q", j.Name, i, s.Name, w.name)
		}
		if s.Tasks != w.tasks {
			t.Errorf("%s: stage %q: %d tasks, want %d", j.Name, w.name, s.Tasks, w.tasks)
		}
		if s.Duration != w.duration {
			t.Errorf("%s: stage %q: duration %v, want %v", j.Name, w.name, s.Duration, w.duration)
		}
		if !slices.Equal(s.Parents, w.parents) {
			t.Errorf("%s: stage %q: parents %q, want %q", j.Name, w.name, s.Parents, w.parents)
		}
	}
}

func TestTPCHQ1At100g(t *testing.T) {
	j, err := TPCH("q1", "100g")
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "tpch-q1-100g" || j.Queue != "default" || j.Weight != 1 || j.Arrival != 0 {
		t.Errorf("job header = %q %q %v %v, want tpch-q1-100g default 1 0", j.Name, j.Queue, j.Weight, j.Arrival)
	}
	// tpch_q1_100g_maxCores_50: 593 tasks × 8924.664… ms, 1 × 702.0, 1 × 685.0.
	tpchCheckStages(t, j, []tpchWant{
		{"0", 593, 8925 * time.Millisecond, nil},
		{"1", 1, 702 * time.Millisecond, []string{"0"}},
		{"2", 1, 685 * time.Millisecond, []string{"1"}},
	})
}

func TestTPCHProfileQ1At100gOn200Cores(t *testing.T) {
	j, err := TPCHProfile("q1", "100g", 200)
	if err != nil {
		t.Fatal(err)
	}
	// tpch_q1_100g_maxCores_200: 593 × 22991.693… ms, 1 × 1014.0, 1 × 951.0.
	tpchCheckStages(t, j, []tpchWant{
		{"0", 593, 22992 * time.Millisecond, nil},
		{"1", 1, 1014 * time.Millisecond, []string{"0"}},
		{"2", 1, 951 * time.Millisecond, []string{"1"}},
	})
}

func TestTPCHQ5At250g(t *testing.T) {
	j, err := TPCH("q5", "250g")
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	// Edges from the Q5 graph in queries.yaml (children inverted), counts
	// and runtimes from tpch_q5_250g_maxCores_50.
	tpchCheckStages(t, j, []tpchWant{
		{"0", 334, 7921 * ms, nil},  // 7920.970…
		{"1", 1499, 6460 * ms, nil}, // 6460.219…
		{"2", 50, 5612 * ms, []string{"0", "1"}},
		{"3", 200, 5205 * ms, nil}, // 5204.59
		{"4", 58, 1591 * ms, []string{"2", "3"}},
		{"5", 200, 1175 * ms, nil}, // 1174.66
		{"6", 50, 510 * ms, []string{"4", "5"}},
		{"7", 1, 410 * ms, nil},
		{"8", 1, 183 * ms, []string{"6", "7"}},
		{"9", 1, 177 * ms, nil},
		{"10", 1, 140 * ms, []string{"8", "9"}},
		{"11", 1, 137 * ms, []string{"10"}},
		{"12", 1, 137 * ms, []string{"11"}},
	})
}

func TestTPCHAllCombinationsBuild(t *testing.T) {
	nodes := []fairness.Vector{PaperMachine()}
	n := 0
	for _, q := range TPCHQueries() {
		for _, s := range TPCHScales() {
			for _, c := range TPCHCoreCounts() {
				j, err := TPCHProfile(q, s, c)
				if err != nil {
					t.Errorf("%s %s %d: %v", q, s, c, err)
					continue
				}
				n++
				if want := "tpch-" + q + "-" + s; j.Name != want {
					t.Errorf("%s %s %d: name %q, want %q", q, s, c, j.Name, want)
				}
				if _, err := j.Graph(); err != nil {
					t.Errorf("%s %s %d: %v", q, s, c, err)
				}
				if err := j.CheckFits(nodes); err != nil {
					t.Errorf("%s %s %d: %v", q, s, c, err)
				}
			}
		}
	}
	if n != 22*4*4 {
		t.Errorf("built %d jobs, want %d", n, 22*4*4)
	}
}

func TestTPCHDemands(t *testing.T) {
	// Q21's stage 11 has three parents (5, 6, 7); Q5's stage 2 has two;
	// Q5's stage 11 one; Q5's stage 0 none.
	q5, err := TPCH("q5", "100g")
	if err != nil {
		t.Fatal(err)
	}
	q21, err := TPCH("q21", "100g")
	if err != nil {
		t.Fatal(err)
	}
	stage := func(j *Job, name string) Stage {
		for _, s := range j.Stages {
			if s.Name == name {
				return s
			}
		}
		t.Fatalf("%s has no stage %q", j.Name, name)
		return Stage{}
	}
	abs := func(mem, cores, disk, net float64) fairness.Vector {
		v := fairness.New(mem, cores)
		v[fairness.Disk] = disk
		v[fairness.Network] = net
		return v
	}
	for _, tc := range []struct {
		what  string
		stage Stage
		model StageShape
		// by hand from the constants in demand.go
		abs fairness.Vector
	}{
		{"scan (Q5 stage 0)", stage(q5, "0"), StageShape{Scans: true}, abs(2048, 1, 40, 0)},
		{"one shuffle input (Q5 stage 11)", stage(q5, "11"), StageShape{Inputs: 1, Shuffles: true}, abs(4096, 1, 10, 40)},
		{"join of two (Q5 stage 2)", stage(q5, "2"), StageShape{Inputs: 2, Shuffles: true}, abs(6144, 1, 10, 40)},
		{"join of three (Q21 stage 11)", stage(q21, "11"), StageShape{Inputs: 3, Shuffles: true}, abs(6144, 1, 10, 40)},
	} {
		if got, want := tc.stage.Demand, TaskDemand(tc.model); got != want {
			t.Errorf("%s: demand %v, want TaskDemand(%+v) = %v", tc.what, got, tc.model, want)
		}
		if tc.stage.Demand != tc.abs {
			t.Errorf("%s: demand %v, want %v", tc.what, tc.stage.Demand, tc.abs)
		}
	}
}

func TestTPCHErrors(t *testing.T) {
	for _, tc := range []struct {
		query, scale string
		cores        int
		want         []string // substrings of the message
	}{
		{"q23", "100g", 50, []string{`"q23"`, "q1, q2,", "q22"}},
		{"q0", "100g", 50, []string{`"q0"`, "q22"}},
		{"q05", "100g", 50, []string{`"q05"`}},
		{"", "100g", 50, []string{`""`, "q1"}},
		{"q5", "1t", 50, []string{`"1t"`, "50g, 100g, 250g, 500g"}},
		{"q5", "100", 50, []string{`"100"`, "100g"}},
		{"q5", "100g", 64, []string{"64", "50, 75, 100, 200"}},
		{"q5", "100g", 0, []string{"maxCores 0", "50, 75, 100, 200"}},
	} {
		name := fmt.Sprintf("%s/%s/%d", tc.query, tc.scale, tc.cores)
		j, err := TPCHProfile(tc.query, tc.scale, tc.cores)
		if err == nil {
			t.Errorf("%s: got job %q, want an error", name, j.Name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", name, err, w)
			}
		}
	}
}

func TestTPCHQuerySpelling(t *testing.T) {
	want, err := TPCH("q5", "100g")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range [][2]string{{"Q5", "100g"}, {"5", "100g"}, {"q5", "100G"}, {"Q5", "100G"}} {
		got, err := TPCH(tc[0], tc[1])
		if err != nil {
			t.Errorf("TPCH(%q, %q): %v", tc[0], tc[1], err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("TPCH(%q, %q) = %q, differs from TPCH(q5, 100g)", tc[0], tc[1], got.Name)
		}
	}
}

func TestTPCHReturnsFreshCopies(t *testing.T) {
	a, err := TPCH("q2", "50g")
	if err != nil {
		t.Fatal(err)
	}
	want := a.Clone()
	a.Name = "changed"
	a.Stages[0].Tasks = -1
	a.Stages[2].Parents[0] = "changed"
	a.Stages = a.Stages[:1]
	b, err := TPCH("q2", "50g")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("changing a returned job changed the catalogue: got %+v", b)
	}

	scales, queries, cores := TPCHScales(), TPCHQueries(), TPCHCoreCounts()
	scales[0], queries[0], cores[0] = "x", "x", -1
	if TPCHScales()[0] != "50g" || TPCHQueries()[0] != "q1" || TPCHCoreCounts()[0] != 50 {
		t.Error("changing a returned list changed the next one")
	}
}

func TestTPCHLists(t *testing.T) {
	if got, want := TPCHScales(), []string{"50g", "100g", "250g", "500g"}; !slices.Equal(got, want) {
		t.Errorf("TPCHScales() = %q, want %q", got, want)
	}
	if got, want := TPCHCoreCounts(), []int{50, 75, 100, 200}; !slices.Equal(got, want) {
		t.Errorf("TPCHCoreCounts() = %v, want %v", got, want)
	}
	qs := TPCHQueries()
	if len(qs) != 22 || qs[0] != "q1" || qs[4] != "q5" || qs[21] != "q22" {
		t.Errorf("TPCHQueries() = %q", qs)
	}
}

func TestTPCHLoadErrorReachesEveryCall(t *testing.T) {
	saved := tpchLoad
	defer func() { tpchLoad = saved }()
	broken := errors.New("tpch: broken data")
	tpchLoad = func() (map[tpchKey]*Job, error) { return nil, broken }
	for range 2 {
		// Even a bad argument must report the data error: it is the
		// reason no call can succeed.
		if _, err := TPCH("q1", "100g"); !errors.Is(err, broken) {
			t.Errorf("TPCH with broken data: err = %v, want %v", err, broken)
		}
		if _, err := TPCHProfile("q99", "100g", 50); !errors.Is(err, broken) {
			t.Errorf("TPCHProfile with broken data: err = %v, want %v", err, broken)
		}
	}
}

// tpchRealData parses the embedded files into their two halves, for tests
// that break one piece.
func tpchRealData(t *testing.T) (map[string][]tpchNode, map[tpchKey][]tpchStageProfile) {
	t.Helper()
	g, err := tpchParseGraphs(tpchQueriesYAML)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tpchParseProfiles(tpchProfilesJSON)
	if err != nil {
		t.Fatal(err)
	}
	return g, p
}

func TestTPCHBuildCrossChecksStageIDs(t *testing.T) {
	graphs, profiles := tpchRealData(t)
	key := tpchKey{query: "q1", scale: "100g", cores: 75}
	// Renumber Q1's stage 2 to 7: graph stage 2 loses its profile, and
	// the profile gains a stage the graph lacks.
	prof := slices.Clone(profiles[key])
	for i := range prof {
		if prof[i].id == 2 {
			prof[i].id = 7
		}
	}
	profiles[key] = prof
	_, err := tpchBuild(graphs, profiles)
	if err == nil {
		t.Fatal("a profile with stage ids the graph lacks built")
	}
	for _, w := range []string{"q1 at 100g, maxCores 75", "without a profile [2]", "not in the graph [7]"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestTPCHBuildNeedsEveryProfileAndGraph(t *testing.T) {
	graphs, profiles := tpchRealData(t)
	delete(profiles, tpchKey{query: "q7", scale: "500g", cores: 100})
	delete(graphs, "q13")
	_, err := tpchBuild(graphs, profiles)
	if err == nil {
		t.Fatal("an incomplete catalogue built")
	}
	for _, w := range []string{"no graph for Q13", "no profile for q7 at 500g, maxCores 100"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestTPCHParseGraphsRejects(t *testing.T) {
	for _, tc := range []struct {
		what, yaml, want string
	}{
		{"empty", "", "empty"},
		{"misspelt key", "graphs:\n  - name: Q1\n    graph:\n      - name: 0\n        childern: [1]\n      - name: 1\n", "childern"},
		{"bad query name", "graphs:\n  - name: Q23\n    graph:\n      - name: 0\n", `"Q23"`},
		{"lower-case query name", "graphs:\n  - name: q1\n    graph:\n      - name: 0\n", `"q1"`},
		{"query twice", "graphs:\n  - name: Q1\n    graph:\n      - name: 0\n  - name: Q1\n    graph:\n      - name: 0\n", "Q1 is defined twice"},
		{"no stages", "graphs:\n  - name: Q1\n    graph: []\n", "no stages"},
		{"stage without name", "graphs:\n  - name: Q1\n    graph:\n      - children: []\n", "no name"},
		{"negative stage", "graphs:\n  - name: Q1\n    graph:\n      - name: -1\n", "negative"},
		{"stage twice", "graphs:\n  - name: Q1\n    graph:\n      - name: 0\n      - name: 0\n", "stage 0 is defined twice"},
		{"unknown child", "graphs:\n  - name: Q1\n    graph:\n      - name: 0\n        children: [4]\n", "unknown child 4"},
		{"own child", "graphs:\n  - name: Q1\n    graph:\n      - name: 0\n        children: [0]\n", "its own child"},
		{"child twice", "graphs:\n  - name: Q1\n    graph:\n      - name: 0\n        children: [1, 1]\n      - name: 1\n", "child 1 twice"},
	} {
		_, err := tpchParseGraphs([]byte(tc.yaml))
		if err == nil {
			t.Errorf("%s: parsed", tc.what)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not mention %q", tc.what, err, tc.want)
		}
	}
}

func TestTPCHParseGraphsDerivesParents(t *testing.T) {
	// Listed out of order, children before parents: parents must still be
	// collected and the nodes sorted by stage number.
	g, err := tpchParseGraphs([]byte("graphs:\n  - name: Q3\n    graph:\n      - name: 2\n      - name: 1\n        children: [2]\n      - name: 0\n        children: [2, 1]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []tpchNode{{id: 0}, {id: 1, parents: []int{0}}, {id: 2, parents: []int{0, 1}}}
	if !reflect.DeepEqual(g["q3"], want) {
		t.Errorf("nodes = %+v, want %+v", g["q3"], want)
	}
}

func TestTPCHParseProfilesRejects(t *testing.T) {
	const ok = `[{"stage_id": 0, "num_tasks": 3, "average_runtime_ms": 10.5}]`
	for _, tc := range []struct {
		what, json, want string
	}{
		{"not an object", `[]`, "JSON object"},
		{"empty input", ``, "JSON object"},
		{"bad key form", `{"tpch_q1_100g": ` + ok + `}`, "tpch_q<N>_<scale>_maxCores_<C>"},
		{"unknown query", `{"tpch_q23_100g_maxCores_50": ` + ok + `}`, `"q23"`},
		{"unknown scale", `{"tpch_q1_1t_maxCores_50": ` + ok + `}`, `"1t"`},
		{"unknown cores", `{"tpch_q1_100g_maxCores_64": ` + ok + `}`, `"64"`},
		{"duplicate profile", `{"tpch_q1_100g_maxCores_50": ` + ok + `, "tpch_q1_100g_maxCores_50": ` + ok + `}`, "appears twice"},
		{"no stages", `{"tpch_q1_100g_maxCores_50": []}`, "no stages"},
		{"no stage_id", `{"tpch_q1_100g_maxCores_50": [{"num_tasks": 3, "average_runtime_ms": 1}]}`, "no stage_id"},
		{"no num_tasks", `{"tpch_q1_100g_maxCores_50": [{"stage_id": 0, "average_runtime_ms": 1}]}`, "no num_tasks"},
		{"no runtime", `{"tpch_q1_100g_maxCores_50": [{"stage_id": 0, "num_tasks": 3}]}`, "no average_runtime_ms"},
		{"zero tasks", `{"tpch_q1_100g_maxCores_50": [{"stage_id": 0, "num_tasks": 0, "average_runtime_ms": 1}]}`, "num_tasks 0"},
		{"negative runtime", `{"tpch_q1_100g_maxCores_50": [{"stage_id": 0, "num_tasks": 1, "average_runtime_ms": -1}]}`, "average_runtime_ms -1"},
		{"overflowing runtime", `{"tpch_q1_100g_maxCores_50": [{"stage_id": 0, "num_tasks": 1, "average_runtime_ms": 1e300}]}`, "average_runtime_ms 1e+300"},
		{"stage twice", `{"tpch_q1_100g_maxCores_50": [{"stage_id": 0, "num_tasks": 1, "average_runtime_ms": 1}, {"stage_id": 0, "num_tasks": 1, "average_runtime_ms": 1}]}`, "stage 0 appears twice"},
		{"truncated", `{"tpch_q1_100g_maxCores_50": ` + ok, "EOF"},
		{"trailing data", `{"tpch_q1_100g_maxCores_50": ` + ok + `} {}`, "trailing"},
	} {
		_, err := tpchParseProfiles([]byte(tc.json))
		if err == nil {
			t.Errorf("%s: parsed", tc.what)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not mention %q", tc.what, err, tc.want)
		}
	}
}

func TestTPCHParseProfilesRounds(t *testing.T) {
	p, err := tpchParseProfiles([]byte(`{"tpch_q1_100g_maxCores_50": [
		{"stage_id": 0, "num_tasks": 3, "average_runtime_ms": 10.5},
		{"stage_id": 1, "num_tasks": 1, "average_runtime_ms": 10.49},
		{"stage_id": 2, "num_tasks": 1, "average_runtime_ms": 0.2},
		{"stage_id": 3, "num_tasks": 1, "average_runtime_ms": 0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	want := []tpchStageProfile{{0, 3, 11 * ms}, {1, 1, 10 * ms}, {2, 1, ms}, {3, 1, ms}}
	if got := p[tpchKey{"q1", "100g", 50}]; !reflect.DeepEqual(got, want) {
		t.Errorf("stages = %+v, want %+v", got, want)
	}
}

// TestTPCHStats measures the catalogue's shapes. Stage counts per query, by
// hand from queries.yaml, Q1..Q22:
//
//	3 17 5 5 13 2 12 17 13 8 7 5 6 3 6 8 4 6 3 9 14 5
//
// sorted: 2 3 3 3 4 5 5 5 5 6 [6] 6 7 8 8 9 12 13 13 14 [17] 17. By nearest
// rank over 22 queries the median is the 11th value, 6, and the p95 the 21st,
// 17. The Carbyne paper's Table 1 reports 8 and 12 for its TPC-H DAGs: this
// catalogue has a lower median and a longer tail.
//
// Barriers (stages with ≥ 2 parents), Q1..Q22:
//
//	0 9 2 1 5 0 5 7 5 3 3 1 1 1 2 2 1 2 1 4 4 1
//
// sorted: 0 0 1 1 1 1 1 1 1 2 [2] 2 2 3 3 4 4 5 5 5 [7] 9: median 2, p95 7.
//
// Critical path (stages on the longest chain), Q1..Q22:
//
//	3 6 3 4 8 2 6 7 7 5 4 4 5 2 4 6 2 3 2 4 6 3
//
// sorted: 2 2 2 2 3 3 3 3 4 4 [4] 4 4 5 5 6 6 6 6 7 [7] 8: median 4, p95 7.
//
// Tasks and critical time depend on the profile; their expectations were
// computed from the raw JSON with a separate script (nearest rank, runtimes
// rounded half up to the millisecond), not with this package.
func TestTPCHStats(t *testing.T) {
	jobsAt := func(scale string, cores int) []*Job {
		t.Helper()
		var jobs []*Job
		for _, q := range TPCHQueries() {
			j, err := TPCHProfile(q, scale, cores)
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, j)
		}
		return jobs
	}
	got, err := Summarize("tpch", jobsAt("100g", 50))
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{
		Name: "tpch", Jobs: 22,
		StagesMedian: 6, StagesP95: 17,
		BarriersMedian: 2, BarriersP95: 7,
		CriticalPathMedian: 4, CriticalPathP95: 7,
		TasksMedian: 788, TasksP95: 1626,
		CriticalTimeMedian: 9711 * time.Millisecond, CriticalTimeP95: 15673 * time.Millisecond,
	}
	if got != want {
		t.Errorf("Summarize(tpch at 100g) =\n%+v\nwant\n%+v", got, want)
	}
	t.Logf("Carbyne Table 1, TPC-H: stages median 8, p95 12; measured here: median %d, p95 %d", got.StagesMedian, got.StagesP95)

	for _, cores := range []int{50, 200} {
		var sums []Summary
		for _, s := range TPCHScales() {
			sum, err := Summarize(fmt.Sprintf("tpch-%s-c%d", s, cores), jobsAt(s, cores))
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, sum)
		}
		var b strings.Builder
		if err := WriteSummaries(&b, sums); err != nil {
			t.Fatal(err)
		}
		t.Logf("maxCores %d:\n%s", cores, b.String())
	}
}
