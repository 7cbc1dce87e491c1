package rm

import (
	"slices"

	"github.com/loomrm/loom/altruism"
)

// drfIndex is DRF's order of the core's asks kept from round to round:
// one heap per shape id of the asks with something left, keyed by their
// apps' weighted dominant shares (drfKey). A node pass then costs the
// shapes it checks and the heap steps of what it places, and a round the
// asks of the apps that changed, not a scan of every ask at every node:
// a 4,000-job simulation holds ~150 asks in each of 1.5M rounds, and one
// or two apps change in a round.
//
// It is used while the candidates are steady (counts change only by
// grants) and laid out as when it was built (Candidates.layout): the
// core lists the apps whose asks or key changed (Candidates.changed),
// and their asks are put back in order before the next pass.
type drfIndex struct {
	layout uint64
	valid  bool
	taken  uint64    // its drainChanged stamp
	heaps  []drfHeap // by shape id
	// heapOf is the heap each ask is in (-1: none), pos its place there.
	heapOf []int32
	pos    []int32
	// A pass's own placements, before the core grants them (what each
	// ask has left is the candidates' passLeft): share is the share
	// they gave each app (stamp says which pass wrote it), placed the
	// apps they were for, put in order again with the core's figures
	// before the next pass (the core may grant fewer than placed, or
	// none).
	share  []float64
	stamp  []uint64
	pass   uint64
	placed []int
}

// fillIndexed is drf.Fill on steady candidates of the core.
func (r *drfIndex) fillIndexed(n NodeState, c *Candidates) []altruism.Assignment {
	asks, apps := c.Asks, c.Apps
	r.pass++ // before sync: the last pass's shares are the core's now
	r.sync(c)
	sc := &c.scratch
	left := c.passCounts()
	defer c.endPass()
	free := n.Free
	var out []altruism.Assignment
	for {
		best := -1
		ceil := free.Ceiling()
		for s, d := range c.shapeVec {
			if len(r.heaps[s].idx) == 0 || !d.FitsUnder(ceil) {
				continue
			}
			if best < 0 || drfBefore(&r.heaps[s], &r.heaps[best]) {
				best = s
			}
		}
		if best < 0 {
			break
		}
		i := r.heaps[best].idx[0]
		k := &asks[i]
		if left.take(i); left.of(i) <= 0 {
			r.heaps[best].remove(0)
		}
		free = free.Sub(k.Demand)
		a := k.App
		usage := apps[a].Usage
		if r.stamp[a] == r.pass {
			usage = sc.usage[a]
		} else {
			r.placed = append(r.placed, a)
		}
		usage = usage.Add(k.Demand)
		sc.usage[a], r.share[a], r.stamp[a] = usage, usage.DominantShare(n.Cluster)/apps[a].Weight, r.pass
		r.rekey(c, a)
		out = appendPlacement(out, i, altruism.FromLeftover)
	}
	return out
}

// key is app a's key now: its share after this pass's placements, or the
// core's.
func (r *drfIndex) key(c *Candidates, a int) float64 {
	if r.stamp[a] == r.pass {
		return r.share[a]
	}
	return c.drfKey[a]
}

// sync brings the heaps up to the candidates: built again after a new
// layout, else the asks of the apps the core changed and of the last
// pass's placements put back in order.
func (r *drfIndex) sync(c *Candidates) {
	r.heapsFor(c) // shapes asked for since
	if r.valid && r.layout == c.layout && c.drainChanged(&r.taken, func(a int) { r.rekey(c, a) }) {
		for _, a := range r.placed {
			r.rekey(c, a)
		}
	} else {
		c.drainChanged(&r.taken, nil)
		r.build(c)
	}
	r.placed = r.placed[:0]
}

// rekey puts app a's asks where their counts, shapes and the app's key
// say: out of the heaps when nothing is left.
func (r *drfIndex) rekey(c *Candidates, a int) {
	k := r.key(c, a)
	left := c.passCounts()
	for i := c.blocks[a]; i < c.blocks[a+1]; i++ {
		want := int32(-1)
		if left.of(int(i)) > 0 {
			want = c.shapeOf[i]
		}
		if h := r.heapOf[i]; h >= 0 && h != want {
			r.heaps[h].remove(int(r.pos[i]))
		}
		switch {
		case want < 0:
		case r.heapOf[i] == want:
			h := &r.heaps[want]
			h.key[r.pos[i]] = k
			h.fix(int(r.pos[i]))
		default:
			r.heapOf[i] = want
			r.heaps[want].push(int(i), k)
		}
	}
}

// build heaps every ask with something left by shape.
func (r *drfIndex) build(c *Candidates) {
	r.layout, r.valid = c.layout, true
	na, nk := len(c.Apps), len(c.Asks)
	r.heapOf = slices.Grow(r.heapOf[:0], nk)[:nk]
	r.pos = slices.Grow(r.pos[:0], nk)[:nk]
	r.share = slices.Grow(r.share[:0], na)[:na]
	if len(r.stamp) < na {
		r.stamp = append(r.stamp, make([]uint64, na-len(r.stamp))...)
	}
	c.scratch.usage = slices.Grow(c.scratch.usage[:0], na)[:na]
	r.heaps = r.heaps[:0]
	r.heapsFor(c)
	for i := range c.Asks {
		r.heapOf[i] = -1
		if c.Asks[i].Count <= 0 {
			continue
		}
		s := c.shapeOf[i]
		h := &r.heaps[s]
		r.heapOf[i], r.pos[i] = s, int32(len(h.idx))
		h.idx = append(h.idx, i)
		h.key = append(h.key, c.drfKey[c.Asks[i].App])
	}
	for s := range r.heaps {
		r.heaps[s].init()
	}
}

// heapsFor adds empty heaps for the shape ids the core added.
func (r *drfIndex) heapsFor(c *Candidates) {
	for s := len(r.heaps); s < len(c.shapeVec); s++ {
		if s < cap(r.heaps) {
			r.heaps = r.heaps[:s+1]
		} else {
			r.heaps = append(r.heaps, drfHeap{})
		}
		h := &r.heaps[s]
		h.idx, h.key, h.asks, h.pos, h.of = h.idx[:0], h.key[:0], c.Asks, r.pos, r.heapOf
	}
}

// drfBefore says whether heap a's top comes before heap b's in DRF's
// order (key, priority, app, index), as drfHeap.less orders one heap.
func drfBefore(a, b *drfHeap) bool {
	if a.key[0] != b.key[0] {
		return a.key[0] < b.key[0]
	}
	ka, kb := &a.asks[a.idx[0]], &b.asks[b.idx[0]]
	if ka.Priority != kb.Priority || ka.App != kb.App {
		return rankBefore(ka, kb)
	}
	return a.idx[0] < b.idx[0]
}
