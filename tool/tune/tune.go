// Package tune is the operator's what-if for P(Altruism): it replays a
// workload (a cluster's own history, or a YARN trace) through the
// simulator at each setting of P(Altruism) and the leftover cap, on the
// cluster's shape, and reports per setting what the jobs would see against
// P(Altruism) = 0 (DRF's schedule): average and 95th-percentile JCT,
// Jain's index, the share of jobs slowed beyond a factor, and the worst
// slowdown. It recommends the fastest setting that keeps the operator's
// objective, e.g. "at most 5% of jobs slowed more than 20%".
package tune

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/tool/sim"
	"github.com/loomrm/loom/workload"
)

// Setting is one point of the what-if.
type Setting struct {
	PAltruism   float64 `json:"p_altruism"`
	LeftoverCap float64 `json:"leftover_cap"`
}

func (s Setting) String() string {
	return fmt.Sprintf("P=%g cap=%g", s.PAltruism, s.LeftoverCap)
}

// DefaultPs are the P(Altruism) values tried unless others are named.
var DefaultPs = []float64{0, 0.25, 0.5, 0.75, 1}

// Grid is every P with every cap.
func Grid(ps, caps []float64) []Setting {
	var out []Setting
	for _, c := range caps {
		for _, p := range ps {
			out = append(out, Setting{PAltruism: p, LeftoverCap: c})
		}
	}
	return out
}

// Objective is what the operator will accept: at most MaxSlowed of the
// jobs (a fraction) slower than at P(Altruism) = 0 by more than
// SlowdownOver (a fraction: 0.2 is 20% slower).
type Objective struct {
	MaxSlowed    float64 `json:"max_slowed"`
	SlowdownOver float64 `json:"slowdown_over"`
}

func (o Objective) String() string {
	return fmt.Sprintf("at most %g%% of jobs slowed more than %g%%", 100*o.MaxSlowed, 100*o.SlowdownOver)
}

// Check refuses an objective no setting could be judged by.
func (o Objective) Check() error {
	if o.MaxSlowed < 0 || o.MaxSlowed > 1 {
		return fmt.Errorf("the share of slowed jobs %g is not in [0, 1]", o.MaxSlowed)
	}
	if o.SlowdownOver < 0 {
		return fmt.Errorf("the slowdown %g is negative", o.SlowdownOver)
	}
	return nil
}

// Row is one setting's outcome.
type Row struct {
	Setting
	AvgJCT time.Duration `json:"avg_jct_ns"`
	P95JCT time.Duration `json:"p95_jct_ns"`
	Jain   float64       `json:"jain"`
	// Speedup is the average JCT at P(Altruism) = 0 over this one's.
	Speedup float64 `json:"speedup"`
	// Slowed is the share of jobs slower than at P(Altruism) = 0 by more
	// than the objective's slowdown; Worst the largest JCT ratio against
	// P(Altruism) = 0 (above 1: slower).
	Slowed float64 `json:"slowed"`
	Worst  float64 `json:"worst"`
	Meets  bool    `json:"meets_objective"`
}

// Result is the what-if.
type Result struct {
	Jobs      int       `json:"jobs"`
	Objective Objective `json:"objective"`
	Rows      []Row     `json:"rows"`
	// Recommended indexes Rows: the fastest setting that meets the
	// objective (-1: none does).
	Recommended int           `json:"recommended"`
	Took        time.Duration `json:"took_ns"`
}

// Options are how the what-if runs.
type Options struct {
	// Workers run settings side by side (each simulation is
	// single-threaded); 0 is 1.
	Workers int
	// Progress, when set, is called as settings finish.
	Progress func(done, total int)
	// Queue, when set, makes each setting that queue's override of
	// P(Altruism) (cfg's P and other overrides stay as they are), and
	// judges the queue's jobs alone: the what-if for one queue.
	Queue string
}

// Run replays jobs on cfg's cluster (its policy is Carbyne; its P and
// cap are each setting's) and judges every setting against P = 0 with
// the same cap and the same everything else.
func Run(cfg sim.Config, jobs []*workload.Job, settings []Setting, obj Objective, o Options) (*Result, error) {
	if len(jobs) == 0 {
		return nil, errors.New("no jobs to replay")
	}
	if len(settings) == 0 {
		return nil, errors.New("no settings to try")
	}
	if err := obj.Check(); err != nil {
		return nil, err
	}
	start := time.Now()
	cfg.Log, cfg.Progress = nil, nil
	cfg.Policy = rm.PolicyCarbyne
	// P = 0 is the reference; it runs once per cap, whether or not it is
	// among the settings.
	type run struct {
		s   Setting
		res *sim.Result
		err error
	}
	var runs []*run
	index := map[Setting]*run{}
	add := func(s Setting) {
		if index[s] == nil {
			r := &run{s: s}
			index[s] = r
			runs = append(runs, r)
		}
	}
	// set applies a setting: the cluster's P, or the queue's override.
	set := func(c *sim.Config, s Setting) {
		c.LeftoverCap = s.LeftoverCap
		if o.Queue == "" {
			c.PAltruism = s.PAltruism
			return
		}
		c.QueuePAltruism = maps.Clone(cfg.QueuePAltruism)
		if c.QueuePAltruism == nil {
			c.QueuePAltruism = map[string]float64{}
		}
		c.QueuePAltruism[o.Queue] = s.PAltruism
	}
	for _, s := range settings {
		c := cfg
		set(&c, s)
		if err := c.PolicyConfig.Validate(); err != nil {
			return nil, fmt.Errorf("%v: %w", s, err)
		}
		if err := rm.CheckPAltruism(s.PAltruism); err != nil {
			return nil, fmt.Errorf("%v: %w", s, err)
		}
		add(Setting{0, s.LeftoverCap})
		add(s)
	}
	inQueue := map[string]bool{}
	if o.Queue != "" {
		for _, j := range jobs {
			if j.Queue == o.Queue {
				inQueue[j.Name] = true
			}
		}
		if len(inQueue) == 0 {
			return nil, fmt.Errorf("no job of queue %q to replay", o.Queue)
		}
	}
	workers := max(1, o.Workers)
	next := make(chan *run)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				c := cfg
				set(&c, r.s)
				r.res, r.err = sim.Run(c, jobs)
				if r.err == nil && o.Queue != "" {
					r.res.Jobs = slices.DeleteFunc(r.res.Jobs, func(j sim.JobResult) bool { return !inQueue[j.Name] })
				}
				mu.Lock()
				done++
				if o.Progress != nil {
					o.Progress(done, len(runs))
				}
				mu.Unlock()
			}
		}()
	}
	for _, r := range runs {
		next <- r
	}
	close(next)
	wg.Wait()
	for _, r := range runs {
		if r.err != nil {
			return nil, fmt.Errorf("%v: %w", r.s, r.err)
		}
	}
	res := &Result{Jobs: len(jobs), Objective: obj, Recommended: -1}
	for _, s := range settings {
		res.Rows = append(res.Rows, judge(s, index[s].res, index[Setting{0, s.LeftoverCap}].res, obj))
	}
	for i, r := range res.Rows {
		if !r.Meets {
			continue
		}
		if b := res.Recommended; b < 0 || r.AvgJCT < res.Rows[b].AvgJCT || r.AvgJCT == res.Rows[b].AvgJCT && r.Jain > res.Rows[b].Jain {
			res.Recommended = i
		}
	}
	res.Took = time.Since(start)
	return res, nil
}

// judge compares a setting's run with the P = 0 run, job by job.
func judge(s Setting, got, ref *sim.Result, obj Objective) Row {
	sum := got.Summarize()
	refSum := ref.Summarize()
	row := Row{Setting: s, AvgJCT: sum.AvgJCT, P95JCT: sum.P95JCT, Jain: sum.JainAvg}
	if sum.AvgJCT > 0 {
		row.Speedup = float64(refSum.AvgJCT) / float64(sum.AvgJCT)
	}
	refJCT := map[string]time.Duration{}
	for _, j := range ref.Jobs {
		refJCT[j.Name] = j.JCT()
	}
	slowed, n := 0, 0
	for _, j := range got.Jobs {
		base, ok := refJCT[j.Name]
		if !ok || base <= 0 {
			continue
		}
		n++
		f := float64(j.JCT()) / float64(base)
		row.Worst = max(row.Worst, f)
		if f > 1+obj.SlowdownOver {
			slowed++
		}
	}
	if n > 0 {
		row.Slowed = float64(slowed) / float64(n)
	}
	row.Meets = row.Slowed <= obj.MaxSlowed
	return row
}

// Sorted returns the rows by P(Altruism) within each cap, as a table
// reads them.
func (r *Result) Sorted() []Row {
	rows := slices.Clone(r.Rows)
	slices.SortStableFunc(rows, func(a, b Row) int {
		if a.LeftoverCap != b.LeftoverCap {
			return cmpFloat(a.LeftoverCap, b.LeftoverCap)
		}
		return cmpFloat(a.PAltruism, b.PAltruism)
	})
	return rows
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
