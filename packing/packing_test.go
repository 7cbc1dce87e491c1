package packing

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/fairness"
)

// The node for every table: <100 memory, 10 cores>, with <60, 2> free.
var (
	capacity = fairness.New(100, 10)
	free     = fairness.New(60, 2)
)

func TestAlignment(t *testing.T) {
	tests := []struct {
		name   string
		demand fairness.Vector
		want   float64
	}{
		// (10/100)(60/100) + (1/10)(2/10) = 0.06 + 0.02
		{"balanced", fairness.New(10, 1), 0.08},
		// (40/100)(60/100) + (0.5/10)(2/10) = 0.24 + 0.01
		{"memory-heavy", fairness.New(40, 0.5), 0.25},
		// (0)(0.6) + (2/10)(2/10)
		{"cpu-only", fairness.New(0, 2), 0.04},
		// A kind the node lacks adds nothing (it cannot fit anyway).
		{"gpu", fairness.New(10, 1).With(fairness.GPU, 1), 0.08},
	}
	for _, tc := range tests {
		if got := Alignment(tc.demand, free, capacity); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: Alignment = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTetrisBlend(t *testing.T) {
	tests := []struct {
		name     string
		w        float64
		demand   fairness.Vector
		rem, max float64
		want     float64
	}{
		// Two kinds, so alignment is halved: 0.08/2.
		{"pure packing", 0, fairness.New(10, 1), 10, 40, 0.04},
		// 0.5·0.04 + 0.5·(1 − 10/40) = 0.02 + 0.375
		{"half and half", 0.5, fairness.New(10, 1), 10, 40, 0.395},
		// 0.5·0.125 + 0.5·(1 − 40/40)
		{"most work left", 0.5, fairness.New(40, 0.5), 40, 40, 0.0625},
		// w is clamped to 1: only the work term, 1 − 0/40.
		{"clamped", 7, fairness.New(40, 0.5), 0, 40, 1},
		// No work anywhere: the work term is 1.
		{"no work known", 0.5, fairness.New(10, 1), 0, 0, 0.52},
	}
	for _, tc := range tests {
		got := Tetris(tc.w)(Input{Demand: tc.demand, Free: free, Capacity: capacity,
			RemainingWork: tc.rem, MaxRemainingWork: tc.max})
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: score = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPick(t *testing.T) {
	balanced := Group{Demand: fairness.New(10, 1), Count: 3, Priority: 5, RemainingWork: 10}
	memHeavy := Group{Demand: fairness.New(40, 0.5), Count: 1, Priority: 5, RemainingWork: 40}
	cpuHog := Group{Demand: fairness.New(10, 3), Count: 4, Priority: 1, RemainingWork: 1}
	memHog := Group{Demand: fairness.New(70, 1), Count: 4, Priority: 1, RemainingWork: 1}
	empty := Group{Demand: fairness.New(1, 1), Count: 0}
	capped := memHeavy
	capped.Bounded, capped.Headroom = true, fairness.New(30, 5)
	samePri := balanced
	lowerPri := balanced
	lowerPri.Priority = 2

	tests := []struct {
		name   string
		order  Order
		w      float64
		groups []Group
		want   Pick
	}{
		{
			// Free memory is plentiful, so the memory-heavy group aligns
			// best (0.125 vs 0.04); the others cannot fit at all.
			name:   "alignment decides",
			groups: []Group{balanced, memHeavy, cpuHog, memHog, empty},
			want: Pick{Best: 1, Score: 0.125, Rejected: []Rejection{
				{Group: 0, Reason: Outranked, Score: 0.04},
				{Group: 2, Reason: DoesNotFit, Kind: fairness.VCores},
				{Group: 3, Reason: DoesNotFit, Kind: fairness.Memory},
				{Group: 4, Reason: NoTasks},
			}},
		},
		{
			// The remaining-work term flips it: 0.395 vs 0.0625.
			name:   "blend favours less work",
			w:      0.5,
			groups: []Group{balanced, memHeavy},
			want: Pick{Best: 0, Score: 0.395, Rejected: []Rejection{
				{Group: 1, Reason: Outranked, Score: 0.0625},
			}},
		},
		{
			// SRTF order: least remaining work first whatever the score.
			name:   "SRTF order",
			order:  ByRemainingWork,
			groups: []Group{memHeavy, balanced},
			want: Pick{Best: 1, Score: 0.04, Rejected: []Rejection{
				{Group: 0, Reason: Outranked, Score: 0.125},
			}},
		},
		{
			// 40 memory is over the app's 30 of headroom.
			name:   "over share",
			groups: []Group{capped, balanced},
			want: Pick{Best: 1, Score: 0.04, Rejected: []Rejection{
				{Group: 0, Reason: OverShare, Kind: fairness.Memory},
			}},
		},
		{
			name:   "equal scores: lower priority value wins",
			groups: []Group{samePri, lowerPri},
			want: Pick{Best: 1, Score: 0.04, Rejected: []Rejection{
				{Group: 0, Reason: Outranked, Score: 0.04},
			}},
		},
		{
			name:   "full tie: lower index wins",
			groups: []Group{samePri, samePri},
			want: Pick{Best: 0, Score: 0.04, Rejected: []Rejection{
				{Group: 1, Reason: Outranked, Score: 0.04},
			}},
		},
		{
			name:   "nothing fits",
			groups: []Group{cpuHog},
			want: Pick{Best: -1, Rejected: []Rejection{
				{Group: 0, Reason: DoesNotFit, Kind: fairness.VCores},
			}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPicker(tc.order, tc.w)
			p.Explain = true
			got := p.Pick(free, capacity, tc.groups)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Pick (-want +got):\n%s", diff)
			}
			// Without explanations the decision is the same.
			p.Explain = false
			quiet := p.Pick(free, capacity, tc.groups)
			if quiet.Best != got.Best || quiet.Rejected != nil {
				t.Errorf("quiet Pick = %+v, want Best %d and no rejections", quiet, got.Best)
			}
		})
	}
}

func TestRejectionString(t *testing.T) {
	tests := []struct {
		r    Rejection
		want string
	}{
		{Rejection{Group: 2, Reason: DoesNotFit, Kind: fairness.VCores}, "group 2: does not fit (vcores)"},
		{Rejection{Group: 0, Reason: OverShare, Kind: fairness.Memory}, "group 0: over its share (memory-mb)"},
		{Rejection{Group: 1, Reason: Outranked, Score: 0.125}, "group 1: outranked (score 0.125)"},
		{Rejection{Group: 4, Reason: NoTasks}, "group 4: no tasks left"},
	}
	for _, tc := range tests {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("String = %q, want %q", got, tc.want)
		}
	}
}
