// Package workload is Loom's DAG job model and its catalogues of real jobs:
// TPC-H stage DAGs with measured task counts and runtimes, TPC-DS stage DAGs
// cut from Spark's approved physical plans, and a generic JSON DAG format.
package workload

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/loomrm/loom/fairness"
)

// Stage is one stage of a DAG job: Tasks identical tasks, each needing Demand
// for Duration. A stage starts only when every parent has finished: each edge
// is a barrier (a shuffle or a broadcast).
type Stage struct {
	Name     string
	Tasks    int
	Demand   fairness.Vector
	Duration time.Duration
	Parents  []string
	// Command, when set, is the argv each task of the stage runs as a
	// process on its executor ("{index}" becomes the task's index), for
	// jobs that do real work; Duration stays the planner's estimate.
	// Empty, tasks run as the AM's --task-kind.
	Command []string
	// Inputs, when set, are what the stage's tasks read from HDFS: paths
	// (/warehouse/lineitem, on the NameNode fs.defaultFS names) or
	// hdfs://namenode[:port]/path URIs; a directory stands for the files
	// under it (CheckInput says what is accepted). The DAG AM reads the
	// inputs' block locations from the NameNode and asks for containers
	// on the hosts that hold each task's block. Task i reads block i mod
	// n of the n blocks of the stage's files, taken in order (the inputs
	// as listed, a directory's files by path, each file's blocks by
	// offset): with as many tasks as blocks, one block each, as Hadoop's
	// FileInputFormat splits files by block.
	Inputs []string
}

// Job is a DAG of stages submitted to a queue at Arrival (an offset from the
// start of a run).
type Job struct {
	Name    string
	Queue   string
	Weight  float64
	Arrival time.Duration
	Stages  []Stage
}

// Graph is a validated job's dependency structure by stage index.
type Graph struct {
	Parents  [][]int
	Children [][]int
	// Order lists stage indices so that every parent precedes its children.
	Order []int
}

// Validate checks the job and returns every problem found, each naming the
// job and stage it is about.
func (j *Job) Validate() error {
	_, err := j.Graph()
	return err
}

// Graph validates the job and resolves parent names to indices.
func (j *Job) Graph() (*Graph, error) {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("job %q: "+format, append([]any{j.Name}, args...)...))
	}
	if strings.TrimSpace(j.Name) == "" {
		fail("job has no name")
	}
	if j.Weight < 0 || math.IsNaN(j.Weight) || math.IsInf(j.Weight, 0) {
		fail("weight %v must be a finite number ≥ 0 (0 means the default, 1)", j.Weight)
	}
	if j.Arrival < 0 {
		fail("arrival %v is negative", j.Arrival)
	}
	if len(j.Stages) == 0 {
		fail("job has no stages")
	}
	index := make(map[string]int, len(j.Stages))
	for i, s := range j.Stages {
		if strings.TrimSpace(s.Name) == "" {
			fail("stage #%d has no name", i)
			continue
		}
		if prev, dup := index[s.Name]; dup {
			fail("stage %q is defined twice (stages #%d and #%d)", s.Name, prev, i)
			continue
		}
		index[s.Name] = i
	}
	for _, s := range j.Stages {
		if s.Tasks <= 0 {
			fail("stage %q: task count %d must be positive", s.Name, s.Tasks)
		}
		if s.Duration <= 0 {
			fail("stage %q: task duration %v must be positive", s.Name, s.Duration)
		}
		for _, in := range s.Inputs {
			if err := CheckInput(in); err != nil {
				fail("stage %q: %v", s.Name, err)
			}
		}
		if s.Demand.HasNegative() {
			fail("stage %q: demand %v has a negative amount", s.Name, s.Demand)
		} else if s.Demand.IsZero() {
			fail("stage %q: demand is zero; a task must need some resource", s.Name)
		}
		seen := make(map[string]bool, len(s.Parents))
		for _, p := range s.Parents {
			switch {
			case p == s.Name:
				fail("stage %q names itself as a parent", s.Name)
			case seen[p]:
				fail("stage %q names parent %q twice", s.Name, p)
			default:
				if _, ok := index[p]; !ok {
					fail("stage %q: unknown parent %q", s.Name, p)
				}
			}
			seen[p] = true
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	g := &Graph{
		Parents:  make([][]int, len(j.Stages)),
		Children: make([][]int, len(j.Stages)),
	}
	for i, s := range j.Stages {
		for _, p := range s.Parents {
			pi := index[p]
			g.Parents[i] = append(g.Parents[i], pi)
			g.Children[pi] = append(g.Children[pi], i)
		}
	}
	order, cycle := topoOrder(g)
	if cycle != nil {
		names := make([]string, len(cycle))
		for i, c := range cycle {
			names[i] = j.Stages[c].Name
		}
		return nil, fmt.Errorf("job %q: cycle: %s", j.Name, strings.Join(names, " -> "))
	}
	g.Order = order
	return g, nil
}

// topoOrder returns a topological order (Kahn's algorithm, lowest index
// first, so the order is deterministic) or, when the graph has a cycle, the
// cycle as a closed walk of stage indices: a -> b -> ... -> a.
func topoOrder(g *Graph) (order, cycle []int) {
	n := len(g.Parents)
	indeg := make([]int, n)
	for i := range g.Parents {
		indeg[i] = len(g.Parents[i])
	}
	ready := make([]int, 0, n)
	for i := 0; i < n; i++ {
		if indeg[i] == 0 {
			ready = append(ready, i)
		}
	}
	order = make([]int, 0, n)
	for len(ready) > 0 {
		sort.Ints(ready)
		i := ready[0]
		ready = ready[1:]
		order = append(order, i)
		for _, c := range g.Children[i] {
			indeg[c]--
			if indeg[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	if len(order) == n {
		return order, nil
	}
	// Every stage left has a parent that is also left, so walking parents
	// from any of them must revisit a stage: that loop is a cycle.
	left := make([]bool, n)
	for i := range left {
		left[i] = indeg[i] > 0
	}
	start := -1
	for i := range left {
		if left[i] {
			start = i
			break
		}
	}
	pos := make(map[int]int)
	var walk []int
	for at := start; ; {
		if p, ok := pos[at]; ok {
			loop := walk[p:]
			// Walking parents gives the cycle backwards; print it the way
			// data flows, parent -> child, from the stage declared first,
			// so the message does not depend on where the walk began.
			out := make([]int, 0, len(loop)+1)
			for i := len(loop) - 1; i >= 0; i-- {
				out = append(out, loop[i])
			}
			first := 0
			for i, x := range out {
				if x < out[first] {
					first = i
				}
			}
			out = append(out[first:], out[:first]...)
			return nil, append(out, out[0])
		}
		pos[at] = len(walk)
		walk = append(walk, at)
		for _, p := range g.Parents[at] {
			if left[p] {
				at = p
				break
			}
		}
	}
}

// CheckFits reports every stage whose task fits on none of the nodes, naming
// the resource the largest candidate lacks.
func (j *Job) CheckFits(nodes []fairness.Vector) error {
	if len(nodes) == 0 {
		return fmt.Errorf("job %q: the cluster has no nodes", j.Name)
	}
	var largest fairness.Vector
	for _, n := range nodes {
		largest = largest.Max(n)
	}
	var errs []error
	for _, s := range j.Stages {
		fits := false
		for _, n := range nodes {
			if s.Demand.FitsIn(n) {
				fits = true
				break
			}
		}
		if fits {
			continue
		}
		k, _ := s.Demand.Shortfall(largest)
		if s.Demand.FitsIn(largest) {
			errs = append(errs, fmt.Errorf("job %q: stage %q: a task needs %v, which no single node offers at once",
				j.Name, s.Name, s.Demand))
			continue
		}
		errs = append(errs, fmt.Errorf("job %q: stage %q: a task needs %s=%g but the largest node has %g",
			j.Name, s.Name, k, s.Demand[k], largest[k]))
	}
	return errors.Join(errs...)
}

// EffectiveWeight is the job's weight, 1 when unset.
func (j *Job) EffectiveWeight() float64 {
	if j.Weight == 0 {
		return 1
	}
	return j.Weight
}

// TotalTasks is the number of tasks over all stages.
func (j *Job) TotalTasks() int {
	n := 0
	for _, s := range j.Stages {
		n += s.Tasks
	}
	return n
}

// ScaleTime multiplies every stage's task duration by f (a demo runs
// queries in a minute), keeping each at least a millisecond. The
// simulator's replay of a mini run and the live AM scale a job with it,
// so that both plan with the durations its tasks really take.
func (j *Job) ScaleTime(f float64) {
	for i := range j.Stages {
		j.Stages[i].Duration = max(time.Duration(float64(j.Stages[i].Duration)*f), time.Millisecond)
	}
}

// Clone returns a deep copy, so that catalogue jobs can be adjusted freely.
func (j *Job) Clone() *Job {
	c := *j
	c.Stages = make([]Stage, len(j.Stages))
	for i, s := range j.Stages {
		s.Parents = append([]string(nil), s.Parents...)
		s.Inputs = append([]string(nil), s.Inputs...)
		c.Stages[i] = s
	}
	return &c
}
