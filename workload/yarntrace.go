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
	"strconv"
	"strings"
	"time"

	"github.com/loomrm/loom/fairness"
)

// Traces from YARN clusters, so that a team still on YARN can replay its
// own cluster through Loom's simulator before it switches. Two formats,
// as Hadoop's Scheduler Load Simulator (SLS) reads them:
//
//   - SLS's own JSON: a stream of job objects ("job.id", "job.start.ms",
//     "job.queue.name", "job.count", "job.tasks": [{"count",
//     "container.type" map|reduce, "container.start.ms",
//     "container.end.ms" or "duration.ms", "container.memory",
//     "container.vcores"}]), optionally after a {"num.nodes": ...} header;
//   - Rumen's job traces (from MapReduce job histories): a stream of
//     LoggedJob objects ("jobID", "submitTime", "queue", "mapTasks",
//     "reduceTasks", each task's "attempts" with "result", "startTime",
//     "finishTime", and "jobProperties" for the containers' sizes).
//
// Each job becomes a two-level DAG: its map tasks, then its reduce tasks
// behind a barrier, as MapReduce runs them. Tasks of one type with the
// same size and about the same duration (two significant digits) share a
// stage, so that a trace's spread of task durations survives; jobs arrive
// at their start (submit) times, the first at 0.

// TraceFormat names a trace's format.
type TraceFormat string

const (
	FormatLoom  TraceFormat = "loom"  // Loom's JSON DAG format (ParseJSON)
	FormatSLS   TraceFormat = "sls"   // SLS's JSON
	FormatRumen TraceFormat = "rumen" // Rumen's job trace
)

// YARN's default container size where a trace gives none
// (yarn.sls.container.memory.mb, yarn.sls.container.vcores;
// mapreduce.map.memory.mb).
const (
	traceDefaultMemoryMB = 1024
	traceDefaultVCores   = 1
)

// DetectFormat tells a trace's format from its first object's keys.
func DetectFormat(data []byte) (TraceFormat, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var first map[string]json.RawMessage
	if err := dec.Decode(&first); err != nil {
		return "", fmt.Errorf("not a JSON object stream: %v", err)
	}
	for _, k := range []string{"jobs", "stages"} {
		if _, ok := first[k]; ok {
			return FormatLoom, nil
		}
	}
	for _, k := range []string{"job.tasks", "num.nodes", "num.racks"} {
		if _, ok := first[k]; ok {
			return FormatSLS, nil
		}
	}
	for _, k := range []string{"jobID", "mapTasks", "reduceTasks"} {
		if _, ok := first[k]; ok {
			return FormatRumen, nil
		}
	}
	keys := make([]string, 0, len(first))
	for k := range first {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return "", fmt.Errorf("unknown trace format: its first object has keys %v (want Loom's \"jobs\"/\"stages\", SLS's \"job.tasks\", or Rumen's \"jobID\")", keys)
}

// LoadTrace reads a workload file in any of the formats, detected from
// its contents, within the limits.
func LoadTrace(path string, l Limits) ([]*Job, TraceFormat, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	f, err := DetectFormat(data)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	var jobs []*Job
	switch f {
	case FormatLoom:
		jobs, err = ParseJSONWithin(data, l)
	case FormatSLS:
		jobs, err = ParseSLS(data)
	case FormatRumen:
		jobs, err = ParseRumen(data)
	}
	if err == nil && f != FormatLoom {
		err = l.Check(jobs...)
	}
	if err != nil {
		return nil, f, fmt.Errorf("%s (%s trace): %w", path, f, err)
	}
	return jobs, f, nil
}

// maxTraceCopies bounds an SLS job's job.count, so that one line of a
// trace cannot ask for a billion jobs.
const maxTraceCopies = 100_000

// traceNum reads a JSON number, or a number in a string as Rumen's job
// properties and some SLS generators write them.
type traceNum struct {
	v   float64
	set bool
}

func (n *traceNum) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" || s == "" {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s is not a number", b)
	}
	n.v, n.set = v, true
	return nil
}

// traceTask is one task (or count of alike tasks) of a trace job.
type traceTask struct {
	reduce   bool
	duration time.Duration
	memoryMB float64
	vcores   float64
	count    int
}

type slsTask struct {
	Count    traceNum `json:"count"`
	Type     string   `json:"container.type"`
	Start    traceNum `json:"container.start.ms"`
	End      traceNum `json:"container.end.ms"`
	Duration traceNum `json:"duration.ms"`
	Memory   traceNum `json:"container.memory"`
	MemoryMB traceNum `json:"container.memory.mb"`
	VCores   traceNum `json:"container.vcores"`
}

type slsJob struct {
	ID    string     `json:"job.id"`
	Start traceNum   `json:"job.start.ms"`
	Queue string     `json:"job.queue.name"`
	Count traceNum   `json:"job.count"`
	Tasks *[]slsTask `json:"job.tasks"`
}

// ParseSLS reads an SLS JSON trace.
func ParseSLS(data []byte) ([]*Job, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var jobs []*Job
	var errs []error
	for i := 0; ; i++ {
		var j slsJob
		err := dec.Decode(&j)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("object %d: %v", i, err)
		}
		if j.Tasks == nil {
			continue // the {"num.nodes", "num.racks"} header, or another non-job object
		}
		name := j.ID
		if name == "" {
			name = fmt.Sprintf("sls-job-%d", len(jobs))
		}
		var tasks []traceTask
		for k, t := range *j.Tasks {
			d := t.Duration.v
			if !t.Duration.set && t.Start.set && t.End.set {
				d = t.End.v - t.Start.v
			}
			count := 1
			if t.Count.set {
				count = int(min(max(t.Count.v, -1), 1e9+1))
			}
			mem := t.Memory.v
			if !t.Memory.set {
				mem = t.MemoryMB.v
			}
			if !t.Memory.set && !t.MemoryMB.set {
				mem = traceDefaultMemoryMB
			}
			vc := t.VCores.v
			if !t.VCores.set {
				vc = traceDefaultVCores
			}
			switch typ := strings.ToLower(t.Type); {
			case d <= 0:
				errs = append(errs, fmt.Errorf("job %q task %d: no positive duration (duration.ms, or container.end.ms after container.start.ms)", name, k))
			case count < 1 || count > 1e9:
				errs = append(errs, fmt.Errorf("job %q task %d: count %v is not in [1, 10^9]", name, k, t.Count.v))
			case mem <= 0 || vc <= 0:
				errs = append(errs, fmt.Errorf("job %q task %d: container of %v MB and %v vcores", name, k, mem, vc))
			case typ != "" && typ != "map" && typ != "reduce":
				errs = append(errs, fmt.Errorf("job %q task %d: container.type %q is neither map nor reduce", name, k, t.Type))
			default:
				tasks = append(tasks, traceTask{reduce: typ == "reduce", duration: time.Duration(d * float64(time.Millisecond)),
					memoryMB: mem, vcores: vc, count: count})
			}
		}
		copies := 1
		if j.Count.set {
			copies = int(min(max(j.Count.v, -1), maxTraceCopies+1))
		}
		if copies < 1 || copies > maxTraceCopies {
			errs = append(errs, fmt.Errorf("job %q: job.count %d is not in [1, %d]", name, copies, maxTraceCopies))
			continue
		}
		for c := range copies {
			n := name
			if copies > 1 {
				n = fmt.Sprintf("%s#%d", name, c)
			}
			job, err := traceJob(n, j.Queue, time.Duration(j.Start.v*float64(time.Millisecond)), tasks)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			jobs = append(jobs, job)
		}
	}
	return finishTrace(jobs, errs)
}

type rumenAttempt struct {
	Result string   `json:"result"`
	Start  traceNum `json:"startTime"`
	Finish traceNum `json:"finishTime"`
}

type rumenTask struct {
	Start    traceNum       `json:"startTime"`
	Finish   traceNum       `json:"finishTime"`
	Attempts []rumenAttempt `json:"attempts"`
}

type rumenJob struct {
	ID         string              `json:"jobID"`
	Submit     traceNum            `json:"submitTime"`
	Queue      string              `json:"queue"`
	Maps       []rumenTask         `json:"mapTasks"`
	Reduces    []rumenTask         `json:"reduceTasks"`
	Properties map[string]traceNum `json:"jobProperties"`
}

// ParseRumen reads a Rumen job trace. A task's duration is its successful
// attempt's (the last to succeed), else the task's own start to finish.
func ParseRumen(data []byte) ([]*Job, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var jobs []*Job
	var errs []error
	for i := 0; ; i++ {
		var j rumenJob
		err := dec.Decode(&j)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("object %d: %v", i, err)
		}
		name := j.ID
		if name == "" {
			name = fmt.Sprintf("rumen-job-%d", len(jobs))
		}
		prop := func(key string, def float64) float64 {
			if v, ok := j.Properties[key]; ok && v.set && v.v > 0 {
				return v.v
			}
			return def
		}
		var tasks []traceTask
		for _, side := range []struct {
			list   []rumenTask
			reduce bool
			kind   string
		}{{j.Maps, false, "map"}, {j.Reduces, true, "reduce"}} {
			mem, vc := prop("mapreduce."+side.kind+".memory.mb", traceDefaultMemoryMB), prop("mapreduce."+side.kind+".cpu.vcores", traceDefaultVCores)
			for k, t := range side.list {
				d := t.Finish.v - t.Start.v
				for _, a := range t.Attempts {
					if strings.EqualFold(a.Result, "SUCCESS") && a.Finish.v > a.Start.v {
						d = a.Finish.v - a.Start.v
					}
				}
				if d <= 0 {
					errs = append(errs, fmt.Errorf("job %q %s task %d: no positive duration (finishTime after startTime)", name, side.kind, k))
					continue
				}
				tasks = append(tasks, traceTask{reduce: side.reduce, duration: time.Duration(d * float64(time.Millisecond)), memoryMB: mem, vcores: vc, count: 1})
			}
		}
		job, err := traceJob(name, j.Queue, time.Duration(j.Submit.v*float64(time.Millisecond)), tasks)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		jobs = append(jobs, job)
	}
	return finishTrace(jobs, errs)
}

// roundDuration keeps two significant digits, so that tasks of about the
// same length share a stage (17,043 ms is 17 s; 1,234 ms is 1.2 s).
func roundDuration(d time.Duration) time.Duration {
	ms := float64(d) / float64(time.Millisecond)
	if ms < 10 {
		return max(time.Millisecond, d.Round(time.Millisecond))
	}
	unit := math.Pow(10, math.Floor(math.Log10(ms))-1)
	return time.Duration(math.Round(ms/unit)*unit) * time.Millisecond
}

// traceJob builds a map-then-reduce DAG from a trace job's tasks.
func traceJob(name, queue string, arrival time.Duration, tasks []traceTask) (*Job, error) {
	if len(tasks) == 0 {
		return nil, fmt.Errorf("job %q: no tasks", name)
	}
	if queue == "" {
		queue = "default"
	}
	type key struct {
		reduce      bool
		duration    time.Duration
		mem, vcores float64
	}
	counts := map[key]int{}
	var order []key
	for _, t := range tasks {
		k := key{t.reduce, roundDuration(t.duration), t.memoryMB, t.vcores}
		if _, seen := counts[k]; !seen {
			order = append(order, k)
		}
		counts[k] += t.count
	}
	slices.SortStableFunc(order, func(a, b key) int {
		if a.reduce != b.reduce {
			if a.reduce {
				return 1
			}
			return -1
		}
		return int(b.duration - a.duration)
	})
	job := &Job{Name: name, Queue: queue, Weight: 1, Arrival: arrival}
	var maps []string
	for _, k := range order {
		kind := "map"
		if k.reduce {
			kind = "reduce"
		}
		st := Stage{Name: fmt.Sprintf("%s-%d", kind, len(job.Stages)), Tasks: counts[k], Duration: k.duration,
			Demand: fairness.New(k.mem, k.vcores)}
		if k.reduce {
			st.Parents = maps
		} else {
			maps = append(maps, st.Name)
		}
		job.Stages = append(job.Stages, st)
	}
	if err := job.Validate(); err != nil {
		return nil, err
	}
	return job, nil
}

// finishTrace moves arrivals so that the first job arrives at 0 and
// orders jobs by arrival.
func finishTrace(jobs []*Job, errs []error) ([]*Job, error) {
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, errors.New("the trace holds no jobs")
	}
	first := jobs[0].Arrival
	for _, j := range jobs {
		first = min(first, j.Arrival)
	}
	for _, j := range jobs {
		j.Arrival -= first
	}
	slices.SortStableFunc(jobs, func(a, b *Job) int { return int(a.Arrival - b.Arrival) })
	return jobs, nil
}
