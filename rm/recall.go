package rm

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

// Recall, Loom's addition to Carbyne, keeps the fair-share promise
// against the leftover. A job below its DRF share whose DEFAULT asks find
// no room waits for some container to end; when the others'
// leftover-paid containers fill the cluster, that can be seconds, which
// for a one-task job of a second is a promise broken many times over
// (under DRF the same room would have been its).
// Leftover is yielded room lent out: when a job below its share has
// waited for a part of its remaining critical path (Config.Recall times
// it), the core takes borrowed containers back on one node, just enough
// for one of its DEFAULT asks, and places that ask there at once; at most
// one round of this per ShareInterval. A job already late for its first
// promise (promise.go) takes back room for each DEFAULT ask it is owed,
// up to its share, in that one round (as the Fair Scheduler preempts a
// starved app's whole deficit), not one per round: a one-stage job of 57
// one-second tasks, served one task per round, had ended at 0.34x of its
// DRF time. Borrowed are the containers the
// leftover paid for: their tasks were ALTRUISTIC, their own AM said they
// could wait. The job holding most for its share gives first, its
// youngest containers first (they lose the least work); their tasks run
// again later. An AM's container is never taken, nor one a job's share or
// work conservation paid for (so a stock YARN AM, which never yields,
// never loses one to recall: only preemption for queues, with its
// PreemptionMessage and grace, takes those), and only Carbyne's pass
// recalls: at P(Altruism) 0 it is DRF's pass, which recalls nothing.
//
// Measured on the heavy-tailed mix (docs/results/altruism.md): without
// recall 7.6% of jobs ran below 0.8x of their DRF time and 2.4% below
// 0.5x, nearly all one-task jobs that arrived while a large job's wave of
// leftover-paid tasks filled every node; with Recall 0.25, 0.4% and none.
// Every waiting job taking its whole deficit at once (late or not) cost
// up to 8% of the average gain and put large jobs below 0.5x: they are
// the victims, their leftover-paid tasks killed and run again.

// recallWait is how long app a may wait: Recall times its remaining
// critical path (an AM that sends none, a stock YARN AM, waits for the
// next round).
func (c *Core) recallWait(a *app) time.Duration {
	return time.Duration(c.cfg.Recall * float64(a.critical))
}

// recallOn says whether recall can act: Carbyne's pass, yielding.
func (c *Core) recallOn() bool {
	if c.cfg.Recall <= 0 {
		return false
	}
	_, ok := c.nodePolicy().(carbyne)
	return ok
}

// recall runs after a scheduling pass: it notes which apps below their
// shares still wait with DEFAULT asks, and takes room back for those
// that have waited long enough, appending what it did to acts.
func (c *Core) recall(acts []Action) ([]Action, error) {
	c.recallDue, c.recallSet = 0, false
	if !c.recallOn() {
		return acts, nil
	}
	// At most one round of taking per ShareInterval, as YARN's Fair
	// Scheduler checks for preemption once per update interval: the
	// simulator, which steps at the instant a wait runs out, and the
	// daemon RM, which steps at heartbeats, then take at the same
	// instants; without it the simulator took back many more containers
	// than a heartbeat-driven RM could (its tasks of tens of ms ending
	// and being taken in between), and its JCTs parted from the live
	// cluster's by 13% in `loom mini --compare-sim`.
	gate := time.Duration(0)
	if c.recallRan {
		gate = c.recallLast + c.cfg.ShareInterval
	}
	ran := false
	// A recall's grants may take apps out of withDefault: walk a copy.
	c.recallApps = append(c.recallApps[:0], c.withDefault...)
	for _, a := range c.recallApps {
		if a.defaults == 0 {
			continue // served by an earlier recall's pass
		}
		k := c.promised(a)
		if k < 0 {
			a.waiting = false
			continue
		}
		if !a.waiting {
			a.waiting, a.waitSince = true, c.now
		}
		due := max(a.waitSince+c.recallWait(a), gate)
		if c.now < due {
			if !c.recallSet || due < c.recallDue {
				c.recallDue, c.recallSet = due, true
			}
			continue
		}
		ran = true
		took := false
		// One ask's room, or, for an app late for its first promise
		// (promise.go), room for each DEFAULT ask it is owed up to its
		// share, as the Fair Scheduler preempts a starved app's whole
		// deficit at once. The bound only guards the loop: each turn
		// places an ask or stops.
		late, bound := c.late(a), a.defaults
		why := fmt.Sprintf("recalled from the leftover for app %d, below its share for %v", a.id, c.now-a.waitSince)
		cause := RecallBelowShare
		if late {
			why += " and late for its first promise"
			cause = RecallLate
		}
		for n := 0; k >= 0 && n < bound && (n == 0 || late); n++ {
			id, victims := c.recallRoom(a, a.asks[k].Demand)
			if len(victims) == 0 {
				break
			}
			took = true
			if c.pre.room == nil {
				c.pre.room = map[NodeID][]heldRoom{}
			}
			for _, v := range victims {
				k := *c.conts.Get(v)
				acts = append(acts, Preempted{Container: k, Reason: why, Cause: cause})
				c.free(v)
				c.pre.room[id] = append(c.pre.room[id], heldRoom{queue: -1, app: a.id, res: k.Resource})
			}
			more, err := c.fill([]NodeID{id})
			if err != nil {
				return acts, err
			}
			acts = append(acts, more...)
			if a.defaults == 0 {
				break
			}
			k = c.promised(a)
		}
		if !took {
			// Nothing to take: it waits for an end, as under DRF, and
			// looks again once it has waited as long once more (at a
			// pass then: no instant is due for it).
			a.waitSince = c.now
			continue
		}
		a.waiting = false
	}
	if ran {
		c.recallRan, c.recallLast = true, c.now
	}
	return acts, nil
}

// promised is the index of app a's first DEFAULT ask (by priority) that
// is outstanding while a holds less than its share, or -1.
func (c *Core) promised(a *app) int {
	if a.held {
		return -1
	}
	share, below := 0.0, false
	best := -1
	for i := range a.asks {
		k := &a.asks[i]
		if k.Kind != altruism.Default || k.Count <= 0 || k.Label != "" {
			continue
		}
		if best >= 0 && k.Priority >= a.asks[best].Priority {
			continue
		}
		if !below {
			// Only now, for an app with a DEFAULT ask outstanding:
			// most have none.
			share = a.share.DominantShare(c.capacity)
			if a.usage.DominantShare(c.capacity) >= share-1e-9 {
				return -1
			}
			below = true
		}
		if k.Demand.Add(a.usage).DominantShare(c.capacity) > share+1e-9 {
			continue // past its share: DRF would not owe it this either
		}
		best = i
	}
	return best
}

// recallRoom picks the node and the containers to take back there so
// that demand fits: other apps' leftover-paid containers, not an AM's,
// not asked back already; those of the app holding the most for its share
// first (DRF's own order, reversed), each app's youngest first; the first
// node that enough of them in that order make room on wins. It returns no
// victims when a node fits demand already (something else held the ask
// back) or none can be made to.
func (c *Core) recallRoom(a *app, demand fairness.Vector) (NodeID, []ContainerID) {
	for _, n := range c.nodes {
		if n != nil && n.part == "" && demand.FitsIn(n.capacity.Sub(n.used)) {
			return 0, nil
		}
	}
	// The order is by held (most first), then container id (youngest
	// first). Apps are sorted, not every candidate container: the walk
	// mostly ends within the first app or two, and only the apps with
	// the held value being walked have their containers gathered and
	// sorted.
	type holder struct {
		b    *app
		held float64 // its dominant usage over its dominant share
	}
	var holders []holder
	for _, b := range c.apps {
		if b == a || b.leftovers == 0 {
			continue
		}
		holders = append(holders, holder{b, b.usage.DominantShare(c.capacity) / max(b.share.DominantShare(c.capacity), 1e-9)})
	}
	slices.SortFunc(holders, func(x, y holder) int { return cmp.Compare(y.held, x.held) })
	var walked []*Container
	freed := map[NodeID]fairness.Vector{}
	for g := 0; g < len(holders); {
		held := holders[g].held
		from := len(walked)
		for ; g < len(holders) && holders[g].held == held; g++ {
			b := holders[g].b
			for i := len(b.ids) - 1; i >= 0; i-- {
				k := c.conts.Get(b.ids[i])
				if k == nil || k.Phase != altruism.FromLeftover || c.pre.ams[k.ID] {
					continue
				}
				if _, asked := c.pre.asked[k.ID]; asked {
					continue
				}
				walked = append(walked, k)
			}
		}
		slices.SortFunc(walked[from:], func(x, y *Container) int { return cmp.Compare(y.ID, x.ID) })
		for j := from; j < len(walked); j++ {
			k := walked[j]
			n := c.nodes[k.Node]
			if n == nil || n.part != "" {
				continue
			}
			f := freed[k.Node].Add(k.Resource)
			freed[k.Node] = f
			if demand.FitsIn(n.capacity.Sub(n.used).Add(f)) {
				var out []ContainerID
				for _, w := range walked[:j+1] {
					if w.Node == k.Node {
						out = append(out, w.ID)
					}
				}
				return k.Node, out
			}
		}
	}
	return 0, nil
}

// countDefaults counts app a's outstanding DEFAULT asks again, after its
// asks were replaced, and keeps withDefault.
func (c *Core) countDefaults(a *app) {
	n := 0
	for _, k := range a.asks {
		if k.Kind == altruism.Default && k.Label == "" {
			n += k.Count
		}
	}
	a.defaults = n
	if n == 0 {
		c.dropDefault(a)
		return
	}
	if i, in := c.withDefaultAt(a.id); !in {
		c.withDefault = slices.Insert(c.withDefault, i, a)
	}
}

// withDefaultAt is where app id sits in withDefault, or would.
func (c *Core) withDefaultAt(id AppID) (int, bool) {
	return slices.BinarySearchFunc(c.withDefault, id, func(x *app, id AppID) int { return cmp.Compare(x.id, id) })
}

// dropDefault takes app a, whose last DEFAULT ask was served, out of
// withDefault.
func (c *Core) dropDefault(a *app) {
	if i, in := c.withDefaultAt(a.id); in {
		c.withDefault = slices.Delete(c.withDefault, i, i+1)
	}
	a.waiting = false
}
