package sim

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/workload"
)

// sized is a one-stage job of the given tasks of one second: its total
// work is tasks task-seconds.
func sized(name string, tasks int) *workload.Job {
	return &workload.Job{Name: name, Stages: []workload.Stage{stage("S0", tasks, sec)}}
}

func finished(policy string, jcts map[string]time.Duration, failed ...string) *Result {
	r := &Result{Policy: policy}
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		t, ok := jcts[name]
		if !ok {
			continue
		}
		j := JobResult{Name: name, Arrival: sec, Finish: sec + t}
		for _, f := range failed {
			if f == name {
				j.Failed = "task failed 4 times"
			}
		}
		r.Jobs = append(r.Jobs, j)
	}
	return r
}

func TestSizeClassesOf(t *testing.T) {
	// Seven jobs of work 9, 2, 5, 2, 30, 7, 1 task-seconds: by size g(1),
	// b(2), d(2) (b first: it comes first), c(5), f(7), a(9), e(30).
	// Three classes of 7*c/3 bounds 0, 2, 4, 7: {g, b}, {d, c}, {f, a, e}.
	jobs := []*workload.Job{sized("a", 9), sized("b", 2), sized("c", 5), sized("d", 2), sized("e", 30), sized("f", 7), sized("g", 1)}
	drf := finished("drf", map[string]time.Duration{"a": 10 * sec, "b": 2 * sec, "c": 6 * sec, "d": 4 * sec,
		"e": 40 * sec, "f": 8 * sec, "g": 1 * sec})
	// Carbyne: g missing (never finished), f failed.
	carbyne := finished("carbyne", map[string]time.Duration{"a": 12 * sec, "b": 1 * sec, "c": 3 * sec, "d": 2 * sec,
		"e": 35 * sec, "f": 100 * sec}, "f")
	tests := []struct {
		n          int
		jobs       []int
		work       [][2]float64
		drf, carby []float64
	}{
		{
			n: 3, jobs: []int{2, 2, 3}, work: [][2]float64{{1, 2}, {2, 5}, {7, 30}},
			drf:   []float64{(1 + 2) / 2.0, (4 + 6) / 2.0, (8 + 10 + 40) / 3.0},
			carby: []float64{1, (2 + 3) / 2.0, (12 + 35) / 2.0},
		},
		{
			// One class: everything.
			n: 1, jobs: []int{7}, work: [][2]float64{{1, 30}},
			drf:   []float64{71 / 7.0},
			carby: []float64{(12 + 1 + 3 + 2 + 35) / 5.0},
		},
		{
			// More classes than jobs: a job each.
			n: 9, jobs: []int{1, 1, 1, 1, 1, 1, 1}, work: [][2]float64{{1, 1}, {2, 2}, {2, 2}, {5, 5}, {7, 7}, {9, 9}, {30, 30}},
			drf:   []float64{1, 2, 4, 6, 8, 10, 40},
			carby: []float64{0, 1, 2, 3, 0, 12, 35},
		},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			got := SizeClassesOf(jobs, []*Result{drf, carbyne}, tc.n)
			if len(got) != len(tc.jobs) {
				t.Fatalf("%d classes, want %d: %+v", len(got), len(tc.jobs), got)
			}
			for c, sc := range got {
				if sc.Jobs != tc.jobs[c] || sc.MinWork != tc.work[c][0] || sc.MaxWork != tc.work[c][1] {
					t.Errorf("class %d: %d jobs, work %v-%v; want %d, %v", c, sc.Jobs, sc.MinWork, sc.MaxWork, tc.jobs[c], tc.work[c])
				}
				if len(sc.AvgJCT) != 2 || sc.AvgJCT[0].Policy != "drf" || sc.AvgJCT[1].Policy != "carbyne" {
					t.Fatalf("class %d: averages %+v", c, sc.AvgJCT)
				}
				for k, want := range []float64{tc.drf[c], tc.carby[c]} {
					if d := sc.AvgJCT[k].AvgJCT - want; d > 1e-9 || d < -1e-9 {
						t.Errorf("class %d, %s: average %v, want %v", c, sc.AvgJCT[k].Policy, sc.AvgJCT[k].AvgJCT, want)
					}
				}
			}
		})
	}
	if got := SizeClassesOf(nil, []*Result{drf}, 5); got != nil {
		t.Errorf("no jobs: %+v, want none", got)
	}
}

func TestSizeClassTable(t *testing.T) {
	jobs := []*workload.Job{sized("a", 9), sized("b", 2000)}
	o := &Outcome{Sizes: SizeClassesOf(jobs, []*Result{
		finished("drf", map[string]time.Duration{"a": 3 * sec, "b": 30 * sec}),
		finished("carbyne", map[string]time.Duration{"a": 2 * sec, "b": 40 * sec}),
	}, SizeClasses)}
	var buf bytes.Buffer
	if err := o.writeSizeClasses(&buf); err != nil {
		t.Fatal(err)
	}
	// Class 1 (a): drf 3 s, carbyne 2 s, 1.50x; class 2 (b, 2,000
	// task-seconds): 30 s, 40 s, 0.75x.
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("want a heading of two lines, a header and two rows:\n%s", buf.String())
	}
	for i, want := range [][]string{{"class", "jobs", "work", "drf", "carbyne", "vs drf"}, {"1", "1", "9-9", "3s", "2s", "1.50x"}, {"2", "1", "2k-2k", "30s", "40s", "0.75x"}} {
		if f := strings.Fields(lines[2+i]); strings.Join(f, " ") != strings.Join(want, " ") {
			t.Errorf("row %d: %q, want %q", i, f, want)
		}
	}
}
