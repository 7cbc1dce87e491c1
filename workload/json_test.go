package workload

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/fairness"
)

const etl = `{"jobs": [{
  "name": "etl-daily", "queue": "batch", "weight": 2, "arrival_ms": 1500,
  "stages": [
    {"name": "scan", "tasks": 200, "duration_ms": 8000,
     "demand": {"memory-mb": 2048, "vcores": 1, "loom.io/disk": 40}, "children": ["join"]},
    {"name": "dim", "tasks": 1, "duration_ms": 250.5, "demand": {"memory-mb": 1024, "vcores": 1}},
    {"name": "join", "tasks": 50, "duration_ms": 3000,
     "demand": {"memory-mb": 6144, "vcores": 1}, "parents": ["dim"]}
  ]}]}`

func TestParseJSON(t *testing.T) {
	jobs, err := ParseJSON([]byte(etl))
	if err != nil {
		t.Fatal(err)
	}
	want := []*Job{{
		Name: "etl-daily", Queue: "batch", Weight: 2, Arrival: 1500 * time.Millisecond,
		Stages: []Stage{
			{Name: "scan", Tasks: 200, Duration: 8 * time.Second,
				Demand: fairness.New(2048, 1).With(fairness.Disk, 40)},
			{Name: "dim", Tasks: 1, Duration: 250500 * time.Microsecond, Demand: fairness.New(1024, 1)},
			// parents given directly, then the child edge from "scan".
			{Name: "join", Tasks: 50, Duration: 3 * time.Second, Demand: fairness.New(6144, 1),
				Parents: []string{"dim", "scan"}},
		},
	}}
	if diff := cmp.Diff(want, jobs); diff != "" {
		t.Errorf("ParseJSON (-want +got):\n%s", diff)
	}

	// A single job without the "jobs" wrapper, queue defaulted.
	one, err := ParseJSON([]byte(`{"name": "x", "stages": [{"name": "s", "tasks": 1, "duration_ms": 5, "demand": {"vcores": 1}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 1 || one[0].Queue != "default" || one[0].Stages[0].Duration != 5*time.Millisecond {
		t.Errorf("single job = %+v", one[0])
	}
}

func TestJSONRoundTrip(t *testing.T) {
	q, err := TPCDS("q14a", 100)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, []*Job{q}); err != nil {
		t.Fatal(err)
	}
	back, err := ParseJSON(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*Job{q}, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestParseJSONErrors(t *testing.T) {
	stage := `{"name": "s", "tasks": 1, "duration_ms": 5, "demand": {"vcores": 1}}`
	tests := []struct {
		name, doc, want string
	}{
		{"syntax error has line and column", "{\"jobs\": [\n  {\"name\": \"a\",,}]}", "line 2, column 16"},
		{"wrong type has line and column", "{\"jobs\": [{\"name\": \"a\",\n \"stages\": [{\"name\": \"s\", \"tasks\": \"two\"}]}]}", "line 2, column"},
		{"unknown field", `{"name": "a", "stages": [{"name": "s", "tasks": 1, "duration_ms": 5, "demand": {"vcores": 1}, "parent": ["x"]}]}`, `unknown field "parent"`},
		{"unknown resource", `{"name": "a", "stages": [{"name": "s", "tasks": 1, "duration_ms": 5, "demand": {"cpu": 1}}]}`, `unknown resource type "cpu"`},
		{"unknown child", `{"name": "a", "stages": [{"name": "s", "tasks": 1, "duration_ms": 5, "demand": {"vcores": 1}, "children": ["t"]}]}`, `job "a": stage "s": unknown child "t"`},
		{"cycle", `{"name": "a", "stages": [{"name": "s", "tasks": 1, "duration_ms": 5, "demand": {"vcores": 1}, "parents": ["t"]}, {"name": "t", "tasks": 1, "duration_ms": 5, "demand": {"vcores": 1}, "parents": ["s"]}]}`, `job "a": cycle: s -> t -> s`},
		{"duplicate job names", `{"jobs": [{"name": "a", "stages": [` + stage + `]}, {"name": "a", "stages": [` + stage + `]}]}`, `jobs[1]: job name "a" is already used by jobs[0]`},
		{"empty jobs", `{"jobs": []}`, `"jobs" is empty`},
		{"huge duration", `{"name": "a", "stages": [{"name": "s", "tasks": 1, "duration_ms": 1e300, "demand": {"vcores": 1}}]}`, `duration_ms 1e+300 is out of range`},
		{"not an object", `[1, 2]`, `cannot unmarshal array`},
		{"trailing data", `{"name": "a", "stages": [` + stage + `]} {}`, `line 1, column 97: invalid character '{' after top-level value`},
		{"zero tasks", `{"name": "a", "stages": [{"name": "s", "tasks": 0, "duration_ms": 5, "demand": {"vcores": 1}}]}`, `task count 0 must be positive`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJSON([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func FuzzParseJSON(f *testing.F) {
	f.Add([]byte(etl))
	f.Add([]byte(`{"name": "x", "stages": [{"name": "s", "tasks": 1, "duration_ms": 5, "demand": {"vcores": 1}}]}`))
	f.Add([]byte(`{"jobs": [{"name": "a", "stages": [{"name": "s", "tasks": 1, "duration_ms": 5, "demand": {"vcores": 1}, "parents": ["s"]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, err := ParseJSON(data)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if _, err := j.Graph(); err != nil {
				t.Fatalf("ParseJSON returned an invalid job: %v", err)
			}
		}
	})
}

func TestArrivals(t *testing.T) {
	mk := func(n int) []*Job {
		jobs := make([]*Job, n)
		for i := range jobs {
			jobs[i] = &Job{Name: "j", Arrival: time.Hour}
		}
		return jobs
	}
	batch, err := ParseArrivals("batch")
	if err != nil {
		t.Fatal(err)
	}
	jobs := mk(3)
	batch.Assign(jobs, rand.New(rand.NewPCG(1, 1)))
	for _, j := range jobs {
		if j.Arrival != 0 {
			t.Errorf("batch arrival = %v", j.Arrival)
		}
	}

	p, err := ParseArrivals("poisson:20s")
	if err != nil || !p.Poisson || p.Mean != 20*time.Second || p.String() != "poisson:20s" {
		t.Fatalf("ParseArrivals(poisson:20s) = %+v, %v", p, err)
	}
	// Over many jobs the mean gap is near 20 s, the first arrives at 0,
	// arrivals never go back, and the same seed gives the same times.
	jobs, again := mk(5001), mk(5001)
	p.Assign(jobs, rand.New(rand.NewPCG(9, 9)))
	p.Assign(again, rand.New(rand.NewPCG(9, 9)))
	if jobs[0].Arrival != 0 {
		t.Errorf("first Poisson arrival = %v, want 0", jobs[0].Arrival)
	}
	for i := 1; i < len(jobs); i++ {
		if jobs[i].Arrival < jobs[i-1].Arrival || jobs[i].Arrival != again[i].Arrival {
			t.Fatalf("arrival %d: %v after %v (replay %v)", i, jobs[i].Arrival, jobs[i-1].Arrival, again[i].Arrival)
		}
	}
	if mean := jobs[5000].Arrival / 5000; mean < 19*time.Second || mean > 21*time.Second {
		t.Errorf("mean gap = %v, want about 20s", mean)
	}

	for _, bad := range []string{"poisson", "poisson:-1s", "poisson:soon", "uniform"} {
		if _, err := ParseArrivals(bad); err == nil {
			t.Errorf("ParseArrivals(%q) accepted", bad)
		}
	}
}

func TestCatalogueAndSample(t *testing.T) {
	tests := []struct {
		spec string
		n    int
	}{
		{"tpch", 22},
		{"tpch:100g,250g", 44},
		{"tpcds", 103},
		{"tpcds:1,sf1000", 206},
		{"tpch:50g+tpcds", 125},
	}
	for _, tc := range tests {
		pool, err := Catalogue(tc.spec)
		if err != nil || len(pool) != tc.n {
			t.Errorf("Catalogue(%q) = %d jobs, %v; want %d", tc.spec, len(pool), err, tc.n)
		}
	}
	for _, bad := range []string{"tpcx", "tpch:77g", "tpcds:big", "tpcds:2"} {
		if _, err := Catalogue(bad); err == nil {
			t.Errorf("Catalogue(%q) accepted", bad)
		}
	}

	pool, _ := Catalogue("tpch")
	a, err := Sample(pool, 50, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Sample(pool, 50, rand.New(rand.NewPCG(3, 3)))
	seen := map[string]bool{}
	for i := range a {
		if a[i].Name != b[i].Name {
			t.Fatalf("same seed, different samples: %s vs %s", a[i].Name, b[i].Name)
		}
		if seen[a[i].Name] {
			t.Fatalf("duplicate name %s", a[i].Name)
		}
		seen[a[i].Name] = true
	}
	if !strings.HasSuffix(a[7].Name, "#7") {
		t.Errorf("sampled name %q lacks its index", a[7].Name)
	}
	// Samples are copies: changing one leaves the pool alone.
	a[0].Stages[0].Tasks = -1
	for _, j := range pool {
		if j.Stages[0].Tasks == -1 {
			t.Fatal("Sample shares stages with the pool")
		}
	}
	if _, err := Sample(nil, 3, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("Sample of an empty pool accepted")
	}
}
