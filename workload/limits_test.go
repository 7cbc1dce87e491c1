package workload

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
)

// jobOf makes a valid job with one stage per task count.
func jobOf(name string, tasks ...int) *Job {
	j := &Job{Name: name, Queue: "default"}
	for i, n := range tasks {
		j.Stages = append(j.Stages, Stage{Name: fmt.Sprintf("s%d", i), Tasks: n, Duration: time.Second,
			Demand: fairness.New(1024, 1)})
	}
	return j
}

func manyStages(n int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = 1
	}
	return t
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		jobs   []*Job
		want   []string // every error line, in order; none for a pass
	}{
		{"a catalogue-sized job", Limits{}, []*Job{jobOf("q88", 76242)}, nil},
		{"at the limits", DefaultLimits, []*Job{jobOf("full", append(manyStages(9999), 1_000_000-9999)...)}, nil},
		{"ten million tasks", Limits{}, []*Job{jobOf("x", 10_000_000)},
			[]string{`job "x": 10000000 tasks is more than the limit of 1000000 tasks per job (loom.job.max-tasks)`}},
		{"one task over, over several stages", Limits{}, []*Job{jobOf("y", 500_000, 500_001)},
			[]string{`job "y": 1000001 tasks is more than the limit of 1000000 tasks per job (loom.job.max-tasks)`}},
		{"too many stages", Limits{}, []*Job{jobOf("wide", manyStages(10_001)...)},
			[]string{`job "wide": 10001 stages is more than the limit of 10000 stages per job (loom.job.max-stages)`}},
		{"a sum that would wrap", Limits{}, []*Job{jobOf("wrap", math.MaxInt, math.MaxInt, 5)},
			[]string{`job "wrap": more than 9223372036854775807 tasks is more than the limit of 1000000 tasks per job (loom.job.max-tasks)`}},
		{"configured lower", Limits{MaxTasks: 10, MaxStages: 2}, []*Job{jobOf("ok", 5, 5), jobOf("big", 5, 5, 1)},
			[]string{`job "big": 3 stages is more than the limit of 2 stages per job (loom.job.max-stages)`,
				`job "big": 11 tasks is more than the limit of 10 tasks per job (loom.job.max-tasks)`}},
		{"configured higher", Limits{MaxTasks: 20_000_000}, []*Job{jobOf("x", 10_000_000)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.limits.Check(tc.jobs...)
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Check = %q\nwant    %q", got, tc.want)
			}
		})
	}
}

// No job of the catalogues is anywhere near the limits.
func TestCataloguesWithinLimits(t *testing.T) {
	for _, spec := range []string{"tpch:50g,100g,250g,500g", "tpcds:1,100,1000,3000"} {
		jobs, err := Catalogue(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := DefaultLimits.Check(jobs...); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
		tight := Limits{MaxTasks: DefaultMaxTasks / 10, MaxStages: DefaultMaxStages / 100}
		if err := tight.Check(jobs...); err != nil {
			t.Errorf("%s is within a tenth of the task limit and a hundredth of the stage limit: %v", spec, err)
		}
	}
}

func TestParseJSONWithin(t *testing.T) {
	stage := func(name string, tasks int) string {
		return fmt.Sprintf(`{"name": %q, "tasks": %d, "duration_ms": 5, "demand": {"vcores": 1}}`, name, tasks)
	}
	wide := make([]string, 10_001)
	for i := range wide {
		wide[i] = stage(fmt.Sprint("s", i), 1)
	}
	tests := []struct {
		name string
		doc  string
		want string // "" to pass
	}{
		{"small", `{"name": "a", "stages": [` + stage("s", 10) + `]}`, ""},
		{"ten million tasks", `{"name": "x", "stages": [` + stage("s", 10_000_000) + `]}`,
			`jobs[0]: job "x": 10000000 tasks is more than the limit of 1000000 tasks per job (loom.job.max-tasks)`},
		{"too many stages", `{"jobs": [{"name": "ok", "stages": [` + stage("s", 1) + `]}, {"name": "wide", "stages": [` +
			strings.Join(wide, ",") + `]}]}`,
			`jobs[1]: job "wide": 10001 stages is more than the limit of 10000 stages per job (loom.job.max-stages)`},
		// The limits are checked before the DAG: an over-limit job is
		// refused for its size even when its DAG is also wrong.
		{"over the limit and broken", `{"name": "x", "stages": [` + stage("s", 2_000_000) + `, ` + stage("s", 1) + `]}`,
			`jobs[0]: job "x": 2000001 tasks is more than the limit of 1000000 tasks per job (loom.job.max-tasks)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jobs, err := ParseJSONWithin([]byte(tc.doc), Limits{})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("error %v\nwant  %s", err, tc.want)
			case tc.want == "" && len(jobs) == 0:
				t.Fatal("no jobs")
			}
			if tc.want != "" {
				// ParseJSON applies no limits: the simulator and exports
				// may read what no AM would run.
				if _, err := ParseJSON([]byte(tc.doc)); err != nil && strings.Contains(err.Error(), "limit") {
					t.Errorf("ParseJSON applied a limit: %v", err)
				}
			}
		})
	}
}

func FuzzParseJSONWithin(f *testing.F) {
	f.Add([]byte(etl), 100, 3)
	f.Add([]byte(`{"name": "x", "stages": [{"name": "s", "tasks": 9223372036854775807, "duration_ms": 5, "demand": {"vcores": 1}}]}`), 0, 0)
	f.Add([]byte(`{"jobs": [{"name": "a", "stages": [{"name": "s", "tasks": 3, "duration_ms": 5, "demand": {"vcores": 1}}, {"name": "t", "tasks": 3, "duration_ms": 5, "demand": {"vcores": 1}}]}]}`), 5, 1)
	f.Fuzz(func(t *testing.T, data []byte, maxTasks, maxStages int) {
		l := Limits{MaxTasks: maxTasks, MaxStages: maxStages}
		jobs, err := ParseJSONWithin(data, l)
		if err != nil {
			return
		}
		if err := l.Check(jobs...); err != nil {
			t.Fatalf("ParseJSONWithin returned a job over its limits: %v", err)
		}
		for _, j := range jobs {
			if _, err := j.Graph(); err != nil {
				t.Fatalf("ParseJSONWithin returned an invalid job: %v", err)
			}
		}
	})
}
