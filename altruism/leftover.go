package altruism

import (
	"fmt"

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
)

func (o LeftoverOrder) String() string {
	switch o {
	case EfficiencyFirst:
		return "efficiency-first"
	case JCTFirst:
		return "jct-first"
	}
	return fmt.Sprintf("LeftoverOrder(%d)", int(o))
}

// ParseLeftoverOrder reads "efficiency-first" or "jct-first".
func ParseLeftoverOrder(s string) (LeftoverOrder, error) {
	switch s {
	case "efficiency-first":
		return EfficiencyFirst, nil
	case "jct-first":
		return JCTFirst, nil
	}
	return 0, fmt.Errorf("unknown leftover order %q (want efficiency-first or jct-first)", s)
}

// orders returns the picker order for the in-share phase and for the
// leftover phase.
func (o LeftoverOrder) orders() (inShare, leftover packing.Order) {
	if o == JCTFirst {
		return packing.ByRemainingWork, packing.ByScore
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
}

// Phase says which part of a node pass placed a task.
type Phase int

const (
	// InShare: a DEFAULT ask served within its app's share.
	InShare Phase = iota
	// FromLeftover: an ask served from what the shares left over. It may
	// be ALTRUISTIC, or DEFAULT from an app already at its share (work
	// conservation).
	FromLeftover
)

func (p Phase) String() string {
	if p == InShare {
		return "in-share"
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
}

// FillNode decides what a node with free resources runs: first DEFAULT
// asks within their apps' shares, then the leftover, in the policy's
// order, until nothing fits. Placements are in the order they were made.
// It does not modify its arguments.
func FillNode(free, capacity fairness.Vector, apps []App, asks []Ask, pol NodePolicy) []Assignment {
	score := pol.Score
	if score == nil {
		score = packing.Tetris(0)
	}
	inShare, leftover := pol.Order.orders()
	usage := make([]fairness.Vector, len(apps))
	for i, a := range apps {
		usage[i] = a.Usage
	}
	groups := make([]packing.Group, len(asks))
	for i, a := range asks {
		groups[i] = packing.Group{Demand: a.Demand, Count: a.Count, Priority: a.Priority,
			RemainingWork: apps[a.App].RemainingWork}
	}
	var out []Assignment
	place := func(i int, phase Phase) {
		a := asks[i]
		groups[i].Count--
		free = free.Sub(a.Demand)
		usage[a.App] = usage[a.App].Add(a.Demand)
		for k := range out {
			if out[k].Ask == i && out[k].Phase == phase {
				out[k].Count++
				return
			}
		}
		out = append(out, Assignment{Ask: i, Count: 1, Phase: phase})
	}

	// In-share phase: only DEFAULT asks, each within its app's headroom.
	phase1 := make([]packing.Group, len(groups))
	for {
		for i, a := range asks {
			phase1[i] = groups[i]
			if a.Kind != Default {
				phase1[i].Count = 0
				continue
			}
			phase1[i].Bounded = true
			phase1[i].Headroom = apps[a.App].Share.Sub(usage[a.App])
		}
		pk := packing.Picker{Score: score, Order: inShare}.Pick(free, capacity, phase1)
		if pk.Best < 0 {
			break
		}
		place(pk.Best, InShare)
	}
	// Leftover phase: everything still asked for, unbounded.
	for {
		pk := packing.Picker{Score: score, Order: leftover}.Pick(free, capacity, groups)
		if pk.Best < 0 {
			break
		}
		place(pk.Best, FromLeftover)
	}
	return out
}
