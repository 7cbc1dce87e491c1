package plot

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/loomrm/loom/tool/sim"
)

// WriteOutcome writes, into dir (created if missing), one SVG each:
//
//   - jct-cdf.svg: the CDF of job completion times, one line per policy;
//   - utilisation.svg: each window's utilisation of its most-used resource
//     kind, per policy;
//   - fairness.svg: Jain's index per window, per policy, leaving out the
//     windows with no active jobs;
//   - jct-by-size.svg, when the outcome has two size classes or more:
//     each policy's average JCT in each class of job size.
//
// It returns the paths written. Nothing is written if the outcome cannot
// be plotted whole.
func WriteOutcome(dir string, o *sim.Outcome) ([]string, error) {
	if err := checkOutcome(o); err != nil {
		return nil, err
	}
	builds := []struct {
		name  string
		build func(*sim.Outcome) (*figure, error)
	}{
		{"jct-cdf.svg", jctCDF},
		{"utilisation.svg", utilisationFigure},
		{"fairness.svg", fairnessFigure},
	}
	if len(o.Sizes) >= 2 {
		builds = append(builds, struct {
			name  string
			build func(*sim.Outcome) (*figure, error)
		}{"jct-by-size.svg", sizeFigure})
	}
	files := make([]file, 0, len(builds))
	for _, b := range builds {
		f, err := b.build(o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
		data, err := f.render()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
		files = append(files, file{b.name, data})
	}
	return writeFiles(dir, files)
}

func checkOutcome(o *sim.Outcome) error {
	if o == nil {
		return errors.New("no outcome to plot")
	}
	if len(o.Results) == 0 {
		return errors.New("the outcome has no results to plot")
	}
	seen := map[string]bool{}
	for i, r := range o.Results {
		switch {
		case r == nil:
			return fmt.Errorf("result %d is missing", i)
		case r.Policy == "":
			return fmt.Errorf("result %d has no policy name to label its line", i)
		case seen[r.Policy]:
			return fmt.Errorf("policy %q has two results, which would share a legend entry", r.Policy)
		case len(r.Jobs) == 0:
			return fmt.Errorf("policy %q: the result has no jobs to plot", r.Policy)
		case len(r.Windows) == 0:
			return fmt.Errorf("policy %q: the result has no windows to plot utilisation and fairness from", r.Policy)
		}
		seen[r.Policy] = true
		for k, w := range r.Windows {
			if k > 0 && w.Start <= r.Windows[k-1].Start {
				return fmt.Errorf("policy %q: window %d starts at %v, not after window %d at %v",
					r.Policy, k, w.Start, k-1, r.Windows[k-1].Start)
			}
			for kind, u := range w.Utilisation {
				if !finite(u) || u < 0 {
					return fmt.Errorf("policy %q: window %d has utilisation %v for resource %d", r.Policy, k, u, kind)
				}
			}
			if w.Jobs > 0 && !finite(w.Jain) {
				return fmt.Errorf("policy %q: window %d has Jain's index %v", r.Policy, k, w.Jain)
			}
		}
	}
	return nil
}

// jctCDF plots, for each policy, the fraction of all its jobs that
// completed within x. Failed jobs never complete, so a policy with
// failures tops out below 1, and its legend says how many failed: leaving
// them out of the total instead would make its curve look better than it
// was.
func jctCDF(o *sim.Outcome) (*figure, error) {
	type series struct {
		policy        string
		jcts          []float64
		failed, total int
	}
	all := make([]series, 0, len(o.Results))
	positive := true
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range o.Results {
		s := series{policy: r.Policy, total: len(r.Jobs)}
		for _, j := range r.Jobs {
			if j.Failed != "" {
				s.failed++
				continue
			}
			x := j.JCT().Seconds()
			if x < 0 {
				return nil, fmt.Errorf("policy %q: job %q finished at %v, before it arrived at %v", r.Policy, j.Name, j.Finish, j.Arrival)
			}
			positive = positive && x > 0
			s.jcts = append(s.jcts, x)
		}
		if len(s.jcts) == 0 {
			return nil, fmt.Errorf("policy %q: all %d jobs failed, so there is no completion time to plot", r.Policy, s.total)
		}
		slices.Sort(s.jcts)
		lo, hi = min(lo, s.jcts[0]), max(hi, s.jcts[len(s.jcts)-1])
		all = append(all, s)
	}

	// JCTs span orders of magnitude, so the x axis is logarithmic, unless a
	// zero JCT (instantaneous jobs in a synthetic trace) rules that out.
	xLabel := "job completion time (s, log scale)"
	if !positive {
		xLabel = "job completion time (s)"
	}
	title := "CDF of job completion time"
	if o.Jobs > 0 && o.Machines > 0 {
		title = fmt.Sprintf("CDF of job completion time (%d jobs, %d machines)", o.Jobs, o.Machines)
	}
	f := newFigure(title, xLabel, "fraction of jobs completed")
	var st styler
	for _, s := range all {
		n := float64(s.total)
		// Explicit corners draw the empirical CDF's steps, which a line
		// through (x, i/n) would smooth into a misleading slope.
		pts := make(plotter.XYs, 0, 2*len(s.jcts))
		for i, x := range s.jcts {
			pts = append(pts, plotter.XY{X: x, Y: float64(i) / n}, plotter.XY{X: x, Y: float64(i+1) / n})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", s.policy, err)
		}
		l.LineStyle = st.line(s.policy)
		name := s.policy
		if s.failed > 0 {
			name = fmt.Sprintf("%s (%d of %d jobs failed)", s.policy, s.failed, s.total)
		}
		f.add(name, l)
	}
	if positive {
		f.p.X.Scale = plot.LogScale{}
		f.p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		// Whole decades keep the log ticks labelled at both ends, and
		// stop the axis collapsing when every job took the same time.
		f.p.X.Min = math.Pow10(int(math.Floor(math.Log10(lo))))
		f.p.X.Max = math.Pow10(int(math.Ceil(math.Log10(hi))))
		if f.p.X.Max <= f.p.X.Min {
			f.p.X.Max = 10 * f.p.X.Min
		}
	}
	f.p.Y.Min, f.p.Y.Max = 0, 1
	return f, nil
}

func utilisationFigure(o *sim.Outcome) (*figure, error) {
	f := newFigure("Bottleneck utilisation per "+windowLabel(o)+" window",
		"simulated time (min)", "utilisation of the most-used resource kind (%)")
	var st styler
	top := 100.0
	for _, r := range o.Results {
		segs := steps(r.Windows, func(w sim.Window) (float64, bool) {
			return 100 * slices.Max(w.Utilisation[:]), true
		})
		if err := f.addSegments(r.Policy, st.line(r.Policy), segs); err != nil {
			return nil, err
		}
		for _, w := range r.Windows {
			top = max(top, 100*slices.Max(w.Utilisation[:]))
		}
	}
	// An axis from 0 to at least 100% lets two reports be compared by eye.
	f.p.Y.Min, f.p.Y.Max = 0, top
	return f, nil
}

func fairnessFigure(o *sim.Outcome) (*figure, error) {
	f := newFigure("Jain's fairness index per "+windowLabel(o)+" window",
		"simulated time (min); gaps are windows with no active jobs",
		"Jain's index over active jobs (unitless, 1 = fair)")
	var st styler
	for _, r := range o.Results {
		segs := steps(r.Windows, func(w sim.Window) (float64, bool) { return w.Jain, w.Jobs > 0 })
		if len(segs) == 0 {
			return nil, fmt.Errorf("policy %q: no window has an active job, so there is no Jain's index to plot", r.Policy)
		}
		if err := f.addSegments(r.Policy, st.line(r.Policy), segs); err != nil {
			return nil, err
		}
	}
	f.p.Y.Min, f.p.Y.Max = 0, 1
	return f, nil
}

// steps turns windows into horizontal segments, one per window, since a
// window's figure is an average over all of it; a window value leaves out
// breaks the line, so that nothing is drawn where there was nothing to
// measure.
func steps(ws []sim.Window, value func(sim.Window) (float64, bool)) []plotter.XYs {
	// The last window has no successor to end at; it is taken to be as
	// long as the one before it, or the simulator's default.
	last := time.Minute
	if n := len(ws); n >= 2 {
		last = ws[n-1].Start - ws[n-2].Start
	}
	var segs []plotter.XYs
	var cur plotter.XYs
	for i, w := range ws {
		v, ok := value(w)
		if !ok {
			if len(cur) > 0 {
				segs = append(segs, cur)
				cur = nil
			}
			continue
		}
		end := w.Start + last
		if i+1 < len(ws) {
			end = ws[i+1].Start
		}
		cur = append(cur, plotter.XY{X: w.Start.Minutes(), Y: v}, plotter.XY{X: end.Minutes(), Y: v})
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// windowLabel names the window length for titles, from the first result
// with two windows to measure it by.
func windowLabel(o *sim.Outcome) string {
	for _, r := range o.Results {
		if len(r.Windows) < 2 {
			continue
		}
		d := r.Windows[1].Start - r.Windows[0].Start
		if d%time.Minute == 0 {
			return fmt.Sprintf("%d min", d/time.Minute)
		}
		return fmt.Sprintf("%g s", d.Seconds())
	}
	return "simulation"
}

// sizeFigure plots each policy's average JCT in each size class, the
// classes on the x axis smallest first, the y axis from 0 so that the
// policies' heights read as the ratios they are.
func sizeFigure(o *sim.Outcome) (*figure, error) {
	n := len(o.Sizes[0].AvgJCT)
	lines := make([]plotter.XYs, n)
	var ticks []plot.Tick
	for c, sc := range o.Sizes {
		if len(sc.AvgJCT) != n {
			return nil, fmt.Errorf("size class %d has %d policies' averages, class 1 has %d", c+1, len(sc.AvgJCT), n)
		}
		for i, p := range sc.AvgJCT {
			if p.Policy != o.Sizes[0].AvgJCT[i].Policy {
				return nil, fmt.Errorf("size class %d lists policy %q where class 1 lists %q", c+1, p.Policy, o.Sizes[0].AvgJCT[i].Policy)
			}
			if !finite(p.AvgJCT) || p.AvgJCT < 0 {
				return nil, fmt.Errorf("size class %d: policy %q has average JCT %v", c+1, p.Policy, p.AvgJCT)
			}
			lines[i] = append(lines[i], plotter.XY{X: float64(c + 1), Y: p.AvgJCT})
		}
		ticks = append(ticks, plot.Tick{Value: float64(c + 1),
			Label: fmt.Sprintf("%d: %s-%s", c+1, sim.WorkFigure(sc.MinWork), sim.WorkFigure(sc.MaxWork))})
	}
	f := newFigure("Average JCT by job size", "size class: total work (task-seconds), smallest first", "average JCT (s)")
	f.p.X.Tick.Marker = plot.ConstantTicks(ticks)
	f.p.Y.Min = 0
	var st styler
	for i, line := range lines {
		policy := o.Sizes[0].AvgJCT[i].Policy
		l, sc, err := plotter.NewLinePoints(line)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", policy, err)
		}
		l.LineStyle = st.line(policy)
		sc.GlyphStyle = st.glyph(policy)
		f.add(policy, l, sc)
	}
	return f, nil
}
