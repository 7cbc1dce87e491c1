package rm

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/packing"
)

// AppView is what a node pass knows about one app.
type AppView struct {
	Share         fairness.Vector // A_k
	Usage         fairness.Vector
	RemainingWork float64
	Weight        float64
	CriticalTime  time.Duration
}

// Policy decides what one node runs: given its free resources and
// capacity, the cluster's capacity, the apps and their asks, it returns
// placements in the order made. A policy must be deterministic and must
// not modify its arguments.
type Policy interface {
	Name() string
	Fill(n NodeState, c *Candidates) []altruism.Assignment
}

// Candidates are the apps and asks a scheduling pass offers each node. The
// core keeps them current as it grants containers.
type Candidates struct {
	Apps []AppView
	Asks []altruism.Ask
	// Alt mirrors Apps as altruism.FillNode takes them, so that Carbyne's
	// pass does not convert every app at every node.
	Alt []altruism.App
	// index orders the round's asks for Carbyne's node passes; brought
	// up to date by the first pass of a round that needs it (fresh
	// false): built for a layout (indexLayout), then updated for the
	// apps listed as changed (indexTaken: its drainChanged stamp).
	index       *altruism.AskIndex
	fresh       bool
	indexLayout uint64
	indexTaken  uint64
	// gen numbers the core's scheduling rounds (0: built by hand), so
	// that a policy may keep what it derived from the asks from one node
	// of a round to the next (DRF's shapes and shares). The core calls
	// usageChanged for every app it grants to.
	gen uint64
	// drfKey is each app's weighted dominant share of keyCap (DRF's
	// order), which the core keeps as it writes the views and grants:
	// computed once per change of usage, not once per app per round.
	// Empty in candidates built by hand.
	drfKey []float64
	keyCap fairness.Vector
	// shapeOf is each ask's shape id and shapeVec each id's demand
	// (noShape for an id no ask has now), kept by the core; empty in
	// candidates built by hand, whose shapes indexShapes numbers.
	shapeOf  []int32
	shapeVec []fairness.Vector
	// The core's: steady says the counts change in this round only by
	// granting (no node pass narrows them for locality, queue limits or
	// partitions); layout numbers the layouts of the asks, blocks[a] is
	// where app a's asks start (blocks[a+1] where they end); changed
	// lists the apps whose asks, drfKey or remaining work changed since
	// the list was last drained (changedAll: too many to list; takes
	// counts the drains). With them drf and carbyne keep their orders of
	// the asks from round to round (drfIndex, index).
	steady     bool
	total      int // the asks' counts, kept by the core in steady rounds
	layout     uint64
	blocks     []int32
	changed    []int32
	changedAll bool
	takes      uint64
	drained    []uint64 // per app, the drain that last called back for it
	drf        drfIndex
	// scratch is a node pass's working memory, kept from pass to pass so
	// that the policies allocate nothing per node (DRF's four slices per
	// pass were 7% of a 1,000-job simulation, and the collector's work).
	scratch struct {
		share []float64
		known []bool
		usage []fairness.Vector
		left  []int
		order []int
		key   []float64
		// DRF's round, gen (its shares above are kept for it).
		gen uint64
		// Each ask's shape (its index in shapes, the distinct demands
		// asked for), indexed once per round (shapeGen), and whether
		// each shape fits the node at hand (DRF, Tetris, SJF).
		shapeGen uint64
		shapeOf  []int32
		shapes   []fairness.Vector
		fits     []bool
		// Tetris's: each ask's work term (for round workGen, with the
		// largest remaining work maxRem), each shape's alignment.
		work, align []float64
		workGen     uint64
		maxRem      float64
		// A pass's own placements (passLeft): took per ask, tookAt
		// the asks it took from.
		took   []int32
		tookAt []int
		// SJF's order of the asks, for round sjfGen.
		sjfOrder []int
		sjfGen   uint64
	}
}

// NodeState is one node as a policy sees it.
type NodeState struct {
	Free, Capacity fairness.Vector
	// Cluster is the live nodes' total, for dominant shares.
	Cluster fairness.Vector
}

// Each policy is a small struct; these assertions keep them honest.
var (
	_ Policy = carbyne{}
	_ Policy = drf{}
	_ Policy = tetris{}
	_ Policy = sjf{}
)

// ParsePolicy returns the policy of a name, as the Carbyne paper names
// them: carbyne, drf, tetris or sjf.
func ParsePolicy(name string, order altruism.LeftoverOrder) (Policy, error) {
	switch name {
	case "carbyne":
		return Carbyne(order), nil
	case "drf":
		return DRF(), nil
	case "tetris":
		return Tetris(), nil
	case "sjf":
		return SJF(), nil
	}
	return nil, fmt.Errorf("unknown policy %q (want carbyne, drf, tetris or sjf)", name)
}

// Altruistic says whether AMs plan altruistically under the named policy:
// Carbyne's AM packs its DAG in reverse and yields; the baselines' AMs ask
// for every runnable task DEFAULT, breadth-first. The RM tells AMs its
// policy, so that they plan as the simulator's AMs do under it.
func Altruistic(policy string) bool { return policy == "carbyne" }

// Carbyne packs DEFAULT asks within each app's DRF share and hands the
// leftover out, in the order the knob sets (altruism.FillNode).
func Carbyne(order altruism.LeftoverOrder) Policy { return carbyne{order: order} }

// CarbyneCapped is Carbyne with a cap on what an app may hold while it
// takes from the leftover, in multiples of its share.
func CarbyneCapped(order altruism.LeftoverOrder, leftoverCap float64) Policy {
	return carbyne{order: order, cap: leftoverCap}
}

type carbyne struct {
	order altruism.LeftoverOrder
	cap   float64
}

func (carbyne) Name() string { return "carbyne" }

func (p carbyne) Fill(n NodeState, c *Candidates) []altruism.Assignment {
	if c.index == nil {
		c.index = &altruism.AskIndex{}
	}
	switch {
	case !c.fresh && c.steady && c.gen != 0 && !scanRounds && c.indexLayout == c.layout && len(c.blocks) == len(c.Alt)+1 &&
		c.drainChanged(&c.indexTaken, func(a int) { c.index.Update(c.Alt, c.Asks, int(c.blocks[a]), int(c.blocks[a+1])) }):
		// The apps whose asks or remaining work changed are filed again.
	case !c.fresh:
		c.drainChanged(&c.indexTaken, nil)
		c.index.Reset(c.Alt, c.Asks)
		c.indexLayout = c.layout
	}
	if !c.fresh {
		// The round's shares are set; its grants only add.
		c.index.NewRound()
	}
	c.fresh = true
	return altruism.FillNodeIndexed(n.Free, n.Capacity, c.Alt, c.Asks, altruism.NodePolicy{Order: p.order, Cluster: n.Cluster, LeftoverCap: p.cap}, c.index)
}

// DRF is YARN's dominant-resource-fair scheduling: each container goes to
// the app with the lowest weighted dominant share of what it holds,
// its highest-priority ask that fits. It is work-conserving: an app may
// exceed its fair share while nobody further below asks.
func DRF() Policy { return drf{} }

type drf struct{}

func (drf) Name() string { return "drf" }

func (drf) Fill(n NodeState, c *Candidates) []altruism.Assignment {
	free, apps, asks := n.Free, c.Apps, c.Asks
	keyed := len(c.drfKey) == len(apps) && c.keyCap == n.Cluster
	if c.steady && keyed && !scanRounds && c.gen != 0 && len(c.shapeOf) == len(asks) && len(c.blocks) == len(apps)+1 {
		return c.drf.fillIndexed(n, c)
	}
	c.drf.valid = false
	// Each app's weighted dominant share, computed the first time one of
	// its asks fits and kept current as tasks are placed, and from node
	// to node of a round until the core grants the app something: most
	// apps have nothing that fits a node's few free resources, and the
	// pick below runs once per task.
	sc := &c.scratch
	if c.gen == 0 || sc.gen != c.gen {
		sc.gen = c.gen
		na := len(apps)
		sc.share, sc.known, sc.usage = slices.Grow(sc.share[:0], na)[:na], slices.Grow(sc.known[:0], na)[:na], slices.Grow(sc.usage[:0], na)[:na]
		clear(sc.known)
		c.indexShapes()
	}
	share, known, usage := sc.share, sc.known, sc.usage
	// Asks share a handful of demands: whether one fits is decided once
	// per demand, not once per ask.
	c.shapeFits(free)
	left := c.counts()
	// The asks that fit the node's free room now. Free room only shrinks
	// as tasks are placed, so each pick looks at these alone, and drops
	// those that stopped fitting: a pass scans every ask once, not once
	// per task it places.
	fit := sc.order[:0]
	for i := range asks {
		if left[i] == 0 || !sc.fits[sc.shapeOf[i]] {
			continue
		}
		fit = append(fit, i)
		if a := asks[i].App; !known[a] {
			usage[a], known[a] = apps[a].Usage, true
			if keyed {
				share[a] = c.drfKey[a]
			} else {
				share[a] = usage[a].DominantShare(n.Cluster) / apps[a].Weight
			}
		}
	}
	// The pick is the fitting ask least in (share, priority, app, index),
	// DRF's order, kept in a heap. A placement only raises its own app's
	// share, so an entry's key is at most its app's share now: an entry
	// whose share moved is pushed again with the new one when it comes up.
	h := drfHeap{idx: fit, key: slices.Grow(sc.key[:0], len(fit))[:len(fit)], asks: asks}
	for j, i := range fit {
		h.key[j] = share[asks[i].App]
	}
	defer func() { sc.order, sc.key = h.idx[:0], h.key[:0] }()
	var out []altruism.Assignment
	place := func(i int) {
		k := &asks[i]
		left[i]--
		free = free.Sub(k.Demand)
		usage[k.App] = usage[k.App].Add(k.Demand)
		share[k.App] = usage[k.App].DominantShare(n.Cluster) / apps[k.App].Weight
		out = appendPlacement(out, i, altruism.FromLeftover)
	}
	// Most passes place one task and leave too little room for another:
	// the first pick is found by one scan, and the rest are heaped only
	// when the node still has room. The picks are the same either way,
	// each the least fitting ask in DRF's order at the time it is made.
	if len(h.idx) > 0 {
		m := 0
		for j := 1; j < len(h.idx); j++ {
			if h.less(j, m) {
				m = j
			}
		}
		h.swap(0, m)
		place(h.idx[0])
		ceil := free.Ceiling()
		if !slices.ContainsFunc(sc.shapes, func(d fairness.Vector) bool { return d.FitsUnder(ceil) }) {
			return out
		}
	}
	h.init()
	for len(h.idx) > 0 {
		i, s := h.idx[0], h.key[0]
		k := &asks[i]
		switch {
		case left[i] == 0 || !k.Demand.FitsIn(free):
			// Free room only shrinks: what does not fit now never will
			// in this pass. Dropping all of it at once costs one scan,
			// where popping entry by entry cost a log each.
			ceil := free.Ceiling()
			for s, d := range sc.shapes {
				sc.fits[s] = sc.fits[s] && d.FitsUnder(ceil)
			}
			h.keep(func(i int) bool { return left[i] > 0 && sc.fits[sc.shapeOf[i]] })
			continue
		case s != share[k.App]:
			h.key[0] = share[k.App]
			h.down(0)
			continue
		}
		place(i)
	}
	return out
}

// drfHeap is a min-heap of ask indices by (key, priority, app, index).
// With pos and of (drfIndex's) it tracks where each ask is: pos its
// place in the heap, of set to -1 when it leaves.
type drfHeap struct {
	idx  []int
	key  []float64
	asks []altruism.Ask
	pos  []int32
	of   []int32
}

func (h *drfHeap) less(a, b int) bool {
	if h.key[a] != h.key[b] {
		return h.key[a] < h.key[b]
	}
	ka, kb := &h.asks[h.idx[a]], &h.asks[h.idx[b]]
	if ka.Priority != kb.Priority || ka.App != kb.App {
		return rankBefore(ka, kb)
	}
	return h.idx[a] < h.idx[b]
}

func (h *drfHeap) swap(a, b int) {
	h.idx[a], h.idx[b] = h.idx[b], h.idx[a]
	h.key[a], h.key[b] = h.key[b], h.key[a]
	if h.pos != nil {
		h.pos[h.idx[a]], h.pos[h.idx[b]] = int32(a), int32(b)
	}
}

func (h *drfHeap) init() {
	for i := len(h.idx)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *drfHeap) down(i int) {
	for n := len(h.idx); ; {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// up moves entry j towards the top while it is less than its parent.
func (h *drfHeap) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !h.less(j, p) {
			return
		}
		h.swap(j, p)
		j = p
	}
}

// fix restores the order after entry j's key changed.
func (h *drfHeap) fix(j int) {
	h.up(j)
	h.down(j)
}

// push adds ask i with key k.
func (h *drfHeap) push(i int, k float64) {
	h.idx, h.key = append(h.idx, i), append(h.key, k)
	j := len(h.idx) - 1
	if h.pos != nil {
		h.pos[i] = int32(j)
	}
	h.up(j)
}

// remove takes entry j out.
func (h *drfHeap) remove(j int) {
	last := len(h.idx) - 1
	i := h.idx[j]
	h.swap(j, last)
	h.idx, h.key = h.idx[:last], h.key[:last]
	if h.of != nil {
		h.of[i] = -1
	}
	if j < last {
		h.fix(j)
	}
}

// keep drops the entries whose ask ok refuses and orders the rest again.
func (h *drfHeap) keep(ok func(i int) bool) {
	n := 0
	for j, i := range h.idx {
		if ok(i) {
			h.idx[n], h.key[n] = i, h.key[j]
			n++
		}
	}
	h.idx, h.key = h.idx[:n], h.key[:n]
	h.init()
}

// Tetris packs across jobs as the Tetris paper does: each task goes to the
// ask with the best packing score plus ε times its shortest-remaining-work
// score. Its fairness knob f is 0 here (f → 0, the paper's performance
// setting, the one the Carbyne paper compares against): whoever asks.
func Tetris() Policy { return tetris{} }

// TetrisFair is Tetris with its fairness knob f in [0, 1]: at each pick only
// the ⌈(1−f)·N⌉ of the N apps with a task that fits the node, those
// furthest below their fair share, are considered. f = 0 is Tetris; f = 1
// considers only the app furthest below its share (the Carbyne paper's
// "Tetris Fair"). Considering only apps with a fitting task keeps every f
// work-conserving.
func TetrisFair(f float64) Policy { return tetris{f: min(max(f, 0), 1)} }

type tetris struct{ f float64 }

func (tetris) Name() string { return "tetris" }

// Fill scores asks as the Tetris paper combines its terms: alignment plus
// ε·(1 − remaining work / the most remaining work), with ε chosen at each
// node so that the two terms weigh the same on average over the asks that
// fit. A fixed weight would let one term drown the other: alignments of
// single tasks are small numbers, the work term runs to 1.
func (p tetris) Fill(n NodeState, c *Candidates) []altruism.Assignment {
	if p.f == 0 {
		return tetrisFill(n, c)
	}
	free, apps, asks := n.Free, c.Apps, c.Asks
	groups := make([]packing.Group, len(asks))
	maxRem := 0.0
	for i, k := range asks {
		groups[i] = packing.Group{Demand: k.Demand, Count: k.Count, Priority: k.Priority,
			RemainingWork: apps[k.App].RemainingWork}
		maxRem = max(maxRem, apps[k.App].RemainingWork)
	}
	var sumAlign, sumWork float64
	for _, g := range groups {
		if g.Count > 0 && g.Demand.FitsIn(free) {
			sumAlign += packing.Alignment(g.Demand, free, n.Capacity)
			if maxRem > 0 {
				sumWork += 1 - g.RemainingWork/maxRem
			}
		}
	}
	epsilon := 0.0
	if sumWork > 0 {
		epsilon = sumAlign / sumWork
	}
	score := func(in packing.Input) float64 {
		work := 0.0
		if in.MaxRemainingWork > 0 {
			work = 1 - in.RemainingWork/in.MaxRemainingWork
		}
		return packing.Alignment(in.Demand, in.Free, in.Capacity) + epsilon*work
	}
	picker := packing.Picker{Score: score, Order: packing.ByScore}
	var fair *fairWindow
	if p.f > 0 {
		fair = newFairWindow(p.f, n.Cluster, apps, asks)
	}
	var out []altruism.Assignment
	for {
		cand := groups
		if fair != nil {
			cand = fair.restrict(free, groups)
		}
		pk := picker.Pick(free, n.Capacity, cand)
		if pk.Best < 0 {
			return out
		}
		k := asks[pk.Best]
		groups[pk.Best].Count--
		free = free.Sub(k.Demand)
		if fair != nil {
			fair.usage[k.App] = fair.usage[k.App].Add(k.Demand)
		}
		out = appendPlacement(out, pk.Best, altruism.FromLeftover)
	}
}

// tetrisFill is Tetris's pass at f = 0, the pick of packing.Picker with
// Fill's score worked out once per demand rather than once per ask: the
// alignment depends on the ask's demand and the node alone, the work term
// on its app alone. The scores, their sums and the ties (higher score,
// then lower priority, then the earlier ask) are Picker's, so the picks
// are too; without the Picker's per-ask closure call and the groups it
// took, a pass costs a third of what it did.
func tetrisFill(n NodeState, c *Candidates) []altruism.Assignment {
	free, apps, asks := n.Free, c.Apps, c.Asks
	sc := &c.scratch
	c.indexShapes()
	shapeOf, shapes := sc.shapeOf, sc.shapes
	// The work terms depend on the apps' remaining work, which a round
	// does not change: worked out once per round.
	if c.gen == 0 || sc.workGen != c.gen || len(sc.work) != len(asks) {
		sc.workGen, sc.maxRem = c.gen, 0
		for _, k := range asks {
			sc.maxRem = max(sc.maxRem, apps[k.App].RemainingWork)
		}
		sc.work = slices.Grow(sc.work[:0], len(asks))[:len(asks)]
		for i, k := range asks {
			sc.work[i] = 0
			if sc.maxRem > 0 {
				sc.work[i] = 1 - apps[k.App].RemainingWork/sc.maxRem
			}
		}
	}
	maxRem, work := sc.maxRem, sc.work // each ask's work term
	sc.align = slices.Grow(sc.align[:0], len(shapes))[:len(shapes)]
	var fits []bool
	align := sc.align // per shape, at the free room now
	measure := func() {
		fits = c.shapeFits(free)
		for s, d := range shapes {
			if fits[s] {
				align[s] = packing.Alignment(d, free, n.Capacity)
			}
		}
	}
	measure()
	left := c.passCounts()
	defer c.endPass()
	var sumAlign, sumWork float64
	for i := range asks {
		if left.of(i) > 0 && fits[shapeOf[i]] {
			sumAlign += align[shapeOf[i]]
			if maxRem > 0 {
				sumWork += work[i]
			}
		}
	}
	epsilon := 0.0
	if sumWork > 0 {
		epsilon = sumAlign / sumWork
	}
	var out []altruism.Assignment
	for {
		best, bestScore := -1, 0.0
		for i := range asks {
			if !fits[shapeOf[i]] || left.of(i) <= 0 {
				continue
			}
			s := align[shapeOf[i]] + epsilon*work[i]
			if best < 0 || s > bestScore || s == bestScore && asks[i].Priority < asks[best].Priority {
				best, bestScore = i, s
			}
		}
		if best < 0 {
			return out
		}
		left.take(best)
		free = free.Sub(asks[best].Demand)
		out = appendPlacement(out, best, altruism.FromLeftover)
		measure()
		if !slices.Contains(fits, true) {
			return out // the next pick would find nothing
		}
	}
}

// fairWindow is Tetris's fairness knob: which apps a pick may consider.
type fairWindow struct {
	f       float64
	cluster fairness.Vector
	apps    []AppView
	asks    []altruism.Ask
	usage   []fairness.Vector
	masked  []packing.Group
	deficit []float64
	order   []int
	in      []bool // per app: inside the window at this pick
}

func newFairWindow(f float64, cluster fairness.Vector, apps []AppView, asks []altruism.Ask) *fairWindow {
	w := &fairWindow{f: f, cluster: cluster, apps: apps, asks: asks,
		usage: make([]fairness.Vector, len(apps)), masked: make([]packing.Group, len(asks)),
		deficit: make([]float64, len(apps)), in: make([]bool, len(apps))}
	for i, a := range apps {
		w.usage[i] = a.Usage
	}
	return w
}

// restrict returns the groups with every app outside the window emptied:
// of the N apps with a task that fits free, the ⌈(1−f)·N⌉ furthest below
// their fair share (the largest share minus usage, by dominant share,
// ties to the lower app).
func (w *fairWindow) restrict(free fairness.Vector, groups []packing.Group) []packing.Group {
	w.order = w.order[:0]
	for i, g := range groups {
		if g.Count > 0 && g.Demand.FitsIn(free) {
			w.order = append(w.order, w.asks[i].App)
		}
	}
	slices.Sort(w.order)
	w.order = slices.Compact(w.order)
	for _, a := range w.order {
		w.deficit[a] = w.apps[a].Share.DominantShare(w.cluster) - w.usage[a].DominantShare(w.cluster)
	}
	slices.SortStableFunc(w.order, func(a, b int) int {
		if c := cmp.Compare(w.deficit[b], w.deficit[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	keep := int(math.Ceil((1 - w.f) * float64(len(w.order))))
	keep = max(keep, 1)
	copy(w.masked, groups)
	if keep < len(w.order) {
		for _, a := range w.order[:keep] {
			w.in[a] = true
		}
		for i := range w.masked {
			if !w.in[w.asks[i].App] {
				w.masked[i].Count = 0
			}
		}
		for _, a := range w.order[:keep] {
			w.in[a] = false
		}
	}
	return w.masked
}

// SJF is the Carbyne paper's performance baseline, run as shortest
// remaining time first: the job with the least remaining work (the sum
// over its unfinished tasks of demand times duration, as the AM reports
// it) first, its asks in priority order, then the next job, until nothing
// fits. Remaining work, not the critical path: a wide job with a short
// critical path still holds the cluster long, and ranking it first would
// delay many short jobs behind it.
func SJF() Policy { return sjf{} }

type sjf struct{}

func (sjf) Name() string { return "sjf" }

func (sjf) Fill(n NodeState, c *Candidates) []altruism.Assignment {
	free, apps, asks := n.Free, c.Apps, c.Asks
	sc := &c.scratch
	// The order depends on the apps' remaining work and the asks alone,
	// which a round does not change: it is sorted once per round, not at
	// every node the round visits.
	if c.gen == 0 || sc.sjfGen != c.gen || len(sc.sjfOrder) != len(asks) {
		sc.sjfGen = c.gen
		sc.sjfOrder = slices.Grow(sc.sjfOrder[:0], len(asks))[:len(asks)]
		for i := range sc.sjfOrder {
			sc.sjfOrder[i] = i
		}
		slices.SortStableFunc(sc.sjfOrder, func(a, b int) int {
			ka, kb := asks[a], asks[b]
			if c := cmp.Compare(apps[ka.App].RemainingWork, apps[kb.App].RemainingWork); c != 0 {
				return c
			}
			if c := cmp.Compare(ka.App, kb.App); c != 0 {
				return c
			}
			return cmp.Compare(ka.Priority, kb.Priority)
		})
	}
	// Whether an ask can fit at all is decided per demand: free room only
	// shrinks, so a demand that does not fit now never will in this pass.
	c.indexShapes()
	fits := c.shapeFits(free)
	left := c.passCounts()
	defer c.endPass()
	var out []altruism.Assignment
	for _, i := range sc.sjfOrder {
		if !fits[sc.shapeOf[i]] {
			continue
		}
		placed := false
		for left.of(i) > 0 && asks[i].Demand.FitsIn(free) {
			left.take(i)
			free = free.Sub(asks[i].Demand)
			out = appendPlacement(out, i, altruism.FromLeftover)
			placed = true
		}
		// Free room only shrinks: once no demand fits, nothing after
		// this ask will.
		if placed && !slices.Contains(c.shapeFits(free), true) {
			break
		}
	}
	return out
}

// rankBefore orders two asks of equally entitled apps: the lower priority
// value, then the lower app, so that the choice is deterministic.
func rankBefore(a, b *altruism.Ask) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	return a.App < b.App
}

// noShape is the demand of a shape id that is not in use: it fits no node.
var noShape = func() (v fairness.Vector) {
	for i := range v {
		v[i] = math.Inf(1)
	}
	return v
}()

// indexShapes numbers the distinct demands of the asks (scratch shapeOf
// and shapes): the core's ids when it keeps them.
func (c *Candidates) indexShapes() {
	sc := &c.scratch
	if c.gen != 0 && len(c.shapeOf) == len(c.Asks) {
		sc.shapeGen, sc.shapeOf, sc.shapes = c.gen, c.shapeOf, c.shapeVec
		return
	}
	if c.gen != 0 && sc.shapeGen == c.gen && len(sc.shapeOf) == len(c.Asks) {
		return // indexed already this round
	}
	sc.shapeGen = c.gen
	sc.shapeOf = slices.Grow(sc.shapeOf[:0], len(c.Asks))[:len(c.Asks)]
	sc.shapes = sc.shapes[:0]
	last := -1
	for i := range c.Asks {
		d := c.Asks[i].Demand
		if last < 0 || sc.shapes[last] != d {
			last = slices.Index(sc.shapes, d)
			if last < 0 {
				last = len(sc.shapes)
				sc.shapes = append(sc.shapes, d)
			}
		}
		sc.shapeOf[i] = int32(last)
	}
}

// shapeFits sets, and returns, whether each of the round's shapes fits
// free (scratch fits, indexed as shapes).
func (c *Candidates) shapeFits(free fairness.Vector) []bool {
	sc := &c.scratch
	sc.fits = slices.Grow(sc.fits[:0], len(sc.shapes))[:len(sc.shapes)]
	ceil := free.Ceiling()
	for s, d := range sc.shapes {
		sc.fits[s] = d.FitsUnder(ceil)
	}
	return sc.fits
}

// usageChanged tells the policies' round memory that the core changed
// an app's usage (granted it a container).
func (c *Candidates) usageChanged(app int) {
	if app < len(c.scratch.known) {
		c.scratch.known[app] = false
	}
	c.noteChanged(app)
}

// drainChanged empties the changed list, calling fn for each app on it
// if the list is whole since the caller's last drain (*stamp): not when
// it overflowed, nor when another policy drained it in between (the
// policy a core runs may change: Carbyne at P(Altruism) 0 runs DRF's
// passes). It says whether fn was called for the whole list; false
// means the caller must rebuild what it keeps. fn nil only drains.
func (c *Candidates) drainChanged(stamp *uint64, fn func(app int)) bool {
	whole := fn != nil && !c.changedAll && *stamp == c.takes
	c.takes++
	if whole {
		// An app is listed once per change (each grant, say): called
		// once per drain.
		if len(c.drained) < len(c.Apps) {
			c.drained = append(c.drained, make([]uint64, len(c.Apps)-len(c.drained))...)
		}
		for _, a := range c.changed {
			if c.drained[a] != c.takes {
				c.drained[a] = c.takes
				fn(int(a))
			}
		}
	}
	c.changed, c.changedAll = c.changed[:0], false
	*stamp = c.takes
	return whole
}

// noteChanged lists app as changed: its asks, its key or its work.
func (c *Candidates) noteChanged(app int) {
	switch {
	case c.changedAll:
	case len(c.changed) >= len(c.Apps)+64:
		c.changed, c.changedAll = c.changed[:0], true
	default:
		c.changed = append(c.changed, int32(app))
	}
}

// passLeft is what a node pass has left of each ask: its count less
// what the pass took, without copying every count at every node.
type passLeft struct{ c *Candidates }

func (l passLeft) of(i int) int {
	if sc := &l.c.scratch; i < len(sc.took) {
		return l.c.Asks[i].Count - int(sc.took[i])
	}
	return l.c.Asks[i].Count
}

func (l passLeft) take(i int) {
	sc := &l.c.scratch
	if len(sc.took) < len(l.c.Asks) {
		sc.took = append(sc.took, make([]int32, len(l.c.Asks)-len(sc.took))...)
	}
	if sc.took[i] == 0 {
		sc.tookAt = append(sc.tookAt, i)
	}
	sc.took[i]++
}

// passCounts starts a pass's counts; endPass clears what it took.
func (c *Candidates) passCounts() passLeft { return passLeft{c} }

func (c *Candidates) endPass() {
	sc := &c.scratch
	for _, i := range sc.tookAt {
		sc.took[i] = 0
	}
	sc.tookAt = sc.tookAt[:0]
}

// counts is each ask's count, in the pass's scratch memory.
func (c *Candidates) counts() []int {
	c.scratch.left = slices.Grow(c.scratch.left[:0], len(c.Asks))[:len(c.Asks)]
	for i, k := range c.Asks {
		c.scratch.left[i] = k.Count
	}
	return c.scratch.left
}

// appendPlacement records one more task of ask i, merging with the last
// placement when it is the same ask.
func appendPlacement(out []altruism.Assignment, i int, phase altruism.Phase) []altruism.Assignment {
	if n := len(out); n > 0 && out[n-1].Ask == i && out[n-1].Phase == phase {
		out[n-1].Count++
		return out
	}
	return append(out, altruism.Assignment{Ask: i, Count: 1, Phase: phase})
}
