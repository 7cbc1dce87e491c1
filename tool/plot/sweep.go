package plot

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/loomrm/loom/tool/sim"
)

// knob says how a sweep's x axis reads. Only the knobs sim.RunSweeps
// varies are known: each needs its own words and units, and the knob
// names the file, so an unknown one could not be labelled honestly.
type knob struct {
	title, xLabel string
	tick          func(x float64) string
}

var knobs = map[string]knob{
	"load": {
		title:  "load",
		xLabel: "load (L×: the cluster keeps 1/L of its machines)",
		tick:   func(x float64) string { return fmt.Sprintf("%gx", x) },
	},
	"misestimate": {
		title:  "misestimation",
		xLabel: "misestimation of task demands and durations (%)",
		tick: func(x float64) string {
			if x == 0 {
				return "0"
			}
			return fmt.Sprintf("%+g", x)
		},
	},
	"p-altruism": {
		title:  "P(Altruism)",
		xLabel: "P(Altruism) (0 = never altruistic, 1 = always)",
		tick:   func(x float64) string { return fmt.Sprintf("%g", x) },
	},
}

// WriteSweeps writes sweep-<knob>.svg for each sweep: Carbyne's factor of
// improvement in average JCT against each baseline as the knob varies,
// with a dashed reference line at 1 (no improvement). It returns the paths
// written. Nothing is written if any sweep cannot be plotted.
func WriteSweeps(dir string, sweeps []sim.Sweep) ([]string, error) {
	if len(sweeps) == 0 {
		return nil, errors.New("no sweeps to plot")
	}
	seen := map[string]bool{}
	files := make([]file, 0, len(sweeps))
	for _, s := range sweeps {
		k, ok := knobs[s.Knob]
		if !ok {
			return nil, fmt.Errorf("sweep over unknown knob %q (want load, misestimate or p-altruism)", s.Knob)
		}
		if seen[s.Knob] {
			return nil, fmt.Errorf("two sweeps over %q would write the same file", s.Knob)
		}
		seen[s.Knob] = true
		f, err := sweepFigure(s, k)
		if err != nil {
			return nil, fmt.Errorf("sweep over %q: %w", s.Knob, err)
		}
		data, err := f.render()
		if err != nil {
			return nil, fmt.Errorf("sweep over %q: %w", s.Knob, err)
		}
		files = append(files, file{"sweep-" + s.Knob + ".svg", data})
	}
	return writeFiles(dir, files)
}

func sweepFigure(s sim.Sweep, k knob) (*figure, error) {
	if len(s.Points) == 0 {
		return nil, errors.New("no points to plot")
	}
	points := slices.Clone(s.Points)
	slices.SortStableFunc(points, func(a, b sim.SweepPoint) int { return cmp.Compare(a.X, b.X) })

	// Every point must compare against the same baselines: a line missing
	// a point would quietly join its neighbours across the gap.
	var baselines []string
	for _, imp := range points[0].Improvements {
		if imp.Against == "" {
			return nil, fmt.Errorf("at %s an improvement names no baseline", k.tick(points[0].X))
		}
		if slices.Contains(baselines, imp.Against) {
			return nil, fmt.Errorf("at %s baseline %q appears twice", k.tick(points[0].X), imp.Against)
		}
		baselines = append(baselines, imp.Against)
	}
	if len(baselines) == 0 {
		return nil, fmt.Errorf("at %s there are no improvements to plot", k.tick(points[0].X))
	}
	lines := make([]plotter.XYs, len(baselines))
	ticks := make(plot.ConstantTicks, 0, len(points))
	for i, p := range points {
		if !finite(p.X) {
			return nil, fmt.Errorf("point %d has x = %v", i, p.X)
		}
		if i > 0 && p.X == points[i-1].X {
			return nil, fmt.Errorf("two points at %s", k.tick(p.X))
		}
		if len(p.Improvements) != len(baselines) {
			return nil, fmt.Errorf("at %s there are %d baselines, but %d at %s",
				k.tick(p.X), len(p.Improvements), len(baselines), k.tick(points[0].X))
		}
		for _, imp := range p.Improvements {
			b := slices.Index(baselines, imp.Against)
			if b < 0 {
				return nil, fmt.Errorf("at %s baseline %q appears, which %s lacks", k.tick(p.X), imp.Against, k.tick(points[0].X))
			}
			if len(lines[b]) == i+1 {
				return nil, fmt.Errorf("at %s baseline %q appears twice", k.tick(p.X), imp.Against)
			}
			// NaN is what sim.Compare gives when Carbyne's average JCT is
			// zero; it has no place on the axis.
			if !finite(imp.Average) {
				return nil, fmt.Errorf("at %s the improvement against %q is %v", k.tick(p.X), imp.Against, imp.Average)
			}
			lines[b] = append(lines[b], plotter.XY{X: p.X, Y: imp.Average})
		}
		ticks = append(ticks, plot.Tick{Value: p.X, Label: k.tick(p.X)})
	}

	f := newFigure("Carbyne's improvement in average JCT by "+k.title, k.xLabel,
		"factor of improvement in average JCT (×, baseline ÷ Carbyne)")
	// Ticks only at the swept values, in the knob's own terms: values in
	// between were never run.
	f.p.X.Tick.Marker = ticks
	var st styler
	for b, base := range baselines {
		l, sc, err := plotter.NewLinePoints(lines[b])
		if err != nil {
			return nil, fmt.Errorf("baseline %q: %w", base, err)
		}
		l.LineStyle = st.line(base)
		sc.GlyphStyle = st.glyph(base)
		f.add("vs "+base, l, sc)
	}
	f.add("no improvement (1×)", hline{y: 1, style: refStyle})
	// From 0, so that a line's height against the reference reads as the
	// ratio it is.
	f.p.Y.Min = 0
	return f, nil
}
