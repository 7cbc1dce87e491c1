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

// FrontierPoint is one policy configuration's place on the
// performance-fairness plane.
type FrontierPoint struct {
	Policy string  `json:"policy"`
	Knobs  string  `json:"knobs"`
	PAlt   float64 `json:"p_altruism,omitempty"`
	Cap    float64 `json:"leftover_cap,omitempty"`
	F      float64 `json:"tetris_fairness,omitempty"`
	// AvgJCT and Jain are the two axes; Makespan rides along.
	AvgJCT   time.Duration `json:"avg_jct_ns"`
	Jain     float64       `json:"jain"`
	Makespan time.Duration `json:"makespan_ns"`
	// Reference marks Carbyne at P(Altruism) 1, the configurations the
	// baselines are judged against.
	Reference bool `json:"reference"`
	// DominatedBy lists the baseline configurations both faster (lower
	// average JCT) and fairer (higher Jain's index) than a reference.
	DominatedBy []string `json:"dominated_by,omitempty"`
}

// Label names the point as the table and the plot print it.
func (p FrontierPoint) Label() string {
	if p.Knobs == "" {
		return p.Policy
	}
	return p.Policy + " " + p.Knobs
}

// Frontier is every configuration's point, and whether Carbyne at
// P(Altruism) 1 holds the frontier against the baselines.
type Frontier struct {
	Points []FrontierPoint `json:"points"`
	// Holds is true when no baseline configuration dominates the
	// reference at the default leftover cap.
	Holds bool `json:"holds"`
}

// FrontierTetrisF, FrontierPAltruism and FrontierCaps are the knob values
// a frontier sweeps.
var (
	FrontierTetrisF   = []float64{0, 0.25, 0.5, 0.75, 1}
	FrontierPAltruism = []float64{0.25, 0.5, 0.75, 1}
	FrontierCaps      = []float64{0, 1, rm.DefaultLeftoverCap, 4}
)

// FrontierConfigs lists the configurations a frontier runs: DRF, SRTF
// (sjf), Tetris at each fairness knob, Carbyne at each P(Altruism) and
// leftover cap (P(Altruism) 0 is DRF itself). Carbyne's points plan as the
// base does, with or without share growth.
func FrontierConfigs(base Config) []Config {
	var out []Config
	add := func(mod func(c *Config)) {
		c := base
		c.PolicyConfig = rm.DefaultPolicyConfig()
		c.LeftoverOrder, c.ShareGrowth = base.LeftoverOrder, base.ShareGrowth
		mod(&c)
		out = append(out, c)
	}
	add(func(c *Config) { c.Policy = rm.PolicyDRF })
	add(func(c *Config) { c.Policy = rm.PolicySJF })
	for _, f := range FrontierTetrisF {
		add(func(c *Config) { c.Policy, c.TetrisFairness = rm.PolicyTetris, f })
	}
	for _, p := range FrontierPAltruism {
		for _, cp := range FrontierCaps {
			add(func(c *Config) { c.Policy, c.PAltruism, c.LeftoverCap = rm.PolicyCarbyne, p, cp })
		}
	}
	return out
}

// RunFrontier runs every configuration of FrontierConfigs on the jobs.
// step, when set, hears of each finished run.
func RunFrontier(base Config, jobs []*workload.Job, step func(done, total int)) (*Frontier, error) {
	cfgs := FrontierConfigs(base)
	f := &Frontier{}
	for i, c := range cfgs {
		r, err := Run(c, jobs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Policy, err)
		}
		s := r.Summarize()
		p := FrontierPoint{Policy: c.Policy, AvgJCT: s.AvgJCT, Jain: s.JainAvg, Makespan: s.Makespan}
		switch c.Policy {
		case rm.PolicyTetris:
			p.F, p.Knobs = c.TetrisFairness, fmt.Sprintf("f=%g", c.TetrisFairness)
		case rm.PolicyCarbyne:
			p.PAlt, p.Cap = c.PAltruism, c.LeftoverCap
			p.Knobs = fmt.Sprintf("P=%g cap=%g", c.PAltruism, c.LeftoverCap)
			p.Reference = c.PAltruism == 1
		}
		f.Points = append(f.Points, p)
		if step != nil {
			step(i+1, len(cfgs))
		}
	}
	f.judge()
	return f, nil
}

// judge marks each reference point with the baselines that dominate it,
// and sets Holds.
func (f *Frontier) judge() {
	f.Holds = true
	for i := range f.Points {
		ref := &f.Points[i]
		if !ref.Reference {
			continue
		}
		for _, b := range f.Points {
			if b.Policy == rm.PolicyCarbyne {
				continue
			}
			if b.AvgJCT < ref.AvgJCT && b.Jain > ref.Jain {
				ref.DominatedBy = append(ref.DominatedBy, b.Label())
			}
		}
		if ref.Cap == rm.DefaultLeftoverCap && len(ref.DominatedBy) > 0 {
			f.Holds = false
		}
	}
}

// WriteTable prints the frontier, fastest first, and the verdict.
func (f *Frontier) WriteTable(w io.Writer) error {
	pts := slices.Clone(f.Points)
	slices.SortStableFunc(pts, func(a, b FrontierPoint) int { return cmp.Compare(a.AvgJCT, b.AvgJCT) })
	fmt.Fprintln(w, "Performance against fairness: each configuration's average JCT and Jain's index (60 s windows)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "configuration\tavg JCT\tJain\tmakespan\tfaster and fairer baselines\t\n")
	for _, p := range pts {
		dom := ""
		switch {
		case p.Reference && len(p.DominatedBy) == 0:
			dom = "none"
		case p.Reference:
			dom = fmt.Sprint(p.DominatedBy)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\t%s\t\n", p.Label(), round(p.AvgJCT), p.Jain, round(p.Makespan), dom)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "holds: no baseline configuration is both faster and fairer than Carbyne at P(Altruism)=1"
	if !f.Holds {
		verdict = "does not hold: a baseline configuration is both faster and fairer than Carbyne at P(Altruism)=1"
	}
	_, err := fmt.Fprintf(w, "target (issue 15): %s, cap %g\n", verdict, float64(rm.DefaultLeftoverCap))
	return err
}
