package nm

import (
	"context"
	"syscall"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// The rest of ContainerManagementProtocol, as Hadoop 3.3's NodeManager
// serves it: signals reach a container's processes; what Loom's NM does
// not do (resizing a running container, re-localising, re-initialising,
// restarting, rolling back or committing) is answered with YARN's
// exception and a message saying so, never a missing method. Every call
// is authorised by the caller's NMToken, as startContainers is.

var _ rpc.ContainerManagementExtServer = cmService{}

// signals are YARN's signal commands as the NM sends them (its
// ContainerExecutor's Signal).
var signals = map[pb.SignalContainerCommandProto]syscall.Signal{
	pb.SignalContainerCommandProto_OUTPUT_THREAD_DUMP: syscall.SIGQUIT,
	pb.SignalContainerCommandProto_GRACEFUL_SHUTDOWN:  syscall.SIGTERM,
	pb.SignalContainerCommandProto_FORCEFUL_SHUTDOWN:  syscall.SIGKILL,
}

// ownContainer finds a container the caller's NMToken may act on, or
// YARN's error.
func (s cmService) ownContainer(ctx context.Context, cid *pb.ContainerIdProto, verb string) (*container, error) {
	tok, err := callerNMToken(ctx)
	if err != nil {
		return nil, rpc.Errorf(classInvalidToken, "%s: %v", invalidNMToken, err)
	}
	if e := authorizeCaller(tok, cid, verb); e != nil {
		return nil, rpc.Errorf(e.GetClassName(), "%s", e.GetMessage())
	}
	c, e := s.n.lookupLocked(cid)
	if e != nil {
		return nil, rpc.Errorf(e.GetClassName(), "%s", e.GetMessage())
	}
	return c, nil
}

func (s cmService) SignalToContainer(ctx context.Context, req *pb.SignalContainerRequestProto) (*pb.SignalContainerResponseProto, error) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	c, err := s.ownContainer(ctx, req.GetContainerId(), "signal")
	if err != nil {
		return nil, err
	}
	if err := n.signalLocked(c, req.GetCommand()); err != nil {
		return nil, err
	}
	return &pb.SignalContainerResponseProto{}, nil
}

// signalLocked sends a container's processes the signal a command
// names: the AM's call, or the RM's in a heartbeat. Callers hold mu.
func (n *NodeManager) signalLocked(c *container, cmd pb.SignalContainerCommandProto) error {
	sig, ok := signals[cmd]
	switch {
	case !ok:
		return rpc.Errorf(rpc.ClassYarnException, "Invalid signal command %v", cmd)
	case c.exec != nil:
		return rpc.Errorf(rpc.ClassYarnException, "Container %s is a lease on its app's executor: it has no process of its own to signal (stop it instead)", c.idStr)
	case c.state != stateRunning || c.pid <= 0:
		return rpc.Errorf(rpc.ClassYarnException, "Container %s is not running: nothing to signal", c.idStr)
	}
	if err := syscall.Kill(-c.pid, sig); err != nil {
		return rpc.Errorf(rpc.ClassYarnException, "signal %v to container %s: %v", cmd, c.idStr, err)
	}
	n.log.Info().Str("container", c.idStr).Str("signal", cmd.String()).Msg("container signalled")
	return nil
}

// noResize answers each container token of a resize or update with a
// failure: Loom's NM does not change a running container's resource.
func (s cmService) noResize(ctx context.Context, toks []*hadooppb.TokenProto) []*pb.ContainerExceptionMapProto {
	var failed []*pb.ContainerExceptionMapProto
	for _, tok := range toks {
		id, err := DecodeContainerToken(tok)
		if err != nil {
			failed = append(failed, failure(nil, serialized(classInvalidToken, "%v", err)))
			continue
		}
		s.n.mu.Lock()
		_, oerr := s.ownContainer(ctx, id.GetContainerId(), "update")
		s.n.mu.Unlock()
		if re, ok := oerr.(*rpc.RemoteError); ok {
			failed = append(failed, failure(id.GetContainerId(), serialized(re.Class, "%s", re.Message)))
			continue
		}
		failed = append(failed, failure(id.GetContainerId(), serialized(rpc.ClassYarnException,
			"Container %s: Loom's NodeManager does not change a running container's resource or execution type (container update)",
			ContainerIDString(id.GetContainerId()))))
	}
	return failed
}

func (s cmService) IncreaseContainersResource(ctx context.Context, req *pb.IncreaseContainersResourceRequestProto) (*pb.IncreaseContainersResourceResponseProto, error) {
	return &pb.IncreaseContainersResourceResponseProto{FailedRequests: s.noResize(ctx, req.GetIncreaseContainers())}, nil
}

func (s cmService) UpdateContainer(ctx context.Context, req *pb.ContainerUpdateRequestProto) (*pb.ContainerUpdateResponseProto, error) {
	return &pb.ContainerUpdateResponseProto{FailedRequests: s.noResize(ctx, req.GetUpdateContainerToken())}, nil
}

// notSupported answers a container operation Loom's NM does not do,
// after the same checks as the others (token, ownership, the container).
func (s cmService) notSupported(ctx context.Context, cid *pb.ContainerIdProto, verb, what string) error {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	if _, err := s.ownContainer(ctx, cid, verb); err != nil {
		return err
	}
	return rpc.Errorf(rpc.ClassYarnException, "Container %s: Loom's NodeManager does not %s yet", ContainerIDString(cid), what)
}

func (s cmService) Localize(ctx context.Context, req *pb.ResourceLocalizationRequestProto) (*pb.ResourceLocalizationResponseProto, error) {
	return nil, s.notSupported(ctx, req.GetContainerId(), "localize for", "localize resources for a running container")
}

// ReInitializeContainer relaunches a running container's process with a
// new launch context (its new resources localised first), as YARN's
// container upgrade: the container keeps its id, resource and working
// dir. Without auto_commit the old context is kept for a rollback until
// the upgrade is committed.
func (s cmService) ReInitializeContainer(ctx context.Context, req *pb.ReInitializeContainerRequestProto) (*pb.ReInitializeContainerResponseProto, error) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	c, err := s.ownContainer(ctx, req.GetContainerId(), "re-initialize")
	if err != nil {
		return nil, err
	}
	if req.GetContainerLaunchContext() == nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Container %s: re-initialization needs a container launch context", c.idStr)
	}
	prev := c.launch
	if err := n.relaunchLocked(c, req.GetContainerLaunchContext()); err != nil {
		return nil, err
	}
	c.rollback = nil
	if !req.GetAutoCommit() {
		c.rollback = prev
	}
	n.log.Info().Str("container", c.idStr).Bool("auto_commit", req.GetAutoCommit()).Msg("container re-initializing")
	return &pb.ReInitializeContainerResponseProto{}, nil
}

// RestartContainer relaunches a running container's process with the
// launch context it has.
func (s cmService) RestartContainer(ctx context.Context, req *pb.ContainerIdProto) (*pb.RestartContainerResponseProto, error) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	c, err := s.ownContainer(ctx, req, "restart")
	if err != nil {
		return nil, err
	}
	if err := n.relaunchLocked(c, c.launch); err != nil {
		return nil, err
	}
	n.log.Info().Str("container", c.idStr).Msg("container restarting")
	return &pb.RestartContainerResponseProto{}, nil
}

// RollbackLastReInitialization relaunches a container with the launch
// context its last uncommitted re-initialization replaced.
func (s cmService) RollbackLastReInitialization(ctx context.Context, req *pb.ContainerIdProto) (*pb.RollbackResponseProto, error) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	c, err := s.ownContainer(ctx, req, "roll back")
	if err != nil {
		return nil, err
	}
	if c.rollback == nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Container %s is not eligible for rollback: it has no uncommitted re-initialization", c.idStr)
	}
	if err := n.relaunchLocked(c, c.rollback); err != nil {
		return nil, err
	}
	c.rollback = nil
	n.log.Info().Str("container", c.idStr).Msg("container rolling back its re-initialization")
	return &pb.RollbackResponseProto{}, nil
}

// CommitLastReInitialization forgets the context a re-initialization
// replaced: there is no rollback after it.
func (s cmService) CommitLastReInitialization(ctx context.Context, req *pb.ContainerIdProto) (*pb.CommitResponseProto, error) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	c, err := s.ownContainer(ctx, req, "commit")
	if err != nil {
		return nil, err
	}
	if c.rollback == nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Container %s is not eligible for commit: it has no uncommitted re-initialization", c.idStr)
	}
	c.rollback = nil
	return &pb.CommitResponseProto{}, nil
}

// GetLocalizationStatuses: Loom localises every resource before the
// process starts, so a container the NM runs has its resources COMPLETED.
func (s cmService) GetLocalizationStatuses(ctx context.Context, req *pb.GetLocalizationStatusesRequestProto) (*pb.GetLocalizationStatusesResponseProto, error) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	resp := &pb.GetLocalizationStatusesResponseProto{}
	for _, cid := range req.GetContainerId() {
		c, err := s.ownContainer(ctx, cid, "get localization statuses of")
		if err != nil {
			re, _ := err.(*rpc.RemoteError)
			resp.FailedRequests = append(resp.FailedRequests, failure(cid, serialized(re.Class, "%s", re.Message)))
			continue
		}
		st := &pb.ContainerLocalizationStatusesProto{ContainerId: cid}
		state := pb.LocalizationStateProto_L_COMPLETED
		if c.state != stateRunning && c.pid <= 0 {
			state = pb.LocalizationStateProto_L_PENDING
		}
		for _, lr := range c.launch.GetLocalResources() {
			st.LocalizationStatuses = append(st.LocalizationStatuses, &pb.LocalizationStatusProto{
				ResourceKey: lr.Key, LocalizationState: state.Enum()})
		}
		resp.CntnLocalizationStatuses = append(resp.CntnLocalizationStatuses, st)
	}
	return resp, nil
}
