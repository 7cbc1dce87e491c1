package altruism

import (
	"cmp"
	"slices"
	"time"

	"github.com/loomrm/loom/fairness"
)

// CarryTolerance is how far a carried plan may exceed the job's current
// allocation and still be kept. Shares drift a little at every arrival
// and departure; the RM serves a DEFAULT task beyond the share in DRF order.
const CarryTolerance = 0.1

// Planner keeps one job's plan from decision to decision, so that the plan
// stays a commitment rather than a moving target.
//
// Greedy packing is not monotone: replanning from scratch after following a
// plan for a while can find a later finish than the plan it followed (a
// list-scheduling anomaly). A job that yielded resources on the strength of
// a T_k must not then be told it finishes later, or altruism would cost it
// time (Carbyne's Theorem 3.1 says it must not). So the planner carries its
// last plan forward, checks it still holds — within the allocation (give or
// take CarryTolerance), every barrier respected, no planned start missed —
// and keeps whichever of the carried plan and a fresh one finishes first.
//
// A fresh plan is also tightened at its front. The reverse pass squeezes
// the idle gaps of the greedy forward schedule out, so a fresh plan may
// have nothing due for a while. Were the job to wait on it and then replan
// from the same state, it would find the same lead again, as T_k counts
// from now: it would wait for ever. A fresh plan is therefore shifted left
// until something is due now; slack between stages stays altruistic.
type Planner struct {
	last *Plan
}

// Plan returns the job's plan at now within alloc.
func (pl *Planner) Plan(j *Job, alloc fairness.Vector, now time.Duration) *Plan {
	children := j.children()
	slots, finish := forwardPack(j, children, alloc, now)
	carried, cf, ok := pl.carry(j, alloc, now)
	if ok && cf <= finish {
		slots, finish = carried, cf
	}
	latest := latestStarts(j, children, alloc, now, slots, finish)
	if !ok || cf > finish {
		latest, finish = tighten(j, alloc, now, latest, finish)
	}
	p := &Plan{Now: now, Alloc: alloc, Finish: finish, Slots: latest}
	pl.last = p
	return p
}

// Last returns the most recent plan, nil before the first.
func (pl *Planner) Last() *Plan { return pl.last }

// Reset forgets the last plan: after a failure the old plan no longer
// describes the job.
func (pl *Planner) Reset() { pl.last = nil }

// carry adapts the last plan to the job as it stands now: tasks started
// since then leave the plan, earliest slots first. It reports whether the
// rest is still a feasible schedule, and when it finishes.
func (pl *Planner) carry(j *Job, alloc fairness.Vector, now time.Duration) ([]Slot, time.Duration, bool) {
	if pl.last == nil {
		return nil, 0, false
	}
	planned := make([]int, len(j.Stages))
	for _, s := range pl.last.Slots {
		if s.Stage >= len(j.Stages) {
			return nil, 0, false
		}
		planned[s.Stage] += s.Count
	}
	started := make([]int, len(j.Stages))
	for i, s := range j.Stages {
		started[i] = planned[i] - s.Pending
		if started[i] < 0 {
			return nil, 0, false // tasks came back (a failure): replan
		}
	}
	var slots []Slot
	for _, s := range pl.last.Slots { // ordered by start
		drop := min(started[s.Stage], s.Count)
		started[s.Stage] -= drop
		if s.Count -= drop; s.Count == 0 {
			continue
		}
		if s.Start < now {
			return nil, 0, false // a planned start was missed
		}
		slots = append(slots, s)
	}
	finish, ok := feasible(j, alloc.Scale(1+CarryTolerance), now, slots)
	return slots, finish, ok
}

// tighten shifts a fresh plan left by as much of its idle lead (the time
// until its first planned start) as the allocation and the running tasks
// allow, so that something is due now.
func tighten(j *Job, alloc fairness.Vector, now time.Duration, slots []Slot, finish time.Duration) ([]Slot, time.Duration) {
	if len(slots) == 0 || slots[0].Start <= now {
		return slots, finish
	}
	shifted := make([]Slot, len(slots))
	try := func(by time.Duration) bool {
		for i, s := range slots {
			s.Start -= by
			shifted[i] = s
		}
		_, ok := feasible(j, alloc, now, shifted)
		return ok
	}
	lead := slots[0].Start - now
	if try(lead) {
		return shifted, finish - lead
	}
	// Running tasks stand in the way of the whole shift: find the largest
	// that fits, to the millisecond.
	lo, hi := time.Duration(0), lead
	for hi-lo > time.Millisecond {
		mid := lo + (hi-lo)/2
		if try(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo == 0 {
		return slots, finish
	}
	try(lo)
	return shifted, finish - lo
}

// feasible reports whether the slots, with the running tasks, are a
// schedule: every slot starts after its parents' last task ends, and
// whenever a slot runs the job holds no more than alloc. It returns when
// the schedule ends.
func feasible(j *Job, alloc fairness.Vector, now time.Duration, slots []Slot) (time.Duration, bool) {
	end := make([]time.Duration, len(j.Stages))
	finish := now
	for i, s := range j.Stages {
		for _, r := range s.Running {
			end[i] = max(end[i], finishOf(r, now))
		}
	}
	for _, s := range slots {
		end[s.Stage] = max(end[s.Stage], s.Start+j.Stages[s.Stage].Duration)
	}
	for i := range j.Stages {
		finish = max(finish, end[i])
	}
	for _, s := range slots {
		for _, p := range j.Stages[s.Stage].Parents {
			if s.Start < end[p] {
				return 0, false
			}
		}
	}
	return finish, withinAlloc(j, alloc, now, slots)
}

// withinAlloc reports whether, at every instant some slot is running, the
// job's running tasks and slots together fit in alloc.
func withinAlloc(j *Job, alloc fairness.Vector, now time.Duration, slots []Slot) bool {
	type edge struct {
		at      time.Duration
		delta   fairness.Vector
		planned int // +1 when a slot starts, −1 when it ends
	}
	var edges []edge
	var use fairness.Vector
	for _, s := range j.Stages {
		for _, r := range s.Running {
			d := s.Demand.Scale(float64(r.Count))
			use = use.Add(d)
			edges = append(edges, edge{at: finishOf(r, now), delta: d.Scale(-1)})
		}
	}
	for _, s := range slots {
		d := j.Stages[s.Stage].Demand.Scale(float64(s.Count))
		edges = append(edges,
			edge{at: s.Start, delta: d, planned: 1},
			edge{at: s.Start + j.Stages[s.Stage].Duration, delta: d.Scale(-1), planned: -1})
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Compare(a.at, b.at) })
	active := 0
	for i := 0; i < len(edges); {
		at := edges[i].at
		for ; i < len(edges) && edges[i].at == at; i++ {
			use = use.Add(edges[i].delta)
			active += edges[i].planned
		}
		if active > 0 && !use.FitsIn(alloc) {
			return false
		}
	}
	return true
}
