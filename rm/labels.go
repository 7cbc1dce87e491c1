package rm

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/loomrm/loom/fairness"
)

// Node labels, as YARN's Capacity Scheduler has them: partitions of the
// cluster. Every node sits in one partition, the default ("") unless it
// is labelled. An ask names the partition it runs in with its label (""
// for the default); it runs only on that partition's nodes, with one
// exception: a non-exclusive partition lends its idle room to asks of the
// default partition when no ask of its own fits there. An exclusive
// partition's nodes run only its own asks. A queue may ask only for the
// partitions it may access (all, without a tree).
//
// Shares are computed per partition: the apps labelled with a partition
// share its nodes (down the queue tree, by each queue's capacity in that
// partition), and what a non-exclusive partition lends to the default
// one is leftover, as YARN lends it. An app's share is the sum over
// partitions; an app's demand counts in its own label's partition (an
// app whose asks name several partitions is shared as if all were in
// its own).

// PartitionsSet replaces the cluster's partitions: each name and whether
// it is exclusive. A partition in use by a node, an app or an ask cannot
// be removed.
type PartitionsSet struct{ Partitions map[string]bool }

// NodeLabeled moves a node to a partition ("" the default), as YARN's
// replaceLabelsOnNode and a NodeManager's reported label do. Its running
// containers stay.
type NodeLabeled struct {
	Node      NodeID
	Partition string
}

func (PartitionsSet) event() {}
func (NodeLabeled) event()   {}

// ValidLabel says why a partition's name is not one YARN takes ("" when
// it is): letters, digits, '-' and '_', starting with a letter or digit,
// at most 255 characters.
func ValidLabel(name string) string {
	switch {
	case name == "":
		return "a label cannot be empty"
	case len(name) > 255:
		return fmt.Sprintf("label %.20s…: longer than 255 characters", name)
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || i > 0 && (r == '-' || r == '_')
		if !ok {
			return fmt.Sprintf("label %q: only letters, digits, '-' and '_' (not first) are allowed", name)
		}
	}
	return ""
}

func (c *Core) partitionsSet(e PartitionsSet) error {
	for name := range e.Partitions {
		if why := ValidLabel(name); why != "" {
			return fmt.Errorf("%s", why)
		}
	}
	for name := range c.parts {
		if _, kept := e.Partitions[name]; kept {
			continue
		}
		if why := c.labelInUse(name); why != "" {
			return fmt.Errorf("partition %s cannot be removed: %s", name, why)
		}
	}
	c.parts = maps.Clone(e.Partitions)
	if len(c.parts) == 0 {
		c.parts = nil
	}
	c.sharesStale = true
	c.unsettleAll()
	return nil
}

// labelInUse names a user of a partition, or "".
func (c *Core) labelInUse(name string) string {
	for _, n := range c.nodes {
		if n != nil && n.part == name {
			return fmt.Sprintf("node %d is in it", n.id)
		}
	}
	for _, a := range c.apps {
		if a.label == name {
			return fmt.Sprintf("app %d runs in it", a.id)
		}
		for _, k := range a.asks {
			if k.Label == name && k.Count > 0 {
				return fmt.Sprintf("app %d asks for it", a.id)
			}
		}
	}
	return ""
}

// partitionKnown says why a label is not a partition ("" when it is, or
// is the default).
func (c *Core) partitionKnown(label string) string {
	if label == "" {
		return ""
	}
	if _, ok := c.parts[label]; !ok {
		return fmt.Sprintf("node label %s is not one of the cluster's (%v)", label, slices.Sorted(maps.Keys(c.parts)))
	}
	return ""
}

func (c *Core) nodeLabeled(e NodeLabeled) error {
	n, err := c.node(e.Node)
	if err != nil {
		return err
	}
	if why := c.partitionKnown(e.Partition); why != "" {
		return fmt.Errorf("node %d: %s", e.Node, why)
	}
	if n.part != e.Partition {
		c.partCap[n.part] = c.partCap[n.part].Sub(n.capacity)
		n.part = e.Partition
		c.partCap[n.part] = c.partCap[n.part].Add(n.capacity)
		c.sharesStale = true
		c.unsettled.set(int(n.id))
	}
	return nil
}

// mayAccess says why apps of leaf q (-1 without a tree) may not ask for a
// partition ("" when they may).
func (c *Core) mayAccess(q int, label string) string {
	if why := c.partitionKnown(label); why != "" {
		return why
	}
	if c.tree == nil || q < 0 {
		return ""
	}
	return c.tree.qs[q].mayUse(label)
}

// mayUse says why a queue's apps may not ask for a label ("" when they
// may: the default partition always).
func (q *queue) mayUse(label string) string {
	if label == "" || q.access[label] || q.access["*"] {
		return ""
	}
	return fmt.Sprintf("queue %s may not access node label %s (it may access %v)", q.conf.Name, label, slices.Sorted(maps.Keys(q.access)))
}

// QueueDefaultLabel is the partition a queue's apps run in when they name
// none (the Capacity Scheduler's default-node-label-expression, inherited
// from the nearest queue above that sets it); "" without one.
func (c *Core) QueueDefaultLabel(queue string) string {
	if c.tree == nil {
		return ""
	}
	for q, ok := c.tree.byName[queue]; ok && q >= 0; q = c.tree.qs[q].parent {
		if l := c.tree.qs[q].conf.DefaultLabel; l != "" {
			return l
		}
	}
	return ""
}

// Partitions lists the cluster's partitions and whether each is
// exclusive (the default partition is not listed).
func (c *Core) Partitions() map[string]bool { return maps.Clone(c.parts) }

// NodePartition is a live node's partition.
func (c *Core) NodePartition(id NodeID) (string, error) {
	n, err := c.node(id)
	if err != nil {
		return "", err
	}
	return n.part, nil
}

// PartitionCapacity is the live nodes' total in a partition.
func (c *Core) PartitionCapacity(label string) fairness.Vector { return c.partCap[label] }

// labelled says whether a node pass must look at partitions.
func (c *Core) labelled() bool { return len(c.parts) > 0 }

// narrowPartitions narrows, for one pass on node n, the asks the node's
// partition does not take to none; withheld says whether it narrowed a
// default-partition ask that fits on a non-exclusive node (it may run
// here once the partition's own asks are gone). An ask the node's
// partition never takes proves nothing about the node: it may settle.
func (c *Core) narrowPartitions(n *node, cands *Candidates) (withheld bool) {
	if !c.labelled() {
		return false
	}
	lend := false
	if excl, ok := c.parts[n.part]; ok && !excl {
		// A non-exclusive partition lends its room only when none of
		// its own asks fits in it.
		free := n.capacity.Sub(n.used)
		lend = true
		for i := range cands.Asks {
			k := &cands.Asks[i]
			if k.Count > 0 && c.askLabel(i) == n.part && k.Demand.FitsIn(free) {
				lend = false
				break
			}
		}
	}
	excl, labelled := c.parts[n.part]
	mayLend := labelled && !excl
	free := n.capacity.Sub(n.used)
	for i := range cands.Asks {
		k := &cands.Asks[i]
		l := c.askLabel(i)
		if l == n.part || lend && l == "" {
			continue
		}
		if k.Count > 0 {
			withheld = withheld || mayLend && l == "" && k.Demand.FitsIn(free)
			k.Count = 0
		}
	}
	return withheld
}

// askLabel is candidate i's partition.
func (c *Core) askLabel(i int) string { return c.apps[c.owner[i]].asks[c.askOf[i]].Label }

// partitionShares splits capacity per partition: each partition's apps
// share its part of capacity (capacity over the cluster's, in each kind,
// when reservations hold some of it), and each queue's share and demand
// are summed over the partitions.
func (c *Core) partitionShares(capacity fairness.Vector, apps []*app, split func(fairness.Vector, []*app)) {
	groups := map[string][]*app{}
	for _, a := range apps {
		groups[a.label] = append(groups[a.label], a)
	}
	var shares, demands []fairness.Vector
	if c.tree != nil {
		shares = make([]fairness.Vector, len(c.tree.qs))
		demands = make([]fairness.Vector, len(c.tree.qs))
	}
	for _, label := range slices.Sorted(maps.Keys(groups)) {
		part := c.partCap[label]
		for r := range part {
			if c.capacity[r] > 0 {
				part[r] *= capacity[r] / c.capacity[r]
			}
		}
		c.sharing = label
		split(part, groups[label])
		if c.tree != nil {
			for i := range c.tree.qs {
				shares[i] = shares[i].Add(c.tree.qs[i].share)
				demands[i] = demands[i].Add(c.tree.qs[i].demand)
			}
		}
	}
	c.sharing = ""
	if c.tree != nil {
		for i := range c.tree.qs {
			c.tree.qs[i].share, c.tree.qs[i].demand = shares[i], demands[i]
		}
	}
}

// weightIn is a queue's weight when sharing a partition: its capacity
// there if it has one, a token weight if it has capacities in other
// partitions but not this one (it may use what others leave), else its
// weight.
func (q *queue) weightIn(label string) float64 {
	if label == "" || len(q.conf.LabelWeight) == 0 {
		return q.conf.Weight
	}
	if w := q.conf.LabelWeight[label]; w > 0 {
		return w
	}
	return 1e-6
}

func (c *Core) unsettleAll() {
	for _, n := range c.nodes {
		if n != nil {
			c.unsettled.set(int(n.id))
		}
	}
}

// CheckLabel says whether an app may ask for a partition: it must be one
// of the cluster's (or "", the default) and its queue must access it.
func (c *Core) CheckLabel(id AppID, label string) error {
	a, err := c.app(id)
	if err != nil {
		return err
	}
	if why := c.mayAccess(a.q, label); why != "" {
		return fmt.Errorf("%s", why)
	}
	return nil
}

// reclaimLent asks back, with preemption on, the containers a
// non-exclusive label lent to the default partition when its own asks
// wait for room there (YARN preempts such containers too): the youngest
// first, until they cover what its asks want beyond the label's free and
// coming room. The room they leave is held for the label's asks.
func (c *Core) reclaimLent(grace time.Duration) []Action {
	var acts []Action
	for _, part := range slices.Sorted(maps.Keys(c.parts)) {
		if c.parts[part] {
			continue // exclusive: it lends nothing
		}
		want := c.partWant(part)
		if want.IsZero() {
			continue
		}
		for _, k := range c.lentIn(part) {
			if want.IsZero() {
				break
			}
			if k.Resource.Min(want).IsZero() {
				continue
			}
			c.pre.asked[k.ID] = askedBack{deadline: c.now + grace, forQueue: -1, forPart: part}
			acts = append(acts, PreemptionAsked{Container: *k, Deadline: c.now + grace})
			want = want.Sub(k.Resource).ClampZero()
		}
	}
	return acts
}

// lentWanted says whether reclaimLent has something to do now.
func (c *Core) lentWanted() bool {
	for part, excl := range c.parts {
		if !excl && !c.partWant(part).IsZero() && len(c.lentIn(part)) > 0 {
			return true
		}
	}
	return false
}

// partWant is what a label's outstanding asks want beyond its nodes'
// free room and the room already coming back to it.
func (c *Core) partWant(part string) fairness.Vector {
	var want fairness.Vector
	for _, a := range c.apps {
		if a.held {
			continue
		}
		for _, k := range a.asks {
			if k.Label == part && k.Count > 0 {
				want = want.Add(k.Demand.Scale(float64(k.Count)))
			}
		}
	}
	if want.IsZero() {
		return want
	}
	for _, n := range c.nodes {
		if n != nil && n.part == part {
			want = want.Sub(n.capacity.Sub(n.used).ClampZero())
		}
	}
	for id, ab := range c.pre.asked {
		if ab.forPart == part && ab.forQueue < 0 {
			want = want.Sub(c.conts.Get(id).Resource)
		}
	}
	for _, held := range c.pre.room {
		for _, h := range held {
			if h.app == 0 && h.queue < 0 && h.part == part {
				want = want.Sub(h.res)
			}
		}
	}
	return want.ClampZero()
}

// lentIn are the containers of other labels' asks on a label's nodes that
// may be asked back (not an AM's, not asked already), youngest first.
func (c *Core) lentIn(part string) []*Container {
	var out []*Container
	c.conts.All(func(k *Container) {
		if k.Label == part || c.pre.ams[k.ID] {
			return
		}
		if _, asked := c.pre.asked[k.ID]; asked {
			return
		}
		if n := c.nodes[k.Node]; n != nil && n.part == part {
			out = append(out, k)
		}
	})
	slices.SortFunc(out, func(x, y *Container) int { return cmp.Compare(y.ID, x.ID) })
	return out
}

// unsettleForLabels unsettles the nodes an ask that is new or grew may
// run on, with labels: a node settles when none of the asks its label
// takes fits, which says nothing of an ask of another label that comes
// later with a shape already asked for (a new shape unsettles every
// node anyway).
func (c *Core) unsettleForLabels(old, asks []Ask) {
	if !c.labelled() {
		return
	}
	done := map[string]bool{}
	for _, k := range asks {
		if k.Count == 0 || done[k.Label] {
			continue
		}
		grew := true
		for _, o := range old {
			if o.Priority == k.Priority && o.Kind == k.Kind && o.Demand == k.Demand && o.Label == k.Label && o.Count >= k.Count {
				grew = false
				break
			}
		}
		if !grew {
			continue
		}
		done[k.Label] = true
		for _, n := range c.nodes {
			if n == nil {
				continue
			}
			if excl, ok := c.parts[n.part]; n.part == k.Label || k.Label == "" && ok && !excl {
				c.unsettled.set(int(n.id))
			}
		}
	}
}
