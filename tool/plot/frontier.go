package plot

import (
	"errors"
	"fmt"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/loomrm/loom/tool/sim"
)

// WriteFrontier writes frontier.svg: every configuration's average JCT
// against its Jain's index, one series per policy, each series joined in
// the order of its knob (Tetris by f, Carbyne by P(Altruism) then cap)
// and labelled with its knobs. Down and to the right is faster and
// fairer.
func WriteFrontier(dir string, f *sim.Frontier) ([]string, error) {
	if f == nil || len(f.Points) == 0 {
		return nil, errors.New("no frontier points to plot")
	}
	fig := newFigure("Performance against fairness", "Jain's fairness index (60 s windows; right is fairer)",
		"average JCT (s; lower is faster)")
	var order []string
	series := map[string]plotter.XYs{}
	var labels []string
	for _, p := range f.Points {
		if !finite(p.Jain) || p.AvgJCT <= 0 {
			return nil, fmt.Errorf("%s: Jain %v, average JCT %v cannot be plotted", p.Label(), p.Jain, p.AvgJCT)
		}
		name := p.Policy
		if p.Reference {
			name = "carbyne P=1"
		}
		if _, ok := series[name]; !ok {
			order = append(order, name)
		}
		series[name] = append(series[name], plotter.XY{X: p.Jain, Y: p.AvgJCT.Seconds()})
		labels = append(labels, p.Knobs)
	}
	var st styler
	for _, name := range order {
		pts := series[name]
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		sc.GlyphStyle = st.glyph(name)
		if name == "carbyne P=1" {
			sc.GlyphStyle.Radius = vg.Points(4.5)
		}
		fig.add(name, sc)
	}
	var all plotter.XYs
	for _, p := range f.Points {
		all = append(all, plotter.XY{X: p.Jain, Y: p.AvgJCT.Seconds()})
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: all, Labels: cleanAll(labels)})
	if err != nil {
		return nil, err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = vg.Points(6)
	}
	lb.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(2)}
	fig.p.Add(lb)
	data, err := fig.render()
	if err != nil {
		return nil, err
	}
	return writeFiles(dir, []file{{"frontier.svg", data}})
}

func cleanAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = clean(s)
	}
	return out
}
