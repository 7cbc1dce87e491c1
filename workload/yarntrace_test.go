package workload

import (
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
)

// A two-job SLS trace written for this test: a header, then job "a" with
// three maps (two of about 17 s, one of 9 s) and a reduce, then job "b",
// twice (job.count), of two 4 s maps of 2 GB and 2 vcores.
const slsTrace = `
{"num.nodes": 3, "num.racks": 1}
{"am.type": "mapreduce", "job.start.ms": 5000, "job.end.ms": 60000, "job.queue.name": "etl", "job.id": "a",
 "job.tasks": [
   {"container.host": "/r1/n1", "container.start.ms": 6000, "container.end.ms": 23040, "container.type": "map"},
   {"container.host": "/r1/n2", "container.start.ms": 6100, "container.end.ms": 23100, "container.type": "map"},
   {"container.host": "/r1/n3", "duration.ms": 9000},
   {"container.start.ms": 30000, "container.end.ms": 41000, "container.type": "reduce", "container.priority": 10}]}
{"job.start.ms": 8000, "job.id": "b", "job.count": 2,
 "job.tasks": [{"count": 2, "duration.ms": "4000", "container.memory": 2048, "container.vcores": 2}]}
`

// A one-job Rumen trace written for this test: two maps (one retried: its
// successful attempt took 3 s) and one reduce, 1536 MB maps.
const rumenTrace = `{"jobID": "job_1_0001", "submitTime": 1000, "queue": "default",
 "jobProperties": {"mapreduce.map.memory.mb": "1536"},
 "mapTasks": [
   {"startTime": 1500, "finishTime": 9500, "attempts": [
     {"result": "FAILED", "startTime": 1500, "finishTime": 6000},
     {"result": "SUCCESS", "startTime": 6500, "finishTime": 9500}]},
   {"startTime": 1500, "finishTime": 4500, "attempts": [{"result": "SUCCESS", "startTime": 1500, "finishTime": 4500}]}],
 "reduceTasks": [{"startTime": 10000, "finishTime": 22000, "attempts": [{"result": "SUCCESS", "startTime": 10000, "finishTime": 22000}]}]}`

func TestParseSLS(t *testing.T) {
	jobs, err := ParseSLS([]byte(slsTrace))
	if err != nil {
		t.Fatal(err)
	}
	// Hand-worked: a arrives first (5 s, so 0); the maps of 17,040 and
	// 17,000 ms round to 17 s and share a stage; the 9 s map is its own;
	// the reduce (11 s) waits for both map stages. b arrives 3 s later,
	// twice.
	if len(jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(jobs))
	}
	a := jobs[0]
	if a.Name != "a" || a.Queue != "etl" || a.Arrival != 0 || len(a.Stages) != 3 {
		t.Fatalf("job a: %+v", a)
	}
	want := []struct {
		name    string
		tasks   int
		dur     time.Duration
		parents string
	}{{"map-0", 2, 17 * time.Second, ""}, {"map-1", 1, 9 * time.Second, ""}, {"reduce-2", 1, 11 * time.Second, "map-0,map-1"}}
	for i, w := range want {
		s := a.Stages[i]
		if s.Name != w.name || s.Tasks != w.tasks || s.Duration != w.dur || strings.Join(s.Parents, ",") != w.parents ||
			s.Demand != fairness.New(1024, 1) {
			t.Errorf("stage %d: %+v, want %+v of 1024 MB, 1 vcore", i, s, w)
		}
	}
	for i, b := range jobs[1:] {
		if b.Arrival != 3*time.Second || len(b.Stages) != 1 || b.Stages[0].Tasks != 2 || b.Stages[0].Duration != 4*time.Second ||
			b.Stages[0].Demand != fairness.New(2048, 2) || b.Queue != "default" {
			t.Errorf("job b copy %d: %+v", i, b)
		}
	}
	if jobs[1].Name != "b#0" || jobs[2].Name != "b#1" {
		t.Errorf("copies named %q, %q", jobs[1].Name, jobs[2].Name)
	}
}

func TestParseRumen(t *testing.T) {
	jobs, err := ParseRumen([]byte(rumenTrace))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || len(jobs[0].Stages) != 2 {
		t.Fatalf("jobs %+v", jobs)
	}
	// Both maps took 3 s (the first's successful attempt), 1536 MB; the
	// reduce 12 s, YARN's default size.
	m, r := jobs[0].Stages[0], jobs[0].Stages[1]
	if m.Tasks != 2 || m.Duration != 3*time.Second || m.Demand != fairness.New(1536, 1) {
		t.Errorf("maps: %+v", m)
	}
	if r.Tasks != 1 || r.Duration != 12*time.Second || r.Demand != fairness.New(1024, 1) || len(r.Parents) != 1 {
		t.Errorf("reduce: %+v", r)
	}
}

func TestDetectFormat(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want TraceFormat
		err  string
	}{
		{slsTrace, FormatSLS, ""},
		{rumenTrace, FormatRumen, ""},
		{`{"jobs": []}`, FormatLoom, ""},
		{`{"name": "x", "stages": []}`, FormatLoom, ""},
		{`{"foo": 1}`, "", `unknown trace format: its first object has keys [foo]`},
		{`[1, 2]`, "", "not a JSON object stream"},
	} {
		got, err := DetectFormat([]byte(tc.doc))
		if got != tc.want || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%.30q: %q, %v; want %q, %q", tc.doc, got, err, tc.want, tc.err)
		}
	}
}

func TestTraceErrors(t *testing.T) {
	for _, tc := range []struct {
		parse func([]byte) ([]*Job, error)
		doc   string
		want  string
	}{
		{ParseSLS, `{"job.id": "x", "job.tasks": [{"container.start.ms": 5, "container.end.ms": 5}]}`, `job "x" task 0: no positive duration`},
		{ParseSLS, `{"job.id": "x", "job.tasks": [{"duration.ms": 5, "container.type": "shuffle"}]}`, `container.type "shuffle" is neither map nor reduce`},
		{ParseSLS, `{"job.id": "x", "job.tasks": [{"duration.ms": 5, "count": 0}]}`, `count 0 is not in [1, 10^9]`},
		{ParseSLS, `{"job.id": "x", "job.count": 1e12, "job.tasks": [{"duration.ms": 5}]}`, `job.count 100001 is not in [1, 100000]`},
		{ParseSLS, `{"job.id": "x", "job.tasks": [{"duration.ms": 5, "container.memory": -1}]}`, `container of -1 MB`},
		{ParseSLS, `{"job.id": "x", "job.tasks": []}`, `job "x": no tasks`},
		{ParseSLS, `{"num.nodes": 3}`, `the trace holds no jobs`},
		{ParseSLS, `{"job.id": "x", "job.tasks": [{"duration.ms": "soon"}]}`, `"soon" is not a number`},
		{ParseRumen, `{"jobID": "j", "mapTasks": [{"startTime": 9, "finishTime": 3}]}`, `job "j" map task 0: no positive duration`},
		{ParseRumen, `{"jobID": "j"`, `object 0`},
	} {
		if _, err := tc.parse([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.doc, err, tc.want)
		}
	}
}

func FuzzParseTraces(f *testing.F) {
	f.Add([]byte(slsTrace))
	f.Add([]byte(rumenTrace))
	f.Add([]byte(`{"job.tasks": [{"count": 3, "duration.ms": 1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte) ([]*Job, error){ParseSLS, ParseRumen} {
			jobs, err := parse(data)
			if err != nil {
				continue
			}
			for _, j := range jobs {
				if err := j.Validate(); err != nil {
					t.Fatalf("a parsed job does not validate: %v", err)
				}
			}
		}
		DetectFormat(data)
	})
}
