package altruism

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPlanAgainstGrowth works the reverse pass against a projected share
// by hand. The job is one stage of four one-core tasks of 10 s within two
// cores: T_k is 20 s (two waves), whatever the growth, and without it the
// reverse pass keeps two tasks at 0 and two at 10 s.
func TestPlanAgainstGrowth(t *testing.T) {
	tests := []struct {
		name   string
		growth []ShareStep
		want   []Slot
	}{
		{"no growth: two now, two at 10 s", nil,
			[]Slot{{0, 0, 2}, {0, 10 * sec, 2}}},
		// Four cores from 10 s: all four fit in [10, 20), so none is due
		// now, and the plan cannot be shifted left within two cores.
		{"twice the share from 10 s: nothing now", []ShareStep{{10 * sec, 2}},
			[]Slot{{0, 10 * sec, 4}}},
		// Three cores from 10 s: three in [10, 20), one left for [0, 10).
		{"one and a half from 10 s: one now", []ShareStep{{10 * sec, 1.5}},
			[]Slot{{0, 0, 1}, {0, 10 * sec, 3}}},
		// Growth that starts at T_k frees nothing before it.
		{"growth from T_k on changes nothing", []ShareStep{{20 * sec, 4}},
			[]Slot{{0, 0, 2}, {0, 10 * sec, 2}}},
		// A later step replaces an earlier one: 3 cores over [5, 15),
		// then 4 over [15, 20). Back from 20 s: [10, 20) holds 3 (the
		// least over it); [0, 10) then holds the last one.
		{"steps replace each other", []ShareStep{{5 * sec, 1.5}, {15 * sec, 2}},
			[]Slot{{0, 0, 1}, {0, 10 * sec, 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &Job{Stages: []Stage{stage(4, 10*sec)}}
			pl := &Planner{Growth: tc.growth}
			p := pl.Plan(j, cores(2), 0)
			if p.Finish != 20*sec {
				t.Errorf("T_k = %v, want 20s: growth must not move the promise", p.Finish)
			}
			if d := cmp.Diff(tc.want, p.Slots); d != "" {
				t.Errorf("slots (-want +got):\n%s", d)
			}
		})
	}
}

// TestGrowthPlanIsReplanned: a plan that uses the grown share is not a
// schedule within the current one, so the planner does not carry it; the
// next decision plans afresh (and, were the projection wrong, finds out).
func TestGrowthPlanIsReplanned(t *testing.T) {
	j := &Job{Stages: []Stage{stage(4, 10*sec)}}
	pl := &Planner{Growth: []ShareStep{{10 * sec, 2}}, Follow: time.Minute}
	pl.Plan(j, cores(2), 0)
	pl.Growth = nil
	p := pl.Plan(j, cores(2), sec)
	// Without the growth, from 1 s: two at 1 s, two at 11 s, T_k 21 s.
	want := []Slot{{0, sec, 2}, {0, 11 * sec, 2}}
	if d := cmp.Diff(want, p.Slots); d != "" || p.Finish != 21*sec {
		t.Errorf("finish %v (want 21s), slots (-want +got):\n%s", p.Finish, d)
	}
}
