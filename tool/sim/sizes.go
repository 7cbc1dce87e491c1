package sim

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/workload"
)

// SizeClasses is how many classes of job size the report splits the jobs
// into: fifths.
const SizeClasses = 5

// SizeClass is one class of the jobs by size, and each policy's average
// JCT over it: who gains and who pays. Size is a job's total work, its
// tasks' durations summed (task-seconds), the same under every policy.
type SizeClass struct {
	Jobs int `json:"jobs"`
	// MinWork and MaxWork bound the class's total work, in task-seconds.
	MinWork float64 `json:"min_work_task_s"`
	MaxWork float64 `json:"max_work_task_s"`
	// AvgJCT is each policy's average JCT over the class's jobs that
	// finished, in seconds, in the order the policies ran.
	AvgJCT []PolicyJCT `json:"avg_jct"`
}

// PolicyJCT is one policy's average JCT over a class.
type PolicyJCT struct {
	Policy string  `json:"policy"`
	AvgJCT float64 `json:"avg_jct_s"`
}

// TotalWork is a job's tasks' durations summed, in task-seconds.
func TotalWork(j *workload.Job) float64 {
	var w float64
	for _, s := range j.Stages {
		w += float64(s.Tasks) * s.Duration.Seconds()
	}
	return w
}

// SizeClassesOf splits the jobs into n classes by total work, smallest
// first (ties by position in jobs), as equal in count as n allows, and
// averages each result's JCT over each class. A job is found in a result
// by name; failed jobs count in no average. With fewer jobs than n, each
// job is a class.
func SizeClassesOf(jobs []*workload.Job, results []*Result, n int) []SizeClass {
	if len(jobs) == 0 || n <= 0 {
		return nil
	}
	n = min(n, len(jobs))
	order := make([]int, len(jobs))
	work := make([]float64, len(jobs))
	for i, j := range jobs {
		order[i], work[i] = i, TotalWork(j)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(work[a], work[b]) })
	jct := make([]map[string]time.Duration, len(results))
	for k, r := range results {
		jct[k] = make(map[string]time.Duration, len(r.Jobs))
		for _, j := range r.Jobs {
			if j.Failed == "" {
				jct[k][j.Name] = j.JCT()
			}
		}
	}
	classes := make([]SizeClass, n)
	for c := range classes {
		lo, hi := c*len(jobs)/n, (c+1)*len(jobs)/n
		members := order[lo:hi]
		sc := SizeClass{Jobs: len(members), MinWork: work[members[0]], MaxWork: work[members[len(members)-1]]}
		for k, r := range results {
			var sum time.Duration
			count := 0
			for _, i := range members {
				if t, ok := jct[k][jobs[i].Name]; ok {
					sum += t
					count++
				}
			}
			avg := 0.0
			if count > 0 {
				avg = (sum / time.Duration(count)).Seconds()
			}
			sc.AvgJCT = append(sc.AvgJCT, PolicyJCT{Policy: r.Policy, AvgJCT: avg})
		}
		classes[c] = sc
	}
	return classes
}

// writeSizeClasses prints the classes: each policy's average JCT, and
// Carbyne's factor against each other policy, class by class.
func (o *Outcome) writeSizeClasses(w io.Writer) error {
	if len(o.Sizes) < 2 {
		return nil
	}
	fmt.Fprintln(w, "\nBy job size (the jobs in classes by total work, task-seconds, smallest first): each policy's average JCT,")
	fmt.Fprintln(w, "and Carbyne's factor against each other policy within the class")
	policies := make([]string, 0, len(o.Sizes[0].AvgJCT))
	carbyne := -1
	for i, p := range o.Sizes[0].AvgJCT {
		policies = append(policies, p.Policy)
		if p.Policy == rm.PolicyCarbyne {
			carbyne = i
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "class\tjobs\twork\t")
	for _, p := range policies {
		fmt.Fprintf(tw, "%s\t", p)
	}
	if carbyne >= 0 {
		for i, p := range policies {
			if i != carbyne {
				fmt.Fprintf(tw, "vs %s\t", p)
			}
		}
	}
	fmt.Fprintln(tw)
	for c, sc := range o.Sizes {
		fmt.Fprintf(tw, "%d\t%d\t%s-%s\t", c+1, sc.Jobs, WorkFigure(sc.MinWork), WorkFigure(sc.MaxWork))
		for _, p := range sc.AvgJCT {
			fmt.Fprintf(tw, "%s\t", round(seconds(p.AvgJCT)))
		}
		if carbyne >= 0 {
			mine := sc.AvgJCT[carbyne].AvgJCT
			for i, p := range sc.AvgJCT {
				if i == carbyne {
					continue
				}
				if mine > 0 {
					fmt.Fprintf(tw, "%.2fx\t", p.AvgJCT/mine)
				} else {
					fmt.Fprint(tw, "-\t")
				}
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// WorkFigure prints task-seconds short, to three significant figures:
// 15, 2.31k, 1.2M.
func WorkFigure(w float64) string {
	switch {
	case w >= 1e6:
		return fmt.Sprintf("%.3gM", w/1e6)
	case w >= 1e3:
		return fmt.Sprintf("%.3gk", w/1e3)
	}
	return fmt.Sprintf("%.3g", w)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
