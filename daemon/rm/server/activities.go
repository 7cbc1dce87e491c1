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
// it). Callers hold mu.
func (r *RM) recordGrant(cr *contRec) {
	g := webui.Grant{UnixMs: time.Now().UnixMilli(), Node: cr.node.key, Container: rpc.ContainerIDString(cr.yid),
		App: rpc.AppIDString(cr.app.yid), Queue: cr.app.queue, User: cr.app.user, Priority: cr.c.Priority,
		Kind: cr.c.Kind.String(), Phase: cr.c.Phase.String(), Resource: cr.c.Resource}
	if len(r.grants) == maxActivities {
		copy(r.grants, r.grants[1:])
		r.grants = r.grants[:maxActivities-1]
	}
	r.grants = append(r.grants, g)
}

// RecentGrants is the last grants, oldest first.
func (b webBackend) RecentGrants() []webui.Grant {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	return append([]webui.Grant(nil), b.r.grants...)
}
