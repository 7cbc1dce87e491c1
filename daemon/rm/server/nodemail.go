package server

import (
	"slices"
	"sync"
	"time"

	"github.com/loomrm/loom/rm"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// nodeMail is what a node's heartbeat touches, under its own lock rather
// than the RM's: whether the node may heartbeat, when it last did, and
// what goes back to it (containers and apps to clean up, signals). With
// asynchronous scheduling a heartbeat takes only this lock: it leaves its
// report here for the scheduling loop, takes what is waiting and returns,
// so that it never waits behind a scheduling pass or anything else that
// holds the RM's lock. Lock order: RM.mu, then nodeMail.mu.
type nodeMail struct {
	mu sync.Mutex
	// live mirrors nodeRec.state == NS_RUNNING; session is the RPC client
	// that registered the node (callSession): without a cluster secret,
	// the only one that may heartbeat and unregister for it.
	live     bool
	session  string
	lastSeen time.Time
	respID   int32
	// reports are heartbeats not yet applied (asynchronous scheduling);
	// queued says the node is in the RM's queue of nodes to apply.
	reports []*pb.NodeHeartbeatRequestProto
	queued  bool
	// The outbox: what the node's next heartbeat answer carries.
	cleanup   []*pb.ContainerIdProto
	appsClean []*pb.ApplicationIdProto
	signals   []*pb.SignalContainerRequestProto
	// label is the node label it last reported and the RM took
	// (distributed labels): a heartbeat that reports it again needs no
	// RM lock.
	label string
}

func (m *nodeMail) cleanupContainer(id *pb.ContainerIdProto) {
	m.mu.Lock()
	m.cleanup = append(m.cleanup, id)
	m.mu.Unlock()
}

func (m *nodeMail) cleanupContainers(ids []*pb.ContainerIdProto) {
	m.mu.Lock()
	m.cleanup = append(m.cleanup, ids...)
	m.mu.Unlock()
}

func (m *nodeMail) cleanupApp(id *pb.ApplicationIdProto) {
	m.mu.Lock()
	m.appsClean = append(m.appsClean, id)
	m.mu.Unlock()
}

func (m *nodeMail) signal(s *pb.SignalContainerRequestProto) {
	m.mu.Lock()
	m.signals = append(m.signals, s)
	m.mu.Unlock()
}

// registeredBy says whether session is the RPC client that registered
// the node.
func (m *nodeMail) registeredBy(session string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.session == session
}

// seen is when the node last heartbeated (or registered).
func (m *nodeMail) seen() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastSeen
}

// setLive says whether the node may heartbeat: true when it registers
// (its earlier reports are dropped: the registration said it all), false
// when it is lost or shut down.
func (m *nodeMail) setLive(live bool, session string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live = live
	if live {
		m.session, m.lastSeen, m.respID, m.reports = session, now, 0, nil
	}
}

// enqueue puts a node whose mail holds reports in the scheduling loop's
// queue, once.
func (r *RM) enqueue(n *nodeRec) {
	r.hbMu.Lock()
	r.hbQueue = append(r.hbQueue, n)
	r.hbMu.Unlock()
}

// applyQueued applies the reports the queued nodes left since the last
// pass and returns the live ones among them, in id order. Callers hold
// mu.
func (r *RM) applyQueued() []rm.NodeID {
	r.hbMu.Lock()
	queue := r.hbQueue
	r.hbQueue = nil
	r.hbMu.Unlock()
	var live []rm.NodeID
	for _, n := range queue {
		n.mail.mu.Lock()
		reports := n.mail.reports
		n.mail.reports, n.mail.queued = nil, false
		n.mail.mu.Unlock()
		// A node lost since it heartbeated: its reports no longer count
		// (it registers again with all it runs).
		if n.state != pb.NodeStateProto_NS_RUNNING {
			continue
		}
		for _, req := range reports {
			r.applyReport(n, req)
		}
		live = append(live, n.id)
	}
	slices.Sort(live)
	return live
}
