package workload

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
)

// tpcdsWant is one expected stage. ms is the task duration in milliseconds,
// checked to within 0.1 ms; 0 skips the check.
type tpcdsWant struct {
	name    string
	parents []string
	tasks   int
	ms      float64
	shape   StageShape
}

func tpcdsCheckStages(t *testing.T, j *Job, want []tpcdsWant) {
	t.Helper()
	var names []string
	for _, s := range j.Stages {
		names = append(names, s.Name)
	}
	var wantNames []string
	for _, w := range want {
		wantNames = append(wantNames, w.name)
	}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("%s: stages %q, want %q", j.Name, names, wantNames)
	}
	for i, w := range want {
		s := j.Stages[i]
		if !slices.Equal(s.Parents, w.parents) {
			t.Errorf("%s: stage %s: parents %q, want %q", j.Name, w.name, s.Parents, w.parents)
		}
		if w.tasks != 0 && s.Tasks != w.tasks {
			t.Errorf("%s: stage %s: %d tasks, want %d", j.Name, w.name, s.Tasks, w.tasks)
		}
		if w.ms != 0 {
			want := time.Duration(w.ms * float64(time.Millisecond))
			if d := s.Duration - want; d < -100*time.Microsecond || d > 100*time.Microsecond {
				t.Errorf("%s: stage %s: duration %v, want %v", j.Name, w.name, s.Duration, want)
			}
		}
		if w.tasks != 0 && s.Demand != TaskDemand(w.shape) {
			t.Errorf("%s: stage %s: demand %v, want TaskDemand(%+v) = %v", j.Name, w.name, s.Demand, w.shape, TaskDemand(w.shape))
		}
	}
}

// Hand cut of data/tpcds/q1.simplified.txt at SF 100:
//
//	s0   root: TakeOrderedAndProject ... BroadcastHashJoin x3, reads the
//	     shuffle Exchange [sr_customer_sk,sr_store_sk] #1 and the
//	     broadcasts #3, #6, #7.
//	x1   below Exchange #1: scans store_returns; its Scan holds
//	     SubqueryBroadcast #1 around BroadcastExchange #2 (a wrapper, so the
//	     edge comes from bx2) and it reads ReusedExchange #2 (bx2 again).
//	bx2  below BroadcastExchange #2: scans date_dim.
//	bx3  below BroadcastExchange #3: reads Exchange [ctr_store_sk] #4.
//	x4   below Exchange #4: reads Exchange [sr_customer_sk,sr_store_sk] #5.
//	x5   below Exchange #5: scans store_returns; ReusedSubquery #1 and
//	     ReusedExchange #2 both lead to bx2.
//	bx6  scans store.  bx7  scans customer.
//
// Tasks (128 MiB = 134,217,728 B splits; widths from TPCDSTableStats):
//
//	store_returns 28,795,080 × 168 B = 4,837,573,440 B -> ceil(36.04) = 37
//	date_dim 73,049 × 264 B = 19,284,936 B -> 1
//	store 402 × 516 B = 207,432 B -> 1;  customer 2,000,000 × 250 B = 500,000,000 B -> ceil(3.73) = 4
//	x4 reads keyed #5: min(200, 37) = 37;  bx3 reads keyed #4: min(200, 37) = 37
//	s0 reads keyed #1 (37) and broadcasts (no partitions): 37
//
// Durations (13,395,022 B/s a task; 462.5 ms without a scan; 53 ms floor):
//
//	x1, x5: 4,837,573,440 / 37 = 130,745,228 B -> 9760.7 ms
//	bx2: 19,284,936 B -> 1439.7 ms;  bx6: 207,432 B -> 15.5 ms -> 53 ms
//	bx7: 125,000,000 B -> 9331.8 ms
func TestTPCDSQ1HandCut(t *testing.T) {
	j, err := TPCDS("q1", 100)
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "tpcds-q1-sf100" || j.Queue != "default" || j.Weight != 1 || j.Arrival != 0 {
		t.Errorf("job header = %q %q %v %v, want tpcds-q1-sf100 default 1 0", j.Name, j.Queue, j.Weight, j.Arrival)
	}
	tpcdsCheckStages(t, j, []tpcdsWant{
		{"s0", []string{"x1", "bx3", "bx6", "bx7"}, 37, 462.5, StageShape{Inputs: 4, Shuffles: true}},
		{"x1", []string{"bx2"}, 37, 9760.7, StageShape{Scans: true, Inputs: 1}},
		{"bx2", nil, 1, 1439.7, StageShape{Scans: true}},
		{"bx3", []string{"x4"}, 37, 462.5, StageShape{Inputs: 1, Shuffles: true}},
		{"x4", []string{"x5"}, 37, 462.5, StageShape{Inputs: 1, Shuffles: true}},
		{"x5", []string{"bx2"}, 37, 9760.7, StageShape{Scans: true, Inputs: 1}},
		{"bx6", nil, 1, 53, StageShape{Scans: true}},
		{"bx7", nil, 4, 9331.8, StageShape{Scans: true}},
	})
}

// q2 reuses a shuffle: BroadcastExchange #5 (line 45) reads
// ReusedExchange #2 (line 51), the keyed Exchange [d_week_seq] #2 of line
// 12, whose stage scans web_sales and catalog_sales under a Union:
// ceil(14,688,252,348 / 2^27) + ceil(29,375,401,260 / 2^27) = 110 + 219 =
// 329 tasks, (14,688,252,348 + 29,375,401,260) / 329 = 133,932,077 B a task
// -> 9998.7 ms. Its shuffle has min(200, 329) = 200 partitions.
func TestTPCDSReusedExchange(t *testing.T) {
	j, err := TPCDS("q2", 100)
	if err != nil {
		t.Fatal(err)
	}
	tpcdsCheckStages(t, j, []tpcdsWant{
		{"s0", []string{"x1"}, 200, 462.5, StageShape{Inputs: 1, Shuffles: true}},
		{"x1", []string{"x2", "bx4", "bx5"}, 200, 462.5, StageShape{Inputs: 3, Shuffles: true}},
		{"x2", []string{"bx3"}, 329, 9998.7, StageShape{Scans: true, Inputs: 1}},
		{"bx3", nil, 1, 1439.7, StageShape{Scans: true}},
		{"bx4", nil, 1, 1439.7, StageShape{Scans: true}},
		{"bx5", []string{"x2", "bx6"}, 200, 462.5, StageShape{Inputs: 2, Shuffles: true}},
		{"bx6", nil, 1, 1439.7, StageShape{Scans: true}},
	})
}

// q9's root Project holds five scalar subqueries (Subquery #1..#5, each a
// final aggregate over a keyless Exchange #N of a store_sales scan) and ten
// ReusedSubquery lines to them in the same stage, which add no edge.
// store_sales: 42,623,559,552 B -> ceil(317.57) = 318 tasks of 134,036,351 B
// -> 10006.4 ms. The root scans reason (3,630 B): 1 task, 53 ms floor.
func TestTPCDSSubquery(t *testing.T) {
	j, err := TPCDS("q9", 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []tpcdsWant{{"s0", []string{"sq1", "sq2", "sq3", "sq4", "sq5"}, 1, 53, StageShape{Scans: true}}}
	for i := 1; i <= 5; i++ {
		n := strconv.Itoa(i)
		want = append(want,
			tpcdsWant{"sq" + n, []string{"x" + n}, 1, 462.5, StageShape{Inputs: 1, Shuffles: true}},
			tpcdsWant{"x" + n, nil, 318, 10006.4, StageShape{Scans: true}})
	}
	tpcdsCheckStages(t, j, want)
}

// q44: Subquery #1 (line 28) sits in the stage of keyless Exchange #2; the
// stage of Exchange #6 waits for it through ReusedSubquery #1 (line 69)
// and reads ReusedExchange #3 (line 72), the keyed shuffle of line 42. The
// root reads ReusedExchange #7 (line 81) besides BroadcastExchange #7.
// Tasks: x4, x3 scan store_sales (318); sq1, x2, x6 read keyed shuffles of
// 318 tasks (200); x1, x5 read keyless shuffles (1); the root joins keyed
// shuffles of 1-task stages (1); bx7 scans item (94,248,000 B: 1 task,
// 7036.1 ms).
func TestTPCDSReusedSubquery(t *testing.T) {
	j, err := TPCDS("q44", 100)
	if err != nil {
		t.Fatal(err)
	}
	shuffle1 := StageShape{Inputs: 1, Shuffles: true}
	scan := StageShape{Scans: true}
	tpcdsCheckStages(t, j, []tpcdsWant{
		{"s0", []string{"x1", "x5", "bx7"}, 1, 462.5, StageShape{Inputs: 3, Shuffles: true}},
		{"x1", []string{"x2"}, 1, 462.5, shuffle1},
		{"x2", []string{"sq1", "x3"}, 200, 462.5, shuffle1},
		{"sq1", []string{"x4"}, 200, 462.5, shuffle1},
		{"x4", nil, 318, 10006.4, scan},
		{"x3", nil, 318, 10006.4, scan},
		{"x5", []string{"x6"}, 1, 462.5, shuffle1},
		{"x6", []string{"sq1", "x3"}, 200, 462.5, shuffle1},
		{"bx7", nil, 1, 7036.1, scan},
	})
}

// q6 nests Subquery #2 inside the stage of BroadcastExchange #4, which a
// SubqueryBroadcast wraps, and refers to it by ReusedSubquery #2 three
// lines before its definition (in the same stage: one edge).
func TestTPCDSNestedSubquery(t *testing.T) {
	j, err := TPCDS("q6", 100)
	if err != nil {
		t.Fatal(err)
	}
	tpcdsCheckStages(t, j, []tpcdsWant{
		{"s0", []string{"x1"}, 0, 0, StageShape{}},
		{"x1", []string{"bx2", "bx3", "bx4", "bx6"}, 0, 0, StageShape{}},
		{"bx2", nil, 0, 0, StageShape{}},
		{"bx3", []string{"bx4"}, 0, 0, StageShape{}},
		{"bx4", []string{"sq2"}, 0, 0, StageShape{}},
		{"sq2", []string{"x5"}, 0, 0, StageShape{}},
		{"x5", nil, 0, 0, StageShape{}},
		{"bx6", []string{"bx7"}, 0, 0, StageShape{}},
		{"bx7", []string{"x8"}, 0, 0, StageShape{}},
		{"x8", nil, 0, 0, StageShape{}},
	})
}

// Small plans for the cases the real ones do not isolate. Scans use tiny
// tables so that every scan is one task.
func TestParseSparkPlanEdges(t *testing.T) {
	cases := []struct {
		name string
		plan string
		want []tpcdsWant
	}{{
		name: "reused exchange above its definition",
		plan: `Project
  BroadcastHashJoin [a,b]
    InputAdapter
      Exchange [k] #2
        Project
          ReusedExchange [d] #1
    InputAdapter
      BroadcastExchange #1
        Scan parquet spark_catalog.default.reason [r]
`,
		// x2 reads no table and only a broadcast: 1 task.
		want: []tpcdsWant{
			{"s0", []string{"x2", "bx1"}, 1, 462.5, StageShape{Inputs: 2, Shuffles: true}},
			{"x2", []string{"bx1"}, 1, 462.5, StageShape{Inputs: 1}},
			{"bx1", nil, 1, 53, StageShape{Scans: true}},
		},
	}, {
		name: "subquery wrapping an exchange is no stage",
		plan: `Project
  Subquery #1
    Exchange #3
      Scan parquet spark_catalog.default.reason [r]
  Scan parquet spark_catalog.default.ship_mode [s]
`,
		// The root waits for x3 but does not read it: no input.
		want: []tpcdsWant{
			{"s0", []string{"x3"}, 1, 53, StageShape{Scans: true}},
			{"x3", nil, 1, 53, StageShape{Scans: true}},
		},
	}, {
		name: "reused subquery of a wrapper",
		plan: `Project
  Filter
    SubqueryBroadcast [d] #1
      BroadcastExchange #2
        Scan parquet spark_catalog.default.reason [r]
  Exchange [k] #3
    Filter
      ReusedSubquery [d] #1
      Scan parquet spark_catalog.default.ship_mode [s]
`,
		want: []tpcdsWant{
			{"s0", []string{"bx2", "x3"}, 1, 462.5, StageShape{Inputs: 1, Shuffles: true}},
			{"bx2", nil, 1, 53, StageShape{Scans: true}},
			{"x3", []string{"bx2"}, 1, 53, StageShape{Scans: true}},
		},
	}, {
		name: "union of shuffles concatenates, join takes the widest",
		// x1 and x2 scan catalog_returns: 14,404,374 × 152 B =
		// 2,189,464,848 B -> 17 tasks. x3 scans web_returns:
		// 1,439,534,000 B -> 11 tasks. Union: 17 + 17 = 34; the join
		// with x3 (11): 34. Keyless x4: 1.
		plan: `SortMergeJoin
  Union
    Exchange [a] #1
      Scan parquet spark_catalog.default.catalog_returns [a]
    Exchange [a] #2
      Scan parquet spark_catalog.default.catalog_returns [a]
  Exchange [a] #3
    Scan parquet spark_catalog.default.web_returns [a]
  Exchange #4
    Scan parquet spark_catalog.default.web_returns [a]
`,
		want: []tpcdsWant{
			{"s0", []string{"x1", "x2", "x3", "x4"}, 34, 462.5, StageShape{Inputs: 4, Shuffles: true}},
			{"x1", nil, 17, 0, StageShape{Scans: true}},
			{"x2", nil, 17, 0, StageShape{Scans: true}},
			{"x3", nil, 11, 0, StageShape{Scans: true}},
			{"x4", nil, 11, 0, StageShape{Scans: true}},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j, err := ParseSparkPlan("edge", c.plan, 100)
			if err != nil {
				t.Fatal(err)
			}
			tpcdsCheckStages(t, j, c.want)
		})
	}
}

func TestParseSparkPlanErrors(t *testing.T) {
	cases := []struct {
		name string
		plan string
		sf   int
		want []string // substrings the error must hold
	}{
		{"empty", "", 100, []string{"the plan is empty"}},
		{"blank", "  \n\n\t\n", 100, []string{"the plan is empty"}},
		{"unknown reused exchange", "Project\n  ReusedExchange [a] #7\n", 100,
			[]string{"line 2", "ReusedExchange #7", "no exchange #7"}},
		{"unknown reused subquery", "Project\n  Filter\n    ReusedSubquery [a] #4\n", 100,
			[]string{"line 3", "no subquery #4"}},
		{"two levels deeper", "Project\n  Filter\n      Scan parquet db.reason [r]\n", 100,
			[]string{"line 3", "2 levels deeper than line 2"}},
		{"odd indentation", "Project\n   Filter\n", 100, []string{"line 2", "indented by 3 spaces"}},
		{"tab", "Project\n\tFilter\n", 100, []string{"line 2", "tab"}},
		{"indented root", "  Project\n", 100, []string{"line 1", "root must not be indented"}},
		{"two roots", "Project\n  Filter\nProject\n", 100, []string{"line 3", "second root"}},
		{"root is exchange", "Exchange [a] #1\n  Scan parquet db.reason [r]\n", 100, []string{"line 1", "root is Exchange"}},
		{"no id", "Project\n  Exchange [a]\n    Scan parquet db.reason [r]\n", 100, []string{"line 2", "no #id"}},
		{"bad id", "Project\n  Exchange [a] #x1\n    Scan parquet db.reason [r]\n", 100, []string{"line 2", `malformed id "#x1"`}},
		{"signed id", "Project\n  Exchange [a] #+1\n    Scan parquet db.reason [r]\n", 100, []string{"line 2", "malformed id"}},
		{"huge id", "Project\n  Exchange [a] #99999999999999999999999\n    Scan parquet db.reason [r]\n", 100, []string{"line 2", "malformed id"}},
		{"exchange without input", "Project\n  Exchange [a] #1\n  Filter\n", 100, []string{"line 2", "Exchange #1 has no input"}},
		{"trailing exchange without input", "Project\n  BroadcastExchange #1\n", 100, []string{"line 2", "BroadcastExchange #1 has no input"}},
		{"reused with children", "Project\n  ReusedExchange [a] #1\n    Filter\n", 100, []string{"line 3", "cannot have children"}},
		{"duplicate exchange", "Project\n  Exchange [a] #1\n    Scan parquet db.reason [r]\n  BroadcastExchange #1\n    Scan parquet db.reason [r]\n", 100,
			[]string{"line 4", "exchange #1 is defined twice (lines 2 and 4)"}},
		{"duplicate subquery", "Project\n  Subquery #1\n    Filter\n  SubqueryBroadcast [a] #1\n    Filter\n", 100,
			[]string{"line 4", "subquery #1 is defined twice"}},
		{"self reuse", "Project\n  Exchange [a] #1\n    Project\n      ReusedExchange [a] #1\n", 100,
			[]string{"line 4", "stage x1 wait for its own output"}},
		{"self subquery", "Project\n  Filter\n    SubqueryBroadcast [a] #1\n      ReusedSubquery [a] #1\n", 100,
			[]string{"subquery sq1 depends on itself"}},
		{"cycle", "Project\n  Exchange [a] #1\n    Project\n      ReusedExchange [a] #2\n  Exchange [b] #2\n    Project\n      ReusedExchange [a] #1\n", 100,
			[]string{"cycle"}},
		{"unknown table", "Project\n  Scan parquet db.lineitem [l]\n", 100, []string{"line 2", `"lineitem"`, "not a TPC-DS table"}},
		{"scan without table", "Project\n  Scan parquet\n", 100, []string{"line 2", "Scan names no table"}},
		{"not an operator", "Project\n  [a,b]\n", 100, []string{"line 2", "expected a letter"}},
		{"unknown scale", "Project\n", 10, []string{"scale factor 10", "1, 100, 1000, 3000"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j, err := ParseSparkPlan("bad", c.plan, c.sf)
			if err == nil {
				t.Fatalf("no error; got a job of %d stages", len(j.Stages))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestTPCDSUnknownQueryAndScale(t *testing.T) {
	_, err := TPCDS("q100", 100)
	if err == nil || !strings.Contains(err.Error(), `"q100"`) || !strings.Contains(err.Error(), "q14a, q14b") || !strings.Contains(err.Error(), "q99") {
		t.Errorf("unknown query: error %v; want it to name q100 and list the queries", err)
	}
	_, err = TPCDS("q1", 300)
	if err == nil || !strings.Contains(err.Error(), "300") || !strings.Contains(err.Error(), "1, 100, 1000, 3000") {
		t.Errorf("unknown scale: error %v; want it to name 300 and list the scales", err)
	}
}

func TestTPCDSQueriesAndScales(t *testing.T) {
	qs := TPCDSQueries()
	if len(qs) != 103 {
		t.Fatalf("%d queries, want 103", len(qs))
	}
	for i, want := range map[int]string{0: "q1", 1: "q2", 8: "q9", 9: "q10", 13: "q14a", 14: "q14b", 15: "q15", 102: "q99"} {
		if qs[i] != want {
			t.Errorf("query #%d is %q, want %q", i, qs[i], want)
		}
	}
	qs[0] = "changed"
	if TPCDSQueries()[0] != "q1" {
		t.Error("TPCDSQueries returned shared storage")
	}
	if got := TPCDSScales(); !slices.Equal(got, []int{1, 100, 1000, 3000}) {
		t.Errorf("scales %v", got)
	}
}

func TestTPCDSReturnsFreshCopies(t *testing.T) {
	a, err := TPCDS("q1", 1)
	if err != nil {
		t.Fatal(err)
	}
	a.Stages[0].Tasks = 999
	a.Stages[0].Parents[0] = "changed"
	b, err := TPCDS("q1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if b.Stages[0].Tasks == 999 || b.Stages[0].Parents[0] == "changed" {
		t.Error("TPCDS returned the cached job, not a copy")
	}
}

// tpcdsAll loads the whole catalogue at one scale.
func tpcdsAll(t *testing.T, sf int) []*Job {
	t.Helper()
	var jobs []*Job
	for _, q := range TPCDSQueries() {
		j, err := TPCDS(q, sf)
		if err != nil {
			t.Fatalf("%s at SF %d: %v", q, sf, err)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

func TestTPCDSCatalogueValid(t *testing.T) {
	nodes := []fairness.Vector{PaperMachine()}
	stages := map[string]int{}
	tasks := map[string]int{}
	for _, sf := range TPCDSScales() {
		for _, j := range tpcdsAll(t, sf) {
			q := strings.Split(j.Name, "-")[1]
			if want := tpcdsJobName(q, sf); j.Name != want {
				t.Errorf("job name %q, want %q", j.Name, want)
			}
			g, err := j.Graph()
			if err != nil {
				t.Fatal(err)
			}
			if err := j.CheckFits(nodes); err != nil {
				t.Error(err)
			}
			// A plan is one tree: its root stage s0 is the only sink and
			// every stage feeds it.
			sinks := 0
			for i := range j.Stages {
				if len(g.Children[i]) == 0 {
					sinks++
				}
			}
			if sinks != 1 || j.Stages[0].Name != "s0" || len(g.Children[0]) != 0 {
				t.Errorf("%s: %d sinks; want s0 alone", j.Name, sinks)
			}
			// Cutting does not depend on the scale; sizes only grow.
			if n, ok := stages[q]; ok && n != len(j.Stages) {
				t.Errorf("%s: %d stages, %d at a smaller scale", j.Name, len(j.Stages), n)
			}
			if n, ok := tasks[q]; ok && j.TotalTasks() < n {
				t.Errorf("%s: %d tasks, %d at a smaller scale", j.Name, j.TotalTasks(), n)
			}
			stages[q], tasks[q] = len(j.Stages), j.TotalTasks()
		}
	}
}

// TestTPCDSCatalogueStats reports the SF 100 shape next to the Carbyne
// paper's TPC-DS numbers (median 8, 95th percentile 23 stages). The cutting
// rules are Spark's and are not tuned to those numbers, so only structure is
// asserted: TPC-DS queries join a fact table or three with several
// dimensions, each dimension a broadcast stage and each aggregation or
// sort-merge join a shuffle, so a median outside 4..16 stages (or a critical
// path shorter than 2 or longer than the stage count) means the cutter is
// broken, not that the workload changed.
func TestTPCDSCatalogueStats(t *testing.T) {
	var sums []Summary
	for _, sf := range TPCDSScales() {
		s, err := Summarize(fmt.Sprintf("tpcds-sf%d", sf), tpcdsAll(t, sf))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, s)
	}
	var buf bytes.Buffer
	if err := WriteSummaries(&buf, sums); err != nil {
		t.Fatal(err)
	}
	t.Logf("TPC-DS catalogue (Carbyne paper: stages median 8, p95 23):\n%s", buf.String())
	for _, s := range sums {
		if s.Jobs != 103 {
			t.Errorf("%s: %d jobs", s.Name, s.Jobs)
		}
		if s.StagesMedian < 4 || s.StagesMedian > 16 || s.StagesP95 < s.StagesMedian {
			t.Errorf("%s: stages median %d, p95 %d", s.Name, s.StagesMedian, s.StagesP95)
		}
		if s.CriticalPathMedian < 2 || s.CriticalPathMedian > s.StagesMedian {
			t.Errorf("%s: critical path median %d", s.Name, s.CriticalPathMedian)
		}
		if s.BarriersP95 < 1 {
			t.Errorf("%s: no barriers at the 95th percentile", s.Name)
		}
	}
}

// The TPC-H measurements, embedded here only so that the calibration
// constants can be recomputed.
//
//go:embed data/tpch/cloudlab_profiles.json
var tpcdsTestTPCHProfiles []byte

//go:embed data/tpch/queries.yaml
var tpcdsTestTPCHGraphs []byte

type tpcdsTestProfileStage struct {
	StageID   int     `json:"stage_id"`
	NumTasks  int     `json:"num_tasks"`
	RuntimeMs float64 `json:"average_runtime_ms"`
}

// tpcdsTestParents reads queries.yaml's graphs into, per query number, the
// number of parents of each node. The file's form is fixed (graphs, each a
// name and a list of nodes with optional children), so a line reader does.
func tpcdsTestParents(t *testing.T) map[int]map[int]int {
	t.Helper()
	out := map[int]map[int]int{}
	var q int
	sc := bufio.NewScanner(bytes.NewReader(tpcdsTestTPCHGraphs))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "- name: Q"):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "- name: Q"))
			if err != nil {
				t.Fatalf("queries.yaml: %q", line)
			}
			q = n
			out[q] = map[int]int{}
		case strings.HasPrefix(line, "- name: "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "- name: "))
			if err != nil {
				t.Fatalf("queries.yaml: %q", line)
			}
			out[q][n] += 0
		case strings.HasPrefix(line, "children:"):
			list := strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "children:")), "[]")
			for _, f := range strings.Split(list, ",") {
				if f = strings.TrimSpace(f); f == "" {
					continue
				}
				c, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("queries.yaml: %q", line)
				}
				out[q][c]++
			}
		}
	}
	if len(out) != 22 {
		t.Fatalf("queries.yaml: %d graphs, want 22", len(out))
	}
	return out
}

// TestTPCDSCalibration recomputes the constants of tpcds.go from the
// measured TPC-H runs.
func TestTPCDSCalibration(t *testing.T) {
	var profiles map[string][]tpcdsTestProfileStage
	if err := json.Unmarshal(tpcdsTestTPCHProfiles, &profiles); err != nil {
		t.Fatal(err)
	}
	// Scan rate: Q1 and Q6 scan only lineitem (6,001,215 rows × 112 B a
	// row per SF, TPC-H clause 4.2.5).
	var rates []float64
	for _, q := range []int{1, 6} {
		for _, sf := range []int{50, 100, 250, 500} {
			p := profiles[fmt.Sprintf("tpch_q%d_%dg_maxCores_50", q, sf)]
			if len(p) == 0 {
				t.Fatalf("no profile for Q%d at %dg", q, sf)
			}
			scan := slices.MaxFunc(p, func(a, b tpcdsTestProfileStage) int { return a.NumTasks - b.NumTasks })
			perTask := float64(sf) * 6001215 * 112 / float64(scan.NumTasks)
			rates = append(rates, perTask/(scan.RuntimeMs/1000))
		}
	}
	if got := Percentile(rates, 50); math.Abs(got-tpcdsScanBytesPerSec) > 1 {
		t.Errorf("scan rate: data gives %.1f B/s, constant is %d", got, tpcdsScanBytesPerSec)
	}

	parents := tpcdsTestParents(t)
	var inner []float64
	least := math.Inf(1)
	profilesSeen := 0
	for key, stages := range profiles {
		if !strings.HasSuffix(key, "_maxCores_50") {
			continue
		}
		profilesSeen++
		q, err := strconv.Atoi(strings.TrimPrefix(strings.Split(key, "_")[1], "q"))
		if err != nil {
			t.Fatalf("profile key %q", key)
		}
		for _, s := range stages {
			n, ok := parents[q][s.StageID]
			if !ok {
				t.Fatalf("%s: stage %d is not in queries.yaml", key, s.StageID)
			}
			if n > 0 {
				inner = append(inner, s.RuntimeMs)
			}
			least = min(least, s.RuntimeMs)
		}
	}
	if profilesSeen != 88 || len(inner) != 356 {
		t.Errorf("%d profiles, %d non-root stages; want 88 and 356", profilesSeen, len(inner))
	}
	got := time.Duration(Percentile(inner, 50) * float64(time.Millisecond))
	if d := got - tpcdsShuffleTaskDuration; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("shuffle task duration: data gives %v, constant is %v", got, tpcdsShuffleTaskDuration)
	}
	if got := time.Duration(least * float64(time.Millisecond)); got != tpcdsMinTaskDuration {
		t.Errorf("shortest task: data gives %v, constant is %v", got, tpcdsMinTaskDuration)
	}
}

// TestTPCDSTableData checks the sizing tables against each other: every
// table has a width, and the SF 100 bytes reproduce Spark's sizeInBytes.
func TestTPCDSTableData(t *testing.T) {
	sizeInBytes := map[string]int64{ // TPCDSTableStats.sf100TableStats
		"store_sales": 42623559552, "web_sales": 14688252348, "catalog_sales": 29375401260,
		"inventory": 9583920000, "date_dim": 19284936, "store": 207432, "item": 94248000,
	}
	if len(tpcdsRows) != 24 || len(tpcdsRowWidth) != 24 {
		t.Fatalf("%d tables with rows, %d with widths; want 24", len(tpcdsRows), len(tpcdsRowWidth))
	}
	for table := range tpcdsRows {
		if tpcdsRowWidth[table] <= 0 {
			t.Errorf("%s has no width", table)
		}
	}
	for table, want := range sizeInBytes {
		if got := tpcdsRows[table][1] * tpcdsRowWidth[table]; got != want {
			t.Errorf("%s at SF 100: %d B, Spark says %d", table, got, want)
		}
	}
}
