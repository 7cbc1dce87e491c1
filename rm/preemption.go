package rm

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

// Preemption, as the Fair Scheduler does it for guarantees: a leaf queue
// that holds less than its guarantee (min(Min, demand)) for its
// MinShareTimeout, or less than FairShareThreshold of its DRF share for
// its FairShareTimeout, while its apps ask for more, is starved by the
// difference. The core then picks containers to take back from queues
// above their shares, never taking a queue below its share, and never an
// AM's container: ALTRUISTIC containers first (they ran on what others
// yielded), then containers paid by the leftover, then the youngest. It
// asks their AMs to give them back (PreemptionAsked, YARN's
// PreemptionMessage) and, if they are still running after the grace
// period, takes them (Preempted): their tasks end and their AMs rerun
// them.

// PreemptionConfig turns preemption on.
type PreemptionConfig struct {
	// Grace is how long an AM has to give a container back before it is
	// killed (the Fair Scheduler's waitTimeBeforeKill, 15 s).
	Grace time.Duration
	// Interval is how often starvation is checked (the Fair Scheduler's
	// update interval, 500 ms, by default).
	Interval time.Duration
}

// PreemptionTimes are a queue's starvation timeouts; zero is off.
type PreemptionTimes struct {
	MinShareTimeout, FairShareTimeout time.Duration
	// FairShareThreshold is the part of its share below which a queue is
	// starved for fair share (0.5 by default).
	FairShareThreshold float64
	// NoPreemptFrom keeps the queue's containers from being taken
	// (allowPreemptionFrom false).
	NoPreemptFrom bool
}

// AMContainer marks a granted or recovered container as an AM's: it is
// never preempted.
type AMContainer struct{ Container ContainerID }

func (AMContainer) event() {}

// Actions of preemption.
type (
	// PreemptionAsked asks a container's AM to give it back before
	// Deadline, when it will be taken.
	PreemptionAsked struct {
		Container Container
		Deadline  time.Duration
	}
	// Preempted takes a container back: it is freed, its task ends.
	// Cause says which of the core's rules took it; Reason says so in
	// words, with the app it was taken for.
	Preempted struct {
		Container Container
		Reason    string
		Cause     PreemptCause
	}
)

// PreemptCause is why the core took a container back.
type PreemptCause int

const (
	// ForQueue: preemption for a starved queue, after its AM's grace.
	ForQueue PreemptCause = iota
	// RecallBelowShare: recall (recall.go), for an app below its share
	// whose DEFAULT asks waited.
	RecallBelowShare
	// RecallLate: recall for an app also late for its first promise
	// (promise.go), which takes its whole deficit at once.
	RecallLate
)

func (p PreemptCause) String() string {
	switch p {
	case RecallBelowShare:
		return "recall_below_share"
	case RecallLate:
		return "recall_late_for_promise"
	}
	return "queue_starved"
}

func (PreemptionAsked) action() {}
func (Preempted) action()       {}

// preemptState is the core's record of starvation and of the containers
// it asked back.
type preemptState struct {
	last  time.Duration
	ran   bool
	asked map[ContainerID]askedBack
	ams   map[ContainerID]bool
	// room is what asked-back containers freed on each node, held for
	// the queue they were taken for until the node's next pass: without
	// it the policy may hand the room to anyone (the victim's queue
	// itself), the starved queue stays starved, and preemption churns.
	room map[NodeID][]heldRoom
}

// heldRoom and askedBack name who the room is for: a queue of the tree,
// or (forPart, with queue -1) the asks of a non-exclusive node label
// whose room was lent to the default partition (labels.go).
type heldRoom struct {
	app   AppID // recall.go: for this app alone
	queue int
	part  string
	res   fairness.Vector
}

type askedBack struct {
	deadline time.Duration
	forQueue int
	forPart  string
}

// forWhom names who a taken container was for.
func (c *Core) forWhom(ab askedBack) string {
	if ab.forQueue < 0 {
		return "node label " + ab.forPart
	}
	return "queue " + c.tree.qs[ab.forQueue].conf.Name
}

func (c *Core) amContainer(id ContainerID) error {
	if c.conts.Get(id) == nil {
		return fmt.Errorf("container %d is not running", id)
	}
	if c.pre.ams == nil {
		c.pre.ams = map[ContainerID]bool{}
	}
	c.pre.ams[id] = true
	return nil
}

// forgetPreempted drops a container that ended from preemption's
// records; if it had been asked back, its room is held for the queue it
// was asked back for, whether its AM gave it or it was taken.
func (c *Core) forgetPreempted(k *Container) {
	if ab, ok := c.pre.asked[k.ID]; ok {
		if c.pre.room == nil {
			c.pre.room = map[NodeID][]heldRoom{}
		}
		c.pre.room[k.Node] = append(c.pre.room[k.Node], heldRoom{queue: ab.forQueue, part: ab.forPart, res: k.Resource})
		delete(c.pre.asked, k.ID)
	}
	delete(c.pre.ams, k.ID)
}

// preemptedPass gives the room held on a node to the asks of the queues
// it was taken for, before the policy's pass: DEFAULT asks first, then by
// priority; the room is held for one pass only.
func (c *Core) preemptedPass(n *node, cands *Candidates) []altruism.Assignment {
	held := c.pre.room[n.id]
	if len(held) == 0 {
		return nil
	}
	delete(c.pre.room, n.id)
	free := n.capacity.Sub(n.used)
	var out []altruism.Assignment
	taken := map[int]int{} // per ask, by this pass
	for _, h := range held {
		var order []int
		for i, k := range cands.Asks {
			mine := c.apps[c.owner[i]].q == h.queue
			switch {
			case h.app != 0:
				mine = c.apps[c.owner[i]].id == h.app
			case h.queue < 0:
				mine = c.askLabel(i) == h.part
			}
			if k.Count > taken[i] && mine {
				order = append(order, i)
			}
		}
		slices.SortStableFunc(order, func(x, y int) int {
			a, b := cands.Asks[x], cands.Asks[y]
			return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Priority, b.Priority))
		})
		room := h.res
		for _, i := range order {
			k := &cands.Asks[i]
			m := min(k.Count-taken[i], room.Count(k.Demand), free.Count(k.Demand))
			if r := c.room(c.apps[c.owner[i]], k.Demand); r >= 0 {
				m = min(m, r)
			}
			if m <= 0 {
				continue
			}
			out = append(out, altruism.Assignment{Ask: i, Count: m, Phase: altruism.InShare})
			room = room.Sub(k.Demand.Scale(float64(m)))
			free = free.Sub(k.Demand.Scale(float64(m)))
			taken[i] += m
		}
	}
	return out
}

// preempt takes back the containers whose grace ran out, then, at most
// once per interval, looks for starved queues and asks containers back
// for them.
func (c *Core) preempt() []Action {
	pc := c.cfg.Preemption
	if pc == nil || c.tree == nil && !c.labelled() {
		return nil
	}
	var acts []Action
	for _, id := range slices.Sorted(maps.Keys(c.pre.asked)) {
		if ab := c.pre.asked[id]; c.now >= ab.deadline {
			k := *c.conts.Get(id)
			acts = append(acts, Preempted{Container: k, Reason: "preempted for " + c.forWhom(ab)})
			c.free(id)
		}
	}
	interval := pc.Interval
	if interval <= 0 {
		interval = c.cfg.ShareInterval
	}
	if c.pre.ran && c.now-c.pre.last < interval {
		return acts
	}
	c.pre.ran, c.pre.last = true, c.now
	acts = append(acts, c.reclaimLent(pc.Grace)...)
	if c.tree == nil {
		return acts
	}
	c.refreshShares()
	t := c.tree
	// What each queue's asked-back containers will give, and take.
	coming := make([]fairness.Vector, len(t.qs))
	leaving := make([]fairness.Vector, len(t.qs))
	for _, held := range c.pre.room {
		for _, h := range held {
			if h.queue >= 0 {
				coming[h.queue] = coming[h.queue].Add(h.res)
			}
		}
	}
	for id, ab := range c.pre.asked {
		k := c.conts.Get(id)
		if ab.forQueue < 0 {
			continue // asked back for a node label
		}
		coming[ab.forQueue] = coming[ab.forQueue].Add(k.Resource)
		for q := c.byID[k.App].q; q >= 0; q = t.qs[q].parent {
			leaving[q] = leaving[q].Add(k.Resource)
		}
	}
	for i := range t.qs {
		q := &t.qs[i]
		if !q.leaf {
			continue
		}
		want := c.starvation(i)
		want = want.Sub(coming[i]).ClampZero()
		if want.IsZero() {
			continue
		}
		for _, k := range c.victims(i, leaving) {
			if want.IsZero() {
				break
			}
			if k.Resource.Min(want).IsZero() || !c.mayTake(i, c.byID[k.App].q, k.Resource, leaving) {
				continue // it frees nothing the queue lacks, or its queue is down to its share
			}
			c.pre.asked[k.ID] = askedBack{deadline: c.now + pc.Grace, forQueue: i}
			acts = append(acts, PreemptionAsked{Container: *k, Deadline: c.now + pc.Grace})
			want = want.Sub(k.Resource).ClampZero()
			for q := c.byID[k.App].q; q >= 0; q = t.qs[q].parent {
				leaving[q] = leaving[q].Add(k.Resource)
			}
		}
	}
	return acts
}

// PreemptionDue is the next time preemption has something to do: a
// container's grace ending, a starved queue's timeout, or an app's wait
// for recall running out; ok false when nothing is due. A caller that
// steps the core only at events (the simulator) schedules then.
func (c *Core) PreemptionDue() (time.Duration, bool) {
	due, ok := c.preemptDue()
	if c.recallSet && (!ok || c.recallDue < due) {
		due, ok = c.recallDue, true
	}
	return due, ok
}

func (c *Core) preemptDue() (time.Duration, bool) {
	if c.cfg.Preemption == nil || c.tree == nil && !c.labelled() {
		return 0, false
	}
	due, ok := time.Duration(0), false
	at := func(t time.Duration) {
		if !ok || t < due {
			due, ok = t, true
		}
	}
	for _, ab := range c.pre.asked {
		at(ab.deadline)
	}
	if c.lentWanted() {
		at(c.now) // the next check reclaims lent room
	}
	for i := 0; c.tree != nil && i < len(c.tree.qs); i++ {
		q := &c.tree.qs[i]
		if q.minSince >= 0 && q.conf.Preemption.MinShareTimeout > 0 {
			at(q.minSince + q.conf.Preemption.MinShareTimeout)
		}
		if q.fairSince >= 0 && q.conf.Preemption.FairShareTimeout > 0 {
			at(q.fairSince + q.conf.Preemption.FairShareTimeout)
		}
	}
	if ok && c.pre.ran {
		// Not before the next check.
		interval := c.cfg.Preemption.Interval
		if interval <= 0 {
			interval = c.cfg.ShareInterval
		}
		due = max(due, c.pre.last+interval)
	}
	return due, ok
}

// starvation is what leaf i lacks and has waited for past its timeouts;
// it also keeps the times its starvation began.
func (c *Core) starvation(i int) fairness.Vector {
	q := &c.tree.qs[i]
	pt := q.conf.Preemption
	if q.demand.Sub(q.usage).ClampZero().IsZero() {
		q.minSince, q.fairSince = -1, -1
		return fairness.Vector{}
	}
	var want fairness.Vector
	lack := q.guarantee(c.capacity).Min(q.demand).Sub(q.usage).ClampZero()
	if pt.MinShareTimeout > 0 && !lack.IsZero() {
		if q.minSince < 0 {
			q.minSince = c.now
		}
		if c.now-q.minSince >= pt.MinShareTimeout {
			want = want.Max(lack)
		}
	} else {
		q.minSince = -1
	}
	th := pt.FairShareThreshold
	if th <= 0 {
		th = 0.5
	}
	lack = q.share.Scale(th).Min(q.demand).Sub(q.usage).ClampZero()
	if pt.FairShareTimeout > 0 && !lack.IsZero() {
		if q.fairSince < 0 {
			q.fairSince = c.now
		}
		if c.now-q.fairSince >= pt.FairShareTimeout {
			// Up to its whole share, as the Fair Scheduler restores it.
			want = want.Max(q.share.Min(q.demand).Sub(q.usage).ClampZero())
		}
	} else {
		q.fairSince = -1
	}
	return want
}

// mayTake says whether a container of leaf q may be taken for starved
// leaf s: q and every queue above it up to the lowest one that holds s
// too (above it, a container moving from q to s changes nothing) allow
// it and stay at or above their shares, counting what leaves them
// already.
func (c *Core) mayTake(s, q int, res fairness.Vector, leaving []fairness.Vector) bool {
	t := c.tree
	shared := false
	for ; q >= 0; q = t.qs[q].parent {
		for a := s; a >= 0; a = t.qs[a].parent {
			if a == q {
				shared = true
			}
		}
		if shared {
			return true
		}
		if t.qs[q].conf.Preemption.NoPreemptFrom {
			return false
		}
		left := t.qs[q].usage.Sub(leaving[q]).Sub(res)
		if left.DominantShare(c.capacity) < t.qs[q].share.DominantShare(c.capacity)-1e-9 {
			return false
		}
	}
	return true
}

// victims lists the containers that may be taken for starved leaf s, in
// the order they would be: not an AM's, not asked back already, of
// another queue that mayTake allows now (the caller checks again as it
// takes them).
func (c *Core) victims(s int, leaving []fairness.Vector) []*Container {
	var out []*Container
	c.conts.All(func(k *Container) {
		a := c.byID[k.App]
		if a == nil || a.q == s || c.pre.ams[k.ID] {
			return
		}
		if _, asked := c.pre.asked[k.ID]; asked {
			return
		}
		if c.mayTake(s, a.q, k.Resource, leaving) {
			out = append(out, k)
		}
	})
	slices.SortFunc(out, func(x, y *Container) int {
		return cmp.Or(cmp.Compare(rankKind(y), rankKind(x)), cmp.Compare(rankPhase(y), rankPhase(x)), cmp.Compare(y.ID, x.ID))
	})
	return out
}

// rankKind and rankPhase order victims: higher goes first.
func rankKind(k *Container) int {
	if k.Kind == altruism.Altruistic {
		return 1
	}
	return 0
}

func rankPhase(k *Container) int {
	if k.Phase == altruism.FromLeftover {
		return 1
	}
	return 0
}
