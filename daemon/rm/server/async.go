package server

import (
	"slices"
	"time"

	"github.com/loomrm/loom/rm"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Asynchronous scheduling (loom.scheduler.async.interval-ms > 0), as
// YARN's schedule-asynchronously: node heartbeats record what the nodes
// say and return at once; a scheduling loop places asks, every interval,
// on the nodes that heartbeated since its last pass, all in one pass of
// the core (one set of candidates for all of them). A heartbeat never
// waits for a scheduling pass. The decisions are the core's, as
// synchronously; only their batching differs.

// markDirty queues a node for the next scheduling pass. Callers hold mu.
func (r *RM) markDirty(id rm.NodeID) {
	if !r.dirtySet[id] {
		r.dirtySet[id] = true
		r.dirty = append(r.dirty, id)
	}
}

// scheduleLoop runs the asynchronous scheduling passes until the RM
// stops.
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
		if len(r.dirty) > 0 {
			nodes := r.dirty
			slices.Sort(nodes)
			r.dirty = nil
			clear(r.dirtySet)
			// A node that was lost since it heartbeated is skipped.
			live := nodes[:0]
			for _, id := range nodes {
				if n := r.nodeByID[id]; n != nil && n.state == pb.NodeStateProto_NS_RUNNING {
					live = append(live, id)
				}
			}
			t0 := time.Now()
			if err := r.step(rm.Schedule{Nodes: live}); err != nil {
				r.log.Error().Err(err).Msg("asynchronous scheduling pass failed")
			}
			r.metrics.observeDecision(time.Since(t0))
		}
		r.mu.Unlock()
	}
}
