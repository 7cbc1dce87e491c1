package plot

import (
	"errors"
	"fmt"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LoadSeries is a load test's heartbeat round trips, second by second
// (`loom bench load`), with the target they are held to.
type LoadSeries struct {
	Title    string
	Target   time.Duration
	P50, P99 []time.Duration
}

// WriteLoad draws a load test's heartbeat p50 and p99 over the run, on a
// log scale, with the target as a dashed line, as name.svg in dir.
func WriteLoad(dir, name string, s LoadSeries) ([]string, error) {
	if len(s.P50) == 0 || len(s.P50) != len(s.P99) {
		return nil, fmt.Errorf("a load series needs as many p50s as p99s, and some (%d, %d)", len(s.P50), len(s.P99))
	}
	if s.Target <= 0 {
		return nil, errors.New("a load series needs a positive target")
	}
	f := newFigure(s.Title, "second of the run", "heartbeat round trip (ms, log scale)")
	f.p.Y.Scale = plot.LogScale{}
	f.p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	// A log axis has no zero: a round trip under 10 µs is drawn at 10 µs.
	ms := func(d time.Duration) float64 { return max(float64(d)/float64(time.Millisecond), 0.01) }
	var st styler
	for _, q := range []struct {
		name string
		ds   []time.Duration
	}{{"p50", s.P50}, {"p99", s.P99}} {
		xy := make(plotter.XYs, len(q.ds))
		for i, d := range q.ds {
			xy[i] = plotter.XY{X: float64(i), Y: ms(d)}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q.name, err)
		}
		l.LineStyle = st.line(q.name)
		f.add(q.name, l)
	}
	target := hline{y: ms(s.Target), style: draw.LineStyle{Color: st.line("target").Color, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}}
	f.add(fmt.Sprintf("target p99 %v", s.Target), target)
	data, err := f.render()
	if err != nil {
		return nil, err
	}
	return writeFiles(dir, []file{{name: name + ".svg", data: data}})
}
