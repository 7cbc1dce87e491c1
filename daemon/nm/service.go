package nm

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Exception classes YARN's NodeManager uses beyond rpc's.
const (
	classInvalidToken     = "org.apache.hadoop.security.token.SecretManager$InvalidToken"
	classInvalidContainer = "org.apache.hadoop.yarn.exceptions.InvalidContainerException"
)

// cmService serves ContainerManagementProtocol.
type cmService struct{ n *NodeManager }

var _ rpc.ContainerManagementServer = cmService{}

// serialized is an exception as failed_requests carry it.
func serialized(class, format string, args ...any) *pb.SerializedExceptionProto {
	msg := fmt.Sprintf(format, args...)
	return &pb.SerializedExceptionProto{Message: proto.String(msg), ClassName: proto.String(class),
		Trace: proto.String(class + ": " + msg)}
}

func failure(id *pb.ContainerIdProto, e *pb.SerializedExceptionProto) *pb.ContainerExceptionMapProto {
	return &pb.ContainerExceptionMapProto{ContainerId: id, Exception: e}
}

// StartContainers starts each container its token names. As in YARN, a
// missing, undecodable or misaddressed token fails the whole call; here
// every token is checked before any container starts, so a failed call
// has started nothing. Problems of one container (a second start,
// an expired token, an unknown auxiliary service) go in failed_requests.
// Localisation and launch happen after the call returns; their failures
// show as the container's completion (exit status -1000).
func (s cmService) StartContainers(ctx context.Context, req *pb.StartContainersRequestProto) (*pb.StartContainersResponseProto, error) {
	n := s.n
	nmToken, err := callerNMToken(ctx)
	if err != nil {
		return nil, rpc.Errorf(classInvalidToken, "%s: %v", invalidNMToken, err)
	}
	reqs := req.GetStartContainerRequest()
	ids := make([]*pb.ContainerTokenIdentifierProto, len(reqs))
	for i, r := range reqs {
		id, err := DecodeContainerToken(r.GetContainerToken())
		if err != nil {
			return nil, rpc.Errorf(rpc.ClassYarnException, "start request %d of %d: %v", i+1, len(reqs), err)
		}
		if addr := id.GetNmHostAddr(); addr != "" && addr != n.nodeKey && addr != n.nodeID.GetHost()+":"+strconv.Itoa(int(n.nodeID.GetPort())) {
			return nil, rpc.Errorf(classInvalidToken, "Given Container %s identifier is not valid for current Node manager. Expected : %s Found : %s",
				ContainerIDString(id.GetContainerId()), n.nodeKey, addr)
		}
		if err := n.verifyContainerTokenPassword(r.GetContainerToken(), id); errors.Is(err, errNoMasterKey) {
			return nil, rpc.Errorf(rpc.ClassNMNotYetReady, "%v", err)
		} else if err != nil {
			return nil, rpc.Errorf(classInvalidToken, "%v", err)
		}
		ids[i] = id
	}

	n.mu.Lock()
	if n.stopping {
		n.mu.Unlock()
		return nil, rpc.Errorf(rpc.ClassYarnException, "the NodeManager at %s is shutting down", n.nodeKey)
	}
	if !n.isRegistered {
		n.mu.Unlock()
		return nil, rpc.Errorf(rpc.ClassNMNotYetReady, "Rejecting new containers as NodeManager has not yet connected with ResourceManager")
	}
	resp := &pb.StartContainersResponseProto{}
	now := time.Now()
	var execs []*appExecutor
	var leases []*container
	for i, r := range reqs {
		id := ids[i]
		cid := id.GetContainerId()
		if e := n.authorizeStartLocked(nmToken, id); e != nil {
			resp.FailedRequests = append(resp.FailedRequests, failure(cid, e))
			continue
		}
		if e := n.checkStartLocked(id, r.GetContainerLaunchContext(), now); e != nil {
			resp.FailedRequests = append(resp.FailedRequests, failure(cid, e))
			continue
		}
		c := n.startLocked(id, r.GetContainerLaunchContext(), now)
		if c.exec != nil {
			leases = append(leases, c)
			if !slices.Contains(execs, c.exec) {
				execs = append(execs, c.exec)
			}
		}
		resp.SucceededRequests = append(resp.SucceededRequests, cid)
	}
	n.mu.Unlock()
	// The AM starts tasks on a lease as soon as this returns: wait
	// (bounded) until each lease has been granted or refused.
	deadline := time.NewTimer(executorStartTimeout + leaseCallTimeout)
	defer deadline.Stop()
	for _, c := range leases {
		select {
		case <-c.settled:
		case <-deadline.C:
		}
	}
	// A lease's AM needs its executor's address: wait (bounded) for it.
	for _, x := range execs {
		if addr := waitExecutorAddr(x); addr != "" {
			resp.ServicesMetaData = append(resp.ServicesMetaData, &pb.StringBytesMapProto{
				Key: proto.String(ExecutorMetaKey), Value: []byte(addr)})
		}
	}
	return resp, nil
}

// invalidNMToken is YARN's refusal of a call that has no usable NMToken.
const invalidNMToken = "Invalid NMToken"

// authorizeStartLocked lets an attempt start only its own application's
// containers, and only with a token under a key the NM still takes for
// new starts; it remembers the key, so that the attempt's token keeps
// working here after the RM rolls its key. A SIMPLE caller (where the
// operator allows it) is trusted with the container token alone.
// Callers hold mu.
func (n *NodeManager) authorizeStartLocked(tok *pb.NMTokenIdentifierProto, id *pb.ContainerTokenIdentifierProto) *pb.SerializedExceptionProto {
	if tok == nil {
		return nil
	}
	cid := id.GetContainerId()
	if !proto.Equal(tok.GetAppAttemptId().GetApplicationId(), rpc.AppIDOf(cid)) {
		return serialized(rpc.ClassYarnException, "Unauthorized request to start container.\nNMToken for application attempt : %s was used for "+
			"starting container with container token issued for application attempt : %s",
			rpc.AttemptIDString(tok.GetAppAttemptId()), rpc.AttemptIDString(cid.GetAppAttemptId()))
	}
	attempt := rpc.AttemptIDString(tok.GetAppAttemptId())
	switch k := tok.GetKeyId(); {
	case n.nmMasterKey.GetKeyId() == k && n.nmMasterKey != nil:
		n.attemptKeys[attempt] = n.nmMasterKey
	case n.nmPrevKey.GetKeyId() == k && n.nmPrevKey != nil:
		n.attemptKeys[attempt] = n.nmPrevKey
	default:
		return serialized(classInvalidToken, "Older NMToken should not be used while starting the container.")
	}
	return nil
}

// authorizeCaller lets an attempt stop or read only its own
// application's containers.
func authorizeCaller(tok *pb.NMTokenIdentifierProto, cid *pb.ContainerIdProto, verb string) *pb.SerializedExceptionProto {
	if tok == nil || proto.Equal(tok.GetAppAttemptId().GetApplicationId(), rpc.AppIDOf(cid)) {
		return nil
	}
	return serialized(rpc.ClassYarnException, "%s attempted to %s non-application container : %s",
		rpc.AttemptIDString(tok.GetAppAttemptId()), verb, ContainerIDString(cid))
}

// checkStartLocked refuses what YARN refuses for one container. Callers
// hold mu.
func (n *NodeManager) checkStartLocked(id *pb.ContainerTokenIdentifierProto, clc *pb.ContainerLaunchContextProto, now time.Time) *pb.SerializedExceptionProto {
	idStr := ContainerIDString(id.GetContainerId())
	_, running := n.containers[idStr]
	_, stopped := n.recentlyStopped[idStr]
	switch {
	case running || stopped:
		return serialized(rpc.ClassYarnException, "Unauthorized request to start container.\n Attempt to relaunch the same container with id %s.", idStr)
	case id.GetExpiryTimeStamp() != 0 && id.GetExpiryTimeStamp() < now.UnixMilli():
		return serialized(rpc.ClassYarnException, "Unauthorized request to start container.\nThis token is expired. current time is %d found %d\n"+
			"Note: System times on machines may be out of sync. Check system time and time zones.", now.UnixMilli(), id.GetExpiryTimeStamp())
	case id.GetRmIdentifier() != 0 && n.rmIdentifier != 0 && id.GetRmIdentifier() != n.rmIdentifier:
		return serialized(classInvalidContainer, "\nContainer %s rejected as it is allocated by a previous RM", idStr)
	case !validUser(id.GetAppSubmitter()):
		return serialized(rpc.ClassYarnException, "Container %s: user %q cannot name a directory", idStr, id.GetAppSubmitter())
	case n.apps[ApplicationIDString(rpc.AppIDOf(id.GetContainerId()))] != nil && n.apps[ApplicationIDString(rpc.AppIDOf(id.GetContainerId()))].cleaning:
		return serialized(rpc.ClassYarnException, "Container %s refused: its application has finished on this node", idStr)
	case clc == nil:
		return serialized(rpc.ClassYarnException, "Container %s: the start request has no container launch context", idStr)
	}
	if sd := clc.GetServiceData(); len(sd) > 0 {
		return serialized(rpc.ClassInvalidAuxServiceException, "The auxService:%s does not exist", sd[0].GetKey())
	}
	for _, lr := range clc.GetLocalResources() {
		if !validLinkName(lr.GetKey()) {
			return serialized(rpc.ClassYarnException, "Container %s: local resource name %q must be a relative path inside the container's directory", idStr, lr.GetKey())
		}
		if lr.GetValue().GetResource() == nil {
			return serialized(rpc.ClassYarnException, "Container %s: local resource %q has no URL", idStr, lr.GetKey())
		}
	}
	return nil
}

func validUser(u string) bool {
	return u != "" && u != "." && u != ".." && !strings.ContainsAny(u, "/\x00") && len(u) <= 255
}

func validLinkName(k string) bool {
	if k == "" || strings.Contains(k, "\x00") || strings.HasPrefix(k, "/") {
		return false
	}
	for p := range strings.SplitSeq(k, "/") {
		if p == ".." || p == "." || p == "" {
			return false
		}
	}
	return true
}

// startLocked records a container and starts its runner: a process, or
// for a lease a grant to its app's executor (started here if the app has
// none). Callers hold mu.
func (n *NodeManager) startLocked(id *pb.ContainerTokenIdentifierProto, clc *pb.ContainerLaunchContextProto, now time.Time) *container {
	cid := id.GetContainerId()
	idStr := ContainerIDString(cid)
	appID := rpc.AppIDOf(cid)
	appStr := ApplicationIDString(appID)
	user := id.GetAppSubmitter()
	app := n.apps[appStr]
	if app == nil {
		app = &application{id: appID, idStr: appStr, user: user, conts: map[string]*container{}, cache: map[string]*cacheEntry{}}
		n.apps[appStr] = app
	}
	var memLimit int64
	if v, err := rpc.VectorFromResource(id.GetResource()); err == nil {
		memLimit = int64(v[fairness.Memory]) << 20
	} else {
		memLimit = id.GetResource().GetMemory() << 20
	}
	h := fnv.New32a()
	h.Write([]byte(idStr))
	pick := int(h.Sum32())
	appDirs := n.appDirs(app.user, appStr)
	var logDirs []string
	for _, d := range n.cfg.LogDirs {
		logDirs = append(logDirs, filepath.Join(d, appStr, idStr))
	}
	ctx, cancel := context.WithCancel(n.ctx)
	c := &container{id: cid, idStr: idStr, app: app, user: app.user, token: id, launch: clc, resource: id.GetResource(),
		memLimit: memLimit, created: now,
		workDir: filepath.Join(appDirs[pick%len(appDirs)], idStr), logDir: logDirs[pick%len(logDirs)],
		appDirs: appDirs, logDirs: logDirs, ctx: ctx, cancel: cancel, exited: make(chan struct{})}
	n.containers[idStr] = c
	app.conts[idStr] = c
	n.work.Add(1)
	if isLease(clc) {
		c.exec = n.executorForLocked(app, c)
		c.settled = make(chan struct{})
		go n.runLease(c)
	} else {
		go n.run(c)
	}
	n.log.Info().Str("container", idStr).Str("user", user).Int64("memory_mb", memLimit>>20).Bool("lease", c.exec != nil).Msg("container started")
	return c
}

// StopContainers kills each container named (exit status -105,
// KILLED_BY_APPMASTER, as YARN reports a stop); a completed one is left
// as it is. An unknown container goes in failed_requests.
func (s cmService) StopContainers(ctx context.Context, req *pb.StopContainersRequestProto) (*pb.StopContainersResponseProto, error) {
	n := s.n
	nmToken, err := callerNMToken(ctx)
	if err != nil {
		return nil, rpc.Errorf(classInvalidToken, "%s: %v", invalidNMToken, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	resp := &pb.StopContainersResponseProto{}
	for _, cid := range req.GetContainerId() {
		if e := authorizeCaller(nmToken, cid, "stop"); e != nil {
			resp.FailedRequests = append(resp.FailedRequests, failure(cid, e))
			continue
		}
		c, e := n.lookupLocked(cid)
		if e != nil {
			if _, recent := n.recentlyStopped[ContainerIDString(cid)]; recent {
				resp.SucceededRequests = append(resp.SucceededRequests, cid)
				continue
			}
			resp.FailedRequests = append(resp.FailedRequests, failure(cid, e))
			continue
		}
		n.killLocked(c, ExitKilledByAppMaster, diagKilledByAppMaster)
		resp.SucceededRequests = append(resp.SucceededRequests, cid)
	}
	return resp, nil
}

// GetContainerStatuses reports each container named.
func (s cmService) GetContainerStatuses(ctx context.Context, req *pb.GetContainerStatusesRequestProto) (*pb.GetContainerStatusesResponseProto, error) {
	n := s.n
	nmToken, err := callerNMToken(ctx)
	if err != nil {
		return nil, rpc.Errorf(classInvalidToken, "%s: %v", invalidNMToken, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	resp := &pb.GetContainerStatusesResponseProto{}
	for _, cid := range req.GetContainerId() {
		if e := authorizeCaller(nmToken, cid, "get status for"); e != nil {
			resp.FailedRequests = append(resp.FailedRequests, failure(cid, e))
			continue
		}
		c, e := n.lookupLocked(cid)
		if e != nil {
			resp.FailedRequests = append(resp.FailedRequests, failure(cid, e))
			continue
		}
		resp.Status = append(resp.Status, c.status())
	}
	return resp, nil
}

// lookupLocked finds a container, or YARN's exception for one it does
// not have. Callers hold mu.
func (n *NodeManager) lookupLocked(cid *pb.ContainerIdProto) (*container, *pb.SerializedExceptionProto) {
	if cid == nil || rpc.AppIDOf(cid) == nil {
		return nil, serialized(rpc.ClassYarnException, "no container id given")
	}
	idStr := ContainerIDString(cid)
	if c, ok := n.containers[idStr]; ok {
		return c, nil
	}
	if _, ok := n.recentlyStopped[idStr]; ok {
		return nil, serialized(rpc.ClassYarnException, "Container %s was recently stopped on node manager.", idStr)
	}
	return nil, serialized(rpc.ClassYarnException, "Container %s is not handled by this NodeManager", idStr)
}
