// Package plot renders the simulator's results as SVG figures in the
// shapes of the Carbyne paper's: JCT CDFs, utilisation and fairness over
// time, and the factor-of-improvement sweeps.
//
// Every figure is rendered in memory before any file is written, so an
// input the package rejects leaves the directory as it was rather than
// half updated. The SVG is deterministic: the same input gives the same
// bytes, so that reports can be diffed.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/loomrm/loom/tool/sim"
)

// The page size suits a report or a slide; the legend takes a strip on the
// right so that it never hides a line.
const (
	pageWidth  = 9 * vg.Inch
	pageHeight = 5 * vg.Inch
	margin     = 6
	legendGap  = 12
)

// file is one rendered figure waiting to be written.
type file struct {
	name string
	data []byte
}

// figure is a plot and its legend, kept apart so that the legend can be
// drawn outside the data area.
type figure struct {
	p      *plot.Plot
	legend plot.Legend
}

func newFigure(title, xLabel, yLabel string) *figure {
	p := plot.New()
	p.BackgroundColor = nil
	p.Title.Text = clean(title)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = clean(xLabel)
	p.Y.Label.Text = clean(yLabel)
	p.Add(plotter.NewGrid())
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.Padding = vg.Points(4)
	l.ThumbnailWidth = vg.Points(28)
	return &figure{p: p, legend: l}
}

func (f *figure) add(name string, ps ...plot.Plotter) {
	f.p.Add(ps...)
	var thumbs []plot.Thumbnailer
	for _, p := range ps {
		if t, ok := p.(plot.Thumbnailer); ok {
			thumbs = append(thumbs, t)
		}
	}
	f.legend.Add(clean(name), thumbs...)
}

// addSegments draws one policy's broken line under a single legend entry.
func (f *figure) addSegments(policy string, style draw.LineStyle, segs []plotter.XYs) error {
	for i, seg := range segs {
		l, err := plotter.NewLine(seg)
		if err != nil {
			return fmt.Errorf("policy %q: %w", policy, err)
		}
		l.LineStyle = style
		if i == 0 {
			f.add(policy, l)
		} else {
			f.p.Add(l)
		}
	}
	return nil
}

func (f *figure) render() ([]byte, error) {
	svg := vgsvg.New(pageWidth, pageHeight)
	if err := f.draw(draw.New(svg)); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := svg.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (f *figure) draw(page draw.Canvas) error {
	// The whole page is painted, not just the plot's own area, or the
	// legend would sit on a transparent strip that dark viewers show black.
	page.SetColor(color.White)
	page.Fill(page.Rectangle.Path())
	c := draw.Crop(page, margin, -margin, margin, -margin)
	legendWidth := f.legend.Rectangle(c).Size().X
	if legendWidth+legendGap >= c.Size().X/2 {
		return fmt.Errorf("legend of %q is too wide for the page", f.p.Title.Text)
	}
	f.p.Draw(draw.Crop(c, 0, -(legendWidth + legendGap), 0, 0))
	// Align the legend's first entry with the top of the data area, below
	// the title.
	legend := f.legend
	legend.YOffs = -(f.p.Title.TextStyle.Rectangle(f.p.Title.Text).Size().Y + f.p.Title.Padding)
	legend.Draw(draw.Crop(c, c.Size().X-legendWidth, 0, 0, 0))
	return nil
}

// writeFiles writes the rendered figures into dir and returns their paths.
func writeFiles(dir string, files []file) ([]string, error) {
	if dir == "" {
		return nil, errors.New("no output directory given")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(files))
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, f.data, 0o644); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// Colours are the Okabe–Ito palette, told apart by most colour-blind
// readers; dashes and glyphs tell lines apart again in greyscale. The
// known policies keep one style in every figure, so that DRF's line in the
// CDF and "vs drf" in a sweep look alike.
var (
	palette = []color.Color{
		color.RGBA{0x00, 0x72, 0xB2, 0xFF}, // blue
		color.RGBA{0xE6, 0x9F, 0x00, 0xFF}, // orange
		color.RGBA{0x00, 0x9E, 0x73, 0xFF}, // green
		color.RGBA{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
		color.RGBA{0xCC, 0x79, 0xA7, 0xFF}, // purple
		color.RGBA{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
		color.RGBA{0x00, 0x00, 0x00, 0xFF},
	}
	dashes = [][]vg.Length{
		{vg.Points(6), vg.Points(3)},
		{vg.Points(2), vg.Points(2)},
		{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)},
		nil,
		{vg.Points(4), vg.Points(4)},
		{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2), vg.Points(2), vg.Points(2)},
		{vg.Points(1), vg.Points(3)},
	}
	glyphs = []draw.GlyphDrawer{
		draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{},
		draw.RingGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{},
	}
	refStyle = draw.LineStyle{Color: color.Gray{0x60}, Width: vg.Points(1),
		Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
)

// styler hands out one style per policy: the known policies by their
// place in sim.Policies, others in the order they are first seen.
type styler struct{ others []string }

func (s *styler) index(policy string) int {
	if i := slices.Index(sim.Policies, policy); i >= 0 {
		return i
	}
	i := slices.Index(s.others, policy)
	if i < 0 {
		i = len(s.others)
		s.others = append(s.others, policy)
	}
	return len(sim.Policies) + i
}

func (s *styler) line(policy string) draw.LineStyle {
	i := s.index(policy)
	return draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1.6), Dashes: dashes[i%len(dashes)]}
}

func (s *styler) glyph(policy string) draw.GlyphStyle {
	i := s.index(policy)
	return draw.GlyphStyle{Color: palette[i%len(palette)], Radius: vg.Points(3), Shape: glyphs[i%len(glyphs)]}
}

// hline is a horizontal reference line across the whole data area; a
// plotter.Line would only span the data's x range, which is a point when a
// sweep has one point.
type hline struct {
	y     float64
	style draw.LineStyle
}

func (h hline) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(h.y)
	c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
}

// DataRange makes sure the y axis reaches the line, and leaves x alone.
func (h hline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), h.y, h.y
}

func (h hline) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(h.style, c.Min.X, y, c.Max.X, y)
}

// clean makes a string safe for an SVG text node: the SVG writer escapes
// markup, but XML 1.0 also forbids invalid UTF-8 and most control
// characters, which a policy or job name from a trace could carry.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
