package sim

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/workload"
)

// Policies are the policies `loom sim` knows, in the order the Carbyne
// paper lists them.
var Policies = rm.PolicyNames

// Outcome is several policies run on one workload.
type Outcome struct {
	Machines  int
	Jobs      int
	Results   []*Result
	Summaries []Summary
	// Improvements are Carbyne's over each other policy, when Carbyne ran.
	Improvements []Improvement
	// MakespanBound is a lower bound on any policy's makespan
	// (MakespanBound).
	MakespanBound time.Duration
	// Sizes are the jobs in SizeClasses classes by total work, with each
	// policy's average JCT over each.
	Sizes []SizeClass
}

// RunOptions are the optional hooks of RunPolicies.
type RunOptions struct {
	// Progress hears of every finished job.
	Progress func(policy string, done, total int)
	// Log returns where a policy's decision log goes; nil for none.
	Log func(policy string) io.Writer
}

// RunPolicies runs the workload once per policy with the same config and
// seed.
func RunPolicies(cfg Config, policies []string, jobs []*workload.Job, opts RunOptions) (*Outcome, error) {
	if len(policies) == 0 {
		return nil, fmt.Errorf("no policies to run (want some of %s)", strings.Join(Policies, ", "))
	}
	seen := map[string]bool{}
	for _, p := range policies {
		if !slices.Contains(Policies, p) {
			return nil, fmt.Errorf("unknown policy %q (want some of %s)", p, strings.Join(Policies, ", "))
		}
		if seen[p] {
			return nil, fmt.Errorf("policy %q is listed twice", p)
		}
		seen[p] = true
	}
	o := &Outcome{Machines: cfg.Machines, Jobs: len(jobs), MakespanBound: MakespanBound(jobs, cfg.Machine.Scale(float64(cfg.Machines)))}
	for _, p := range policies {
		c := cfg
		c.Policy = p
		if opts.Progress != nil {
			c.Progress = func(done, total int) { opts.Progress(p, done, total) }
		}
		if opts.Log != nil {
			c.Log = opts.Log(p)
		}
		r, err := Run(c, jobs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		o.Results = append(o.Results, r)
		o.Summaries = append(o.Summaries, r.Summarize())
	}
	o.Sizes = SizeClassesOf(jobs, o.Results, SizeClasses)
	if i := slices.Index(policies, rm.PolicyCarbyne); i >= 0 {
		for k, r := range o.Results {
			if k != i {
				o.Improvements = append(o.Improvements, Compare(o.Results[i], r))
			}
		}
	}
	return o, nil
}

// WriteTables prints the outcome: Carbyne's factors of improvement in the
// shape of the Carbyne paper's Table 3, then each policy's own figures.
func (o *Outcome) WriteTables(w io.Writer) error {
	if len(o.Improvements) > 0 {
		fmt.Fprintln(w, "Carbyne's factor of improvement (the other policy's time / Carbyne's; above 1 is better);")
		fmt.Fprintln(w, "per job: the median job's factor, the jobs slower under Carbyne, below 0.8x and 0.5x, the worst")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "vs\tavg JCT\tp50\tp75\tp95\tmakespan\tJain Δ\tmedian job\tslower\t<0.8x\t<0.5x\tworst job\t\n")
		for _, imp := range o.Improvements {
			fmt.Fprintf(tw, "%s\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%+.3f\t%.2fx\t%.1f%%\t%.1f%%\t%.1f%%\t%.2fx\t\n", imp.Against,
				imp.Average, imp.P50, imp.P75, imp.P95, imp.Makespan, imp.JainDelta,
				imp.MedianJob, 100*imp.Slower, 100*imp.Slowed, 100*imp.Halved, imp.Worst)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Each policy (JCT percentiles; makespan over its lower bound; Jain's index over 60 s windows; utilisation averaged over the run)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "policy\tavg JCT\tp50\tp75\tp95\tmakespan\t/bound\tJain avg\tmin\tmax\tvcores\tmemory\tdisk\tnetwork\taltruistic tasks\t\n")
	for _, s := range o.Summaries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.2fx\t%.3f\t%.3f\t%.3f\t%.0f%%\t%.0f%%\t%.0f%%\t%.0f%%\t%.0f%%\t\n", s.Policy,
			round(s.AvgJCT), round(s.P50JCT), round(s.P75JCT), round(s.P95JCT), round(s.Makespan),
			ratio(s.Makespan, o.MakespanBound), s.JainAvg, s.JainMin, s.JainMax,
			100*s.Utilisation[fairness.VCores], 100*s.Utilisation[fairness.Memory],
			100*s.Utilisation[fairness.Disk], 100*s.Utilisation[fairness.Network], 100*s.AltruisticTasks)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, s := range o.Summaries {
		if s.NodeLocal+s.RackLocal+s.OffRack == 0 {
			continue
		}
		if i == 0 || o.Summaries[0].NodeLocal+o.Summaries[0].RackLocal+o.Summaries[0].OffRack == 0 {
			fmt.Fprintln(w, "\nLocality: the tasks that read an input, by where they ran against it")
		}
		fmt.Fprintf(w, "  %-8s node-local %5.1f%%  rack-local %5.1f%%  off-rack %5.1f%%\n", s.Policy, 100*s.NodeLocal, 100*s.RackLocal, 100*s.OffRack)
	}
	if err := o.writeSizeClasses(w); err != nil {
		return err
	}
	if err := o.writeQueues(w); err != nil {
		return err
	}
	if o.MakespanBound > 0 {
		fmt.Fprintf(w, "makespan lower bound %s: the larger of the longest critical path and, per resource, the work arriving from any instant over the capacity\n", round(o.MakespanBound))
	}
	// Under a queue tree, writeQueues counted them with preemption's.
	if queues, _ := o.QueueJCTs(); len(queues) == 0 {
		for _, s := range o.Summaries {
			if s.TakenBack > 0 {
				fmt.Fprintf(w, "%s: %d containers taken back under running tasks by recall (their tasks ran again)\n", s.Policy, s.TakenBack)
			}
		}
	}
	for _, s := range o.Summaries {
		if s.Failed > 0 {
			fmt.Fprintf(w, "%s: %d jobs failed\n", s.Policy, s.Failed)
		}
	}
	return nil
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// Sweep is one knob varied over points, each run with Carbyne and the
// baselines.
type Sweep struct {
	// Knob is "load", "p-altruism" or "misestimate".
	Knob   string
	Points []SweepPoint
}

// SweepPoint is one value of the knob and what it gave.
type SweepPoint struct {
	X            float64
	Improvements []Improvement
	Summaries    []Summary
}

// Loads are the Carbyne paper's Figure 9 loads, with 1.5 added (issue 15
// asks that the gain stay positive at 1, 1.5, 2 and 4); at load L the
// cluster has 1/L of the machines.
var Loads = []float64{1, 1.5, 2, 4, 6}

// RunSweeps runs the three sweeps of the Carbyne paper's Figures 9, 10 and
// 11 around cfg: load (machines divided by 1, 1.5, 2, 4, 6), misestimation
// (−50% to +50%) and P(Altruism) (0 to 1). Carbyne runs with each of the
// baselines at every point. step, when set, hears of each finished run.
func RunSweeps(cfg Config, baselines []string, jobs []*workload.Job, step func(done, total int)) ([]Sweep, error) {
	knobs := []struct {
		name   string
		values []float64
		set    func(c *Config, x float64)
	}{
		{"load", Loads, func(c *Config, x float64) {
			c.Machines = max(1, int(math.Round(float64(cfg.Machines)/x)))
		}},
		{"misestimate", []float64{-50, -25, 0, 25, 50}, func(c *Config, x float64) { c.Misestimate = x }},
		{"p-altruism", []float64{0, 0.25, 0.5, 0.75, 1}, func(c *Config, x float64) { c.PAltruism = x }},
	}
	policies := append(slices.Clone(baselines), rm.PolicyCarbyne)
	total, done := 0, 0
	for _, k := range knobs {
		total += len(k.values) * len(policies)
	}
	var sweeps []Sweep
	for _, k := range knobs {
		sw := Sweep{Knob: k.name}
		for _, x := range k.values {
			c := cfg
			k.set(&c, x)
			o, err := RunPolicies(c, policies, jobs, RunOptions{})
			if err != nil {
				return nil, fmt.Errorf("%s %g: %w", k.name, x, err)
			}
			sw.Points = append(sw.Points, SweepPoint{X: x, Improvements: o.Improvements, Summaries: o.Summaries})
			done += len(policies)
			if step != nil {
				step(done, total)
			}
		}
		sweeps = append(sweeps, sw)
	}
	return sweeps, nil
}

// PoissonForLoad returns the Poisson arrival process that offers the
// cluster the given load: load 1 brings, on average, as much work per
// second as the cluster's bottleneck can do in a second. A job's work is
// Σ tasks × duration × dominant share of the cluster (its remaining work
// when it arrives).
func PoissonForLoad(jobs []*workload.Job, cluster fairness.Vector, load float64) (workload.Arrivals, error) {
	if !(load > 0) {
		return workload.Arrivals{}, fmt.Errorf("load %v must be positive", load)
	}
	var work float64
	for _, j := range jobs {
		for _, s := range j.Stages {
			work += float64(s.Tasks) * s.Duration.Seconds() * s.Demand.DominantShare(cluster)
		}
	}
	mean := time.Duration(work / float64(len(jobs)) / load * float64(time.Second))
	if mean <= 0 {
		return workload.Arrivals{}, fmt.Errorf("the jobs carry no work")
	}
	return workload.Arrivals{Poisson: true, Mean: mean.Round(time.Millisecond)}, nil
}

// WriteTable prints a sweep: Carbyne's factor of improvement in average
// JCT over each baseline at every value of the knob.
func (s Sweep) WriteTable(w io.Writer) error {
	if len(s.Points) == 0 {
		return nil
	}
	fmt.Fprintf(w, "Sweep over %s: Carbyne's factor of improvement in average JCT, and its Jain's index minus the other's\n", s.Knob)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t", s.Knob)
	for _, imp := range s.Points[0].Improvements {
		fmt.Fprintf(tw, "avg JCT vs %s\tJain Δ\t", imp.Against)
	}
	fmt.Fprintln(tw)
	for _, p := range s.Points {
		switch s.Knob {
		case "load":
			fmt.Fprintf(tw, "%gx\t", p.X)
		case "misestimate":
			fmt.Fprintf(tw, "%+g%%\t", p.X)
		default:
			fmt.Fprintf(tw, "%g\t", p.X)
		}
		for _, imp := range p.Improvements {
			fmt.Fprintf(tw, "%.2fx\t%+.3f\t", imp.Average, imp.JainDelta)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// Report is an outcome for machines: durations in seconds.
type Report struct {
	Workload     string          `json:"workload"`
	Machines     int             `json:"machines"`
	Machine      fairness.Vector `json:"machine"`
	Seed         uint64          `json:"seed"`
	PAltruism    float64         `json:"p_altruism"`
	Misestimate  float64         `json:"misestimate_percent"`
	Policies     []PolicyReport  `json:"policies"`
	Improvements []Improvement   `json:"carbyne_improvements,omitempty"`
	SizeClasses  []SizeClass     `json:"size_classes,omitempty"`
	Sweeps       []SweepReport   `json:"sweeps,omitempty"`
}

// PolicyReport is one policy's figures.
type PolicyReport struct {
	Policy      string          `json:"policy"`
	AvgJCT      float64         `json:"avg_jct_s"`
	P50JCT      float64         `json:"p50_jct_s"`
	P75JCT      float64         `json:"p75_jct_s"`
	P95JCT      float64         `json:"p95_jct_s"`
	Makespan    float64         `json:"makespan_s"`
	JainAvg     float64         `json:"jain_avg"`
	JainMin     float64         `json:"jain_min"`
	JainMax     float64         `json:"jain_max"`
	Utilisation fairness.Vector `json:"utilisation"`
	Altruistic  float64         `json:"altruistic_task_fraction"`
	Failed      int             `json:"failed_jobs"`
	TakenBack   int             `json:"containers_taken_back"`
	Jobs        []JobReport     `json:"jobs"`
}

// JobReport is one job's outcome.
type JobReport struct {
	Name       string  `json:"name"`
	Arrival    float64 `json:"arrival_s"`
	Finish     float64 `json:"finish_s"`
	JCT        float64 `json:"jct_s"`
	Tasks      int     `json:"tasks"`
	Altruistic int     `json:"altruistic_tasks"`
	Failed     string  `json:"failed,omitempty"`
}

// SweepReport is a sweep's points.
type SweepReport struct {
	Knob   string       `json:"knob"`
	Points []SweepPoint `json:"points"`
}

// NewReport assembles the JSON view of a run.
func NewReport(workloadDesc string, cfg Config, o *Outcome, sweeps []Sweep) Report {
	r := Report{Workload: workloadDesc, Machines: cfg.Machines, Machine: cfg.Machine, Seed: cfg.Seed,
		PAltruism: cfg.PAltruism, Misestimate: cfg.Misestimate, Improvements: o.Improvements, SizeClasses: o.Sizes}
	for i, res := range o.Results {
		s := o.Summaries[i]
		pr := PolicyReport{Policy: s.Policy, AvgJCT: s.AvgJCT.Seconds(), P50JCT: s.P50JCT.Seconds(),
			P75JCT: s.P75JCT.Seconds(), P95JCT: s.P95JCT.Seconds(), Makespan: s.Makespan.Seconds(),
			JainAvg: s.JainAvg, JainMin: s.JainMin, JainMax: s.JainMax, Utilisation: s.Utilisation,
			Altruistic: s.AltruisticTasks, Failed: s.Failed, TakenBack: s.TakenBack}
		for _, j := range res.Jobs {
			pr.Jobs = append(pr.Jobs, JobReport{Name: j.Name, Arrival: j.Arrival.Seconds(), Finish: j.Finish.Seconds(),
				JCT: j.JCT().Seconds(), Tasks: j.Tasks, Altruistic: j.Altruistic, Failed: j.Failed})
		}
		r.Policies = append(r.Policies, pr)
	}
	for _, s := range sweeps {
		r.Sweeps = append(r.Sweeps, SweepReport{Knob: s.Knob, Points: s.Points})
	}
	return r
}

// QueueJCTs is each policy's average JCT in each leaf queue, for runs
// with a queue tree: queue -> policy -> average. Failed jobs are left out.
func (o *Outcome) QueueJCTs() (queues []string, avg map[string]map[string]time.Duration) {
	avg = map[string]map[string]time.Duration{}
	counts := map[string]map[string]int{}
	for _, r := range o.Results {
		for _, j := range r.Jobs {
			if j.Queue == "" || j.Failed != "" {
				continue
			}
			if avg[j.Queue] == nil {
				avg[j.Queue], counts[j.Queue] = map[string]time.Duration{}, map[string]int{}
				queues = append(queues, j.Queue)
			}
			avg[j.Queue][r.Policy] += j.Finish - j.Arrival
			counts[j.Queue][r.Policy]++
		}
	}
	for q, byPolicy := range avg {
		for p := range byPolicy {
			byPolicy[p] /= time.Duration(counts[q][p])
		}
	}
	slices.Sort(queues)
	return queues, avg
}

// writeQueues prints each leaf queue's average JCT under each policy and
// Carbyne's factor over each other policy inside the queue.
func (o *Outcome) writeQueues(w io.Writer) error {
	queues, avg := o.QueueJCTs()
	if len(queues) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nPer leaf queue: average JCT, and Carbyne's factor over each other policy within the queue")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "queue\tjobs\t")
	for _, r := range o.Results {
		fmt.Fprintf(tw, "%s\t", r.Policy)
	}
	for _, r := range o.Results {
		if r.Policy != "carbyne" && slices.ContainsFunc(o.Results, func(x *Result) bool { return x.Policy == "carbyne" }) {
			fmt.Fprintf(tw, "vs %s\t", r.Policy)
		}
	}
	fmt.Fprintln(tw)
	for _, q := range queues {
		n := 0
		for _, j := range o.Results[0].Jobs {
			if j.Queue == q {
				n++
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t", q, n)
		for _, r := range o.Results {
			fmt.Fprintf(tw, "%s\t", round(avg[q][r.Policy]))
		}
		if c, ok := avg[q]["carbyne"]; ok {
			for _, r := range o.Results {
				if r.Policy != "carbyne" {
					fmt.Fprintf(tw, "%.2fx\t", ratio(avg[q][r.Policy], c))
				}
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range o.Results {
		if r.Preemptions > 0 {
			fmt.Fprintf(w, "  %s: %d containers preempted (their tasks ran again)\n", r.Policy, r.Preemptions)
		}
	}
	return nil
}
