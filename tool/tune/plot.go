package tune

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WritePlots writes the trade-off as two SVG files beside base
// (base-jain.svg, base-slowed.svg): average JCT against Jain's index,
// and against the share of jobs slowed beyond the objective, one point
// per setting labelled with it, the recommended one circled. It returns
// the paths written.
func WritePlots(base string, r *Result) ([]string, error) {
	if len(r.Rows) == 0 {
		return nil, errors.New("no settings to plot")
	}
	base = strings.TrimSuffix(base, ".svg")
	var paths []string
	for _, f := range []struct {
		suffix, xLabel string
		x              func(Row) float64
	}{
		{"jain", "Jain's index of fair shares (1 = perfectly fair)", func(r Row) float64 { return r.Jain }},
		{"slowed", fmt.Sprintf("jobs slowed more than %g%% against P(Altruism)=0 (%%)", 100*r.Objective.SlowdownOver),
			func(r Row) float64 { return 100 * r.Slowed }},
	} {
		data, err := tradeOff(r, f.xLabel, f.x)
		if err != nil {
			return paths, err
		}
		path := base + "-" + f.suffix + ".svg"
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return paths, err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func tradeOff(r *Result, xLabel string, x func(Row) float64) ([]byte, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("What-if over %d jobs: average JCT by setting", r.Jobs)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = "average JCT (s)"
	pts := make(plotter.XYs, len(r.Rows))
	labels := make([]string, len(r.Rows))
	for i, row := range r.Rows {
		pts[i] = plotter.XY{X: x(row), Y: row.AvgJCT.Seconds()}
		labels[i] = row.Setting.String()
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	sc.GlyphStyle.Radius = vg.Points(3)
	p.Add(sc)
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].XAlign = draw.XLeft
		lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(2)}
	}
	p.Add(lb)
	// Room on the right for the last point's label.
	xmin, xmax, _, _ := plotter.XYRange(pts)
	p.X.Max = xmax + 0.2*max(xmax-xmin, 0.05)
	if i := r.Recommended; i >= 0 {
		mark, err := plotter.NewScatter(plotter.XYs{pts[i]})
		if err != nil {
			return nil, err
		}
		mark.GlyphStyle.Shape = draw.RingGlyph{}
		mark.GlyphStyle.Radius = vg.Points(8)
		mark.GlyphStyle.Color = color.RGBA{R: 200, A: 255}
		p.Add(mark)
		p.Legend.Add("recommended: "+r.Objective.String(), mark)
		p.Legend.Top = true
	}
	w, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, "svg")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
