package server

import (
	"time"

	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
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
	r.lowerPassPriority("asynchronous scheduling")
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
	r.armDue()
}

// armDue makes sure a pass runs when the core next has preemption or
// recall due (a queue's starvation timeout, a grace ending, an app's wait
// for recall running out), as the simulator steps at that instant rather
// than at the next event: without it the RM acted only at the next pass a
// heartbeat or an AM brought, up to a heartbeat interval late (a grace
// kill, a recall), at other instants than the simulator. Callers hold mu.
func (r *RM) armDue() {
	due, ok := r.core.PreemptionDue()
	if !ok || r.dueArmed && r.dueAt <= due {
		return
	}
	r.dueAt, r.dueArmed = due, true
	select {
	case r.dueMoved <- struct{}{}:
	default:
	}
}

// dueLoop runs a scheduling pass at each instant armDue sets, over the
// core's unsettled nodes (as the simulator's passes), after applying the
// reports the nodes left (asynchronous scheduling).
func (r *RM) dueLoop() {
	defer r.wg.Done()
	r.lowerPassPriority("preemption and recall")
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-r.dueMoved:
			r.mu.Lock()
			at, armed := r.dueAt, r.dueArmed
			r.mu.Unlock()
			if armed {
				timer.Reset(max(at-r.now(), 0))
			}
		case <-timer.C:
			r.mu.Lock()
			r.dueArmed = false
			var live []rm.NodeID
			if r.cfg.AsyncInterval > 0 {
				live = r.applyQueued()
			}
			r.schedule(live, "scheduling pass when preemption or recall fell due failed")
			r.mu.Unlock()
		}
	}
}

// trackerProtocol is the resource tracker as the RM serves it. Under
// asynchronous scheduling a heartbeat only files its report and takes
// what is waiting for its node, never the RM's lock, so it runs on its
// connection's reading goroutine (rpc.Method.Inline); in each-heartbeat
// scheduling it runs a scheduling pass and keeps a handler goroutine.
func (r *RM) trackerProtocol() rpc.Protocol {
	p := rpc.ResourceTrackerService(trackerService{r})
	if r.cfg.AsyncInterval > 0 {
		p = p.WithInline("nodeHeartbeat")
	}
	return p
}
