package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/loomrm/loom/fairness"
)

// The generic JSON DAG format, so that any trace or engine can feed Loom.
// A document is either one job or {"jobs": [...]}:
//
//	{"jobs": [{
//	  "name": "etl-daily", "queue": "default", "weight": 1, "arrival_ms": 0,
//	  "stages": [
//	    {"name": "scan", "tasks": 200, "duration_ms": 8000,
//	     "demand": {"memory-mb": 2048, "vcores": 1, "loom.io/disk": 40}},
//	    {"name": "join", "tasks": 50, "duration_ms": 3000,
//	     "demand": {"memory-mb": 6144, "vcores": 1}, "parents": ["scan"]}
//	  ]}]}
//
// A stage's dependencies may be given as "parents", as "children", or
// both; every edge is a barrier. A stage may name the HDFS files its tasks
// read, "inputs": ["hdfs://nn:8020/warehouse/lineitem", "/data/dim"]
// (Stage.Inputs), for the AM to ask for containers where their blocks
// are. Unknown fields are errors, so a typo never silently drops an edge.
// The README documents the format for users.

type jsonDoc struct {
	Jobs []jsonJob `json:"jobs"`
}

type jsonJob struct {
	Name      string      `json:"name"`
	Queue     string      `json:"queue,omitempty"`
	Weight    float64     `json:"weight,omitempty"`
	ArrivalMs float64     `json:"arrival_ms"`
	Stages    []jsonStage `json:"stages"`
}

type jsonStage struct {
	Name       string          `json:"name"`
	Tasks      int             `json:"tasks"`
	DurationMs float64         `json:"duration_ms"`
	Demand     fairness.Vector `json:"demand"`
	Parents    []string        `json:"parents,omitempty"`
	Children   []string        `json:"children,omitempty"`
	Command    []string        `json:"command,omitempty"`
	Inputs     []string        `json:"inputs,omitempty"`
}

// ParseJSON reads jobs in the generic JSON DAG format and validates each.
// Errors name the line and column of a syntax error, or the job and stage
// of a semantic one. It applies no size limits: see ParseJSONWithin.
func ParseJSON(data []byte) ([]*Job, error) {
	return parseJSON(data, nil)
}

// parseJSON parses and validates; with limits, a job over them is refused
// before its DAG is built.
func parseJSON(data []byte, limits *Limits) ([]*Job, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, jsonError(data, err)
	}
	var doc jsonDoc
	if _, many := probe["jobs"]; many {
		if err := strictDecode(data, &doc); err != nil {
			return nil, err
		}
		if len(doc.Jobs) == 0 {
			return nil, errors.New(`"jobs" is empty: a workload needs at least one job`)
		}
	} else {
		var one jsonJob
		if err := strictDecode(data, &one); err != nil {
			return nil, err
		}
		doc.Jobs = []jsonJob{one}
	}
	jobs := make([]*Job, 0, len(doc.Jobs))
	names := make(map[string]int)
	var errs []error
	for i, jj := range doc.Jobs {
		if limits != nil {
			n := 0
			for _, s := range jj.Stages {
				n = addTasks(n, s.Tasks)
			}
			if err := limits.check(jj.Name, len(jj.Stages), n); err != nil {
				errs = append(errs, fmt.Errorf("jobs[%d]: %w", i, err))
				continue
			}
		}
		j, err := jj.job()
		if err != nil {
			errs = append(errs, fmt.Errorf("jobs[%d]: %w", i, err))
			continue
		}
		if prev, dup := names[j.Name]; dup {
			errs = append(errs, fmt.Errorf("jobs[%d]: job name %q is already used by jobs[%d]", i, j.Name, prev))
			continue
		}
		names[j.Name] = i
		jobs = append(jobs, j)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return jobs, nil
}

// LoadJSON reads a JSON DAG file.
func LoadJSON(path string) ([]*Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	jobs, err := ParseJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, nil
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	// Trailing data was refused already, by the probe in ParseJSON.
	if err := dec.Decode(v); err != nil {
		return jsonError(data, err)
	}
	return nil
}

// jsonError adds the line and column to errors that carry an offset.
func jsonError(data []byte, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 {
		return err
	}
	// The offset counts the bytes read, the offending one included.
	off = max(min(off, int64(len(data)))-1, 0)
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// msToDuration converts a millisecond count from a document, refusing what
// a Duration cannot hold.
func msToDuration(field string, ms float64) (time.Duration, error) {
	if math.IsNaN(ms) || math.IsInf(ms, 0) || math.Abs(ms) > float64(math.MaxInt64/int64(time.Millisecond)) {
		return 0, fmt.Errorf("%s %v is out of range", field, ms)
	}
	return time.Duration(math.Round(ms * float64(time.Millisecond))), nil
}

func (jj jsonJob) job() (*Job, error) {
	j := &Job{Name: jj.Name, Queue: jj.Queue, Weight: jj.Weight}
	if j.Queue == "" {
		j.Queue = "default"
	}
	var err error
	if j.Arrival, err = msToDuration("arrival_ms", jj.ArrivalMs); err != nil {
		return nil, fmt.Errorf("job %q: %w", jj.Name, err)
	}
	// Children lists become parents of the named stages. Graph only sees
	// parent lists, so a child that is not a stage is reported here.
	index := make(map[string]int, len(jj.Stages))
	for i, s := range jj.Stages {
		index[s.Name] = i
	}
	j.Stages = make([]Stage, len(jj.Stages))
	for i, s := range jj.Stages {
		d, err := msToDuration("duration_ms", s.DurationMs)
		if err != nil {
			return nil, fmt.Errorf("job %q: stage %q: %w", jj.Name, s.Name, err)
		}
		if len(s.Command) > 0 && s.Command[0] == "" {
			return nil, fmt.Errorf("job %q: stage %q: command: the program (its first word) is empty", jj.Name, s.Name)
		}
		j.Stages[i] = Stage{Name: s.Name, Tasks: s.Tasks, Demand: s.Demand, Duration: d,
			Parents: append([]string(nil), s.Parents...), Command: append([]string(nil), s.Command...),
			Inputs: append([]string(nil), s.Inputs...)}
	}
	for _, s := range jj.Stages {
		for _, c := range s.Children {
			ci, ok := index[c]
			if !ok {
				return nil, fmt.Errorf("job %q: stage %q: unknown child %q", jj.Name, s.Name, c)
			}
			if !slices.Contains(j.Stages[ci].Parents, s.Name) {
				j.Stages[ci].Parents = append(j.Stages[ci].Parents, s.Name)
			}
		}
	}
	if err := j.Validate(); err != nil {
		return nil, err
	}
	return j, nil
}

// WriteJSON writes jobs in the generic format, parents only, so that any
// catalogue job can be exported, edited and fed back.
func WriteJSON(w io.Writer, jobs []*Job) error {
	doc := jsonDoc{Jobs: make([]jsonJob, len(jobs))}
	for i, j := range jobs {
		jj := jsonJob{Name: j.Name, Queue: j.Queue, Weight: j.Weight,
			ArrivalMs: float64(j.Arrival) / float64(time.Millisecond)}
		for _, s := range j.Stages {
			jj.Stages = append(jj.Stages, jsonStage{Name: s.Name, Tasks: s.Tasks,
				DurationMs: float64(s.Duration) / float64(time.Millisecond),
				Demand:     s.Demand, Parents: s.Parents, Command: s.Command, Inputs: s.Inputs})
		}
		doc.Jobs[i] = jj
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
