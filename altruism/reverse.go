package altruism

import (
	"cmp"
	"slices"
	"time"

	"github.com/loomrm/loom/fairness"
)

// Plan is a job's altruistic schedule at one decision: when it expects to
// finish within its allocation, and the latest instant each pending task
// can start without moving that finish.
type Plan struct {
	Now   time.Duration
	Alloc fairness.Vector
	// Finish is T_k as an instant.
	Finish time.Duration
	// Slots hold every pending task's latest start, ordered by Start,
	// then Stage.
	Slots []Slot
}

// ReversePack plans the job from scratch: T_k by greedy forward packing
// within alloc, then the reverse pass that delays every task as far as
// T_k allows.
func ReversePack(j *Job, alloc fairness.Vector, now time.Duration) *Plan {
	children := j.children()
	slots, finish := forwardPack(j, children, alloc, now)
	return &Plan{Now: now, Alloc: alloc, Finish: finish,
		Slots: latestStarts(j, children, alloc, now, slots, finish, nil, nil)}
}

// latestStarts is the reverse pass. It walks the job backwards from T_k,
// stage by stage with every child before its parents, and moves each
// pending task to the latest start that T_k, its children's starts and the
// allocation allow. This is Carbyne's reverse packing done as a backward
// justification of the forward schedule, which makes it safe: a task only
// ever moves later and never past T_k, and the job stays within its
// allocation at every instant, so following the plan finishes by T_k.
//
// A stage's tasks are identical, so they are lifted out together and put
// back latest-first. That never fails: if the i-th latest forward start
// is o_i, the i-th placement lands at or after o_i, because every task
// already put back overlaps [o_i, o_i+dur) only where the forward
// schedule had one of its own.
//
// prof, when set, lends the memory of an earlier profile.
//
// growth, when set, is how the allocation is projected to grow (see
// ShareStep): tasks may then be put back later than alloc alone allows,
// into the room the job's share will have once others have finished. The
// forward pass, and so T_k, stays within alloc.
func latestStarts(j *Job, children [][]int, alloc fairness.Vector, now time.Duration, slots []Slot, finish time.Duration, prof *profile, growth []ShareStep) []Slot {
	// The profile is built when the first stage is lifted out of it:
	// stages that keep their forced starts (below) leave it as it was,
	// and a plan of forced stages only needs none.
	var p *profile
	// Each stage's slots, in their order, cut from one array.
	count := make([]int, len(j.Stages))
	for _, sl := range slots {
		count[sl.Stage]++
	}
	byStage := make([][]Slot, len(j.Stages))
	var flat []Slot
	if prof != nil {
		flat = slices.Grow(prof.slots[:0], len(slots))[:len(slots)]
		defer func() { prof.slots = flat[:0] }()
	} else {
		flat = make([]Slot, len(slots))
	}
	at := 0
	for i, n := range count {
		byStage[i], at = flat[at:at:at+n], at+n
	}
	for _, sl := range slots {
		byStage[sl.Stage] = append(byStage[sl.Stage], sl)
	}
	// Children before parents: a child's forward start follows all of its
	// parents' forward finishes, so order stages by their last forward
	// start plus duration, latest first.
	lastFinish := make([]time.Duration, len(j.Stages))
	var order []int
	for i, sls := range byStage {
		for _, sl := range sls {
			lastFinish[i] = max(lastFinish[i], sl.Start+j.Stages[i].Duration)
		}
		if len(sls) > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(lastFinish[b], lastFinish[a]); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})

	const unset = time.Duration(-1 << 63)
	earliest := make([]time.Duration, len(j.Stages))
	for i := range earliest {
		earliest[i] = unset
	}
	out := make([]Slot, 0, len(slots))
	for _, i := range order {
		st := &j.Stages[i]
		d := st.Demand
		lo, left := byStage[i][0].Start, 0
		for _, sl := range byStage[i] {
			lo = min(lo, sl.Start)
			left += sl.Count
		}
		latestFinish := finish
		for _, c := range children[i] {
			if earliest[c] != unset {
				latestFinish = min(latestFinish, earliest[c])
			}
		}
		hi := latestFinish - st.Duration
		if alloc.Count(d) == 0 || hi < lo {
			// Not one task fits in the allocation, or there is no room
			// before the children: latestFit can place none, so the
			// stage keeps its forward starts (below), and need not be
			// lifted out of the profile and put back. Forced stages of
			// jobs whose share is under a task are most stages here.
			for _, sl := range byStage[i] {
				out = append(out, sl)
				earliest[i] = minStart(earliest[i], sl.Start, unset)
			}
			continue
		}
		if p == nil {
			p = planProfile(j, now, slots, prof)
			grow(p, alloc, now, finish, growth)
		}
		for _, sl := range byStage[i] {
			p.add(sl.Start, sl.Start+st.Duration, d.Scale(-float64(sl.Count)))
		}
		for left > 0 {
			s, fit, limit, ok := p.latestFit(lo, hi, st.Duration, d, alloc)
			if !ok {
				// Only tasks the forward pass started over the
				// allocation (forced ones) get here: they keep their
				// forward starts.
				for _, sl := range byStage[i] {
					k := min(sl.Count, left)
					p.add(sl.Start, sl.Start+st.Duration, d.Scale(float64(k)))
					out = append(out, Slot{Stage: i, Start: sl.Start, Count: k})
					earliest[i] = minStart(earliest[i], sl.Start, unset)
					if left -= k; left == 0 {
						break
					}
				}
				break
			}
			k := min(fit, left)
			p.add(s, s+st.Duration, d.Scale(float64(k)))
			out = append(out, Slot{Stage: i, Start: s, Count: k})
			earliest[i] = minStart(earliest[i], s, unset)
			left -= k
			hi = min(s, limit-st.Duration)
		}
	}
	return normalizeSlots(out)
}

// grow lends the profile the room a projected growth of the allocation
// adds: from each step on, until the next, alloc × (Factor − 1) counts
// as free, as a negative use. Steps at or past finish add nothing.
func grow(p *profile, alloc fairness.Vector, now, finish time.Duration, growth []ShareStep) {
	for i, g := range growth {
		from, to := now+g.After, finish
		if i+1 < len(growth) {
			to = min(to, now+growth[i+1].After)
		}
		if g.Factor > 1 && from < to {
			p.add(from, to, alloc.Scale(1-g.Factor))
		}
	}
}

func minStart(cur, s, unset time.Duration) time.Duration {
	if cur == unset || s < cur {
		return s
	}
	return cur
}

// normalizeSlots orders slots by start then stage and merges duplicates.
func normalizeSlots(slots []Slot) []Slot {
	slices.SortFunc(slots, func(a, b Slot) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.Stage, b.Stage)
	})
	out := slots[:0]
	for _, s := range slots {
		if n := len(out); n > 0 && out[n-1].Stage == s.Stage && out[n-1].Start == s.Start {
			out[n-1].Count += s.Count
			continue
		}
		out = append(out, s)
	}
	return out
}

// Duration is T_k as a duration from the plan's decision.
func (p *Plan) Duration() time.Duration { return p.Finish - p.Now }

// LatestStart returns the latest start of stage i's first pending task.
func (p *Plan) LatestStart(i int) (time.Duration, bool) {
	for _, s := range p.Slots {
		if s.Stage == i {
			return s.Start, true
		}
	}
	return 0, false
}

// NextStart returns the first planned start after t: the driver should
// decide again then, or the task planned for it will start late.
func (p *Plan) NextStart(t time.Duration) (time.Duration, bool) {
	for _, s := range p.Slots {
		if s.Start > t {
			return s.Start, true
		}
	}
	return 0, false
}
