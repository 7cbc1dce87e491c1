package rm

import (
	"cmp"
	"slices"
	"time"

	"github.com/loomrm/loom/altruism"
)

// maxGrowthSteps bounds the steps ShareGrowth returns: with more apps
// present it keeps every k-th, the last always, so that an AM's reverse
// pass and an allocate reply stay small (a step is about 16 bytes of
// every reply). A thinned projection credits less growth between the steps
// it keeps, never more. Measured on TPC-DS online and in batch, TPC-H and
// the heavy-tailed mix, 8, 16 and 32 steps give the same factors against
// DRF to 0.01; at 10,000 NMs and 2,000 AMs, 32 steps cost the load
// generator's AMs about 1 s more CPU a run to decode.
const maxGrowthSteps = 8

// growthSlack is how far past its first promised span an app's fluid
// finish may move before it stops planning against a projected growth.
// Measured on TPC-H, TPC-DS and their mix online (docs/results/altruism.md):
// at 0 the growth gains nothing online (most jobs fall a little behind
// their first promise as others arrive), at 1 and 1.5 large TPC-H jobs that
// yielded on the strength of growth that never came fell below 0.5x of
// their DRF time; at 0.5 none did, for most of the gain.
const growthSlack = 0.5

// psRun is one partition's apps finishing under processor sharing, DRF's
// fluid limit, from the projection's instant: each app with remaining
// work w and weight u is served at u over the weight present, so they
// finish in order of v = w/u (virtual time, work per unit of weight), the
// j-th at finish[j] seconds. Apps that sent no remaining work never
// finish in it but count in total, the weight present at the start.
type psRun struct {
	v, finish []float64
	// gone[j] is the weight finished with the j-th, itself included.
	gone  []float64
	total float64
	// index is each finishing app's j; members every app counted in total.
	index   map[AppID]int
	members map[AppID]bool
}

// project makes the processor-sharing projection of every partition.
func (c *Core) project() {
	c.growth, c.growthAt = map[string]*psRun{}, c.now
	type entry struct {
		id        AppID
		v, weight float64
	}
	byLabel := map[string][]entry{}
	totals := map[string]float64{}
	members := map[string]map[AppID]bool{}
	for _, a := range c.apps {
		if a.held || a.weight <= 0 {
			continue
		}
		totals[a.label] += a.weight
		if members[a.label] == nil {
			members[a.label] = map[AppID]bool{}
		}
		members[a.label][a.id] = true
		if a.work > 0 {
			byLabel[a.label] = append(byLabel[a.label], entry{a.id, a.work / a.weight, a.weight})
		}
	}
	for label, total := range totals {
		es := byLabel[label]
		slices.SortFunc(es, func(x, y entry) int { return cmp.Or(cmp.Compare(x.v, y.v), cmp.Compare(x.id, y.id)) })
		r := &psRun{total: total, index: make(map[AppID]int, len(es)), members: members[label]}
		t, v, present := 0.0, 0.0, total
		for j, e := range es {
			t += (e.v - v) * present
			v = e.v
			present -= e.weight
			r.v, r.finish = append(r.v, e.v), append(r.finish, t)
			r.gone = append(r.gone, total-present)
			r.index[e.id] = j
		}
		c.growth[label] = r
	}
}

// ShareGrowth projects how an app's share grows if it stays while the
// other apps of its partition finish under processor sharing (psRun): after
// each, its share is its current one times the weight present at the start
// over the weight left, never above what makes its dominant share the whole
// cluster. The steps are offsets from now. Nil when the config's ShareGrowth
// is off, the app is unknown, held, alone, or behind its first promise.
//
// With the app staying, each app that psRun finishes after it is held up
// by the app's weight u over every unit of virtual time past the app's own
// v: it finishes u (v_j − v) seconds later. So one projection, sorted once,
// serves every app, each in time proportional to the steps it gets. The
// projection is made again at most every ShareInterval, as shares are, from
// the remaining work the AMs last reported (share-seconds, the SRTF
// order's); an app that has reported none is not projected to finish.
//
// The projection is a bet: online, new apps arrive and take the room it
// counts on. An app whose fluid finish has passed its first promise
// (promise.go) by more than growthSlack of it stops betting and plans
// within its share, as without growth, until it is back within the line.
func (c *Core) ShareGrowth(id AppID) []altruism.ShareStep {
	if !c.cfg.ShareGrowth {
		return nil
	}
	a, err := c.app(id)
	if err != nil || a.held || a.weight <= 0 {
		return nil
	}
	c.refreshShares()
	if c.behind(a) {
		return nil
	}
	if c.growth == nil || c.now-c.growthAt >= c.cfg.ShareInterval {
		c.project()
	}
	r := c.growth[a.label]
	if r == nil {
		return nil
	}
	own, in := r.index[id]
	u, v, total := a.weight, 0.0, r.total
	if in {
		v = r.v[own]
	} else if !r.members[id] {
		// Arrived since the projection: present throughout, never
		// finishing in it.
		total += u
	}
	others := len(r.v)
	if in {
		others--
	}
	if others <= 0 {
		return nil
	}
	limit := 0.0
	if d := a.share.DominantShare(c.capacity); d > 0 {
		limit = 1 / d
	}
	step := func(k int) (altruism.ShareStep, bool) {
		j := k
		if in && k >= own {
			j++
		}
		at, gone := r.finish[j], r.gone[j]
		if in && j > own {
			at += u * (r.v[j] - v)
			gone -= u
		}
		f := total / (total - gone)
		if limit > 0 {
			f = min(f, limit)
		}
		if f <= 1 {
			return altruism.ShareStep{}, false
		}
		return altruism.ShareStep{After: time.Duration(at * float64(time.Second)), Factor: f}, true
	}
	stride := 1
	if others > maxGrowthSteps {
		stride = (others + maxGrowthSteps - 2) / (maxGrowthSteps - 1)
	}
	var steps []altruism.ShareStep
	add := func(k int) {
		if s, ok := step(k); ok {
			steps = append(steps, s)
		}
	}
	for k := 0; k < others-1; k += stride {
		add(k)
	}
	add(others - 1)
	// The projection was made at growthAt: steps whose time has passed
	// since apply from now.
	return altruism.StepsSince(steps, c.now-c.growthAt)
}

// behind says whether app a's fluid finish lies past 1 + growthSlack
// times the span it was first promised: it gets no projected growth.
func (c *Core) behind(a *app) bool {
	if c.cfg.PromiseSlack <= 0 || !a.promised || a.work <= 0 {
		return false
	}
	span, ok := c.fluidSpan(a)
	if !ok {
		return false
	}
	finish, _ := c.line(a, span)
	return finish > (1+growthSlack)*float64(a.firstSpan)
}
