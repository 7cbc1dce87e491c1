package altruism

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/loomrm/loom/fairness"
)

// profile is a job's planned resource use over time, a step function kept
// as the change of use at each breakpoint: adding a task over [from, to)
// is two point updates, however many breakpoints it spans. The
// breakpoints sit in sorted blocks that carry their sum, so the use at an
// instant is a prefix sum over at most a few dozen blocks plus one.
//
// The reverse pass lifts every task out and puts it back once, and sweeps
// right to left through the step function; both stay cheap this way.
type profile struct {
	blocks []block
	hint   int       // the block of the last lookup
	ends   []slotEnd // planProfile's memory
	slots  []Slot    // latestStarts' memory
}

// slotEnd is when a slot's tasks (i its index) or a stage's running
// tasks (i = −1−stage, n of them) end.
type slotEnd struct {
	at   time.Duration
	i, n int32
}

// slotEnds orders the slots by start (a copy if they were not) and lists
// when they and the job's running tasks end, by instant, in buf's memory;
// running is what the running tasks use.
func slotEnds(j *Job, now time.Duration, slots []Slot, buf []slotEnd) (sorted []Slot, ends []slotEnd, running fairness.Vector) {
	if !slices.IsSortedFunc(slots, func(a, b Slot) int { return cmp.Compare(a.Start, b.Start) }) {
		slots = slices.Clone(slots)
		slices.SortFunc(slots, func(a, b Slot) int { return cmp.Compare(a.Start, b.Start) })
	}
	ends = slices.Grow(buf[:0], len(slots)+len(j.Stages))
	for i, s := range j.Stages {
		for _, r := range s.Running {
			running = running.Add(s.Demand.Scale(float64(r.Count)))
			ends = append(ends, slotEnd{finishOf(r, now), int32(-1 - i), int32(r.Count)})
		}
	}
	for i, sl := range slots {
		ends = append(ends, slotEnd{sl.Start + j.Stages[sl.Stage].Duration, int32(i), 0})
	}
	slices.SortFunc(ends, func(a, b slotEnd) int { return cmp.Compare(a.at, b.at) })
	return slots, ends, running
}

// block is a run of consecutive breakpoints.
type block struct {
	t     []time.Duration
	delta []fairness.Vector // the change of use at t
	sum   fairness.Vector
}

// blockSize is where a block splits in two: small enough that inserting
// into one is cheap, large enough that few blocks are summed.
const blockSize = 128

// planProfile is the profile of a job's running tasks and its slots. Slots
// come ordered by start, so only the ends are sorted, as (instant, index)
// pairs, before one merge.
//
// into, when set, is an earlier profile whose memory is reused (the
// planner's: a profile per fresh plan was a third of what the planner
// allocated).
func planProfile(j *Job, now time.Duration, slots []Slot, into *profile) *profile {
	var buf []slotEnd
	if into != nil {
		buf = into.ends
	}
	slots, ends, running := slotEnds(j, now, slots, buf)
	if into != nil {
		defer func() { into.ends = ends[:0] }()
	}
	endDelta := func(e slotEnd) fairness.Vector {
		if e.i < 0 {
			return j.Stages[-1-e.i].Demand.Scale(-float64(e.n))
		}
		sl := slots[e.i]
		return j.Stages[sl.Stage].Demand.Scale(-float64(sl.Count))
	}

	p := into
	if p == nil {
		p = &profile{blocks: make([]block, 0, (len(slots)+len(ends))/(blockSize/2)+2)}
	}
	p.blocks, p.hint = p.blocks[:0], 0
	var cur *block
	push := func(at time.Duration, d fairness.Vector) {
		if cur == nil || len(cur.t) == blockSize/2 {
			// Half full, so that inserts rarely split a block; room
			// for a few inserts before a block's slices grow. A block
			// left from an earlier profile lends its arrays (no two
			// blocks share one: splits clone, deletes clear the tail).
			const room = blockSize/2 + 8
			n := len(p.blocks)
			if n < cap(p.blocks) && cap(p.blocks[:n+1][n].t) >= room {
				old := p.blocks[:n+1][n]
				p.blocks = append(p.blocks, block{t: old.t[:0], delta: old.delta[:0]})
			} else {
				p.blocks = append(p.blocks, block{
					t:     make([]time.Duration, 0, room),
					delta: make([]fairness.Vector, 0, room),
				})
			}
			cur = &p.blocks[len(p.blocks)-1]
		}
		cur.t = append(cur.t, at)
		cur.delta = append(cur.delta, d)
		cur.sum = cur.sum.Add(d)
	}
	a, b := 0, 0
	if !running.IsZero() {
		// Running tasks all started before now; as far as the plan is
		// concerned they start at now.
		for b < len(ends) && ends[b].at == now {
			running = running.Add(endDelta(ends[b]))
			b++
		}
		for a < len(slots) && slots[a].Start == now {
			running = running.Add(j.Stages[slots[a].Stage].Demand.Scale(float64(slots[a].Count)))
			a++
		}
		push(now, running)
	}
	for a < len(slots) || b < len(ends) {
		at := now
		switch {
		case b == len(ends) || (a < len(slots) && slots[a].Start <= ends[b].at):
			at = slots[a].Start
		default:
			at = ends[b].at
		}
		var d fairness.Vector
		for ; a < len(slots) && slots[a].Start == at; a++ {
			d = d.Add(j.Stages[slots[a].Stage].Demand.Scale(float64(slots[a].Count)))
		}
		for ; b < len(ends) && ends[b].at == at; b++ {
			d = d.Add(endDelta(ends[b]))
		}
		push(at, d)
	}
	return p
}

// find returns the block and position of the last breakpoint at or before
// at; (0, -1) when at precedes every breakpoint.
func (p *profile) find(at time.Duration) (int, int) {
	// Successive lookups mostly land in the block of the last one (a
	// stage's tasks are lifted and put back in time order), so try it
	// before searching. Hand-written binary searches: sort.Search's closure
	// calls showed up in profiles of the reverse pass.
	if h := p.hint; h < len(p.blocks) && p.blocks[h].t[0] <= at &&
		(h+1 == len(p.blocks) || p.blocks[h+1].t[0] > at) {
		return h, p.findIn(h, at)
	}
	lo, hi := 0, len(p.blocks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.blocks[m].t[0] > at {
			hi = m
		} else {
			lo = m + 1
		}
	}
	b := lo - 1
	if b < 0 {
		return 0, -1
	}
	p.hint = b
	return b, p.findIn(b, at)
}

// findIn is the position of the last breakpoint at or before at in block b.
func (p *profile) findIn(b int, at time.Duration) int {
	ts := p.blocks[b].t
	lo, hi := 0, len(ts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ts[m] > at {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo - 1
}

// change adds v to the change of use at instant at.
func (p *profile) change(at time.Duration, v fairness.Vector) {
	if len(p.blocks) == 0 {
		p.blocks = []block{{t: []time.Duration{at}, delta: []fairness.Vector{v}, sum: v}}
		return
	}
	b, i := p.find(at)
	bl := &p.blocks[b]
	bl.sum = bl.sum.Add(v)
	if i >= 0 && bl.t[i] == at {
		bl.delta[i] = bl.delta[i].Add(v)
		if bl.delta[i] == (fairness.Vector{}) {
			// A breakpoint where nothing changes any more only makes
			// every later sweep longer: drop it (and its block, if
			// that empties it, since find reads each block's first).
			bl.t = slices.Delete(bl.t, i, i+1)
			bl.delta = slices.Delete(bl.delta, i, i+1)
			if len(bl.t) == 0 {
				p.blocks = slices.Delete(p.blocks, b, b+1)
			}
		}
		return
	}
	bl.t = slices.Insert(bl.t, i+1, at)
	bl.delta = slices.Insert(bl.delta, i+1, v)
	if len(bl.t) >= blockSize {
		half := len(bl.t) / 2
		right := block{
			t:     slices.Clone(bl.t[half:]),
			delta: slices.Clone(bl.delta[half:]),
		}
		for _, d := range right.delta {
			right.sum = right.sum.Add(d)
		}
		bl.t, bl.delta = bl.t[:half], bl.delta[:half]
		bl.sum = bl.sum.Sub(right.sum)
		p.blocks = slices.Insert(p.blocks, b+1, right)
	}
}

// add adds v on [from, to).
func (p *profile) add(from, to time.Duration, v fairness.Vector) {
	if to <= from {
		return
	}
	p.change(from, v)
	p.change(to, v.Scale(-1))
}

// latestFit finds the latest start s in [lo, hi] such that at least one
// task of demand d fits under capacity on all of [s, s+dur), and how many
// fit there. It also returns limit, the start of the segment that bounds
// the count: once that many tasks are placed at s, no window reaching past
// limit fits another, so the next search may end its window there.
//
// It sweeps the step function once, right to left: a segment without room
// means the window must end where that segment starts. This is the
// planner's innermost loop, so it tracks only the kinds the task needs
// (the others cannot stop it) as plain scalars.
func (p *profile) latestFit(lo, hi, dur time.Duration, d, capacity fairness.Vector) (s time.Duration, fit int, limit time.Duration, ok bool) {
	if capacity.Count(d) == 0 || hi < lo {
		return 0, 0, 0, false
	}
	// Scratch arrays are 8 wide and indexed k&7 so that the compiler can
	// drop the bounds checks from the sweep.
	var kinds [8]int
	n := 0
	for k, x := range d {
		if x > 0 {
			kinds[n&7] = k
			n++
		}
	}
	kk := kinds[:n]
	// A segment blocks when its use exceeds room = capacity − d (beyond
	// rounding) in a needed kind. peak is the most used over the window
	// and peakAt where that segment starts.
	var room, use, peak [8]float64
	var peakAt [8]time.Duration
	// A projected growth of the share (grow) makes use negative where
	// the share will have grown. top is then the most used over the
	// window when all of it is negative, topAt where; peak, floored at
	// nothing used, stays what decides without growth.
	var top [8]float64
	var topAt [8]time.Duration
	for _, k := range kk {
		room[k&7] = capacity[k] - d[k] + 1e-9*max(1, capacity[k])
		top[k&7] = math.Inf(-1)
	}
	bound := hi + dur // the window is [bound−dur, bound)
	b, i := p.find(bound - 1)
	if i < 0 {
		b = -1 // before every breakpoint: nothing to sweep
	} else {
		p.useThrough(b, i, kk, &use)
	}
	end := time.Duration(1<<63 - 1) // where the visited segment ends
sweep:
	for ; b >= 0; b-- {
		bl := &p.blocks[b]
		ts, deltas := bl.t, bl.delta
		if i < 0 {
			i = len(ts) - 1
		}
		for ; i >= 0; i-- {
			if bound-dur < lo {
				return 0, 0, 0, false
			}
			if end <= bound-dur {
				break sweep // every segment in the window has been checked
			}
			t := ts[i]
			end = t
			delta := &deltas[i]
			blocked := false
			for _, k := range kk {
				blocked = blocked || use[k&7] > room[k&7]
			}
			if blocked {
				bound = t
				for _, k := range kk {
					peak[k&7], top[k&7] = 0, math.Inf(-1)
					use[k&7] -= delta[k]
				}
				continue
			}
			for _, k := range kk {
				if u := use[k&7]; u > peak[k&7] {
					peak[k&7], peakAt[k&7] = u, t
				}
				if u := use[k&7]; u > top[k&7] {
					top[k&7], topAt[k&7] = u, t
				}
				use[k&7] -= delta[k]
			}
		}
	}
	// Left of the first breakpoint nothing is used, so a window that runs
	// past it is clear.
	s = bound - dur
	if s < lo {
		return 0, 0, 0, false
	}
	fit, limit = int(^uint(0)>>1), bound
	past := end > s // the window runs left of the first breakpoint
	for _, k := range kk {
		if !past && top[k&7] < 0 {
			peak[k&7], peakAt[k&7] = top[k&7], topAt[k&7]
		}
		c := int((capacity[k] - peak[k&7] + 1e-9*max(1, capacity[k])) / d[k])
		switch {
		case c < fit:
			fit, limit = c, max(peakAt[k&7], s)
		case c == fit:
			limit = max(limit, peakAt[k&7], s)
		}
	}
	return s, max(fit, 1), limit, true
}

// useThrough sets use to the profile's use on the segment starting at
// breakpoint (b, i), in the given kinds. The changes of use sum to zero
// (every task ends), so it adds up whichever side of the breakpoint is
// shorter.
func (p *profile) useThrough(b, i int, kinds []int, use *[8]float64) {
	left := b*blockSize/2 + i + 1
	right := (len(p.blocks)-b-1)*blockSize/2 + len(p.blocks[b].t) - i - 1
	bl := &p.blocks[b]
	for _, k := range kinds {
		var u float64
		if left <= right {
			for x := 0; x < b; x++ {
				u += p.blocks[x].sum[k]
			}
			for x := 0; x <= i; x++ {
				u += bl.delta[x][k]
			}
		} else {
			for x := b + 1; x < len(p.blocks); x++ {
				u -= p.blocks[x].sum[k]
			}
			for x := i + 1; x < len(bl.t); x++ {
				u -= bl.delta[x][k]
			}
		}
		use[k&7] = u
	}
}
