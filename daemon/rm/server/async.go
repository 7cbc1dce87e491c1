package server

import (
	"time"

	"github.com/loomrm/loom/rm"
)

// Asynchronous scheduling (loom.scheduler.async.interval-ms > 0), as
// YARN's schedule-asynchronously: node heartbeats record what the nodes
// say and return at once; a scheduling loop places asks, every interval,
// on the nodes that heartbeated since its last pass, all in one pass of
// the core (one set of candidates for all of them). A heartbeat takes
// only its node's lock, never the RM's, so it never waits for a
// scheduling pass. The decisions are the core's, as
// synchronously; only their batching differs.

// scheduleLoop runs the asynchronous scheduling passes until the RM
// stops: each applies what the nodes reported since the last one
// (nodemail.go) and places asks on the nodes that heartbeated.
func (r *RM) scheduleLoop() {
	defer r.wg.Done()
	tick := time.NewTicker(r.cfg.AsyncInterval)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		r.mu.Lock()
		if live := r.applyQueued(); len(live) > 0 {
			r.schedule(live, "asynchronous scheduling pass failed")
		}
		r.mu.Unlock()
	}
}

// schedule runs one scheduling pass of the core over nodes and times the
// decision; a failure is logged with why. Callers hold mu.
func (r *RM) schedule(nodes []rm.NodeID, why string) {
	t0 := time.Now()
	if t0.Before(r.holdUntil) {
		return // the recovery wait (New)
	}
	if err := r.step(rm.Schedule{Nodes: nodes}); err != nil {
		r.log.Error().Err(err).Msg(why)
	}
	r.metrics.observeDecision(time.Since(t0))
}
