package altruism

import (
	"cmp"
	"slices"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/packing"
)

// AskIndex orders one scheduling round's asks for FillNodeIndexed, once
// for all the nodes the round visits: by kind and demand shape, each list
// in the two orders a step ranks by (priority then position; remaining
// work, priority, position). Ranks within a shape are fixed for the
// round, since apps' remaining work and asks' priorities do not change
// while it runs; counts and usage are read live from the asks and apps,
// which the caller updates between node passes.
//
// It makes a node pass cost about the tasks it places and the asks it
// skips, instead of sorting every ask at every step of every node.
type AskIndex struct {
	// shapes[kind] lists the shapes asks of that kind have.
	shapes [2][]shapeLists
	// defaults are the DEFAULT asks, in position order, for the
	// work-conserving step.
	defaults []int

	// Per-pass scratch, sized once and reset only where a pass wrote.
	placed  []int // tasks placed this pass, per ask
	usage   []fairness.Vector
	touched []int // apps whose usage differs from apps[i].Usage
	dirty   []bool

	// Reset's scratch: sort keys, the apps by remaining work and each
	// app's dense rank in that order, and a counting sort's counts.
	keys     []uint64
	ranked   []int
	workRank []int
	counts   []int

	// Where each ask is filed, for Update: its kind and shape (shape -1:
	// nowhere), and the priority and remaining work it is ordered by.
	filedKind  []AskKind
	filedShape []int32
	filedPrio  []int
	filedWork  []float64

	// round numbers the caller's rounds of node passes (NewRound), and
	// overCap[i] is the round in which ask i was found over its app's
	// leftover cap: it stays over for the rest of the round, and is
	// passed over without working the shares out again at every node.
	round   uint32
	overCap []uint32
	// overShare[i] is the round in which DEFAULT ask i was found not to
	// fit within its app's share: the share is fixed for the round and
	// the app's holdings only grow, so it stays out until the next one.
	overShare []uint32
	cursors   [][]int // pack's, one per shape
	live      []int   // overShare's
}

// NewRound starts a round of node passes in which the apps' shares stay
// as they are and what they hold only grows (the RM's round: shares are
// computed before it, and only grants happen within it). An ask found
// over its app's leftover cap is then over it until the next round.
// Without NewRound nothing is remembered from pass to pass.
func (x *AskIndex) NewRound() {
	if x.round++; x.round == 0 {
		clear(x.overCap)
		clear(x.overShare)
		x.round = 1
	}
}

type shapeLists struct {
	demand fairness.Vector
	byPrio []int // by priority, then position
	byWork []int // by the app's remaining work, then priority, position
}

// NewAskIndex indexes asks (of apps) for a round of node passes.
func NewAskIndex(apps []App, asks []Ask) *AskIndex {
	x := &AskIndex{}
	x.Reset(apps, asks)
	return x
}

// Reset re-indexes for a new round, reusing the index's memory.
func (x *AskIndex) Reset(apps []App, asks []Ask) {
	x.placed = resize(x.placed, len(asks))
	x.overCap = resize(x.overCap, len(asks))
	x.overShare = resize(x.overShare, len(asks))
	x.usage = resizeVec(x.usage, len(apps))
	x.dirty = resize(x.dirty, len(apps))
	x.touched = x.touched[:0]
	x.defaults = x.defaults[:0]
	for k := range x.shapes {
		for s := range x.shapes[k] {
			x.shapes[k][s].byPrio = x.shapes[k][s].byPrio[:0]
		}
	}
	// Rounds have a handful of shapes: a linear search beats a map.
	var used [2]int
	for i, a := range asks {
		if a.Kind == Default {
			x.defaults = append(x.defaults, i)
		}
		k := int(a.Kind)
		si := -1
		for s := 0; s < used[k]; s++ {
			if x.shapes[k][s].demand == a.Demand {
				si = s
				break
			}
		}
		if si < 0 {
			si = used[k]
			used[k]++
			if si == len(x.shapes[k]) {
				x.shapes[k] = append(x.shapes[k], shapeLists{})
			}
			x.shapes[k][si].demand = a.Demand
			x.shapes[k][si].byPrio = x.shapes[k][si].byPrio[:0]
		}
		x.shapes[k][si].byPrio = append(x.shapes[k][si].byPrio, i)
	}
	x.rankApps(apps, asks)
	x.filedShape = slices.Grow(x.filedShape[:0], len(asks))[:len(asks)]
	x.filedKind = slices.Grow(x.filedKind[:0], len(asks))[:len(asks)]
	x.filedPrio = slices.Grow(x.filedPrio[:0], len(asks))[:len(asks)]
	x.filedWork = slices.Grow(x.filedWork[:0], len(asks))[:len(asks)]
	for k := range x.shapes {
		x.shapes[k] = x.shapes[k][:used[k]]
		for s := range x.shapes[k] {
			sh := &x.shapes[k][s]
			x.sortByPrio(sh.byPrio, asks)
			sh.byWork = x.sortByWork(sh.byWork[:0], sh.byPrio, asks)
			for _, i := range sh.byPrio {
				a := &asks[i]
				x.filedKind[i], x.filedShape[i], x.filedPrio[i], x.filedWork[i] = a.Kind, int32(s), a.Priority, apps[a.App].RemainingWork
			}
		}
	}
}

// Update files again the asks at positions [lo, hi), one app's whose
// asks (kind, demand, priority) or remaining work changed since Reset,
// so that the index is as Reset(apps, asks) would build it, but for the
// order of its shapes, which no pass depends on. The other asks must
// have kept their positions and what they are ordered by. A round in
// which one app or two changed then costs their asks, not a sort of
// every ask.
func (x *AskIndex) Update(apps []App, asks []Ask, lo, hi int) {
	// An ask filed under what it is now stays where it is.
	same := func(i int) bool {
		a := &asks[i]
		s := x.filedShape[i]
		return s >= 0 && x.filedKind[i] == a.Kind && x.filedPrio[i] == a.Priority &&
			x.filedWork[i] == apps[a.App].RemainingWork && x.shapes[a.Kind][s].demand == a.Demand
	}
	for i := lo; i < hi; i++ {
		if same(i) {
			continue
		}
		x.unfile(i)
		x.file(apps, asks, i)
	}
}

// byPrioCmp and byWorkCmp compare a filed entry with (work, prio, i).
func (x *AskIndex) byPrioCmp(e, prio, i int) int {
	if c := cmp.Compare(x.filedPrio[e], prio); c != 0 {
		return c
	}
	return cmp.Compare(e, i)
}

func (x *AskIndex) byWorkCmp(e int, work float64, prio, i int) int {
	if c := cmp.Compare(x.filedWork[e], work); c != 0 {
		return c
	}
	return x.byPrioCmp(e, prio, i)
}

// unfile takes ask i out of the lists it was filed in.
func (x *AskIndex) unfile(i int) {
	s := x.filedShape[i]
	if s < 0 {
		return
	}
	sh := &x.shapes[x.filedKind[i]][s]
	prio, work := x.filedPrio[i], x.filedWork[i]
	if at, ok := slices.BinarySearchFunc(sh.byPrio, i, func(e, i int) int { return x.byPrioCmp(e, prio, i) }); ok {
		sh.byPrio = slices.Delete(sh.byPrio, at, at+1)
	}
	if at, ok := slices.BinarySearchFunc(sh.byWork, i, func(e, i int) int { return x.byWorkCmp(e, work, prio, i) }); ok {
		sh.byWork = slices.Delete(sh.byWork, at, at+1)
	}
	if x.filedKind[i] == Default {
		if at, ok := slices.BinarySearch(x.defaults, i); ok {
			x.defaults = slices.Delete(x.defaults, at, at+1)
		}
	}
	x.filedShape[i] = -1
}

// file puts ask i into its kind's and shape's lists.
func (x *AskIndex) file(apps []App, asks []Ask, i int) {
	a := &asks[i]
	k := int(a.Kind)
	s := slices.IndexFunc(x.shapes[k], func(sh shapeLists) bool { return sh.demand == a.Demand })
	if s < 0 {
		s = len(x.shapes[k])
		x.shapes[k] = append(x.shapes[k], shapeLists{demand: a.Demand})
	}
	sh := &x.shapes[k][s]
	prio, work := a.Priority, apps[a.App].RemainingWork
	x.filedKind[i], x.filedShape[i], x.filedPrio[i], x.filedWork[i] = a.Kind, int32(s), prio, work
	at, _ := slices.BinarySearchFunc(sh.byPrio, i, func(e, i int) int { return x.byPrioCmp(e, prio, i) })
	sh.byPrio = slices.Insert(sh.byPrio, at, i)
	at, _ = slices.BinarySearchFunc(sh.byWork, i, func(e, i int) int { return x.byWorkCmp(e, work, prio, i) })
	sh.byWork = slices.Insert(sh.byWork, at, i)
	if a.Kind == Default {
		at, _ := slices.BinarySearch(x.defaults, i)
		x.defaults = slices.Insert(x.defaults, at, i)
	}
}

// sortByPrio orders ask positions by priority, then position. The keys
// pack both into one integer, so that the sort compares plain numbers
// rather than reaching into asks at every comparison.
func (x *AskIndex) sortByPrio(pos []int, asks []Ask) {
	if len(pos) < 2 {
		return
	}
	lo, hi := asks[pos[0]].Priority, asks[pos[0]].Priority
	for _, i := range pos {
		lo, hi = min(lo, asks[i].Priority), max(hi, asks[i].Priority)
	}
	if uint64(hi-lo) >= 1<<31 || uint64(len(asks)) >= 1<<32 {
		slices.SortFunc(pos, func(i, j int) int {
			if c := cmp.Compare(asks[i].Priority, asks[j].Priority); c != 0 {
				return c
			}
			return cmp.Compare(i, j)
		})
		return
	}
	x.keys = x.keys[:0]
	for _, i := range pos {
		x.keys = append(x.keys, uint64(asks[i].Priority-lo)<<32|uint64(i))
	}
	slices.Sort(x.keys)
	for n, key := range x.keys {
		pos[n] = int(key & (1<<32 - 1))
	}
}

// rankApps ranks the apps that ask by remaining work, densely: apps with
// equal remaining work share a rank.
func (x *AskIndex) rankApps(apps []App, asks []Ask) {
	x.workRank = resize(x.workRank, len(apps))
	x.ranked = x.ranked[:0]
	for i := range apps {
		x.workRank[i] = -1
	}
	for _, a := range asks {
		if x.workRank[a.App] < 0 {
			x.workRank[a.App] = 0
			x.ranked = append(x.ranked, a.App)
		}
	}
	slices.SortFunc(x.ranked, func(a, b int) int { return cmp.Compare(apps[a].RemainingWork, apps[b].RemainingWork) })
	r := 0
	for n, a := range x.ranked {
		if n > 0 && cmp.Compare(apps[x.ranked[n-1]].RemainingWork, apps[a].RemainingWork) != 0 {
			r++
		}
		x.workRank[a] = r
	}
}

// sortByWork appends byPrio's positions to out ordered by their app's
// remaining work, then as in byPrio (priority, position): a stable
// counting sort on the apps' ranks.
func (x *AskIndex) sortByWork(out, byPrio []int, asks []Ask) []int {
	ranks := len(x.ranked)
	x.counts = resize(x.counts, ranks+1)
	clear(x.counts)
	for _, i := range byPrio {
		x.counts[x.workRank[asks[i].App]+1]++
	}
	for r := 1; r <= ranks; r++ {
		x.counts[r] += x.counts[r-1]
	}
	out = slices.Grow(out[:0], len(byPrio))[:len(byPrio)]
	for _, i := range byPrio {
		r := x.workRank[asks[i].App]
		out[x.counts[r]] = i
		x.counts[r]++
	}
	return out
}

// resize returns s with length n, zeroed, in its memory when it has room.
func resize[T int | bool | uint32](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func resizeVec(s []fairness.Vector, n int) []fairness.Vector {
	if cap(s) < n {
		return make([]fairness.Vector, n)
	}
	return s[:n]
}

// FillNodeIndexed is FillNode for a policy with no Score (pure Tetris
// alignment), using an index built by NewAskIndex over the same apps and
// asks. It places exactly what FillNode places (TestFillNodeIndexedAgrees).
func FillNodeIndexed(free, capacity fairness.Vector, apps []App, asks []Ask, pol NodePolicy, x *AskIndex) []Assignment {
	p := &indexedPass{x: x, free: free, capacity: capacity, apps: apps, asks: asks, pol: pol, cluster: pol.Cluster}
	if p.cluster.IsZero() {
		p.cluster = capacity
	}
	inShare, leftover := pol.Order.orders()
	// Fair share: DEFAULT asks within their apps' shares.
	p.pack(Default, inShare, InShare, func(i int) bool {
		if x.round != 0 && x.overShare[i] == x.round {
			return false
		}
		a := &asks[i]
		if a.Demand.FitsIn(apps[a.App].Share.Sub(p.usageOf(a.App))) {
			return true
		}
		x.overShare[i] = x.round
		return false
	})
	// Leftover within the cap.
	if pol.LeftoverCap > 0 {
		p.pack(Altruistic, leftover, FromLeftover, func(i int) bool {
			if x.round != 0 && x.overCap[i] == x.round {
				return false
			}
			a := &asks[i]
			limit := pol.LeftoverCap * apps[a.App].Share.DominantShare(p.cluster)
			if p.usageOf(a.App).Add(a.Demand).DominantShare(p.cluster) <= limit {
				return true
			}
			x.overCap[i] = x.round
			return false
		})
	}
	// Leftover.
	p.pack(Altruistic, leftover, FromLeftover, nil)
	// Work conservation: DEFAULT asks beyond the shares, in DRF order.
	p.overShare()
	p.reset()
	return p.out
}

type indexedPass struct {
	x                       *AskIndex
	free, capacity, cluster fairness.Vector
	apps                    []App
	asks                    []Ask
	pol                     NodePolicy
	out                     []Assignment
}

func (p *indexedPass) left(i int) int { return p.asks[i].Count - p.x.placed[i] }

func (p *indexedPass) usageOf(app int) fairness.Vector {
	if p.x.dirty[app] {
		return p.x.usage[app]
	}
	return p.apps[app].Usage
}

func (p *indexedPass) place(i int, phase Phase) {
	a := &p.asks[i]
	x := p.x
	if !x.dirty[a.App] {
		x.dirty[a.App] = true
		x.usage[a.App] = p.apps[a.App].Usage
		x.touched = append(x.touched, a.App)
	}
	x.usage[a.App] = x.usage[a.App].Add(a.Demand)
	x.placed[i]++
	p.free = p.free.Sub(a.Demand)
	if n := len(p.out); n > 0 && p.out[n-1].Ask == i && p.out[n-1].Phase == phase {
		p.out[n-1].Count++
		return
	}
	p.out = append(p.out, Assignment{Ask: i, Count: 1, Phase: phase})
}

// reset clears the pass's scratch for the next node.
func (p *indexedPass) reset() {
	for _, as := range p.out {
		p.x.placed[as.Ask] = 0
	}
	for _, a := range p.x.touched {
		p.x.dirty[a] = false
	}
	p.x.touched = p.x.touched[:0]
}

// pack places tasks of asks of one kind that pass ok (nil: all), best
// first as packing.Picker ranks them under pure alignment, until none
// fits. Within a step an ask that fails once fails for the rest of it:
// free room and headroom only shrink, usage only grows, counts only fall.
// So each shape keeps a cursor that only moves forward.
func (p *indexedPass) pack(kind AskKind, order packing.Order, phase Phase, ok func(i int) bool) {
	shapes := p.x.shapes[kind]
	if len(shapes) == 0 {
		return
	}
	p.x.cursors = slices.Grow(p.x.cursors[:0], len(shapes))[:len(shapes)]
	cursors := p.x.cursors
	for s := range shapes {
		if order == packing.ByRemainingWork {
			cursors[s] = shapes[s].byWork
		} else {
			cursors[s] = shapes[s].byPrio
		}
	}
	score := packing.Tetris(0)
	for {
		best, bestScore := -1, 0.0
		ceil := p.free.Ceiling()
		for s := range shapes {
			if !shapes[s].demand.FitsUnder(ceil) {
				continue
			}
			c := cursors[s]
			for len(c) > 0 && (p.left(c[0]) <= 0 || (ok != nil && !ok(c[0]))) {
				c = c[1:]
			}
			cursors[s] = c
			if len(c) == 0 {
				continue
			}
			i := c[0]
			sc := score(packing.Input{Demand: shapes[s].demand, Free: p.free, Capacity: p.capacity})
			if best < 0 || p.beats(order, i, sc, best, bestScore) {
				best, bestScore = i, sc
			}
		}
		if best < 0 {
			return
		}
		p.place(best, phase)
	}
}

// beats ranks two asks as packing.Picker ranks their groups, the lower
// position winning a full tie.
func (p *indexedPass) beats(order packing.Order, i int, si float64, j int, sj float64) bool {
	if order == packing.ByRemainingWork {
		ri, rj := p.apps[p.asks[i].App].RemainingWork, p.apps[p.asks[j].App].RemainingWork
		if ri != rj {
			return ri < rj
		}
	}
	if si != sj {
		return si > sj
	}
	if a, b := p.asks[i].Priority, p.asks[j].Priority; a != b {
		return a < b
	}
	return i < j
}

// overShare serves DEFAULT asks beyond the shares in DRF order, one task
// at a time: the least-served app (by weighted dominant share) with a
// DEFAULT ask that fits, then its best such ask by alignment.
func (p *indexedPass) overShare() {
	// A node with no room for any DEFAULT ask's demand (most nodes of a
	// busy cluster) is passed over without a look at each ask.
	if !slices.ContainsFunc(p.x.shapes[Default], func(sh shapeLists) bool { return sh.demand.FitsIn(p.free) }) {
		return
	}
	score := packing.Tetris(0)
	// The DEFAULT asks still fitting, narrowed at each placement in a
	// copy the index keeps (not in x.defaults itself).
	p.x.live = append(p.x.live[:0], p.x.defaults...)
	live := p.x.live
	for {
		best, bestShare := -1, 0.0
		keep := live[:0]
		for _, i := range live {
			a := &p.asks[i]
			if p.left(i) <= 0 || !a.Demand.FitsIn(p.free) {
				continue // for the rest of the pass
			}
			keep = append(keep, i)
			w := p.apps[a.App].Weight
			if w <= 0 {
				w = 1
			}
			s := p.usageOf(a.App).DominantShare(p.cluster) / w
			if best < 0 || s < bestShare || (s == bestShare && a.App < p.asks[best].App) {
				best, bestShare = i, s
			}
		}
		live = keep
		if best < 0 {
			return
		}
		app := p.asks[best].App
		pick, pickScore := -1, 0.0
		for _, i := range live {
			a := &p.asks[i]
			if a.App != app || p.left(i) <= 0 || !a.Demand.FitsIn(p.free) {
				continue
			}
			sc := score(packing.Input{Demand: a.Demand, Free: p.free, Capacity: p.capacity})
			if pick < 0 || sc > pickScore || (sc == pickScore && a.Priority < p.asks[pick].Priority) {
				pick, pickScore = i, sc
			}
		}
		p.place(pick, OverShare)
	}
}
