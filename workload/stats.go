package workload

import (
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"
	"time"
)

// Shape is the structure of one job, the properties the Carbyne paper
// correlates with altruism (its Tables 1 and 2).
type Shape struct {
	Stages int
	// Barriers counts stages with two or more parents: the paper's
	// definition ("stages with multiple parents (i.e., barriers)").
	Barriers int
	// CriticalPath is the number of stages on the longest parent-to-child
	// chain.
	CriticalPath int
	// CriticalTime is the longest chain of task durations: the job's
	// runtime with unlimited resources.
	CriticalTime time.Duration
	Tasks        int
	// Work is Σ tasks × duration, in task-seconds.
	Work float64
}

// ShapeOf measures a validated job.
func ShapeOf(j *Job) (Shape, error) {
	g, err := j.Graph()
	if err != nil {
		return Shape{}, err
	}
	sh := Shape{Stages: len(j.Stages), Tasks: j.TotalTasks()}
	depth := make([]int, len(j.Stages))
	finish := make([]time.Duration, len(j.Stages))
	for _, i := range g.Order {
		if len(g.Parents[i]) >= 2 {
			sh.Barriers++
		}
		d, f := 0, time.Duration(0)
		for _, p := range g.Parents[i] {
			d = max(d, depth[p])
			f = max(f, finish[p])
		}
		depth[i] = d + 1
		finish[i] = f + j.Stages[i].Duration
		sh.CriticalPath = max(sh.CriticalPath, depth[i])
		sh.CriticalTime = max(sh.CriticalTime, finish[i])
		sh.Work += float64(j.Stages[i].Tasks) * j.Stages[i].Duration.Seconds()
	}
	return sh, nil
}

// Summary is the distribution of shapes over a catalogue.
type Summary struct {
	Name string
	Jobs int
	// Median and P95 of each property, by the nearest-rank method.
	StagesMedian, StagesP95             int
	BarriersMedian, BarriersP95         int
	CriticalPathMedian, CriticalPathP95 int
	TasksMedian, TasksP95               int
	CriticalTimeMedian, CriticalTimeP95 time.Duration
}

// Summarize measures every job and returns the medians and 95th percentiles.
func Summarize(name string, jobs []*Job) (Summary, error) {
	s := Summary{Name: name, Jobs: len(jobs)}
	if len(jobs) == 0 {
		return s, fmt.Errorf("catalogue %q has no jobs", name)
	}
	var stages, barriers, paths, tasks, times []float64
	for _, j := range jobs {
		sh, err := ShapeOf(j)
		if err != nil {
			return s, err
		}
		stages = append(stages, float64(sh.Stages))
		barriers = append(barriers, float64(sh.Barriers))
		paths = append(paths, float64(sh.CriticalPath))
		tasks = append(tasks, float64(sh.Tasks))
		times = append(times, float64(sh.CriticalTime))
	}
	s.StagesMedian, s.StagesP95 = int(Percentile(stages, 50)), int(Percentile(stages, 95))
	s.BarriersMedian, s.BarriersP95 = int(Percentile(barriers, 50)), int(Percentile(barriers, 95))
	s.CriticalPathMedian, s.CriticalPathP95 = int(Percentile(paths, 50)), int(Percentile(paths, 95))
	s.TasksMedian, s.TasksP95 = int(Percentile(tasks, 50)), int(Percentile(tasks, 95))
	s.CriticalTimeMedian = time.Duration(Percentile(times, 50))
	s.CriticalTimeP95 = time.Duration(Percentile(times, 95))
	return s, nil
}

// Percentile returns the p-th percentile of xs by the nearest-rank method:
// the smallest value with at least p% of the values at or below it. It
// does not modify xs. An empty input gives NaN.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// WriteSummaries prints summaries as a table.
func WriteSummaries(w io.Writer, sums []Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "catalogue\tjobs\tstages p50\tp95\tbarriers p50\tp95\tcritical path p50\tp95\ttasks p50\tp95\tcritical time p50\tp95\t")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n",
			s.Name, s.Jobs, s.StagesMedian, s.StagesP95, s.BarriersMedian, s.BarriersP95,
			s.CriticalPathMedian, s.CriticalPathP95, s.TasksMedian, s.TasksP95,
			s.CriticalTimeMedian.Round(100*time.Millisecond), s.CriticalTimeP95.Round(100*time.Millisecond))
	}
	return tw.Flush()
}
