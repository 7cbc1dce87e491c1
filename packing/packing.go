// Package packing places ask groups on a node Tetris-style: a group's score
// is the alignment of its per-task demand with the node's free resources,
// optionally blended with a term that favours apps with less work left.
// The picker returns the best group that fits and records, as data, why
// every other group lost.
//
// The package is pure: no goroutines, no I/O, no clock.
package packing

import (
	"fmt"

	"github.com/loomrm/loom/fairness"
)

// Input is what a score function sees about one ask group on one node.
type Input struct {
	Demand   fairness.Vector // per task
	Free     fairness.Vector // on the node now
	Capacity fairness.Vector // the node's total
	// RemainingWork is the app's remaining work; MaxRemainingWork is the
	// largest among the groups being compared, so the work term can be
	// normalised to [0, 1].
	RemainingWork    float64
	MaxRemainingWork float64
}

// ScoreFunc scores a group on a node; higher is better. It must be pure.
type ScoreFunc func(Input) float64

// Alignment is Tetris's packing score: Σ_k (demand_k / capacity_k) ·
// (free_k / capacity_k) over the kinds the node has. A task that uses
// what the node has most of scores highest, which leaves the node's
// remaining resources balanced.
func Alignment(demand, free, capacity fairness.Vector) float64 {
	var s float64
	for k := range demand {
		if c := capacity[k]; c > 0 {
			s += demand[k] / c * free[k] / c
		}
	}
	return s
}

// Tetris returns the blended score: (1−w)·alignment/n + w·(1 − rem/maxRem),
// where n is the number of kinds the node has, so both terms lie in [0, 1].
// w = 0 is pure packing, w = 1 pure shortest-remaining-work. w is clamped
// to [0, 1].
func Tetris(w float64) ScoreFunc {
	w = min(max(w, 0), 1)
	return func(in Input) float64 {
		n := 0
		for _, c := range in.Capacity {
			if c > 0 {
				n++
			}
		}
		align := 0.0
		if n > 0 {
			align = Alignment(in.Demand, in.Free, in.Capacity) / float64(n)
		}
		work := 1.0
		if in.MaxRemainingWork > 0 {
			work = 1 - in.RemainingWork/in.MaxRemainingWork
		}
		return (1-w)*align + w*work
	}
}

// Group is a set of identical asks: Count tasks of one app at one priority
// with one per-task demand.
type Group struct {
	Demand fairness.Vector
	Count  int
	// Priority follows YARN: a lower value is served first. It breaks ties
	// between equal keys.
	Priority      int
	RemainingWork float64
	// Headroom, when Bounded, is the most more the group's app may take
	// now (its share minus its usage); a group whose task exceeds it
	// does not fit.
	Headroom fairness.Vector
	Bounded  bool
}

// Order is the key groups are ranked by.
type Order int

const (
	// ByScore ranks by score, highest first.
	ByScore Order = iota
	// ByRemainingWork ranks by the app's remaining work, least first
	// (SRTF), then by score.
	ByRemainingWork
)

func (o Order) String() string {
	switch o {
	case ByScore:
		return "score"
	case ByRemainingWork:
		return "remaining-work"
	}
	return fmt.Sprintf("Order(%d)", int(o))
}

// Reason says why a group was not picked.
type Reason int

const (
	// NoTasks: the group has nothing left to place.
	NoTasks Reason = iota + 1
	// DoesNotFit: a task needs more of Kind than the node has free.
	DoesNotFit
	// OverShare: a task needs more of Kind than the app's headroom.
	OverShare
	// Outranked: it fits, but another group ranks higher.
	Outranked
)

func (r Reason) String() string {
	switch r {
	case NoTasks:
		return "no tasks left"
	case DoesNotFit:
		return "does not fit"
	case OverShare:
		return "over its share"
	case Outranked:
		return "outranked"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Rejection records why one group lost.
type Rejection struct {
	Group  int
	Reason Reason
	// Kind is the short resource, for DoesNotFit and OverShare.
	Kind fairness.Kind
	// Score is the group's score, for Outranked.
	Score float64
}

func (r Rejection) String() string {
	switch r.Reason {
	case DoesNotFit, OverShare:
		return fmt.Sprintf("group %d: %s (%s)", r.Group, r.Reason, r.Kind)
	case Outranked:
		return fmt.Sprintf("group %d: %s (score %.4g)", r.Group, r.Reason, r.Score)
	}
	return fmt.Sprintf("group %d: %s", r.Group, r.Reason)
}

// Pick is a picker's decision.
type Pick struct {
	// Best is the index of the chosen group, -1 when none fits.
	Best  int
	Score float64
	// Rejected lists every other group and why it lost, in group order.
	// It is filled only when the picker explains.
	Rejected []Rejection
}

// Picker chooses the group to place next on a node.
type Picker struct {
	Score ScoreFunc
	Order Order
	// Explain makes Pick record rejections. The hot path leaves it off.
	Explain bool
}

// NewPicker returns a picker with the Tetris score blended by weight w.
func NewPicker(order Order, w float64) Picker {
	return Picker{Score: Tetris(w), Order: order}
}

// Pick returns the best group that fits free (and its headroom, if
// bounded). Ranking: the order's key, then the lower Priority, then the
// lower index, so the result is deterministic.
func (p Picker) Pick(free, capacity fairness.Vector, groups []Group) Pick {
	maxRem := 0.0
	for _, g := range groups {
		maxRem = max(maxRem, g.RemainingWork)
	}
	best := Pick{Best: -1}
	var bestGroup *Group
	for i := range groups {
		g := &groups[i]
		if g.Count <= 0 {
			p.reject(&best, Rejection{Group: i, Reason: NoTasks})
			continue
		}
		if k, short := g.Demand.Shortfall(free); short {
			p.reject(&best, Rejection{Group: i, Reason: DoesNotFit, Kind: k})
			continue
		}
		if g.Bounded {
			if k, short := g.Demand.Shortfall(g.Headroom); short {
				p.reject(&best, Rejection{Group: i, Reason: OverShare, Kind: k})
				continue
			}
		}
		s := p.Score(Input{Demand: g.Demand, Free: free, Capacity: capacity,
			RemainingWork: g.RemainingWork, MaxRemainingWork: maxRem})
		if bestGroup == nil || p.better(g, s, bestGroup, best.Score) {
			if bestGroup != nil {
				p.reject(&best, Rejection{Group: best.Best, Reason: Outranked, Score: best.Score})
			}
			best.Best, best.Score, bestGroup = i, s, g
			continue
		}
		p.reject(&best, Rejection{Group: i, Reason: Outranked, Score: s})
	}
	if p.Explain {
		sortRejections(best.Rejected)
	}
	return best
}

func (p Picker) reject(pk *Pick, r Rejection) {
	if p.Explain {
		pk.Rejected = append(pk.Rejected, r)
	}
}

// better reports whether group a with score sa ranks above b with sb. An
// earlier index wins full ties because groups are visited in index order.
func (p Picker) better(a *Group, sa float64, b *Group, sb float64) bool {
	if p.Order == ByRemainingWork && a.RemainingWork != b.RemainingWork {
		return a.RemainingWork < b.RemainingWork
	}
	if sa != sb {
		return sa > sb
	}
	return a.Priority < b.Priority
}

func sortRejections(rs []Rejection) {
	// Insertion sort: the list is nearly sorted (only displaced leaders
	// land out of order) and small.
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].Group < rs[j-1].Group; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}
