package fairness

import "math"

// Claim is one app's input to DRF.
type Claim struct {
	// Weight scales the app's dominant share: with weights 2 and 1 the first
	// app's dominant share is twice the second's. A weight ≤ 0 gets nothing.
	Weight float64
	// Demand is the most the app can use: its running plus pending tasks.
	// The allocation never exceeds it in any kind.
	Demand Vector
	// Task is the app's per-task demand. The allocation grows along it, so
	// that an app is given resources in the proportions its tasks use them.
	// A zero Task grows along Demand instead.
	Task Vector
	// Min is a guarantee (a queue's minResources or capacity): in each
	// kind the app uses, its allocation is at least min(Min, Demand)
	// before anyone's grows past what weights alone would give. When the
	// guarantees of a kind add up to more than the capacity they are
	// scaled down alike. Claims with a Min take DRF's slower, exact path
	// (drfWithFloors); it is meant for a few sibling queues, not for
	// thousands of apps.
	Min Vector
}

// zeroed sets *p to n zero values, in its memory when it has room.
func zeroed[T any](p *[]T, n int) []T {
	if cap(*p) < n {
		*p = make([]T, n)
	} else {
		*p = (*p)[:n]
		clear(*p)
	}
	return *p
}

// DRF computes weighted Dominant Resource Fair allocations by exact
// progressive filling. Every app's allocation grows along its Task vector,
// each at a rate that keeps dominant share / weight equal across apps, until
// either a resource it uses is exhausted or it reaches its Demand. A kind in
// which an app reaches its demand stops growing on its own, and what the app
// leaves is shared among the rest.
//
// This is the water-filling solution computed event by event (each event is a
// resource running out or an app reaching its demand in one kind), not by
// handing out tasks one at a time, so it is exact and costs
// O(apps·kinds·log(apps·kinds)).
func DRF(capacity Vector, claims []Claim) []Vector {
	return DRFWithin(capacity, capacity, claims)
}

// DRFWithin is DRF of a part of a cluster, as hierarchical DRF splits a
// queue's share among its children: dominant shares are of the whole
// cluster (total), and the allocations add up to no more than within.
func DRFWithin(total, within Vector, claims []Claim) []Vector {
	var s DRFScratch
	return s.Within(total, within, claims)
}

// DRFScratch is DRFWithin's working memory, kept by a caller that computes
// shares often (the RM, at every scheduling pass) so that each computation
// does not allocate its own. The zero value is ready to use.
type DRFScratch struct {
	alloc, rate, capAt []Vector
	growing            [][NumKinds]bool
	active, heapApps   []int
	heapAt             []float64
}

// Within is DRFWithin in s's memory. The slice it returns is s's: it
// holds until the next call.
func (s *DRFScratch) Within(total, within Vector, claims []Claim) []Vector {
	for _, c := range claims {
		if !c.Min.IsZero() {
			return drfWithFloors(total, within, claims)
		}
	}
	capacity := within
	n := len(claims)
	alloc := zeroed(&s.alloc, n)
	// rate[k][r] is how fast app k's allocation of r grows per unit of the
	// fill level t: weight·task[r]/dominantShare(task).
	rate := zeroed(&s.rate, n)
	growing := zeroed(&s.growing, n)
	active := zeroed(&s.active, n) // number of kinds app k still grows in
	var slope, fixed Vector
	var users [NumKinds]int // growing components per kind

	// capAt[k][r] is the fill level at which app k reaches its demand in
	// kind r. The heap holds each app's next such level, so only the caps
	// that happen before the cluster fills are ever ordered.
	capAt := zeroed(&s.capAt, n)
	h := capHeap{apps: zeroed(&s.heapApps, n)[:0], at: zeroed(&s.heapAt, n)}
	for k, c := range claims {
		dir, ds, ok := c.growth(total)
		if !ok {
			continue
		}
		for r := Kind(0); r < NumKinds; r++ {
			if dir[r] <= 0 {
				continue
			}
			u := c.Weight * dir[r] / ds
			rate[k][r] = u
			growing[k][r] = true
			active[k]++
			users[r]++
			slope[r] += u
			capAt[k][r] = math.Max(c.Demand[r], 0) / u
		}
		h.at[k] = nextCap(capAt[k], growing[k])
		h.apps = append(h.apps, k)
	}
	h.init()

	// stop fixes component (k, r) at value x.
	stop := func(k int, r Kind, x float64) {
		alloc[k][r] = x
		growing[k][r] = false
		active[k]--
		users[r]--
		fixed[r] += x
		if users[r] == 0 {
			slope[r] = 0 // exact, whatever rounding left behind
		} else {
			slope[r] -= rate[k][r]
		}
	}

	for {
		// The next resource to run out.
		tSat, rSat := math.Inf(1), Kind(-1)
		for r := Kind(0); r < NumKinds; r++ {
			if users[r] == 0 || slope[r] <= 0 {
				continue
			}
			t := math.Max(capacity[r]-fixed[r], 0) / slope[r]
			if t < tSat {
				tSat, rSat = t, r
			}
		}
		for len(h.apps) > 0 && active[h.apps[0]] == 0 {
			h.pop()
		}
		if len(h.apps) > 0 && h.at[h.apps[0]] <= tSat {
			k := h.apps[0]
			for r := Kind(0); r < NumKinds; r++ {
				if growing[k][r] && capAt[k][r] <= h.at[k] {
					stop(k, r, claims[k].Demand[r])
				}
			}
			if active[k] == 0 {
				h.pop()
			} else {
				h.at[k] = nextCap(capAt[k], growing[k])
				h.fix()
			}
			continue
		}
		if rSat < 0 {
			return alloc
		}
		// rSat is exhausted at level tSat: every app still growing in it
		// stops growing in every kind.
		for k := range claims {
			if !growing[k][rSat] {
				continue
			}
			for r := Kind(0); r < NumKinds; r++ {
				if growing[k][r] {
					stop(k, r, rate[k][r]*tSat)
				}
			}
		}
	}
}

// growth is the direction a claim's allocation grows in (its Task, else
// its Demand) and that direction's dominant share of total; ok false for
// a claim that gets nothing: no weight, no demand, or a kind the cluster
// does not have.
func (c Claim) growth(total Vector) (dir Vector, ds float64, ok bool) {
	dir = c.Task
	if dir.IsZero() {
		dir = c.Demand
	}
	if c.Weight <= 0 || dir.IsZero() || dir.HasNegative() || c.Demand.IsZero() {
		return dir, 0, false
	}
	ds = dir.DominantShare(total)
	return dir, ds, !math.IsInf(ds, 1) && ds > 0
}

// nextCap is the lowest cap level among the kinds an app still grows in.
func nextCap(capAt Vector, growing [NumKinds]bool) float64 {
	t := math.Inf(1)
	for r, g := range growing {
		if g {
			t = math.Min(t, capAt[r])
		}
	}
	return t
}

// capHeap is a binary min-heap of apps keyed by at[app], ties by app index
// so that the order of events is deterministic.
type capHeap struct {
	apps []int
	at   []float64
}

func (h *capHeap) less(i, j int) bool {
	a, b := h.apps[i], h.apps[j]
	if h.at[a] != h.at[b] {
		return h.at[a] < h.at[b]
	}
	return a < b
}

func (h *capHeap) init() {
	for i := len(h.apps)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *capHeap) pop() {
	last := len(h.apps) - 1
	h.apps[0] = h.apps[last]
	h.apps = h.apps[:last]
	h.down(0)
}

// fix restores the order after the root's key grew.
func (h *capHeap) fix() { h.down(0) }

func (h *capHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h.apps) {
			return
		}
		m := l
		if r := l + 1; r < len(h.apps) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.apps[i], h.apps[m] = h.apps[m], h.apps[i]
		i = m
	}
}

// Leftover is what DRF does not hand out: capacity minus the sum of the
// allocations, never negative.
func Leftover(capacity Vector, alloc []Vector) Vector {
	for _, a := range alloc {
		capacity = capacity.Sub(a)
	}
	return capacity.ClampZero()
}

// Jain returns Jain's fairness index (Σx)² / (n·Σx²): 1 when all values are
// equal, 1/n when one value holds everything. An empty or all-zero input is
// perfectly fair (1).
func Jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if len(xs) == 0 || sq == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// JainOfShares returns Jain's index over apps' dominant shares, each
// normalised by the app's fair share: x_k = DS(used_k) / DS(fair_k). Apps
// whose fair share is zero are left out: they were owed nothing.
func JainOfShares(capacity Vector, used, fair []Vector) float64 {
	xs := make([]float64, 0, len(used))
	for k := range used {
		f := fair[k].DominantShare(capacity)
		if f <= 0 || math.IsInf(f, 1) {
			continue
		}
		xs = append(xs, used[k].DominantShare(capacity)/f)
	}
	return Jain(xs)
}

// drfWithFloors is DRF's progressive filling when some claims carry a
// guarantee. Each component (app k, kind r) that grows at rate u per fill
// level t holds max(u·t, floor) until it reaches its demand, floor being
// min(Min, Demand) (scaled down with the kind's other floors when they
// exceed its capacity): a component below its floor is pending, and
// starts to grow at the level t = floor/u. When a kind runs out, every
// app that uses it stops, its pending components at their floors. Events
// (a start, a demand reached, a kind running out) are taken one at a time
// in level order, each found by a scan: O(events·claims·kinds), fine for
// a queue's children.
func drfWithFloors(total, capacity Vector, claims []Claim) []Vector {
	const (
		off = iota // not used, or done
		pending
		growing
	)
	n := len(claims)
	alloc := make([]Vector, n)
	rate := make([]Vector, n)
	floor := make([]Vector, n)
	state := make([][NumKinds]int, n)
	var sumFloor Vector
	for k, c := range claims {
		dir, ds, ok := c.growth(total)
		if !ok {
			continue
		}
		for r := Kind(0); r < NumKinds; r++ {
			if dir[r] <= 0 {
				continue
			}
			rate[k][r] = c.Weight * dir[r] / ds
			floor[k][r] = math.Max(math.Min(c.Min[r], c.Demand[r]), 0)
			sumFloor[r] += floor[k][r]
			state[k][r] = pending
		}
	}
	for r := Kind(0); r < NumKinds; r++ {
		if sumFloor[r] > capacity[r] {
			f := math.Max(capacity[r], 0) / sumFloor[r]
			for k := range floor {
				floor[k][r] *= f
			}
		}
	}
	// fixed[r] is what components not growing hold (pending ones their
	// floors); slope[r] how fast the growing ones take more of r.
	var fixed, slope Vector
	var users [NumKinds]int // growing components per kind
	for k := range claims {
		for r := Kind(0); r < NumKinds; r++ {
			if state[k][r] == pending {
				fixed[r] += floor[k][r]
			}
		}
	}
	stop := func(k int, r Kind, x float64) {
		if state[k][r] == growing {
			if users[r]--; users[r] == 0 {
				slope[r] = 0 // exact, whatever rounding left behind
			} else {
				slope[r] -= rate[k][r]
			}
		} else {
			fixed[r] -= floor[k][r]
		}
		state[k][r] = off
		alloc[k][r] = x
		fixed[r] += x
	}
	for {
		const (
			none = iota
			start
			capped
			ranOut
		)
		at, what, ek, er := math.Inf(1), none, -1, Kind(-1)
		for k := range claims {
			for r := Kind(0); r < NumKinds; r++ {
				switch state[k][r] {
				case pending:
					if t := floor[k][r] / rate[k][r]; t < at {
						at, what, ek, er = t, start, k, r
					}
				case growing:
					if t := claims[k].Demand[r] / rate[k][r]; t < at {
						at, what, ek, er = t, capped, k, r
					}
				}
			}
		}
		for r := Kind(0); r < NumKinds; r++ {
			if users[r] > 0 && slope[r] > 0 {
				if t := math.Max(capacity[r]-fixed[r], 0) / slope[r]; t < at {
					at, what, ek, er = t, ranOut, -1, r
				}
			}
		}
		switch what {
		case none:
			return alloc
		case start:
			// From here it grows from its floor: the value is
			// continuous, only who pays for it changes.
			fixed[er] -= floor[ek][er]
			slope[er] += rate[ek][er]
			users[er]++
			state[ek][er] = growing
		case capped:
			stop(ek, er, claims[ek].Demand[er])
		case ranOut:
			for k := range claims {
				if state[k][er] == off {
					continue
				}
				for r := Kind(0); r < NumKinds; r++ {
					switch state[k][r] {
					case growing:
						stop(k, r, rate[k][r]*at)
					case pending:
						stop(k, r, floor[k][r])
					}
				}
			}
		}
	}
}
