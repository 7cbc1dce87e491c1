package rm

import (
	"fmt"
	"slices"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

// Reservations, as YARN's reservation system offers them: a reservation
// holds Resource for the window [Start, End). While it is active, the
// apps submitted to it share Resource among themselves by DRF, and every
// other app's DRF share is computed on the cluster less all active
// reservations: the reserved capacity is guaranteed to its apps' DEFAULT
// asks. Like any share, it is work-conserving: what a reservation's apps
// do not use goes to the leftover, and, as Loom does not preempt,
// capacity lent out before the window opens comes back as those tasks
// end. Before its window an app of a reservation has no share (it waits,
// as in YARN's reservation queue); after it the app joins the others, as
// YARN moves it to the default queue on expiry.

type (
	// ReservationSet adds a reservation or replaces one's resource and
	// window.
	ReservationSet struct {
		ID         string
		Resource   fairness.Vector
		Start, End time.Duration
	}
	// ReservationRemoved ends a reservation: its apps join the others.
	ReservationRemoved struct{ ID string }
	// AppReserved ties an admitted app to a reservation (YARN's
	// reservation_id in the submission context).
	AppReserved struct {
		App         AppID
		Reservation string
	}
)

func (ReservationSet) event()     {}
func (ReservationRemoved) event() {}
func (AppReserved) event()        {}

type reservation struct {
	res        fairness.Vector
	start, end time.Duration
}

func (c *Core) reservationSet(e ReservationSet) error {
	switch {
	case e.ID == "":
		return fmt.Errorf("a reservation needs an id")
	case e.Resource.HasNegative() || e.Resource.IsZero():
		return fmt.Errorf("reservation %s: resource %v must be positive", e.ID, e.Resource)
	case e.End <= e.Start:
		return fmt.Errorf("reservation %s: its window ends (%v) before it starts (%v)", e.ID, e.End, e.Start)
	}
	if c.reservations == nil {
		c.reservations = map[string]*reservation{}
	}
	c.reservations[e.ID] = &reservation{res: e.Resource, start: e.Start, end: e.End}
	c.sharesStale = true
	return nil
}

func (c *Core) reservationRemoved(id string) error {
	if _, ok := c.reservations[id]; !ok {
		return fmt.Errorf("no reservation %s", id)
	}
	delete(c.reservations, id)
	c.sharesStale = true
	return nil
}

func (c *Core) appReserved(e AppReserved) error {
	a, err := c.app(e.App)
	if err != nil {
		return err
	}
	if _, ok := c.reservations[e.Reservation]; !ok && e.Reservation != "" {
		return fmt.Errorf("app %d: no reservation %s", e.App, e.Reservation)
	}
	a.reservation = e.Reservation
	c.sharesStale = true
	return nil
}

// activeReservations are the reservations whose window holds now, by id,
// in id order.
func (c *Core) activeReservations() []string {
	var ids []string
	for id, r := range c.reservations {
		if r.start <= c.now && c.now < r.end {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// reservationsKey names the set of active reservations: when it changes
// (a window opens or closes) the shares are recomputed.
func (c *Core) reservationsKey() string {
	if len(c.reservations) == 0 {
		return ""
	}
	return fmt.Sprint(c.activeReservations())
}

// reservedShares computes the shares when reservations exist: each
// active reservation's apps share its resource; apps of a reservation
// not yet active have none; the rest share what no active reservation
// holds.
func (c *Core) reservedShares() {
	active := c.activeReservations()
	isActive := map[string]bool{}
	var held fairness.Vector
	for _, id := range active {
		isActive[id] = true
		held = held.Add(c.reservations[id].res)
	}
	pool := c.capacity.Sub(held).ClampZero()
	groups := map[string][]int{}
	for i, a := range c.apps {
		r, ok := c.reservations[a.reservation]
		switch {
		case a.reservation == "" || !ok || c.now >= r.end:
			groups[""] = append(groups[""], i)
		case isActive[a.reservation]:
			groups[a.reservation] = append(groups[a.reservation], i)
		default:
			c.apps[i].share = fairness.Vector{} // its window has not opened
		}
	}
	for id, members := range groups {
		capacity := pool
		if id != "" {
			capacity = c.reservations[id].res.Min(c.capacity)
		}
		apps := make([]*app, len(members))
		for j, i := range members {
			apps[j] = c.apps[i]
		}
		if id == "" {
			// The others share the pool down the queue tree, if any.
			c.splitShares(capacity, apps)
			continue
		}
		claims := make([]fairness.Claim, len(apps))
		for j, a := range apps {
			claims[j] = fairness.Claim{Weight: a.weight, Demand: a.demand}
		}
		for j, s := range fairness.DRF(capacity, claims) {
			apps[j].share = s
		}
	}
}

// reservedPass places, before the policy's own pass, the asks of apps in
// an active reservation that fit on the node and within their share (the
// reserved resource, split among the reservation's apps): whatever the
// policy, a reservation's apps get what it holds first. Asks go in
// priority order, then by demand; each is placed as many times as fits.
func (c *Core) reservedPass(n *node, cands *Candidates) []altruism.Assignment {
	free := n.capacity.Sub(n.used)
	usage := map[int]fairness.Vector{}
	var out []altruism.Assignment
	order := make([]int, 0, len(cands.Asks))
	for i, k := range cands.Asks {
		a := c.apps[k.App]
		if r, ok := c.reservations[a.reservation]; ok && r.start <= c.now && c.now < r.end && k.Count > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(x, y int) int {
		if d := cands.Asks[x].Priority - cands.Asks[y].Priority; d != 0 {
			return d
		}
		return cands.Asks[x].App - cands.Asks[y].App
	})
	for _, i := range order {
		k := cands.Asks[i]
		a := c.apps[k.App]
		u, ok := usage[k.App]
		if !ok {
			u = a.usage
		}
		count := 0
		for count < k.Count && k.Demand.FitsIn(free) && u.Add(k.Demand).FitsIn(a.share) {
			free, u = free.Sub(k.Demand), u.Add(k.Demand)
			count++
		}
		usage[k.App] = u
		if count > 0 {
			out = append(out, altruism.Assignment{Ask: i, Count: count, Phase: altruism.InShare})
		}
	}
	return out
}

// Reserved is what the active reservations hold now.
func (c *Core) Reserved() fairness.Vector {
	var held fairness.Vector
	for _, id := range c.activeReservations() {
		held = held.Add(c.reservations[id].res)
	}
	return held
}
