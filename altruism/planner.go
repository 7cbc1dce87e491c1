package altruism

import (
	"math"
	"sync"
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
// Planning afresh at every decision is also what makes a large job
// costly: a plan takes time in the number of the job's slots, and a job
// whose tasks end a few at a time wakes for each of them. So a plan, once
// made, is followed for up to Follow without planning again, as long as
// the job's state does not move it: no stage done since (its children may
// start earlier than planned), the allocation within CarryTolerance of the
// one the plan was made for, no failure (Reset), and the plan still a
// schedule within the allocation. A planned start the RM has not served
// yet stays due. Past Follow, or when any of these fails, the planner
// plans afresh as above.
//
// A fresh plan is also tightened at its front. The reverse pass squeezes
// the idle gaps of the greedy forward schedule out, so a fresh plan may
// have nothing due for a while. Were the job to wait on it and then replan
// from the same state, it would find the same lead again, as T_k counts
// from now: it would wait for ever. A fresh plan is therefore shifted left
// until something is due now; slack between stages stays altruistic.
type Planner struct {
	// CriticalPathFirst makes the forward pass a DAG-aware list
	// scheduler: stages on the longest remaining chain start first
	// (BottomLevels), alignment breaking ties, instead of pure Tetris
	// alignment. The Carbyne paper (§5.5) reports further gains at the
	// upper percentiles with such an intra-job scheduler (DAGPS).
	CriticalPathFirst bool
	// Follow is how long a fresh plan is followed without planning
	// again while the job keeps to it; 0 plans afresh at every decision.
	Follow time.Duration
	// FollowPart stretches Follow for long plans: a fresh plan is
	// followed for this part of the time it had left (T_k − now) when
	// that is longer. A job hours from its finish need not plan four
	// times a second; a stage ending or its allocation moving still
	// makes it plan at once. 0 is Follow alone.
	FollowPart float64
	// Resolution is the forward pass's: finishes closer than this
	// (and than a twentieth of the shortest remaining task) are one
	// instant to it. 0 packs at every finish.
	Resolution time.Duration
	// FarResolution coarsens Resolution with distance: finishes d ahead
	// of now are one instant with those up to d/100 after them, up to
	// FarResolution (from 25 s ahead at 250 ms), where that is wider. A
	// plan is made again as its far future draws near (Follow), so only
	// its near future needs a fine grain. 0 keeps Resolution throughout.
	FarResolution time.Duration
	// Growth is how the job's allocation is projected to grow from the
	// next plan's decision on (the RM's ShareGrowth): the reverse pass
	// delays tasks into that room, so the job yields more now and takes
	// more once others have finished, by the same T_k. Nil plans within
	// the allocation alone, as Carbyne's paper does.
	Growth []ShareStep
	last   *Plan
	// fresh is when the last fresh plan was made, basis its allocation
	// and done the stages done then.
	fresh time.Duration
	basis fairness.Vector
	done  int
	// horizon is T_k − now of the last fresh plan.
	horizon time.Duration
}

// planMemory is what a plan works in: the forward pass's memory, the
// reverse pass's profile and the feasibility checks' ends. Nothing in it
// outlives a plan, so the planners of all jobs draw it from one pool:
// kept by each planner, thousands of jobs each grew and held their own,
// and found it cold in the cache when they planned again.
type planMemory struct {
	prof profile
	ends []slotEnd
	fwd  forwardMemory
}

var planMemories = sync.Pool{New: func() any { return new(planMemory) }}

// DefaultFollow is Follow for Loom's AMs: measured on the TPC-DS and
// TPC-H catalogues and the heavy-tailed mix (docs/results/altruism.md), a
// quarter of a second changes average JCT by about 1% and makes the
// planner's cost per job several times smaller. A YARN AM hears from the
// RM once a second at most by default, so its plans could not be fresher.
const DefaultFollow = 250 * time.Millisecond

// DefaultFollowPart is FollowPart for Loom's AMs: a plan is followed for
// a twenty-fifth of its horizon, so a job with ten minutes to go plans
// every 24 s unless a stage ends or its share moves. Measured on the
// catalogues and the heavy-tailed mix (docs/results/altruism.md), it moves
// average JCT by 1-2% either way and takes a fifth off the planner's cost
// on the heavy-tailed trace, whose large jobs run for many minutes.
const DefaultFollowPart = 0.04

// DefaultResolution is Resolution for Loom's AMs: measured with
// DefaultFollow on the catalogues and the heavy-tailed mix, it leaves
// average JCT where it was (within ±1%) and halves the planner's cost on
// large jobs again (docs/results/altruism.md).
const DefaultResolution = 50 * time.Millisecond

// DefaultFarResolution is FarResolution for Loom's AMs. Measured on the
// catalogues online and in batch and on the heavy-tailed mix
// (docs/results/altruism.md), it leaves Carbyne's gain over DRF within
// ±2% (on the heavy-tailed mix and in batch a little up), Jain's index
// within ±0.01, and takes a third off its time on the heavy-tailed trace,
// whose large jobs plan many minutes ahead.
const DefaultFarResolution = 250 * time.Millisecond

// farScale is how FarResolution grows with distance: d ahead, d/farScale.
const farScale = 100

// Plan returns the job's plan at now within alloc.
func (pl *Planner) Plan(j *Job, alloc fairness.Vector, now time.Duration) *Plan {
	mem := planMemories.Get().(*planMemory)
	defer planMemories.Put(mem)
	done := j.doneStages()
	follow := pl.last != nil && now-pl.fresh < pl.followFor() && done == pl.done && !Moved(pl.basis, alloc)
	if follow {
		if slots, finish, ok := pl.carry(j, alloc, now, true, &mem.ends); ok {
			p := &Plan{Now: now, Alloc: alloc, Finish: finish, Slots: slots}
			pl.last = p
			return p
		}
	}
	pl.fresh, pl.basis, pl.done = now, alloc, done
	children := j.children()
	var rank []time.Duration
	if pl.CriticalPathFirst {
		rank = BottomLevels(j, children)
	}
	// A carried plan that failed with its late starts kept fails without
	// them too: carry it again only if it was not just tried.
	var carried []Slot
	var cf time.Duration
	ok := false
	if !follow {
		carried, cf, ok = pl.carry(j, alloc, now, false, &mem.ends)
	}
	// The fresh plan need only be packed in full if it may finish before
	// the carried one.
	stop := time.Duration(-1)
	if ok {
		stop = cf
	}
	slots, finish := forwardPackOrdered(j, children, alloc, now, rank, pl.Resolution, pl.FarResolution, &mem.fwd, stop)
	if ok && cf <= finish {
		slots, finish = carried, cf
	}
	latest := latestStarts(j, children, alloc, now, slots, finish, &mem.prof, pl.Growth)
	if !ok || cf > finish {
		latest, finish = tighten(j, alloc, now, latest, finish, &mem.ends)
	}
	p := &Plan{Now: now, Alloc: alloc, Finish: finish, Slots: latest}
	pl.last, pl.horizon = p, finish-now
	return p
}

// ShareStep is a step of a job's projected allocation: from After past
// the decision on, Factor times the allocation it plans with. Steps come
// in order of After, with Factor above 1 and growing.
//
// Under DRF a job's share grows as the other jobs finish: with all jobs
// present, processor sharing finishes the one with the least work first,
// and every job left then gets more. A plan within the current share
// alone assumes the share never grows, so a job whose T_k is set by its
// work must use all of its share from now on and can yield nothing. Planned
// against the growth, it can leave the room now to the jobs that finish
// first and take its share back, grown, once they are gone: what shortest
// remaining time first does, but to the same T_k.
type ShareStep struct {
	After  time.Duration
	Factor float64
}

// StepsSince is steps as of by later: each that much nearer, those then
// due (and steps at the same instant) one step from now on, the last of
// them kept. It copies; steps is left as it was.
func StepsSince(steps []ShareStep, by time.Duration) []ShareStep {
	if len(steps) == 0 {
		return nil
	}
	out := make([]ShareStep, 0, len(steps))
	for _, s := range steps {
		s.After = max(s.After-by, 0)
		if n := len(out); n > 0 && out[n-1].After == s.After {
			out[n-1] = s
			continue
		}
		out = append(out, s)
	}
	return out
}

// followFor is how long the last fresh plan may be followed.
func (pl *Planner) followFor() time.Duration {
	return max(pl.Follow, time.Duration(pl.FollowPart*float64(pl.horizon)))
}

// Moved reports whether an allocation moved by more than CarryTolerance
// of its old value in some kind: within that, a plan made for old stands.
func Moved(old, cur fairness.Vector) bool {
	for k := range old {
		if math.Abs(cur[k]-old[k]) > CarryTolerance*math.Max(old[k], 1e-9) {
			return true
		}
	}
	return false
}

// Last returns the most recent plan, nil before the first.
func (pl *Planner) Last() *Plan { return pl.last }

// Reset forgets the last plan: after a failure the old plan no longer
// describes the job.
func (pl *Planner) Reset() { pl.last = nil }

// carry adapts the last plan to the job as it stands now: tasks started
// since then leave the plan, earliest slots first. It reports whether the
// rest is still a feasible schedule, and when it finishes. A slot whose
// start has passed fails it, unless late is set: then it stays, due.
// ends lends the feasibility check its memory.
func (pl *Planner) carry(j *Job, alloc fairness.Vector, now time.Duration, late bool, ends *[]slotEnd) ([]Slot, time.Duration, bool) {
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
	slots := make([]Slot, 0, len(pl.last.Slots))
	for _, s := range pl.last.Slots { // ordered by start
		drop := min(started[s.Stage], s.Count)
		started[s.Stage] -= drop
		if s.Count -= drop; s.Count == 0 {
			continue
		}
		if s.Start < now && !late {
			return nil, 0, false // a planned start was missed
		}
		slots = append(slots, s)
	}
	finish, ok := feasible(j, alloc.Scale(1+CarryTolerance), now, slots, ends)
	return slots, finish, ok
}

// tighten shifts a fresh plan left by as much of its idle lead (the time
// until its first planned start) as the allocation and the running tasks
// allow, so that something is due now.
func tighten(j *Job, alloc fairness.Vector, now time.Duration, slots []Slot, finish time.Duration, buf *[]slotEnd) ([]Slot, time.Duration) {
	if len(slots) == 0 || slots[0].Start <= now {
		return slots, finish
	}
	shifted := make([]Slot, len(slots))
	try := func(by time.Duration) bool {
		for i, s := range slots {
			s.Start -= by
			shifted[i] = s
		}
		_, ok := feasible(j, alloc, now, shifted, buf)
		return ok
	}
	lead := slots[0].Start - now
	if try(lead) {
		return shifted, finish - lead
	}
	// Running tasks stand in the way of the whole shift. A slot may not
	// move before its parents' running tasks end: shift by as much as that
	// allows, if the allocation allows it too. Two checks at most: a
	// search for the very largest shift costs more than it yields, at
	// every decision of every job.
	var ends []time.Duration
	for _, st := range j.Stages {
		var e time.Duration
		for _, r := range st.Running {
			e = max(e, finishOf(r, now))
		}
		ends = append(ends, e)
	}
	by := lead
	for _, s := range slots {
		for _, p := range j.Stages[s.Stage].Parents {
			if len(j.Stages[p].Running) > 0 {
				by = min(by, s.Start-ends[p])
			}
		}
	}
	if by <= 0 || by == lead || !try(by) {
		return slots, finish
	}
	return shifted, finish - by
}

// feasible reports whether the slots, with the running tasks, are a
// schedule: every slot starts after its parents' last task ends, and
// whenever a slot runs the job holds no more than alloc. It returns when
// the schedule ends.
func feasible(j *Job, alloc fairness.Vector, now time.Duration, slots []Slot, buf *[]slotEnd) (time.Duration, bool) {
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
	return finish, withinAlloc(j, alloc, now, slots, buf)
}

// withinAlloc reports whether, at every instant some slot is running, the
// job's running tasks and slots together fit in alloc. Slots come ordered
// by start; only the ends are sorted, as small (instant, index) keys.
//
// buf, when set, lends its memory for the ends.
func withinAlloc(j *Job, alloc fairness.Vector, now time.Duration, slots []Slot, buf *[]slotEnd) bool {
	var mem []slotEnd
	if buf != nil {
		mem = *buf
	}
	slots, ends, use := slotEnds(j, now, slots, mem)
	if buf != nil {
		*buf = ends[:0]
	}
	active, ceil := 0, alloc.Ceiling()
	for a, b := 0, 0; a < len(slots) || b < len(ends); {
		var at time.Duration
		if b == len(ends) || (a < len(slots) && slots[a].Start <= ends[b].at) {
			at = slots[a].Start
		} else {
			at = ends[b].at
		}
		for ; b < len(ends) && ends[b].at == at; b++ {
			if e := ends[b]; e.i < 0 {
				use = use.Sub(j.Stages[-1-e.i].Demand.Scale(float64(e.n)))
			} else {
				s := slots[e.i]
				use = use.Sub(j.Stages[s.Stage].Demand.Scale(float64(s.Count)))
				active--
			}
		}
		for ; a < len(slots) && slots[a].Start == at; a++ {
			use = use.Add(j.Stages[slots[a].Stage].Demand.Scale(float64(slots[a].Count)))
			active++
		}
		if active > 0 && !use.FitsUnder(ceil) {
			return false
		}
	}
	return true
}
