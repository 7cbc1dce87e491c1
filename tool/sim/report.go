package sim

import (
	"math"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

// Summary is a run's headline figures.
type Summary struct {
	Policy   string
	Jobs     int
	Failed   int
	AvgJCT   time.Duration
	P50JCT   time.Duration
	P75JCT   time.Duration
	P95JCT   time.Duration
	Makespan time.Duration
	JainAvg  float64
	JainMin  float64
	JainMax  float64
	// Utilisation is averaged over the windows, per resource kind.
	Utilisation fairness.Vector
	// AltruisticTasks is the share of tasks that ran on containers granted
	// for ALTRUISTIC asks.
	AltruisticTasks float64
	// NodeLocal, RackLocal and OffRack are the shares of the tasks that
	// read an input (Config.Locality) by where they ran against it; all
	// zero without the locality model.
	NodeLocal, RackLocal, OffRack float64 `json:",omitempty"`
	// TakenBack counts the containers the core took back under running
	// tasks (Carbyne's recall, or preemption for queues); their tasks ran
	// again.
	TakenBack int `json:",omitempty"`
}

// Summarize computes a run's headline figures.
func (r *Result) Summarize() Summary {
	s := Summary{Policy: r.Policy, Jobs: len(r.Jobs), Makespan: r.Makespan, JainMin: math.Inf(1), TakenBack: r.Preemptions}
	jcts := make([]float64, 0, len(r.Jobs))
	var total, tasks, alt float64
	var local [3]float64
	for _, j := range r.Jobs {
		local[0] += float64(j.NodeLocal)
		local[1] += float64(j.RackLocal)
		local[2] += float64(j.OffSwitch)
		if j.Failed != "" {
			s.Failed++
		}
		jcts = append(jcts, float64(j.JCT()))
		total += float64(j.JCT())
		tasks += float64(j.Tasks)
		alt += float64(j.Altruistic)
	}
	if len(jcts) > 0 {
		s.AvgJCT = time.Duration(total / float64(len(jcts)))
		s.P50JCT = time.Duration(workload.Percentile(jcts, 50))
		s.P75JCT = time.Duration(workload.Percentile(jcts, 75))
		s.P95JCT = time.Duration(workload.Percentile(jcts, 95))
	}
	if tasks > 0 {
		s.AltruisticTasks = alt / tasks
	}
	if read := local[0] + local[1] + local[2]; read > 0 {
		s.NodeLocal, s.RackLocal, s.OffRack = local[0]/read, local[1]/read, local[2]/read
	}
	var jainSum float64
	n := 0
	for _, w := range r.Windows {
		s.Utilisation = s.Utilisation.Add(w.Utilisation)
		if w.Jobs == 0 {
			continue
		}
		jainSum += w.Jain
		s.JainMin = math.Min(s.JainMin, w.Jain)
		s.JainMax = math.Max(s.JainMax, w.Jain)
		n++
	}
	if len(r.Windows) > 0 {
		s.Utilisation = s.Utilisation.Scale(1 / float64(len(r.Windows)))
	}
	if n > 0 {
		s.JainAvg = jainSum / float64(n)
	} else {
		s.JainMin = 0
	}
	return s
}

// Improvement is Carbyne's factor of improvement over another policy, as
// the Carbyne paper defines it: the other policy's duration divided by
// Carbyne's, so above 1 means Carbyne is faster.
type Improvement struct {
	Against string
	// Average, P50, P75 and P95 divide the other policy's average and
	// percentile JCTs by Carbyne's (the paper's Tables 3 and 4).
	Average, P50, P75, P95 float64
	Makespan               float64
	// JainDelta is Carbyne's average Jain's index minus the other's.
	JainDelta float64
	// Slowed is the fraction of jobs whose own factor is below 0.8: they
	// ran more than 1.25× longer under Carbyne.
	Slowed float64
	// Worst is the smallest per-job factor.
	Worst float64
	// MedianJob is the median per-job factor; Slower the fraction of
	// jobs with a factor below 1 (the paper: 16%); Halved the fraction
	// below 0.5 (they ran more than twice as long under Carbyne).
	MedianJob float64
	Slower    float64
	Halved    float64
}

// Compare computes Carbyne's improvement over another run of the same
// workload. Jobs are matched by name.
func Compare(carbyne, other *Result) Improvement {
	c, o := carbyne.Summarize(), other.Summarize()
	imp := Improvement{
		Against:   other.Policy,
		Average:   ratio(o.AvgJCT, c.AvgJCT),
		P50:       ratio(o.P50JCT, c.P50JCT),
		P75:       ratio(o.P75JCT, c.P75JCT),
		P95:       ratio(o.P95JCT, c.P95JCT),
		Makespan:  ratio(o.Makespan, c.Makespan),
		JainDelta: c.JainAvg - o.JainAvg,
		Worst:     math.Inf(1),
	}
	theirs := make(map[string]time.Duration, len(other.Jobs))
	for _, j := range other.Jobs {
		theirs[j.Name] = j.JCT()
	}
	var factors []float64
	slowed, slower, halved := 0, 0, 0
	for _, j := range carbyne.Jobs {
		t, ok := theirs[j.Name]
		if !ok {
			continue
		}
		f := ratio(t, j.JCT())
		imp.Worst = math.Min(imp.Worst, f)
		if f < 0.8 {
			slowed++
		}
		if f < 1 {
			slower++
		}
		if f < 0.5 {
			halved++
		}
		factors = append(factors, f)
	}
	if n := len(factors); n > 0 {
		imp.Slowed = float64(slowed) / float64(n)
		imp.Slower = float64(slower) / float64(n)
		imp.Halved = float64(halved) / float64(n)
		imp.MedianJob = workload.Percentile(factors, 50)
	}
	return imp
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}
