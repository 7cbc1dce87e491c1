package rm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/loomrm/loom/fairness"
)

// Hierarchical queues, as YARN's Fair and Capacity Schedulers keep them.
// Without a tree (the default) every app is a claim of its own on the
// whole cluster, weighted by its Weight. With one, DRF runs down the tree:
// the root's capacity is split among its children by their weights and
// guarantees, each queue's among its own children, a leaf's among its
// users, and a user's among its apps. A queue's demand is its apps' and
// never more than its maximum, so what a queue cannot use goes to its
// siblings (YARN's elasticity), and no grant takes a queue past its
// maximum. Each app's share is then what the node passes use, so every
// policy (Carbyne's altruism and leftover included) works inside the
// shares the tree gives.

// QueueConf is one queue of a tree.
type QueueConf struct {
	// Name is the full path: root.eng.etl. Its parent must be listed
	// before it, or be root (which is implicit).
	Name   string
	Weight float64
	// Min is the queue's guarantee and Max its limit, each as an
	// absolute vector plus per-kind fractions of the cluster (a
	// Capacity Scheduler's percentages, a Fair Scheduler's "50%"). A
	// zero Max means no limit.
	Min, Max         fairness.Vector
	MinFrac, MaxFrac fairness.Vector
	// MaxRunningApps bounds the apps that run at once in the queue's
	// subtree (the Fair Scheduler's maxRunningApps); 0 for no bound. An
	// app past it waits, with no share and no grants, until one ends.
	MaxRunningApps int
	// Preemption says when the queue is starved and whether its
	// containers may be taken (preemption.go).
	Preemption PreemptionTimes
	// UserLimitFactor, when above 0, holds each user of a leaf to that
	// many times the leaf's guarantee (within its maximum): the Capacity
	// Scheduler's user-limit-factor.
	UserLimitFactor float64
	// FIFO gives a leaf's share to its apps in the order they came, each
	// as much as it demands (the Fair Scheduler's schedulingPolicy fifo),
	// instead of DRF among its users and apps.
	FIFO bool
	// Labels are the partitions (node labels) its apps may ask for
	// ("*" for all), the Capacity Scheduler's accessible-node-labels;
	// nil inherits its parent's (root's: all). LabelWeight is its
	// capacity in each partition, weighing it against its siblings
	// there; DefaultLabel is the partition its apps run in when they
	// name none (inherited when empty).
	Labels       []string
	LabelWeight  map[string]float64
	DefaultLabel string
}

// QueuesSet replaces the queue tree (a reload): every running app's queue
// must be a leaf of the new tree. An empty list goes back to no tree.
// UserMaxApps bounds the apps each user runs at once (UserMaxAppsDefault
// for users it does not name; 0 for no bound).
type QueuesSet struct {
	Queues             []QueueConf
	UserMaxApps        map[string]int
	UserMaxAppsDefault int
}

func (QueuesSet) event() {}

type queue struct {
	conf     QueueConf
	parent   int // -1 for root
	children []int
	leaf     bool
	// usage is what the queue's apps hold, kept at each grant and free;
	// demand and share are the latest share computation's.
	usage, demand, share fairness.Vector
	apps                 int
	running              int // apps not held, in its subtree
	// access is the partitions its apps may ask for ("*": all).
	access map[string]bool
	// minSince and fairSince are when the queue began to hold less than
	// its guarantee or its fair-share threshold; -1 when it does not.
	minSince, fairSince time.Duration
}

type tree struct {
	qs     []queue // qs[0] is root
	byName map[string]int
	// userMax, userMaxDefault bound each user's running apps; users
	// counts them.
	userMax        map[string]int
	userMaxDefault int
	users          map[string]int
	// userUsage is what each user holds in each leaf with a user limit.
	userUsage map[leafUser]fairness.Vector
}

// queuesSet builds and checks a new tree; nothing changes on an error.
func (c *Core) queuesSet(e QueuesSet) error {
	if len(e.Queues) == 0 {
		c.tree = nil
		for _, a := range c.apps {
			a.q, a.held = -1, false
		}
		c.sharesStale = true
		return nil
	}
	for u, n := range e.UserMaxApps {
		if n < 0 {
			return fmt.Errorf("user %s: maxRunningApps %d is negative", u, n)
		}
	}
	if e.UserMaxAppsDefault < 0 {
		return fmt.Errorf("the users' default maxRunningApps %d is negative", e.UserMaxAppsDefault)
	}
	t := &tree{qs: []queue{{conf: QueueConf{Name: "root", Weight: 1}, parent: -1}}, byName: map[string]int{"root": 0},
		userMax: maps.Clone(e.UserMaxApps), userMaxDefault: e.UserMaxAppsDefault, users: map[string]int{},
		userUsage: map[leafUser]fairness.Vector{}}
	for _, qc := range e.Queues {
		if qc.Name == "root" {
			// The root's own limits and guarantees mean nothing (it has
			// the whole cluster); only its weight would, and it has no
			// siblings.
			continue
		}
		cut := strings.LastIndexByte(qc.Name, '.')
		switch {
		case cut < 0 || !strings.HasPrefix(qc.Name, "root."):
			return fmt.Errorf("queue %q: a queue's name is its full path under root (root.a.b)", qc.Name)
		case strings.Contains(qc.Name, ".."), strings.HasSuffix(qc.Name, "."):
			return fmt.Errorf("queue %q: a part of its path is empty", qc.Name)
		case t.byName[qc.Name] != 0:
			return fmt.Errorf("queue %s is listed twice", qc.Name)
		case !(qc.Weight > 0):
			return fmt.Errorf("queue %s: weight %v must be positive", qc.Name, qc.Weight)
		case qc.Min.HasNegative() || qc.Max.HasNegative() || qc.MinFrac.HasNegative() || qc.MaxFrac.HasNegative():
			return fmt.Errorf("queue %s: a negative guarantee or limit", qc.Name)
		case qc.MaxRunningApps < 0:
			return fmt.Errorf("queue %s: maxRunningApps %d is negative", qc.Name, qc.MaxRunningApps)
		}
		for _, l := range append(slices.Clone(qc.Labels), qc.DefaultLabel) {
			if why := ValidLabel(l); l != "" && l != "*" && why != "" {
				return fmt.Errorf("queue %s: %s", qc.Name, why)
			}
		}
		for l, w := range qc.LabelWeight {
			if !(w >= 0) {
				return fmt.Errorf("queue %s: capacity %v in node label %s must not be negative", qc.Name, w, l)
			}
		}
		parent := qc.Name[:cut]
		p, ok := t.byName[parent]
		if !ok {
			return fmt.Errorf("queue %s: its parent %s is not listed before it", qc.Name, parent)
		}
		i := len(t.qs)
		t.qs = append(t.qs, queue{conf: qc, parent: p, minSince: -1, fairSince: -1})
		t.qs[p].children = append(t.qs[p].children, i)
		t.byName[qc.Name] = i
	}
	for i := range t.qs {
		q := &t.qs[i]
		q.leaf = len(q.children) == 0
		switch {
		case q.conf.Labels != nil:
			q.access = map[string]bool{}
			for _, l := range q.conf.Labels {
				q.access[l] = true
			}
		case q.parent < 0:
			q.access = map[string]bool{"*": true}
		default:
			q.access = t.qs[q.parent].access // parents come first
		}
	}
	for _, a := range c.apps {
		q, ok := t.byName[a.queue]
		if !ok || !t.qs[q].leaf {
			return fmt.Errorf("app %d runs in queue %s, which is not a leaf queue of the new tree", a.id, a.queue)
		}
		for _, l := range append([]string{a.label}, askLabels(a.asks)...) {
			if t.qs[q].mayUse(l) != "" {
				return fmt.Errorf("app %d runs in node label %s, which queue %s may not access in the new tree", a.id, l, a.queue)
			}
		}
	}
	c.tree = t
	// Apps running go on running, even past new bounds (the Fair
	// Scheduler does not stop them); waiting ones may start now.
	for _, a := range c.apps {
		a.q = t.byName[a.queue]
		t.charge(a.q, a, a.usage)
		t.qs[a.q].apps++
		if !a.held {
			c.countRunning(a, 1)
		}
	}
	c.startWaiting()
	c.sharesStale = true
	return nil
}

// runnable says why an app may not start now ("" when it may): a queue
// of its own or above, or its user, at its bound of running apps.
func (c *Core) runnable(a *app) string {
	t := c.tree
	for q := a.q; q >= 0; q = t.qs[q].parent {
		if m := t.qs[q].conf.MaxRunningApps; m > 0 && t.qs[q].running >= m {
			return fmt.Sprintf("queue %s runs %d apps, its maxRunningApps", t.qs[q].conf.Name, m)
		}
	}
	m, ok := t.userMax[a.user]
	if !ok {
		m = t.userMaxDefault
	}
	if m > 0 && t.users[a.user] >= m {
		return fmt.Sprintf("user %s runs %d apps, the user's maxRunningApps", a.user, m)
	}
	return ""
}

// countRunning adds d to the running apps of an app's queues and user.
func (c *Core) countRunning(a *app, d int) {
	for q := a.q; q >= 0; q = c.tree.qs[q].parent {
		c.tree.qs[q].running += d
	}
	c.tree.users[a.user] += d
}

// startWaiting starts the held apps that may run now, oldest first.
func (c *Core) startWaiting() {
	for _, a := range c.apps {
		if a.held && c.runnable(a) == "" {
			a.held = false
			c.countRunning(a, 1)
			c.sharesStale = true
		}
	}
}

// Waiting says why an app waits to start (its queues' or user's bound of
// running apps), or "" when it runs.
func (c *Core) Waiting(id AppID) (string, error) {
	a, err := c.app(id)
	if err != nil || !a.held {
		return "", err
	}
	return c.runnable(a), nil
}

// leafOf is the tree index of a leaf queue, for an app joining it.
func (c *Core) leafOf(app AppID, name string) (int, error) {
	if c.tree == nil {
		return -1, nil
	}
	q, ok := c.tree.byName[name]
	switch {
	case !ok:
		return 0, fmt.Errorf("app %d: queue %s is not in the tree", app, name)
	case !c.tree.qs[q].leaf:
		return 0, fmt.Errorf("app %d: queue %s is a parent queue; apps go to leaf queues", app, name)
	}
	return q, nil
}

// charge adds v (negative to take back) to a queue's usage and its
// ancestors'.
func (t *tree) charge(q int, a *app, v fairness.Vector) {
	if t.qs[q].conf.UserLimitFactor > 0 && a.label == "" {
		// User limits hold in the default partition only.
		k := leafUser{q, a.user}
		t.userUsage[k] = t.userUsage[k].Add(v)
	}
	for ; q >= 0; q = t.qs[q].parent {
		t.qs[q].usage = t.qs[q].usage.Add(v)
	}
}

// leafUser is one user in one leaf, for user limits.
type leafUser struct {
	q    int
	user string
}

// userLimit is the most one user may hold in leaf q (the Capacity
// Scheduler's user-limit-factor times the queue's capacity, within its
// maximum), ok false for no limit. A kind the queue guarantees nothing
// in is not limited.
func (c *Core) userLimit(q int) (fairness.Vector, bool) {
	lq := &c.tree.qs[q]
	f := lq.conf.UserLimitFactor
	if f <= 0 {
		return fairness.Vector{}, false
	}
	g := lq.guarantee(c.capacity)
	m, limited := lq.limit(c.capacity)
	if !limited {
		m = c.capacity
	}
	var out fairness.Vector
	for r := range out {
		out[r] = min(g[r]*f, m[r])
		if g[r] == 0 {
			out[r] = m[r]
		}
	}
	return out, true
}

// limit is a queue's maximum on a cluster, or ok false for none.
func (q *queue) limit(cluster fairness.Vector) (fairness.Vector, bool) {
	if q.conf.Max.IsZero() && q.conf.MaxFrac.IsZero() {
		return fairness.Vector{}, false
	}
	var m fairness.Vector
	for r := range m {
		m[r] = q.conf.Max[r] + q.conf.MaxFrac[r]*cluster[r]
		if q.conf.Max[r] == 0 && q.conf.MaxFrac[r] == 0 {
			m[r] = cluster[r] // no limit in this kind
		}
	}
	return m, true
}

// guarantee is a queue's minimum on a cluster.
func (q *queue) guarantee(cluster fairness.Vector) fairness.Vector {
	var m fairness.Vector
	for r := range m {
		m[r] = q.conf.Min[r] + q.conf.MinFrac[r]*cluster[r]
	}
	return m
}

// room is how many more containers of demand d the app's queues take
// before one of them reaches its maximum (or its user its limit); -1 for
// no limit.
func (c *Core) room(a *app, d fairness.Vector) int {
	h, ok := c.headroom(a)
	if !ok {
		return -1
	}
	return h.Count(d)
}

// headroom is what the app's queues and its user in its leaf may still
// take, the least in each kind over them; ok false when none is limited.
func (c *Core) headroom(a *app) (h fairness.Vector, ok bool) {
	if c.tree == nil || a.q < 0 {
		return h, false
	}
	if m, lim := c.userLimit(a.q); lim && a.label == "" {
		// User limits are of the leaf's capacity in the default
		// partition: an app in a node label is not held to them.
		h, ok = m.Sub(c.tree.userUsage[leafUser{a.q, a.user}]).ClampZero(), true
	}
	for q := a.q; q >= 0; q = c.tree.qs[q].parent {
		m, lim := c.tree.qs[q].limit(c.capacity)
		if !lim {
			continue
		}
		r := m.Sub(c.tree.qs[q].usage).ClampZero()
		if ok {
			r = r.Min(h)
		}
		h, ok = r, true
	}
	return h, ok
}

// treeShares splits capacity among the given apps down the tree.
func (c *Core) treeShares(capacity fairness.Vector, members []*app) {
	t := c.tree
	for i := range t.qs {
		t.qs[i].demand, t.qs[i].share = fairness.Vector{}, fairness.Vector{}
	}
	byLeaf := map[int][]*app{}
	for _, a := range members {
		byLeaf[a.q] = append(byLeaf[a.q], a)
		t.qs[a.q].demand = t.qs[a.q].demand.Add(a.demand)
	}
	// A leaf with a user limit wants no more than its users may hold (in
	// the default partition: labelled apps are not held to it).
	for q, apps := range byLeaf {
		ucap, ok := c.userLimit(q)
		if !ok || c.sharing != "" {
			continue
		}
		byUser := map[string]fairness.Vector{}
		for _, a := range apps {
			byUser[a.user] = byUser[a.user].Add(a.demand)
		}
		var d fairness.Vector
		for _, u := range byUser {
			d = d.Add(scaledInto(u, ucap))
		}
		t.qs[q].demand = d
	}
	// Demands up the tree, children before parents (a child's index is
	// always above its parent's), each held to the queue's maximum by
	// scaling it down whole: a queue limited in memory wants less cpu
	// too, as its tasks need both.
	for i := len(t.qs) - 1; i >= 0; i-- {
		q := &t.qs[i]
		if m, ok := q.limit(c.capacity); ok {
			q.demand = scaledInto(q.demand, m)
		}
		if q.parent >= 0 {
			t.qs[q.parent].demand = t.qs[q.parent].demand.Add(q.demand)
		}
	}
	t.qs[0].share = capacity
	for i := range t.qs {
		q := &t.qs[i]
		if q.leaf {
			var ucap fairness.Vector
			if c.sharing == "" {
				ucap, _ = c.userLimit(i)
			}
			if q.conf.FIFO {
				splitFIFO(q.share, byLeaf[i])
			} else {
				splitLeaf(c.capacity, q.share, ucap, byLeaf[i])
			}
			continue
		}
		claims := make([]fairness.Claim, len(q.children))
		for j, ch := range q.children {
			cq := &t.qs[ch]
			claims[j] = fairness.Claim{Weight: cq.weightIn(c.sharing), Demand: cq.demand}
			switch {
			case !c.labelled():
				claims[j].Min = cq.guarantee(c.capacity)
			case c.sharing == "":
				// Guarantees are of the default partition.
				claims[j].Min = cq.guarantee(c.partCap[""])
			}
		}
		for j, s := range fairness.DRFWithin(c.capacity, q.share, claims) {
			t.qs[q.children[j]].share = s
		}
	}
}

// scaledInto scales d down, whole, until it fits in m.
func scaledInto(d, m fairness.Vector) fairness.Vector {
	f := 1.0
	for r := range d {
		if d[r] > m[r] {
			f = min(f, max(m[r], 0)/d[r])
		}
	}
	return d.Scale(f)
}

// splitFIFO gives a FIFO leaf's share to its apps oldest first (members
// come in app id order, the order of arrival), each its demand scaled
// down whole to what is left.
func splitFIFO(share fairness.Vector, apps []*app) {
	left := share
	for _, a := range apps {
		a.share = scaledInto(a.demand, left)
		left = left.Sub(a.share).ClampZero()
	}
}

// splitLeaf splits a leaf queue's share among its users, equally
// weighted (the Fair Scheduler's user level), then each user's among its
// apps by their weights. Dominant shares are of the whole cluster at
// every level, as in hierarchical DRF: a kind a parent got little of does
// not become its children's dominant one.
func splitLeaf(cluster, share, userCap fairness.Vector, apps []*app) {
	users := map[string][]*app{}
	for _, a := range apps {
		users[a.user] = append(users[a.user], a)
	}
	names := slices.Sorted(maps.Keys(users))
	claims := make([]fairness.Claim, len(names))
	for j, u := range names {
		var d fairness.Vector
		for _, a := range users[u] {
			d = d.Add(a.demand)
		}
		if !userCap.IsZero() {
			// A user past the leaf's user limit wants no more than it.
			d = scaledInto(d, userCap)
		}
		claims[j] = fairness.Claim{Weight: 1, Demand: d}
	}
	for j, us := range fairness.DRFWithin(cluster, share, claims) {
		mine := users[names[j]]
		ac := make([]fairness.Claim, len(mine))
		for k, a := range mine {
			ac[k] = fairness.Claim{Weight: a.weight, Demand: a.demand}
		}
		for k, s := range fairness.DRFWithin(cluster, us, ac) {
			mine[k].share = s
		}
	}
}

// QueueView is one queue as the RM's reports show it.
type QueueView struct {
	Name   string
	Parent string // "" for root
	Leaf   bool
	Weight float64
	// Min and Max are the guarantee and limit on today's cluster (Max
	// the cluster when there is none); Share is the latest DRF split;
	// Usage what its apps hold; Demand theirs, held to Max; Apps how
	// many run in its subtree.
	Min, Max, Share, Usage, Demand fairness.Vector
	Apps                           int
}

// Queues lists the tree, parents before children; nil without a tree.
func (c *Core) Queues() []QueueView {
	if c.tree == nil {
		return nil
	}
	c.refreshShares()
	out := make([]QueueView, len(c.tree.qs))
	for i := range c.tree.qs {
		q := &c.tree.qs[i]
		v := QueueView{Name: q.conf.Name, Leaf: q.leaf, Weight: q.conf.Weight, Min: q.guarantee(c.capacity),
			Share: q.share, Usage: q.usage, Demand: q.demand, Apps: q.apps, Max: c.capacity}
		if m, ok := q.limit(c.capacity); ok {
			v.Max = m
		}
		if q.parent >= 0 {
			v.Parent = c.tree.qs[q.parent].conf.Name
		}
		out[i] = v
	}
	// A parent's apps are its subtree's (children come after parents).
	for i := len(out) - 1; i > 0; i-- {
		out[c.tree.qs[i].parent].Apps += out[i].Apps
	}
	return out
}

// limited says whether an app sits under a queue with a maximum.
func (c *Core) limited(a *app) bool {
	if c.tree == nil || a.q < 0 {
		return false
	}
	if c.tree.qs[a.q].conf.UserLimitFactor > 0 {
		return true
	}
	for q := a.q; q >= 0; q = c.tree.qs[q].parent {
		if _, ok := c.tree.qs[q].limit(c.capacity); ok {
			return true
		}
	}
	return false
}

// limitQueues narrows, for one node pass, each ask under a queue with a
// maximum (or a user limit) to the containers its queues still have room
// for; withheld says whether it narrowed any that would fit in the
// node's free room (they may take the node later, when their queues hold
// less; one that does not fit proves nothing either way).
func (c *Core) limitQueues(cands *Candidates, free fairness.Vector) (withheld bool) {
	if len(c.limitIdx) == 0 {
		return false // no app under a limit: nothing to do on the hot path
	}
	// Each app's headroom once per pass: nothing is granted before the
	// policy's pass.
	c.heads = slices.Grow(c.heads[:0], len(c.apps))[:len(c.apps)]
	for j := range c.heads {
		c.heads[j].known = false
	}
	for _, i := range c.limitIdx {
		k := &cands.Asks[i]
		if k.Count == 0 {
			continue
		}
		o := c.owner[i]
		if hd := &c.heads[o]; !hd.known {
			hd.room, hd.limited = c.headroom(c.apps[o])
			hd.known = true
		}
		r := -1
		if c.heads[o].limited {
			r = c.heads[o].room.Count(k.Demand)
		}
		if r >= 0 && r < k.Count {
			k.Count = r
			withheld = withheld || k.Demand.FitsIn(free)
		}
	}
	return withheld
}

// headroomOf caches an app's headroom for one node pass.
type headroomOf struct {
	room           fairness.Vector
	limited, known bool
}
