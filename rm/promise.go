package rm

import "time"

// The first promise. Carbyne's AM plans against T_k, its finish within its
// current DRF share, and yields whatever that plan says can wait. Online,
// arrivals shrink the share and T_k moves later at every decision, so a
// large job can yield its way to several times the finish it was first
// promised: on the mix of TPC-H and TPC-DS one job of 250 (tpcds-q9, 1,596
// tasks) ended at 0.26x of its DRF time, having got almost nothing from
// the leftover for ten minutes, since the leftover goes to the jobs with
// least remaining work first (docs/results/altruism.md).
//
// The ask is that the leftover allocator keep the promise. The
// core keeps each app's first promise: when the app first has a share, its
// fluid finish then, the larger of its remaining critical path and its
// remaining work over its dominant share (T_k for a job that could use its
// whole share at once). While the app's current fluid finish lies beyond
// (1 + PromiseSlack) times that first span from its start, it is late:
// Carbyne's orders by remaining work (the leftover's, and the in-share
// step's) rank it by its remaining work times (limit / finish)^2, where
// finish is its current fluid finish and limit the stretched promise, so
// the further it has fallen behind the sooner it is served. Nothing is
// taken from anyone and no share changes: a late job only moves up the
// queue for what others yielded. A stock YARN AM sends no remaining work:
// its rank is 0 either way.
//
// Measured (docs/results/altruism.md, seeds 1-3): the three large jobs
// below 0.5x of DRF (TPC-H seed 3, the mix seeds 2 and 3) end at 0.52-0.59x,
// for 0.7% of the average gain. Ranked as if done (0) when late, the
// average cost 2.2%, and at load 1.5 to 4, where most jobs fall behind
// their first promise, the late ones went first in arrival order: TPC-DS
// 1.57x -> 1.35x at load 1.5 (1.47x squared).

// leftoverRank is what app a's remaining work counts as in Carbyne's
// remaining-work orders: a.work, scaled down while a is late for its
// first promise.
func (c *Core) leftoverRank(a *app) float64 {
	slack := c.cfg.PromiseSlack
	if slack <= 0 || a.work <= 0 {
		return a.work
	}
	sh := a.share.DominantShare(c.capacity)
	if sh <= 0 {
		return a.work
	}
	span := max(a.critical, time.Duration(a.work/sh*float64(time.Second)))
	if !a.promised {
		a.promised, a.firstAt, a.firstSpan = true, c.now, span
		return a.work
	}
	late, limit := float64(c.now-a.firstAt+span), (1+slack)*float64(a.firstSpan)
	if late <= limit {
		return a.work
	}
	r := limit / late
	return a.work * r * r
}
