package altruism

import (
	"math"
	"time"

	"github.com/loomrm/loom/fairness"
)

// Slot is Count tasks of Stage starting at Start.
type Slot struct {
	Stage int
	Start time.Duration
	Count int
}

// EstimateCompletion is T_k as an instant: when the job would finish if,
// from now, it packed its remaining DAG greedily (Tetris-style) within
// alloc, respecting every barrier. A job with nothing left finishes now.
func EstimateCompletion(j *Job, alloc fairness.Vector, now time.Duration) time.Duration {
	_, t := forwardPack(j, j.children(), alloc, now)
	return t
}

// finishEvent is Count tasks of Stage ending at At.
type finishEvent struct {
	at    time.Duration
	stage int
	count int
}

// finishHeap is a min-heap of finish events, typed so that pushing one
// does not allocate (container/heap would box every event).
type finishHeap []finishEvent

func (h finishHeap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].stage < h[j].stage
}

func (h *finishHeap) push(e finishEvent) {
	*h = append(*h, e)
	for i := len(*h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		(*h)[i], (*h)[parent] = (*h)[parent], (*h)[i]
		i = parent
	}
}

func (h *finishHeap) pop() finishEvent {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

func (h finishHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h finishHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// forwardPack is list scheduling on the job's own allocation: at every
// instant it starts the runnable task that aligns best with what is free
// (Tetris), ties to the lower stage index, until nothing more fits; then it
// jumps to the next finish. It returns the start of every pending task and
// the finish of the last task.
//
// A job whose allocation cannot hold even one of its runnable tasks would
// never finish; when nothing of it is running, its best task starts anyway.
// T_k is then an estimate of running one task at a time.
func forwardPack(j *Job, children [][]int, alloc fairness.Vector, now time.Duration) ([]Slot, time.Duration) {
	return forwardPackOrdered(j, children, alloc, now, nil, 0, 0, nil, -1)
}

// BottomLevels is each stage's longest path to the end of the job: its
// own task duration plus its children's longest. A stage with a higher
// bottom level lies on a longer chain: delaying it delays the job more.
func BottomLevels(j *Job, children [][]int) []time.Duration {
	n := len(j.Stages)
	bl := make([]time.Duration, n)
	done := make([]bool, n)
	var visit func(i int) time.Duration
	visit = func(i int) time.Duration {
		if done[i] {
			return bl[i]
		}
		var m time.Duration
		for _, c := range children[i] {
			m = max(m, visit(c))
		}
		bl[i], done[i] = j.Stages[i].Duration+m, true
		return bl[i]
	}
	for i := range j.Stages {
		visit(i)
	}
	return bl
}

// forwardMemory is the forward pass's slots and finish events, kept by a
// planner from plan to plan: they were a fifth of what planning
// allocated. The slots a pass returns live in it until the next pass.
type forwardMemory struct {
	slots  []Slot
	events finishHeap
}

// forwardPackOrdered is forwardPack with a priority over stages: when
// rank is set, the runnable stage with the highest rank that fits starts
// first (alignment breaks ties), as many of its tasks as fit, as a
// DAG-aware list scheduler (critical path first) does.
//
// With a resolution, finishes less than that apart (and less than a
// twentieth of the shortest remaining task) count as one: the tasks their
// room starts begin together at the last of them, never earlier than
// they could. Tasks that end a few at a time (a job's running tasks
// rarely started together) would otherwise be packed one finish at a time
// for ever, a slot per task, where at this resolution they form waves.
//
// far coarsens the resolution with distance: finishes d ahead of now are
// one instant with those up to min(d/farScale, far) after them, when that
// is wider (Planner.FarResolution).
//
// mem, when set, lends its memory; the slots returned are then its own.
//
// stop, when not negative, is a finish the caller already holds and
// keeps unless the pass ends before it: once a task is packed to end at
// or after stop, the pass cannot end before it, and it stops there,
// returning no slots and that task's end.
func forwardPackOrdered(j *Job, children [][]int, alloc fairness.Vector, now time.Duration, rank []time.Duration, resolution, far time.Duration, mem *forwardMemory, stop time.Duration) ([]Slot, time.Duration) {
	n := len(j.Stages)
	window := resolution
	for _, s := range j.Stages {
		if s.Pending > 0 || len(s.Running) > 0 {
			window = min(window, s.Duration/20)
		}
	}
	pending := make([]int, n)
	unfinished := make([]int, n)
	waiting := make([]int, n)
	// weight[i] is stage i's demand normalised twice by the allocation,
	// so that score_i = weight[i]·free is Tetris's alignment
	// Σ (d/A)·(free/A).
	weight := make([]fairness.Vector, n)
	free := alloc
	var events finishHeap
	var slots []Slot
	if mem != nil {
		events, slots = mem.events[:0], mem.slots[:0]
		defer func() { mem.events, mem.slots = events[:0], slots[:0] }()
	}
	latest := now // the latest end packed so far
	for i, s := range j.Stages {
		pending[i] = s.Pending
		unfinished[i] = s.Pending
		for _, r := range s.Running {
			unfinished[i] += r.Count
			free = free.Sub(s.Demand.Scale(float64(r.Count)))
			events = append(events, finishEvent{at: finishOf(r, now), stage: i, count: r.Count})
			latest = max(latest, finishOf(r, now))
		}
		for k := range alloc {
			if alloc[k] > 0 {
				weight[i][k] = s.Demand[k] / (alloc[k] * alloc[k])
			}
		}
	}
	events.init()
	var runnable []int
	for i, s := range j.Stages {
		for _, p := range s.Parents {
			if unfinished[p] > 0 {
				waiting[i]++
			}
		}
		if waiting[i] == 0 && pending[i] > 0 {
			runnable = append(runnable, i)
		}
	}

	// took records count tasks of stage i started at t, all but the event
	// of their end.
	took := func(i, count int, t time.Duration) {
		pending[i] -= count
		free = free.Sub(j.Stages[i].Demand.Scale(float64(count)))
		latest = max(latest, t+j.Stages[i].Duration)
		if last := len(slots) - 1; last >= 0 && slots[last].Stage == i && slots[last].Start == t {
			slots[last].Count += count
		} else {
			slots = append(slots, Slot{Stage: i, Start: t, Count: count})
		}
	}
	start := func(i, count int, t time.Duration) {
		took(i, count, t)
		events.push(finishEvent{at: t + j.Stages[i].Duration, stage: i, count: count})
	}
	// fitsAny reports whether a task of some runnable stage fits now.
	fitsAny := func(runnable []int) bool {
		ceil := free.Ceiling()
		for _, i := range runnable {
			if j.Stages[i].Demand.FitsUnder(ceil) {
				return true
			}
		}
		return false
	}

	// kinds are the allocation's kinds: the only ones the score reads.
	var kinds []fairness.Kind
	for k := range alloc {
		if alloc[k] > 0 {
			kinds = append(kinds, fairness.Kind(k))
		}
	}
	t, end := now, now
	scores := make([]float64, n)
	fits := make([]bool, n)
	for {
		if stop >= 0 && latest >= stop {
			return nil, latest
		}
		// Start tasks at t until nothing more fits.
		for {
			runnable = compactRunnable(runnable, pending)
			best := -1
			ceil := free.Ceiling()
			for _, i := range runnable {
				fits[i] = j.Stages[i].Demand.FitsUnder(ceil)
				if !fits[i] {
					continue
				}
				w := &weight[i]
				var sc float64
				for _, k := range kinds {
					sc += w[k] * free[k]
				}
				scores[i] = sc
				switch {
				case best < 0:
					best = i
				case rank != nil && rank[i] != rank[best]:
					if rank[i] > rank[best] {
						best = i
					}
				case sc > scores[best] || (sc == scores[best] && i < best):
					best = i
				}
			}
			if best < 0 {
				if len(events) == 0 && len(runnable) > 0 {
					// Nothing runs and nothing fits: the pick's tasks run
					// one at a time, each alone, for as long as nothing
					// fits beside or after one. Its tasks but the last
					// are started and ended here rather than through the
					// heap, reaching the same starts, ends and free room
					// as the loop would, which picks the same stage again
					// while the runnable stages stay the same.
					i := forcedPick(runnable, weight, alloc)
					fitsAgain, beside := false, false
					for pending[i] > 1 {
						took(i, 1, t)
						if beside = fitsAny(runnable); beside {
							events.push(finishEvent{at: t + j.Stages[i].Duration, stage: i, count: 1})
							break
						}
						t += j.Stages[i].Duration
						free = free.Add(j.Stages[i].Demand.Scale(1))
						unfinished[i]--
						end = t
						if stop >= 0 && latest >= stop {
							return nil, latest
						}
						if fitsAgain = fitsAny(runnable); fitsAgain {
							break
						}
					}
					if !fitsAgain && !beside {
						start(i, 1, t)
					}
					continue
				}
				break
			}
			if rank != nil {
				// Strict priority: the top stage takes all that fits.
				start(best, max(1, min(pending[best], free.Count(j.Stages[best].Demand))), t)
				continue
			}
			start(best, bulkCount(j, best, runnable, pending, weight, scores, fits, free, kinds), t)
		}
		if len(events) == 0 {
			break
		}
		// Pop every finish within window of the next one (heap order):
		// what they free is used from the last of them on.
		first := events[0].at
		w := window
		if far > 0 {
			w = max(w, min((first-now)/farScale, far))
		}
		for len(events) > 0 && events[0].at <= first+w {
			e := events.pop()
			t = e.at
			free = free.Add(j.Stages[e.stage].Demand.Scale(float64(e.count)))
			unfinished[e.stage] -= e.count
			if unfinished[e.stage] > 0 {
				continue
			}
			for _, c := range children[e.stage] {
				waiting[c]--
				if waiting[c] == 0 && pending[c] > 0 {
					runnable = append(runnable, c)
				}
			}
		}
		end = t
	}
	return slots, end
}

// compactRunnable drops stages with nothing left to start.
func compactRunnable(runnable, pending []int) []int {
	out := runnable[:0]
	for _, i := range runnable {
		if pending[i] > 0 {
			out = append(out, i)
		}
	}
	return out
}

// forcedPick chooses the task to start when none fits: the one that
// aligns best with the whole allocation, ties to the lower index.
func forcedPick(runnable []int, weight []fairness.Vector, alloc fairness.Vector) int {
	best, bestScore := -1, math.Inf(-1)
	for _, i := range runnable {
		s := weight[i].Dot(alloc)
		if s > bestScore || (s == bestScore && i < best) {
			best, bestScore = i, s
		}
	}
	return best
}

// bulkCount is how many tasks of stage best to start at once: exactly as
// many as one-at-a-time Tetris would start before another stage overtook
// it. Starting one task of stage i lowers every score by weight·demand_i,
// so best stays ahead of j for k more tasks while
//
//	score_best − k·(w_best·d_best)  >  score_j − k·(w_j·d_best)
//
// (≥ when best wins ties). This keeps the packer's cost per instant in
// the number of stages, not tasks.
func bulkCount(j *Job, best int, runnable, pending []int, weight []fairness.Vector, scores []float64, fits []bool, free fairness.Vector, kinds []fairness.Kind) int {
	d := &j.Stages[best].Demand
	n := min(pending[best], free.Count(*d))
	dot := func(w *fairness.Vector) float64 {
		var s float64
		for _, k := range kinds {
			s += w[k] * d[k]
		}
		return s
	}
	self := dot(&weight[best])
	for _, o := range runnable {
		if o == best || !fits[o] {
			continue
		}
		drop := self - dot(&weight[o])
		if drop <= 0 {
			continue // best only gains on o
		}
		gap := (scores[best] - scores[o]) / drop
		if gap >= float64(n) {
			continue
		}
		// Placements k' = 0, 1, ... keep best ahead while k' ≤ gap when
		// best wins ties, k' < gap when it does not.
		k := int(math.Ceil(gap))
		if best < o {
			k = int(math.Floor(gap)) + 1
		}
		n = min(n, max(k, 1))
	}
	return max(n, 1)
}
