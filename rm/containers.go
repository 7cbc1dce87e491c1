package rm

import (
	"maps"
	"slices"

	"github.com/loomrm/loom/altruism"
)

// containerTable holds the running containers by ID. The core hands IDs
// out in increasing order and most containers end within minutes, so the
// live IDs sit in a window that moves forward: the table keeps that window
// as pages of slots indexed by ID, not as a hash map, whose lookups and
// inserts were a tenth of a large simulation. IDs outside the window (an
// RM restart's recovered containers, from the epoch before) go in a map.
type containerTable struct {
	base  ContainerID // the ID of the first slot of pages[0]
	pages []*containerPage
	live  int // containers in pages
	far   map[ContainerID]*Container
}

const (
	pageBits = 8
	pageSize = 1 << pageBits
	// maxPages bounds the window (about four million IDs): an ID further
	// from its base goes in the map rather than growing the window.
	maxPages = 1 << 14
)

type containerPage struct {
	live  int
	used  [pageSize]bool
	slots [pageSize]Container
}

// Len is how many containers the table holds.
func (t *containerTable) Len() int { return t.live + len(t.far) }

// slot is where id sits in the window: its page and index, or -1.
func (t *containerTable) slot(id ContainerID) (int, int) {
	if id < t.base {
		return -1, 0
	}
	off := uint64(id - t.base)
	p := off >> pageBits
	if p >= maxPages {
		return -1, 0
	}
	return int(p), int(off & (pageSize - 1))
}

// Get returns the container with this ID, or nil.
func (t *containerTable) Get(id ContainerID) *Container {
	if p, i := t.slot(id); p >= 0 && p < len(t.pages) {
		if pg := t.pages[p]; pg != nil && pg.used[i] {
			return &pg.slots[i]
		}
	}
	// The window may have moved over an ID the map holds.
	return t.far[id]
}

// Put stores a copy of k, whose ID the table must not hold, and returns
// the stored record.
func (t *containerTable) Put(k Container) *Container {
	if t.live == 0 {
		// An empty window moves to the new ID.
		t.base, t.pages = k.ID&^(pageSize-1), t.pages[:0]
	}
	p, i := t.slot(k.ID)
	if p < 0 {
		if t.far == nil {
			t.far = map[ContainerID]*Container{}
		}
		rec := new(Container)
		*rec = k
		t.far[k.ID] = rec
		return rec
	}
	for len(t.pages) <= p {
		t.pages = append(t.pages, nil)
	}
	pg := t.pages[p]
	if pg == nil {
		pg = new(containerPage)
		t.pages[p] = pg
	}
	pg.used[i], pg.slots[i] = true, k
	pg.live++
	t.live++
	return &pg.slots[i]
}

// Delete drops the container with this ID. A record returned by Get stays
// readable: the slot is not cleared, and IDs are not handed out again.
func (t *containerTable) Delete(id ContainerID) {
	p, i := t.slot(id)
	if p < 0 || p >= len(t.pages) || t.pages[p] == nil || !t.pages[p].used[i] {
		delete(t.far, id)
		return
	}
	pg := t.pages[p]
	pg.used[i] = false
	pg.live--
	t.live--
	if pg.live > 0 {
		return
	}
	t.pages[p] = nil
	// Drop the window's empty pages at its front, so that it follows
	// the IDs in use.
	for len(t.pages) > 0 && t.pages[0] == nil {
		t.pages = t.pages[1:]
		t.base += pageSize
	}
}

// All calls fn on every container, in ID order.
func (t *containerTable) All(fn func(*Container)) {
	var far []ContainerID
	if len(t.far) > 0 {
		far = slices.Sorted(maps.Keys(t.far))
	}
	f := 0
	for p, pg := range t.pages {
		if pg == nil {
			continue
		}
		for i := range pg.slots {
			if !pg.used[i] {
				continue
			}
			id := t.base + ContainerID(p<<pageBits+i)
			for ; f < len(far) && far[f] < id; f++ {
				fn(t.far[far[f]])
			}
			fn(&pg.slots[i])
		}
	}
	for ; f < len(far); f++ {
		fn(t.far[far[f]])
	}
}

// addToApp records that app a holds container k.
func (c *Core) addToApp(a *app, k *Container) {
	a.ids = append(a.ids, k.ID)
	a.nconts++
	if k.Phase == altruism.FromLeftover {
		a.leftovers++
	}
}

// dropFromApp records that app a's container k ended (the table no
// longer holds it). Ended IDs are swept out once they outnumber the live
// ones, so an app's list stays within twice what it holds.
func (c *Core) dropFromApp(a *app, k *Container) {
	a.nconts--
	if k.Phase == altruism.FromLeftover {
		a.leftovers--
	}
	if len(a.ids) > 2*a.nconts+64 {
		a.ids = slices.DeleteFunc(a.ids, func(id ContainerID) bool {
			k := c.conts.Get(id)
			return k == nil || k.App != a.id
		})
	}
}

// appContainers lists app a's containers in ID order.
func (c *Core) appContainers(a *app) []ContainerID {
	ids := make([]ContainerID, 0, a.nconts)
	for _, id := range a.ids {
		if k := c.conts.Get(id); k != nil && k.App == a.id {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
