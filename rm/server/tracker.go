package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

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
	capacity, err := rpc.VectorFromResource(req.GetResource())
	if err != nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "node %s: %v", nodeKey(id), err)
	}
	resp := &pb.RegisterNodeManagerResponseProto{RmIdentifier: proto.Int64(r.clusterTS), RmVersion: proto.String("loom")}
	if !r.cfg.MinAlloc.FitsIn(capacity) {
		// As YARN does: a node smaller than the smallest container is
		// told to shut down.
		resp.NodeAction = pb.NodeActionProto_SHUTDOWN.Enum()
		resp.DiagnosticsMessage = proto.String(fmt.Sprintf("NodeManager from %s doesn't satisfy minimum allocations %v: it offers %v",
			nodeKey(id), r.cfg.MinAlloc, capacity))
		return resp, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := nodeKey(id)
	n, ok := r.nodes[key]
	if !ok {
		n = &nodeRec{id: rm.NodeID(len(r.nodeByID)), yid: proto.Clone(id).(*pb.NodeIdProto), key: key, conts: map[rm.ContainerID]*contRec{}}
		r.nodes[key] = n
		r.nodeByID = append(r.nodeByID, n)
	} else if n.state == pb.NodeStateProto_NS_RUNNING {
		// A restarted NM: what ran there is gone.
		for cid := range n.conts {
			r.containerEnded(cid, ExitAborted, "Container lost when its NodeManager restarted", true)
		}
	}
	n.httpPort, n.capacity = req.GetHttpPort(), capacity
	n.state, n.lastSeen, n.respID = pb.NodeStateProto_NS_RUNNING, time.Now(), 0
	if err := r.step(rm.NodeUp{Node: n.id, Capacity: capacity}); err != nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "node %s: %v", key, err)
	}
	r.log.Info().Str("node", key).Str("capacity", capacity.String()).Msg("node registered")
	resp.NodeAction = pb.NodeActionProto_NORMAL.Enum()
	return resp, nil
}

func (s trackerService) NodeHeartbeat(ctx context.Context, req *pb.NodeHeartbeatRequestProto) (*pb.NodeHeartbeatResponseProto, error) {
	r := s.r
	st := req.GetNodeStatus()
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.nodes[nodeKey(st.GetNodeId())]
	if !ok || n.state != pb.NodeStateProto_NS_RUNNING {
		// Unknown (or LOST, then back): register again, as YARN says.
		return &pb.NodeHeartbeatResponseProto{ResponseId: proto.Int32(st.GetResponseId()), NodeAction: pb.NodeActionProto_RESYNC.Enum(),
			DiagnosticsMessage:    proto.String("node is not registered with this ResourceManager (or was LOST): re-register"),
			NextHeartBeatInterval: proto.Int64(r.cfg.HeartbeatInterval.Milliseconds())}, nil
	}
	n.lastSeen = time.Now()
	for _, cs := range st.GetContainersStatuses() {
		cr, ok := r.conts[rm.ContainerID(cs.GetContainerId().GetId())]
		if !ok || cr.node != n {
			continue
		}
		switch cs.GetState() {
		case pb.ContainerStateProto_C_RUNNING:
			if cr.state == pb.ContainerStateProto_C_NEW {
				cr.state = pb.ContainerStateProto_C_RUNNING
				if cr.isAM && cr.attempt.state == pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_ALLOCATED {
					cr.attempt.state = pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_LAUNCHED
				}
			}
		case pb.ContainerStateProto_C_COMPLETE:
			r.containerEnded(cr.c.ID, cs.GetExitStatus(), cs.GetDiagnostics(), true)
		}
	}
	if err := r.step(rm.Schedule{Nodes: []rm.NodeID{n.id}}); err != nil {
		r.log.Error().Err(err).Str("node", n.key).Msg("scheduling pass failed")
	}
	n.respID = st.GetResponseId() + 1
	resp := &pb.NodeHeartbeatResponseProto{ResponseId: proto.Int32(n.respID), NodeAction: pb.NodeActionProto_NORMAL.Enum(),
		ContainersToCleanup: n.cleanup, ApplicationsToCleanup: n.appsClean,
		NextHeartBeatInterval: proto.Int64(r.cfg.HeartbeatInterval.Milliseconds())}
	n.cleanup, n.appsClean = nil, nil
	return resp, nil
}
