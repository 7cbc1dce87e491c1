package server

import (
	"time"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/rpc"
)

// maxActivities bounds the grants the RM remembers for
// /ws/v1/cluster/scheduler/activities.
const maxActivities = 256

// recordGrant keeps a grant for the scheduler's activities: what was
// placed where, for whom, and why (the ask's kind and what paid for
// it). The last maxActivities are kept in a ring: shifting them down on
// every grant moved 50 KB a container, under the RM's lock. Callers hold
// mu.
func (r *RM) recordGrant(cr *contRec, name string) {
	g := webui.Grant{UnixMs: time.Now().UnixMilli(), Node: cr.node.key, Container: name,
		App: rpc.AppIDString(cr.app.yid), Queue: cr.app.queue, User: cr.app.user, Priority: cr.c.Priority,
		Kind: cr.c.Kind.String(), Phase: cr.c.Phase.String(), Resource: cr.c.Resource}
	if len(r.grants) < maxActivities {
		r.grants = append(r.grants, g)
		return
	}
	r.grants[r.grantNext] = g
	r.grantNext = (r.grantNext + 1) % maxActivities
}

// RecentGrants is the last grants, oldest first.
func (b webBackend) RecentGrants() []webui.Grant {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	// The ring's oldest is at grantNext once it is full (0 until then).
	g := b.r.grants
	return append(append([]webui.Grant(nil), g[b.r.grantNext:]...), g[:b.r.grantNext]...)
}
