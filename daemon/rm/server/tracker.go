package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/internal/topology"
	"github.com/loomrm/loom/lifecycle"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// trackerService serves ResourceTracker, the NodeManagers' protocol.
type trackerService struct{ r *RM }

var _ rpc.ResourceTrackerServer = trackerService{}

func nodeKey(id *pb.NodeIdProto) string {
	return net.JoinHostPort(id.GetHost(), strconv.Itoa(int(id.GetPort())))
}

func (s trackerService) RegisterNodeManager(ctx context.Context, req *pb.RegisterNodeManagerRequestProto) (*pb.RegisterNodeManagerResponseProto, error) {
	r := s.r
	id := req.GetNodeId()
	if id.GetHost() == "" || id.GetPort() <= 0 {
		return nil, rpc.Errorf(rpc.ClassYarnException, "node id %q:%d needs a host and a port", id.GetHost(), id.GetPort())
	}
	key := nodeKey(id)
	if err := r.checkNodeCaller(ctx, "registerNodeManager", key); err != nil {
		return nil, err
	}
	capacity, err := rpc.VectorFromResource(req.GetResource())
	if err != nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "node %s: %v", key, err)
	}
	resp := &pb.RegisterNodeManagerResponseProto{RmIdentifier: proto.Int64(r.clusterTS), RmVersion: proto.String("loom")}
	if !r.cfg.MinAlloc.FitsIn(capacity) {
		// As YARN does: a node smaller than the smallest container is
		// told to shut down.
		resp.NodeAction = pb.NodeActionProto_SHUTDOWN.Enum()
		resp.DiagnosticsMessage = proto.String(fmt.Sprintf("NodeManager from %s doesn't satisfy minimum allocations %v: it offers %v",
			key, r.cfg.MinAlloc, capacity))
		return resp, nil
	}
	if diag := r.tooLarge(key, capacity); diag != "" {
		// A node larger than any machine would take every share; it
		// is a mistake in the node's config, or a lie.
		r.log.Warn().Str("node", key).Str("capacity", capacity.String()).Msg("refused a node larger than any machine")
		resp.NodeAction = pb.NodeActionProto_SHUTDOWN.Enum()
		resp.DiagnosticsMessage = proto.String(diag)
		return resp, nil
	}
	// The rack, before taking the lock: a topology script may be slow.
	rack := topology.DefaultRack
	if r.cfg.Topology != nil {
		var err error
		if rack, err = r.cfg.Topology.Rack(id.GetHost()); err != nil {
			r.log.Warn().Err(err).Str("node", key).Msg("could not resolve the node's rack")
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Both master keys, as YARN sends them: a stock NodeManager cannot
	// heartbeat without them.
	resp.ContainerTokenMasterKey, resp.NmTokenMasterKey = r.tokenKey, r.nmKey.cur
	n, ok := r.nodes[key]
	if !ok {
		n = &nodeRec{id: rm.NodeID(len(r.nodeByID)), yid: proto.Clone(id).(*pb.NodeIdProto), key: key, conts: map[rm.ContainerID]*contRec{}}
		r.nodesMu.Lock()
		r.nodes[key] = n
		r.nodesMu.Unlock()
		r.nodeByID = append(r.nodeByID, n)
	} else {
		r.forgetNMTokens(n)
		// A node registering again (it restarted, or was told to
		// resync): the containers it reports running and the RM still
		// runs are kept; the rest it runs are cleaned up, and the RM's
		// records of any it no longer runs end.
		reported := map[rm.ContainerID]bool{}
		for _, cs := range req.GetContainerStatuses() {
			cr := r.contOf(cs.GetContainerId(), nil)
			if cr != nil && cr.node != n {
				cr = nil
			}
			if cr != nil && cs.GetContainerState() == pb.ContainerStateProto_C_RUNNING {
				reported[cr.c.ID] = true
				continue
			} else if cr != nil && cr.state() != pb.ContainerStateProto_C_COMPLETE {
				continue // ended below, from the RM's side
			}
			if cs.GetContainerState() != pb.ContainerStateProto_C_COMPLETE {
				n.mail.cleanupContainer(cs.GetContainerId())
			}
		}
		for cid := range n.conts {
			if !reported[cid] {
				r.endContainer(cid, ExitAborted, "Container lost when its NodeManager registered again without it", false)
			}
		}
	}
	n.httpPort, n.capacity, n.version, n.rack = req.GetHttpPort(), capacity, req.GetNmVersion(), rack
	n.nodeUtil, n.contUtil = nil, nil
	r.setNodeState(n, pb.NodeStateProto_NS_RUNNING)
	n.mail.setLive(true, callSession(ctx), time.Now())
	part, accepted, why := r.nodePartition(n, req.GetNodeLabels())
	if r.labels.Distributed && req.NodeLabels != nil {
		resp.AreNodeLabelsAcceptedByRM = proto.Bool(accepted)
		if !accepted {
			resp.DiagnosticsMessage = proto.String(why)
			r.log.Warn().Str("node", key).Msg("node labels refused: " + why)
		}
	}
	if err := r.step(rm.NodeUp{Node: n.id, Capacity: capacity, Host: id.GetHost(), Rack: rack, Partition: part}); err != nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "node %s: %v", key, err)
	}
	n.part = part
	n.mail.mu.Lock()
	n.mail.label = ""
	if r.labels.Distributed && req.NodeLabels != nil && accepted {
		n.mail.label = labelsKey(req.GetNodeLabels())
	}
	n.mail.mu.Unlock()
	if !ok {
		// A node this RM has not seen: after a restart, the containers
		// of recovered apps it still runs are taken back.
		n.mail.cleanupContainers(r.adopt(n, req.GetContainerStatuses()))
	}
	r.log.Info().Str("node", key).Str("rack", rack).Str("capacity", capacity.String()).Msg("node registered")
	resp.NodeAction = pb.NodeActionProto_NORMAL.Enum()
	return resp, nil
}

// UnRegisterNodeManager: a NodeManager shutting down cleanly. Its
// containers end now instead of at the liveness expiry.
func (s trackerService) UnRegisterNodeManager(ctx context.Context, req *pb.UnRegisterNodeManagerRequestProto) (*pb.UnRegisterNodeManagerResponseProto, error) {
	r := s.r
	key := nodeKey(req.GetNodeId())
	if err := r.checkNodeCaller(ctx, "unRegisterNodeManager", key); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.nodes[key]
	if !ok {
		return nil, rpc.Errorf(rpc.ClassYarnException, "node %s is not registered", key)
	}
	if len(r.cfg.NodeAuth.Secret) == 0 && !n.mail.registeredBy(callSession(ctx)) {
		// Without a cluster secret, the client that registered the node
		// is the only proof of who it is.
		r.log.Warn().Str("node", key).Str("session", callSession(ctx)).Msg("refused unRegisterNodeManager from another client than the node's")
		return nil, rpc.Errorf(rpc.ClassAccessControl,
			"unRegisterNodeManager for node %s is refused: the call does not come from the RPC client that registered the node "+
				"(no cluster secret is set, %s or %s, so that client is the only proof of the node's identity)",
			key, keyClusterSecret, keyClusterSecretFile)
	}
	if n.state == pb.NodeStateProto_NS_RUNNING {
		r.log.Info().Str("node", n.key).Msg("node shut down")
		r.nodeLost(n)
		r.setNodeState(n, pb.NodeStateProto_NS_SHUTDOWN) // already not live (nodeLost)
	}
	return &pb.UnRegisterNodeManagerResponseProto{}, nil
}

func (s trackerService) NodeHeartbeat(ctx context.Context, req *pb.NodeHeartbeatRequestProto) (*pb.NodeHeartbeatResponseProto, error) {
	r := s.r
	st := req.GetNodeStatus()
	key := nodeKey(st.GetNodeId())
	if err := r.checkNodeCaller(ctx, "nodeHeartbeat", key); err != nil {
		return nil, err
	}
	r.nodesMu.RLock()
	n := r.nodes[key]
	r.nodesMu.RUnlock()
	resync := func(diag string) *pb.NodeHeartbeatResponseProto {
		return &pb.NodeHeartbeatResponseProto{ResponseId: proto.Int32(st.GetResponseId()), NodeAction: pb.NodeActionProto_RESYNC.Enum(),
			DiagnosticsMessage: proto.String(diag), NextHeartBeatInterval: proto.Int64(r.cfg.HeartbeatInterval.Milliseconds())}
	}
	if n == nil {
		// Unknown (or LOST, then back): register again, as YARN says.
		return resync("node is not registered with this ResourceManager (or was LOST): re-register"), nil
	}
	async := r.cfg.AsyncInterval > 0
	m := &n.mail
	m.mu.Lock()
	switch {
	case !m.live:
		m.mu.Unlock()
		return resync("node is not registered with this ResourceManager (or was LOST): re-register"), nil
	case len(r.cfg.NodeAuth.Secret) == 0 && m.session != callSession(ctx):
		// Without a cluster secret, only the client that registered the
		// node speaks for it. The node itself, on a new client, only
		// has to register again; a stranger changes nothing.
		m.mu.Unlock()
		r.log.Warn().Str("node", key).Str("session", callSession(ctx)).Msg("a heartbeat from another client than the node's: told to resync")
		return resync(fmt.Sprintf("node %s was registered by another RPC client, and without a cluster secret (%s) "+
			"only that client speaks for it: re-register", key, keyClusterSecret)), nil
	}
	m.lastSeen = time.Now()
	m.respID = st.GetResponseId() + 1
	respID := m.respID
	queue := false
	if async {
		// Asynchronous scheduling: the heartbeat leaves its report for
		// the scheduling loop, which applies it and places asks on the
		// node with the others.
		m.reports = append(m.reports, req)
		queue, m.queued = !m.queued, true
	}
	m.mu.Unlock()
	if queue {
		r.enqueue(n)
	}
	resp := &pb.NodeHeartbeatResponseProto{ResponseId: proto.Int32(respID), NodeAction: pb.NodeActionProto_NORMAL.Enum(),
		NextHeartBeatInterval: proto.Int64(r.cfg.HeartbeatInterval.Milliseconds())}
	if req.NodeLabels != nil && r.labels.Distributed {
		m.mu.Lock()
		same := m.label == labelsKey(req.GetNodeLabels())
		m.mu.Unlock()
		if same {
			resp.AreNodeLabelsAcceptedByRM = proto.Bool(true)
		} else {
			r.mu.Lock()
			if n.state == pb.NodeStateProto_NS_RUNNING {
				r.reportedLabels(n, req.GetNodeLabels(), resp)
			}
			r.mu.Unlock()
		}
	}
	if !async {
		r.mu.Lock()
		if n.state == pb.NodeStateProto_NS_RUNNING {
			r.applyReport(n, req)
			r.schedule([]rm.NodeID{n.id}, "scheduling pass failed on node "+n.key)
		}
		r.mu.Unlock()
	}
	m.mu.Lock()
	resp.ContainersToCleanup, resp.ApplicationsToCleanup, resp.ContainersToSignal = m.cleanup, m.appsClean, m.signals
	m.cleanup, m.appsClean, m.signals = nil, nil, nil
	m.mu.Unlock()
	r.nodeKeys(req, resp)
	return resp, nil
}

// applyReport takes in what a heartbeat said: the node's and its
// containers' utilisation, log aggregation, and its containers' states.
// Callers hold mu.
func (r *RM) applyReport(n *nodeRec, req *pb.NodeHeartbeatRequestProto) {
	st := req.GetNodeStatus()
	if st.NodeUtilization != nil {
		n.nodeUtil = st.GetNodeUtilization()
	}
	if st.ContainersUtilization != nil {
		n.contUtil = st.GetContainersUtilization()
	}
	for _, lr := range req.GetLogAggregationReportsForApps() {
		if a, err := r.appByID(lr.GetApplicationId()); err == nil {
			if a.logAgg == nil {
				a.logAgg = map[string]pb.LogAggregationStatusProto{}
			}
			a.logAgg[n.key] = lr.GetLogAggregationStatus()
			if lr.GetLogAggregationStatus() == pb.LogAggregationStatusProto_LOG_FAILED {
				r.log.Warn().Str("app", rpc.AppIDString(a.yid)).Str("node", n.key).Str("why", lr.GetDiagnostics()).Msg("log aggregation failed")
			}
		}
	}
	for _, cs := range st.GetContainersStatuses() {
		cr := r.contOf(cs.GetContainerId(), nil)
		if cr == nil || cr.node != n {
			continue
		}
		switch cs.GetState() {
		case pb.ContainerStateProto_C_RUNNING:
			if cr.lc.State == lifecycle.ContainerNew {
				r.lifeStepLogged(lifecycle.Running{Container: lifecycle.ContainerID(cr.c.ID)})
			}
		case pb.ContainerStateProto_C_COMPLETE:
			r.endContainer(cr.c.ID, cs.GetExitStatus(), cs.GetDiagnostics(), false)
		}
	}
}
