package altruism

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/packing"
)

// LeftoverOrder decides which secondary goal a node's resources serve
// first. Carbyne (§4) packs DEFAULT asks for efficiency and hands the
// leftover out to ALTRUISTIC asks shortest-remaining-work first; "their
// order can be reversed".
type LeftoverOrder int

const (
	// EfficiencyFirst packs DEFAULT asks Tetris-style within each app's
	// share, then gives the leftover to ALTRUISTIC asks, apps in ascending
	// remaining work (SRTF), each app's asks packed Tetris-style.
	EfficiencyFirst LeftoverOrder = iota
	// JCTFirst is the reverse: DEFAULT asks go apps-by-SRTF within their
	// shares, then the leftover is packed Tetris-style across all apps.
	JCTFirst
	// SRTFFirst orders both by remaining work: DEFAULT asks within the
	// shares, apps in ascending remaining work, then the leftover the
	// same way; alignment ranks each app's asks. Packing the in-share
	// step by alignment alone lets a large job's well-aligned tasks take
	// every freed slot ahead of a one-task job's due task, though both
	// are within their shares; ranking by remaining work serves the
	// short job first and costs the large one nothing it is owed. Loom's
	// default: measured faster and fairer than EfficiencyFirst on every
	// catalogue (docs/results).
	SRTFFirst
)

func (o LeftoverOrder) String() string {
	switch o {
	case EfficiencyFirst:
		return "efficiency-first"
	case JCTFirst:
		return "jct-first"
	case SRTFFirst:
		return "srtf"
	}
	return fmt.Sprintf("LeftoverOrder(%d)", int(o))
}

// ParseLeftoverOrder reads "efficiency-first", "jct-first" or "srtf".
func ParseLeftoverOrder(s string) (LeftoverOrder, error) {
	switch s {
	case "efficiency-first":
		return EfficiencyFirst, nil
	case "jct-first":
		return JCTFirst, nil
	case "srtf":
		return SRTFFirst, nil
	}
	return 0, fmt.Errorf("unknown leftover order %q (want srtf, efficiency-first or jct-first)", s)
}

// orders returns the picker order for the in-share phase and for the
// leftover phase.
func (o LeftoverOrder) orders() (inShare, leftover packing.Order) {
	switch o {
	case JCTFirst:
		return packing.ByRemainingWork, packing.ByScore
	case SRTFFirst:
		return packing.ByRemainingWork, packing.ByRemainingWork
	}
	return packing.ByScore, packing.ByRemainingWork
}

// Ask is a group of identical asks as the RM holds them: one entry per
// (app, priority, demand, kind) with a count.
type Ask struct {
	App      int
	Kind     AskKind
	Priority int
	Demand   fairness.Vector
	Count    int
}

// App is what a node pass needs to know about one app.
type App struct {
	Share         fairness.Vector // A_k from DRF
	Usage         fairness.Vector // what it holds now, everywhere
	RemainingWork float64
	// Weight scales the app's entitlement in the work-conserving phase;
	// 0 means 1.
	Weight float64
}

// Phase says which part of a node pass placed a task.
type Phase int

const (
	// InShare: a DEFAULT ask served within its app's share.
	InShare Phase = iota
	// OverShare: a DEFAULT ask of an app already at its share, served
	// work-conservingly in DRF order: the app holding the least (by
	// weighted dominant share) first, as DRF itself would.
	OverShare
	// FromLeftover: an ALTRUISTIC ask served from what the others left.
	FromLeftover
)

func (p Phase) String() string {
	switch p {
	case InShare:
		return "in-share"
	case OverShare:
		return "over-share"
	}
	return "leftover"
}

// Assignment is Count tasks of asks[Ask] placed on the node.
type Assignment struct {
	Ask   int
	Count int
	Phase Phase
}

// NodePolicy configures a node pass.
type NodePolicy struct {
	Order LeftoverOrder
	// Score ranks asks on the node; nil means pure Tetris alignment.
	Score packing.ScoreFunc
	// Cluster is the cluster's capacity, against which dominant shares
	// are measured. Zero means the node's capacity.
	Cluster fairness.Vector
	// LeftoverCap, when positive, bounds what an app may hold while it
	// takes from the leftover: LeftoverCap times its share, by dominant
	// share. What the capped apps leave is then handed out without the
	// cap, so no resource idles while someone asks for it.
	LeftoverCap float64
}

// FillNode decides what a node with free resources runs: the steps of
// nodeSteps, in order, each until nothing more of it fits (DEFAULT asks
// within the shares; ALTRUISTIC asks from the leftover, first within the
// cap, then beyond it; DEFAULT asks beyond the shares in DRF order). The
// first three follow the leftover order knob. Placements are in the
// order made. FillNode does not modify its arguments.
func FillNode(free, capacity fairness.Vector, apps []App, asks []Ask, pol NodePolicy) []Assignment {
	// Only asks that fit the node's free room now can be placed, as the
	// room only shrinks; on a big cluster that is a few of many. Work on
	// those alone, with their apps renumbered in their original order.
	var keep []int
	for i, a := range asks {
		if a.Count > 0 && a.Demand.FitsIn(free) {
			keep = append(keep, i)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	// Asks usually come grouped by app, in app order (the RM builds them
	// so); then a running counter renumbers them, else a map does.
	grouped := slices.IsSortedFunc(keep, func(a, b int) int { return cmp.Compare(asks[a].App, asks[b].App) })
	var renum map[int]int
	if !grouped {
		renum = make(map[int]int)
	}
	var subApps []App
	sub := make([]Ask, len(keep))
	last := -1
	for k, i := range keep {
		a := asks[i]
		var j int
		switch {
		case grouped && a.App == last:
			j = len(subApps) - 1
		case grouped:
			j, last = len(subApps), a.App
			subApps = append(subApps, apps[a.App])
		default:
			var ok bool
			if j, ok = renum[a.App]; !ok {
				j = len(subApps)
				renum[a.App] = j
				subApps = append(subApps, apps[a.App])
			}
		}
		a.App = j
		sub[k] = a
	}
	out := fillNode(free, capacity, subApps, sub, pol)
	for i := range out {
		out[i].Ask = keep[out[i].Ask]
	}
	return out
}

func fillNode(free, capacity fairness.Vector, apps []App, asks []Ask, pol NodePolicy) []Assignment {
	p := newNodePass(free, capacity, apps, asks, pol)
	for _, s := range nodeSteps {
		s.run(p)
	}
	return p.out
}

// nodeStep is one named step of a node pass. The steps run in the order
// of nodeSteps, each until nothing more of it fits; the README and
// DESIGN describe them in this order.
type nodeStep struct {
	name string
	run  func(*nodePass)
}

var nodeSteps = []nodeStep{
	{"fair share: DEFAULT asks within their apps' shares", (*nodePass).defaultInShare},
	{"leftover within the cap: ALTRUISTIC asks of apps below LeftoverCap times their share", (*nodePass).altruisticWithinCap},
	{"leftover: ALTRUISTIC asks", (*nodePass).altruisticLeftover},
	{"work conservation: DEFAULT asks beyond the shares, in DRF order", (*nodePass).defaultOverShare},
}

// nodePass is one node's fill in progress: what is free, what each app
// holds, how many tasks each ask has left, and the placements so far.
type nodePass struct {
	free, capacity, cluster fairness.Vector
	apps                    []App
	asks                    []Ask
	pol                     NodePolicy
	score                   packing.ScoreFunc
	inShare, leftover       packing.Order
	usage                   []fairness.Vector
	left                    []int
	byApp                   [][]int
	groups                  []packing.Group
	out                     []Assignment
}

func newNodePass(free, capacity fairness.Vector, apps []App, asks []Ask, pol NodePolicy) *nodePass {
	p := &nodePass{free: free, capacity: capacity, cluster: pol.Cluster, apps: apps, asks: asks, pol: pol, score: pol.Score,
		usage: make([]fairness.Vector, len(apps)), left: make([]int, len(asks)), byApp: make([][]int, len(apps)),
		groups: make([]packing.Group, len(asks))}
	if p.score == nil {
		p.score = packing.Tetris(0)
	}
	if p.cluster.IsZero() {
		p.cluster = capacity
	}
	p.inShare, p.leftover = pol.Order.orders()
	for i, a := range apps {
		p.usage[i] = a.Usage
	}
	for i, a := range asks {
		p.left[i] = a.Count
		p.byApp[a.App] = append(p.byApp[a.App], i)
	}
	return p
}

func (p *nodePass) isDefault(i int) bool    { return p.asks[i].Kind == Default }
func (p *nodePass) isAltruistic(i int) bool { return p.asks[i].Kind == Altruistic }

// defaultInShare packs DEFAULT asks within their apps' shares: what the
// jobs must run now to meet their T_k, as fairness entitles them.
func (p *nodePass) defaultInShare() { p.pack(InShare, p.inShare, p.isDefault, true) }

// altruisticWithinCap hands the leftover to ALTRUISTIC asks of apps that
// hold less than LeftoverCap times their share (when there is a cap).
func (p *nodePass) altruisticWithinCap() {
	if p.pol.LeftoverCap <= 0 {
		return
	}
	p.pack(FromLeftover, p.leftover, func(i int) bool {
		a := p.asks[i]
		limit := p.pol.LeftoverCap * p.apps[a.App].Share.DominantShare(p.cluster)
		return p.isAltruistic(i) && p.left[i] > 0 && p.usage[a.App].Add(a.Demand).DominantShare(p.cluster) <= limit
	}, false)
}

// altruisticLeftover hands what is still left to ALTRUISTIC asks, so no
// resource idles while someone asks for it. The leftover goes to
// ALTRUISTIC asks before DEFAULT asks beyond the shares, as Carbyne hands
// it out: a job whose P(Altruism) draw failed does not take what others
// yielded ahead of them.
func (p *nodePass) altruisticLeftover() { p.pack(FromLeftover, p.leftover, p.isAltruistic, false) }

// defaultOverShare serves DEFAULT asks beyond the shares in DRF order,
// one task at a time: work conservation as DRF does it. With
// P(Altruism) = 0 nothing is ALTRUISTIC, and this and defaultInShare are
// DRF.
func (p *nodePass) defaultOverShare() {
	for {
		// The least-served app with a DEFAULT ask that fits, then its best
		// such ask by score.
		best, bestShare := -1, 0.0
		for i, a := range p.asks {
			if p.left[i] == 0 || a.Kind != Default || !a.Demand.FitsIn(p.free) {
				continue
			}
			w := p.apps[a.App].Weight
			if w <= 0 {
				w = 1
			}
			s := p.usage[a.App].DominantShare(p.cluster) / w
			if best < 0 || s < bestShare || (s == bestShare && a.App < p.asks[best].App) {
				best, bestShare = i, s
			}
		}
		if best < 0 {
			return
		}
		app := p.asks[best].App
		for i, a := range p.asks {
			p.groups[i] = packing.Group{Demand: a.Demand, Priority: a.Priority}
			if p.isDefault(i) && a.App == app {
				p.groups[i].Count = p.left[i]
			}
		}
		place(&p.out, packing.Picker{Score: p.score}.Pick(p.free, p.capacity, p.groups).Best, OverShare, p.asks, p.left, &p.free, p.usage)
	}
}

// pack places tasks of the eligible asks, best first by the picker,
// until none fits. The groups are built once per step and kept up to
// date as tasks are placed, so a placement costs one pick.
func (p *nodePass) pack(phase Phase, order packing.Order, eligible func(i int) bool, bounded bool) {
	for i, a := range p.asks {
		p.groups[i] = packing.Group{Demand: a.Demand, Priority: a.Priority,
			RemainingWork: p.apps[a.App].RemainingWork, Bounded: bounded}
		if eligible(i) {
			p.groups[i].Count = p.left[i]
		}
		if bounded {
			p.groups[i].Headroom = p.apps[a.App].Share.Sub(p.usage[a.App])
		}
	}
	pick := func() int {
		return packing.Picker{Score: p.score, Order: order}.Pick(p.free, p.capacity, p.groups).Best
	}
	if p.pol.Score == nil {
		pick = alignmentPicker(p.groups, order, &p.free, p.capacity)
	}
	for {
		i := pick()
		if i < 0 {
			return
		}
		app := p.asks[i].App
		place(&p.out, i, phase, p.asks, p.left, &p.free, p.usage)
		p.groups[i].Count--
		for _, k := range p.byApp[app] {
			if !eligible(k) {
				p.groups[k].Count = 0 // a cap it has now reached
			}
			if bounded {
				p.groups[k].Headroom = p.apps[app].Share.Sub(p.usage[app])
			}
		}
	}
}

// place records one more task of ask i in phase.
func place(out *[]Assignment, i int, phase Phase, asks []Ask, left []int, free *fairness.Vector, usage []fairness.Vector) {
	a := asks[i]
	left[i]--
	*free = free.Sub(a.Demand)
	usage[a.App] = usage[a.App].Add(a.Demand)
	if n := len(*out); n > 0 && (*out)[n-1].Ask == i && (*out)[n-1].Phase == phase {
		(*out)[n-1].Count++
		return
	}
	*out = append(*out, Assignment{Ask: i, Count: 1, Phase: phase})
}

// alignmentPicker is packing.Picker under pure Tetris alignment, made
// fast for large ask lists. Alignment depends only on a group's demand and
// the node, so groups of one demand shape score alike and rank among
// themselves by a key fixed for the whole pass (remaining work under
// ByRemainingWork, then priority, then index). Each pick then scores one
// group per shape, not every group. A group or shape dropped once stays
// dropped: within a pass counts, free room and headroom only shrink.
// It returns the same group Picker.Pick would (TestAlignmentPickerAgrees).
func alignmentPicker(groups []packing.Group, order packing.Order, free *fairness.Vector, capacity fairness.Vector) func() int {
	type shape struct {
		demand fairness.Vector
		idx    []int
	}
	var shapes []shape
	at := map[fairness.Vector]int{}
	for i := range groups {
		if groups[i].Count <= 0 {
			continue
		}
		si, ok := at[groups[i].Demand]
		if !ok {
			si = len(shapes)
			at[groups[i].Demand] = si
			shapes = append(shapes, shape{demand: groups[i].Demand})
		}
		shapes[si].idx = append(shapes[si].idx, i)
	}
	rank := func(i, j int) bool { // does i rank above j within a shape?
		a, b := &groups[i], &groups[j]
		if order == packing.ByRemainingWork && a.RemainingWork != b.RemainingWork {
			return a.RemainingWork < b.RemainingWork
		}
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		return i < j
	}
	for _, sh := range shapes {
		slices.SortFunc(sh.idx, func(i, j int) int {
			if rank(i, j) {
				return -1
			}
			return 1
		})
	}
	score := packing.Tetris(0)
	return func() int {
		best, bestScore := -1, 0.0
		live := shapes[:0]
		for _, sh := range shapes {
			if _, short := sh.demand.Shortfall(*free); short {
				continue
			}
			for len(sh.idx) > 0 {
				g := &groups[sh.idx[0]]
				if g.Count > 0 {
					if _, over := g.Demand.Shortfall(g.Headroom); !g.Bounded || !over {
						break
					}
				}
				sh.idx = sh.idx[1:]
			}
			if len(sh.idx) == 0 {
				continue
			}
			live = append(live, sh)
			i := sh.idx[0]
			s := score(packing.Input{Demand: sh.demand, Free: *free, Capacity: capacity})
			if best < 0 || beats(groups, order, i, s, best, bestScore) {
				best, bestScore = i, s
			}
		}
		shapes = live
		return best
	}
}

// beats ranks groups across shapes as packing.Picker does, the lower index
// winning a full tie.
func beats(groups []packing.Group, order packing.Order, i int, si float64, j int, sj float64) bool {
	a, b := &groups[i], &groups[j]
	if order == packing.ByRemainingWork && a.RemainingWork != b.RemainingWork {
		return a.RemainingWork < b.RemainingWork
	}
	if si != sj {
		return si > sj
	}
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	return i < j
}
