package sim

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFrontierJudge(t *testing.T) {
	ref := func(cp float64, jct time.Duration, jain float64) FrontierPoint {
		return FrontierPoint{Policy: "carbyne", PAlt: 1, Cap: cp, Knobs: "P=1 cap=" + map[float64]string{0: "0", 2: "2"}[cp], AvgJCT: jct, Jain: jain, Reference: true}
	}
	base := func(name string, jct time.Duration, jain float64) FrontierPoint {
		return FrontierPoint{Policy: name, AvgJCT: jct, Jain: jain}
	}
	tests := []struct {
		name  string
		pts   []FrontierPoint
		holds bool
		dom   [][]string // per point
	}{
		{"faster but less fair does not dominate",
			[]FrontierPoint{ref(2, 40*sec, 0.8), base("tetris", 30*sec, 0.7), base("drf", 50*sec, 0.9)},
			true, [][]string{nil, nil, nil}},
		{"faster and fairer dominates",
			[]FrontierPoint{ref(2, 40*sec, 0.8), base("drf", 39*sec, 0.81)},
			false, [][]string{{"drf"}, nil}},
		{"equal is not dominance",
			[]FrontierPoint{ref(2, 40*sec, 0.8), base("drf", 40*sec, 0.8)},
			true, [][]string{nil, nil}},
		{"only the default cap decides; others are reported",
			[]FrontierPoint{ref(0, 40*sec, 0.7), ref(2, 38*sec, 0.8), base("drf", 39*sec, 0.75)},
			true, [][]string{{"drf"}, nil, nil}},
		{"Carbyne at P<1 is never a baseline",
			[]FrontierPoint{ref(2, 40*sec, 0.8), {Policy: "carbyne", PAlt: 0.5, AvgJCT: 30 * sec, Jain: 0.9}},
			true, [][]string{nil, nil}},
	}
	for _, tc := range tests {
		f := &Frontier{Points: tc.pts}
		f.judge()
		if f.Holds != tc.holds {
			t.Errorf("%s: holds = %v, want %v", tc.name, f.Holds, tc.holds)
		}
		for i, p := range f.Points {
			if diff := cmp.Diff(tc.dom[i], p.DominatedBy); diff != "" {
				t.Errorf("%s: point %d dominated by (-want +got):\n%s", tc.name, i, diff)
			}
		}
	}
}

func TestRunFrontier(t *testing.T) {
	cfg, jobs := mix(t, 3)
	f, err := RunFrontier(cfg, jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := 2 + len(FrontierTetrisF) + len(FrontierPAltruism)*len(FrontierCaps)
	if len(f.Points) != want {
		t.Fatalf("%d points, want %d", len(f.Points), want)
	}
	refs := 0
	for _, p := range f.Points {
		if p.AvgJCT <= 0 || !(p.Jain > 0 && p.Jain <= 1) {
			t.Errorf("%s: avg JCT %v, Jain %v", p.Label(), p.AvgJCT, p.Jain)
		}
		if p.Reference {
			refs++
		}
	}
	if refs != len(FrontierCaps) {
		t.Errorf("%d reference points, want one per cap (%d)", refs, len(FrontierCaps))
	}
	var buf bytes.Buffer
	if err := f.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"tetris f=0.5", "carbyne P=1 cap=2", "sjf", "drf", "target (issue 15)"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, buf.String())
		}
	}
}
