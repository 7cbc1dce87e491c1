package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/tool/sim"
)

func job(name string, arrival, finish time.Duration) sim.JobResult {
	return sim.JobResult{Name: name, Arrival: arrival, Finish: finish, Tasks: 4}
}

func window(minute int, u fairness.Vector, jain float64, jobs int) sim.Window {
	return sim.Window{Start: time.Duration(minute) * time.Minute, Utilisation: u, Jain: jain, Jobs: jobs}
}

// result builds a small run whose windows include one with no active jobs,
// so that the fairness line has a gap.
func result(policy string, scale time.Duration) *sim.Result {
	r := &sim.Result{Policy: policy, Makespan: 5 * time.Minute}
	for i := range 5 {
		r.Jobs = append(r.Jobs, job(string(rune('a'+i)), time.Duration(i)*10*time.Second,
			time.Duration(i)*10*time.Second+time.Duration(i+1)*scale))
	}
	var u fairness.Vector
	u[fairness.VCores], u[fairness.Memory] = 0.8, 0.5
	r.Windows = []sim.Window{
		window(0, u, 0.9, 3),
		window(1, u.Scale(0.5), 0.7, 2),
		window(2, fairness.Vector{}, 0, 0),
		window(3, u.Scale(0.25), 1, 1),
	}
	return r
}

func outcome() *sim.Outcome {
	o := &sim.Outcome{Machines: 10, Jobs: 5}
	for i, p := range []string{"drf", "tetris", "carbyne"} {
		o.Results = append(o.Results, result(p, time.Duration(i+1)*20*time.Second))
	}
	o.Results[0].Jobs[4].Failed = "stage map: task failed 4 times"
	return o
}

func sweeps() []sim.Sweep {
	point := func(x, base float64) sim.SweepPoint {
		return sim.SweepPoint{X: x, Improvements: []sim.Improvement{
			{Against: "drf", Average: 1.5 * base},
			{Against: "tetris", Average: 1.1 * base},
		}}
	}
	return []sim.Sweep{
		{Knob: "load", Points: []sim.SweepPoint{point(1, 1), point(2, 1.2), point(4, 1.4), point(6, 1.3)}},
		{Knob: "misestimate", Points: []sim.SweepPoint{point(-50, 0.9), point(0, 1), point(50, 0.8)}},
		{Knob: "p-altruism", Points: []sim.SweepPoint{point(0, 0.7), point(0.5, 1), point(1, 1.2)}},
	}
}

// texts decodes the whole SVG, failing the test if it is not well-formed
// XML, and returns the contents of its <text> elements.
func texts(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	var out []string
	var root string
	inText := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				out = append(out, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element is %q, want svg", path, root)
	}
	return out
}

// has reports whether some text element starts with want; legend entries
// start with the policy's name.
func has(ts []string, want string) bool {
	return slices.ContainsFunc(ts, func(s string) bool { return strings.HasPrefix(s, want) })
}

func checkFiles(t *testing.T, dir string, paths []string, names ...string) {
	t.Helper()
	var want []string
	for _, n := range names {
		want = append(want, filepath.Join(dir, n))
	}
	if !slices.Equal(paths, want) {
		t.Fatalf("paths = %q, want %q", paths, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(names) {
		t.Errorf("%s holds %d files, want %d", dir, len(entries), len(names))
	}
}

func TestWriteOutcome(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report", "plots")
	paths, err := WriteOutcome(dir, outcome())
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, paths, "jct-cdf.svg", "utilisation.svg", "fairness.svg")
	labels := map[string][]string{
		"jct-cdf.svg":     {"CDF of job completion time", "job completion time (s", "fraction of jobs"},
		"utilisation.svg": {"Bottleneck utilisation per 1 min window", "simulated time (min)", "(%)"},
		"fairness.svg":    {"Jain's fairness index per 1 min window", "simulated time (min)", "Jain's index"},
	}
	for _, p := range paths {
		ts := texts(t, p)
		for _, policy := range []string{"drf", "tetris", "carbyne"} {
			if !has(ts, policy) {
				t.Errorf("%s: no legend entry for %s in %q", filepath.Base(p), policy, ts)
			}
		}
		for _, l := range labels[filepath.Base(p)] {
			if !slices.ContainsFunc(ts, func(s string) bool { return strings.Contains(s, l) }) {
				t.Errorf("%s: no text contains %q: %q", filepath.Base(p), l, ts)
			}
		}
	}
	if ts := texts(t, paths[0]); !has(ts, "drf (1 of 5 jobs failed)") {
		t.Errorf("the CDF's legend does not say that a drf job failed: %q", ts)
	}
}

func TestWriteSweeps(t *testing.T) {
	dir := t.TempDir()
	paths, err := WriteSweeps(dir, sweeps())
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, paths, "sweep-load.svg", "sweep-misestimate.svg", "sweep-p-altruism.svg")
	ticks := [][]string{{"1x", "2x", "4x", "6x"}, {"-50", "0", "+50"}, {"0", "0.5", "1"}}
	for i, p := range paths {
		ts := texts(t, p)
		for _, want := range []string{"vs drf", "vs tetris", "no improvement (1×)"} {
			if !has(ts, want) {
				t.Errorf("%s: no legend entry %q in %q", filepath.Base(p), want, ts)
			}
		}
		for _, tick := range ticks[i] {
			if !slices.Contains(ts, tick) {
				t.Errorf("%s: no tick labelled %q in %q", filepath.Base(p), tick, ts)
			}
		}
		if !has(ts, "factor of improvement in average JCT") {
			t.Errorf("%s: the y axis does not say what it shows: %q", filepath.Base(p), ts)
		}
	}
}

func TestDeterministic(t *testing.T) {
	write := func() map[string][]byte {
		dir := t.TempDir()
		a, err := WriteOutcome(dir, outcome())
		if err != nil {
			t.Fatal(err)
		}
		b, err := WriteSweeps(dir, sweeps())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, p := range append(a, b...) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(p)] = data
		}
		return out
	}
	first, second := write(), write()
	if len(first) != 6 {
		t.Fatalf("wrote %d files, want 6", len(first))
	}
	for name, data := range first {
		if !bytes.Equal(data, second[name]) {
			t.Errorf("%s differs between two writes of the same input", name)
		}
	}
}

// Names from a trace may carry markup or control characters; the SVG must
// still parse and the name still be legible.
func TestNamesAreEscaped(t *testing.T) {
	o := outcome()
	o.Results[1].Policy = "a<b>&\"c\x01"
	paths, err := WriteOutcome(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if ts := texts(t, p); !has(ts, "a<b>&\"c\uFFFD") {
			t.Errorf("%s: the escaped name is missing: %q", filepath.Base(p), ts)
		}
	}
}

// A zero JCT rules out the log scale; it must fall back, not panic.
func TestZeroJCT(t *testing.T) {
	o := outcome()
	o.Results[2].Jobs[0].Finish = o.Results[2].Jobs[0].Arrival
	paths, err := WriteOutcome(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	if ts := texts(t, paths[0]); !slices.Contains(ts, "job completion time (s)") {
		t.Errorf("the CDF's x axis is not linear: %q", ts)
	}
}

func TestOutcomeErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*sim.Outcome) *sim.Outcome
		want   string
	}{
		{"nil", func(*sim.Outcome) *sim.Outcome { return nil }, "no outcome"},
		{"no results", func(o *sim.Outcome) *sim.Outcome { o.Results = nil; return o }, "no results"},
		{"nil result", func(o *sim.Outcome) *sim.Outcome { o.Results[1] = nil; return o }, "result 1 is missing"},
		{"no policy", func(o *sim.Outcome) *sim.Outcome { o.Results[1].Policy = ""; return o }, "no policy name"},
		{"same policy twice", func(o *sim.Outcome) *sim.Outcome { o.Results[1].Policy = "drf"; return o }, "two results"},
		{"no jobs", func(o *sim.Outcome) *sim.Outcome { o.Results[2].Jobs = nil; return o }, `"carbyne": the result has no jobs`},
		{"no windows", func(o *sim.Outcome) *sim.Outcome { o.Results[1].Windows = nil; return o }, `"tetris": the result has no windows`},
		{"windows out of order", func(o *sim.Outcome) *sim.Outcome {
			o.Results[0].Windows[2].Start = 0
			return o
		}, "not after window 1"},
		{"NaN utilisation", func(o *sim.Outcome) *sim.Outcome {
			o.Results[0].Windows[1].Utilisation[fairness.Disk] = math.NaN()
			return o
		}, "utilisation NaN"},
		{"NaN Jain", func(o *sim.Outcome) *sim.Outcome { o.Results[0].Windows[1].Jain = math.NaN(); return o }, "Jain's index NaN"},
		{"all jobs failed", func(o *sim.Outcome) *sim.Outcome {
			for i := range o.Results[1].Jobs {
				o.Results[1].Jobs[i].Failed = "boom"
			}
			return o
		}, "all 5 jobs failed"},
		{"finished before arrival", func(o *sim.Outcome) *sim.Outcome {
			o.Results[1].Jobs[3].Finish = 0
			return o
		}, "before it arrived"},
		{"no active window", func(o *sim.Outcome) *sim.Outcome {
			for i := range o.Results[2].Windows {
				o.Results[2].Windows[i].Jobs = 0
			}
			return o
		}, "no window has an active job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			paths, err := WriteOutcome(dir, tc.change(outcome()))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if paths != nil {
				t.Errorf("paths = %q, want none", paths)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a rejected outcome still touched %s (stat: %v)", dir, err)
			}
		})
	}
}

func TestSweepErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func([]sim.Sweep) []sim.Sweep
		want   string
	}{
		{"none", func([]sim.Sweep) []sim.Sweep { return nil }, "no sweeps"},
		{"unknown knob", func(s []sim.Sweep) []sim.Sweep { s[1].Knob = "../x"; return s }, `unknown knob "../x"`},
		{"knob twice", func(s []sim.Sweep) []sim.Sweep { s[2].Knob = "load"; return s }, "two sweeps"},
		{"no points", func(s []sim.Sweep) []sim.Sweep { s[0].Points = nil; return s }, "no points"},
		{"no improvements", func(s []sim.Sweep) []sim.Sweep {
			for i := range s[0].Points {
				s[0].Points[i].Improvements = nil
			}
			return s
		}, "no improvements"},
		{"NaN improvement", func(s []sim.Sweep) []sim.Sweep {
			s[1].Points[2].Improvements[1].Average = math.NaN()
			return s
		}, `+50 the improvement against "tetris" is NaN`},
		{"missing baseline", func(s []sim.Sweep) []sim.Sweep {
			s[0].Points[3].Improvements = s[0].Points[3].Improvements[:1]
			return s
		}, "there are 1 baselines, but 2"},
		{"other baseline", func(s []sim.Sweep) []sim.Sweep {
			s[0].Points[2].Improvements[1].Against = "sjf"
			return s
		}, `baseline "sjf" appears`},
		{"baseline twice", func(s []sim.Sweep) []sim.Sweep {
			s[0].Points[2].Improvements[1].Against = "drf"
			return s
		}, `baseline "drf" appears twice`},
		{"same x twice", func(s []sim.Sweep) []sim.Sweep { s[2].Points[1].X = 1; return s }, "two points at 1"},
		{"NaN x", func(s []sim.Sweep) []sim.Sweep { s[2].Points[1].X = math.NaN(); return s }, "x = NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			paths, err := WriteSweeps(dir, tc.change(sweeps()))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if paths != nil {
				t.Errorf("paths = %q, want none", paths)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("rejected sweeps still touched %s (stat: %v)", dir, err)
			}
		})
	}
}

// Points may come in any order; the line must run left to right, and the
// input must be left as it was.
func TestSweepPointsSorted(t *testing.T) {
	s := sweeps()
	slices.Reverse(s[0].Points)
	before := slices.Clone(s[0].Points)
	dir := t.TempDir()
	if _, err := WriteSweeps(dir, s[:1]); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(before, s[0].Points, func(a, b sim.SweepPoint) bool { return a.X == b.X }) {
		t.Error("WriteSweeps reordered its input")
	}
	got, err := os.ReadFile(filepath.Join(dir, "sweep-load.svg"))
	if err != nil {
		t.Fatal(err)
	}
	sorted := t.TempDir()
	if _, err := WriteSweeps(sorted, sweeps()[:1]); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(sorted, "sweep-load.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("reversed points drew a different figure from sorted ones")
	}
}

func TestWriteFrontier(t *testing.T) {
	dir := t.TempDir()
	f := &sim.Frontier{Points: []sim.FrontierPoint{
		{Policy: "drf", AvgJCT: 48 * time.Second, Jain: 0.82},
		{Policy: "tetris", Knobs: "f=0.5", F: 0.5, AvgJCT: 38 * time.Second, Jain: 0.76},
		{Policy: "carbyne", Knobs: "P=1 cap=2", PAlt: 1, Cap: 2, AvgJCT: 38 * time.Second, Jain: 0.77, Reference: true},
		{Policy: "carbyne", Knobs: "P=0.5 cap=2", PAlt: 0.5, Cap: 2, AvgJCT: 42 * time.Second, Jain: 0.77},
	}}
	paths, err := WriteFrontier(dir, f)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, paths, "frontier.svg")
	ts := texts(t, paths[0])
	for _, want := range []string{"Performance against fairness", "drf", "tetris", "carbyne", "carbyne P=1", "f=0.5", "P=0.5 cap=2"} {
		if !has(ts, want) {
			t.Errorf("frontier.svg lacks %q: %q", want, ts)
		}
	}
	if _, err := WriteFrontier(dir, &sim.Frontier{}); err == nil {
		t.Error("an empty frontier was plotted")
	}
	bad := &sim.Frontier{Points: []sim.FrontierPoint{{Policy: "drf", Jain: math.NaN(), AvgJCT: time.Second}}}
	if _, err := WriteFrontier(t.TempDir(), bad); err == nil {
		t.Error("a NaN Jain's index was plotted")
	}
}

func TestWriteLoad(t *testing.T) {
	dir := t.TempDir()
	s := LoadSeries{Title: "load", Target: 10 * time.Millisecond,
		P50: []time.Duration{0, time.Millisecond, 2 * time.Millisecond}, P99: []time.Duration{5 * time.Millisecond, 40 * time.Millisecond, 900 * time.Millisecond}}
	paths, err := WriteLoad(dir, "load-3", s)
	if err != nil || len(paths) != 1 {
		t.Fatalf("%v, %v", paths, err)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "p50", "p99", "target p99 10ms", "log scale"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the figure lacks %q", want)
		}
	}
	for _, bad := range []LoadSeries{
		{Title: "x", Target: time.Millisecond},
		{Title: "x", Target: time.Millisecond, P50: []time.Duration{1}, P99: []time.Duration{1, 2}},
		{Title: "x", P50: []time.Duration{1}, P99: []time.Duration{1}},
	} {
		if _, err := WriteLoad(dir, "bad", bad); err == nil {
			t.Errorf("%+v drew a figure", bad)
		}
	}
}

func sized() *sim.Outcome {
	o := outcome()
	for c, w := range [][2]float64{{15, 2300}, {2300, 25500}} {
		sc := sim.SizeClass{Jobs: 2, MinWork: w[0], MaxWork: w[1]}
		for i, p := range []string{"drf", "tetris", "carbyne"} {
			sc.AvgJCT = append(sc.AvgJCT, sim.PolicyJCT{Policy: p, AvgJCT: float64((c + 1) * (i + 2) * 10)})
		}
		o.Sizes = append(o.Sizes, sc)
	}
	return o
}

func TestJCTBySize(t *testing.T) {
	dir := t.TempDir()
	paths, err := WriteOutcome(dir, sized())
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, paths, "jct-cdf.svg", "utilisation.svg", "fairness.svg", "jct-by-size.svg")
	ts := texts(t, paths[3])
	for _, want := range []string{"Average JCT by job size", "drf", "tetris", "carbyne", "1: 15-2.3k", "2: 2.3k-25.5k", "average JCT (s)"} {
		if !has(ts, want) {
			t.Errorf("jct-by-size.svg: no text starting %q in %q", want, ts)
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*sim.Outcome)
		want   string
	}{
		{"a policy missing", func(o *sim.Outcome) { o.Sizes[1].AvgJCT = o.Sizes[1].AvgJCT[:2] }, "class 2 has 2 policies' averages, class 1 has 3"},
		{"policies swapped", func(o *sim.Outcome) {
			o.Sizes[1].AvgJCT[0], o.Sizes[1].AvgJCT[1] = o.Sizes[1].AvgJCT[1], o.Sizes[1].AvgJCT[0]
		}, `class 2 lists policy "tetris" where class 1 lists "drf"`},
		{"NaN", func(o *sim.Outcome) { o.Sizes[0].AvgJCT[2].AvgJCT = math.NaN() }, `policy "carbyne" has average JCT NaN`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := sized()
			tc.change(o)
			dir := filepath.Join(t.TempDir(), "out")
			if _, err := WriteOutcome(dir, o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a rejected outcome still touched %s", dir)
			}
		})
	}
}
