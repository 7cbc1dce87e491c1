package server

// The rest of ApplicationClientProtocol, beyond what client.go serves:
// every method of YARN 3.3's protocol is answered, so that a stock client
// never gets RpcNoSuchMethodException. Where Loom keeps the data the
// answer is real (attempt and container reports, failing an attempt,
// queue ACLs, priority, tags, timeouts); where YARN would answer from a
// feature that is off (node labels and attributes) the answer is YARN's
// empty one; what Loom cannot do yet (delegation tokens, reservations,
// moving apps between queues, signalling containers) is refused with the
// exception class YARN uses and a message that says so. Exception classes
// and messages follow Hadoop's ClientRMService.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/lifecycle"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// iso8601 is the layout YARN's timeouts use (yyyy-MM-dd'T'HH:mm:ss.SSSZ).
const iso8601 = "2006-01-02T15:04:05.000-0700"

// attemptOfApp finds one of a's attempts, or gives YARN's
// ApplicationAttemptNotFoundException.
func attemptOfApp(a *appRec, id *pb.ApplicationAttemptIdProto) (*attemptRec, error) {
	n := id.GetAttemptId()
	if n < 1 || int(n) > len(a.attempts) {
		return nil, rpc.Errorf(rpc.ClassApplicationAttemptNotFound, "ApplicationAttempt with id '%s' doesn't exist in RM.", rpc.AttemptIDString(id))
	}
	return a.attempts[n-1], nil
}

func (s clientService) GetApplicationAttemptReport(ctx context.Context, req *pb.GetApplicationAttemptReportRequestProto) (*pb.GetApplicationAttemptReportResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	id := req.GetApplicationAttemptId()
	a, err := r.appByID(id.GetApplicationId())
	if err != nil {
		return nil, err
	}
	at, err := attemptOfApp(a, id)
	if err != nil {
		return nil, err
	}
	return &pb.GetApplicationAttemptReportResponseProto{ApplicationAttemptReport: r.attemptReport(a, at)}, nil
}

func (s clientService) GetContainerReport(ctx context.Context, req *pb.GetContainerReportRequestProto) (*pb.GetContainerReportResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	cid := req.GetContainerId()
	a, err := r.appByID(rpc.AppIDOf(cid))
	if err != nil {
		return nil, err
	}
	attempt := cid.GetAppAttemptId()
	if attempt == nil {
		attempt = &pb.ApplicationAttemptIdProto{ApplicationId: a.yid, AttemptId: proto.Int32(0)}
	}
	at, err := attemptOfApp(a, attempt)
	if err != nil {
		return nil, err
	}
	for _, cr := range at.conts {
		if cr.yid.GetId() == cid.GetId() {
			return &pb.GetContainerReportResponseProto{ContainerReport: containerReport(cr)}, nil
		}
	}
	return nil, rpc.Errorf(rpc.ClassContainerNotFound, "Container with id '%s' doesn't exist in RM.", rpc.ContainerIDString(cid))
}

// containerReport is YARN's report of one container. Callers hold mu.
func containerReport(cr *contRec) *pb.ContainerReportProto {
	return &pb.ContainerReportProto{ContainerId: cr.yid, Resource: rpc.ResourceFromVector(cr.c.Resource), NodeId: cr.node.yid,
		Priority:     &pb.PriorityProto{Priority: proto.Int32(int32(cr.c.Priority))},
		CreationTime: millis(cr.lc.Created), FinishTime: millis(cr.lc.Finished), DiagnosticsInfo: proto.String(cr.lc.Diagnostics),
		ContainerExitStatus: proto.Int32(cr.lc.Exit), ContainerState: cr.state().Enum(),
		NodeHttpAddress: proto.String(fmt.Sprintf("%s:%d", cr.node.yid.GetHost(), cr.node.httpPort)),
		ExecutionType:   pb.ExecutionTypeProto_GUARANTEED.Enum()}
}

// modifiableApp finds an app the caller may modify (MODIFY_APP), as
// YARN's verifyUserAccessForRMApp does. Callers hold mu.
func (r *RM) modifiableApp(ctx context.Context, id *pb.ApplicationIdProto, what string) (*appRec, error) {
	a, err := r.appByID(id)
	if err != nil {
		return nil, err
	}
	if err := r.checkModify(caller(ctx), a); err != nil {
		r.log.Warn().Str("app", rpc.AppIDString(a.yid)).Str("user", caller(ctx)).Msg(what + " refused")
		return nil, err
	}
	return a, nil
}

// active says whether YARN would let a client change the app: it is
// tracked by the scheduler (SUBMITTED, ACCEPTED or RUNNING).
func active(a *appRec) bool {
	switch a.state() {
	case pb.YarnApplicationStateProto_SUBMITTED, pb.YarnApplicationStateProto_ACCEPTED, pb.YarnApplicationStateProto_RUNNING:
		return true
	}
	return false
}

// FailApplicationAttempt fails the app's current attempt as its AM's
// failure would: its containers are killed (the AM's too), and another
// attempt starts unless the app has failed as often as it may. As in
// YARN, it counts against the app's max attempts (the AM container had
// no exit status of its own), failing an attempt of a finished app does
// nothing, and neither does failing an attempt that has already ended
// (YARN's attempt state machine ignores FAIL in its final states).
func (s clientService) FailApplicationAttempt(ctx context.Context, req *pb.FailApplicationAttemptRequestProto) (*pb.FailApplicationAttemptResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	id := req.GetApplicationAttemptId()
	a, err := r.modifiableApp(ctx, id.GetApplicationId(), "fail attempt")
	if err != nil {
		return nil, err
	}
	at, err := attemptOfApp(a, id)
	if err != nil {
		return nil, err
	}
	if a.done() || at != a.current() || at.state() != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_SCHEDULED &&
		at.state() != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_RUNNING &&
		at.state() != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_LAUNCHED &&
		at.state() != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_ALLOCATED {
		r.log.Info().Str("attempt", rpc.AttemptIDString(at.yid)).Str("user", caller(ctx)).Str("state", at.state().String()).
			Msg("fail attempt: the attempt has already ended; nothing to do")
		return &pb.FailApplicationAttemptResponseProto{}, nil
	}
	r.log.Info().Str("attempt", rpc.AttemptIDString(at.yid)).Str("user", caller(ctx)).Msg("attempt failed by user")
	diag := fmt.Sprintf("Attempt failed by user %s.", caller(ctx))
	// The AM container ends first, as when the AM dies (its node is told
	// to stop it), and its end fails the attempt; without one (not yet
	// granted, or an unmanaged AM) the attempt fails directly.
	r.lifeStepLogged(lifecycle.FailAttempt{App: lifecycle.AppID(a.id), Diagnostics: diag})
	return &pb.FailApplicationAttemptResponseProto{}, nil
}

// SetApplicationTags replaces an app's tags, normalised as YARN
// normalises submitted ones: trimmed, lower-cased, without duplicates, at
// most 10 of at most 100 ASCII characters.
func (s clientService) SetApplicationTags(ctx context.Context, req *pb.SetApplicationTagsRequestProto) (*pb.SetApplicationTagsResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := r.modifiableApp(ctx, req.GetApplicationId(), "set tags")
	if err != nil {
		return nil, err
	}
	var tags []string
	for _, t := range req.GetApplicationTags() {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" || slices.Contains(tags, t) {
			continue
		}
		if len(t) > 100 {
			return nil, rpc.Errorf(rpc.ClassYarnException, "Tag %s is too long, maximum allowed length of a tag is 100", t)
		}
		for _, c := range t {
			if c > 127 {
				return nil, rpc.Errorf(rpc.ClassYarnException, "A tag can only have ASCII characters! Invalid tag - %s", t)
			}
		}
		tags = append(tags, t)
	}
	if len(tags) > 10 {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Too many applicationTags, a maximum of only 10 are allowed!")
	}
	slices.Sort(tags)
	a.ctx.ApplicationTags = tags
	r.persistApp(a)
	return &pb.SetApplicationTagsResponseProto{ApplicationTags: slices.Clone(tags)}, nil
}

// MoveApplicationAcrossQueues checks the move as YARN does (the app, the
// caller's right to modify it, the target queue and, with a queue tree
// and ACLs, the caller's right to submit there), then moves the app: its
// usage moves with it, and its share follows the new queue.
func (s clientService) MoveApplicationAcrossQueues(ctx context.Context, req *pb.MoveApplicationAcrossQueuesRequestProto) (*pb.MoveApplicationAcrossQueuesResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := r.modifiableApp(ctx, req.GetApplicationId(), "move")
	if err != nil {
		return nil, err
	}
	target := req.GetTargetQueue()
	if r.tree == nil {
		target = strings.TrimPrefix(target, "root.")
	} else if q := r.tree.Find(target); q != nil && len(q.Children) == 0 {
		target = appQueueName(r.tree, q)
		groups := r.userGroups(caller(ctx))
		if r.cfg.ACLEnabled && !q.MaySubmit(caller(ctx), groups) && !q.MayAdminister(caller(ctx), groups) {
			return nil, rpc.Errorf(rpc.ClassAccessControl, "User %s cannot submit applications to target queue or the target queue doesn't exist: %s while moving %s",
				caller(ctx), req.GetTargetQueue(), rpc.AppIDString(a.yid))
		}
	}
	corePath, weight, ok := r.coreQueue(target)
	if !ok {
		return nil, rpc.Errorf(rpc.ClassAccessControl, "User %s cannot submit applications to target queue or the target queue doesn't exist: %s while moving %s",
			caller(ctx), req.GetTargetQueue(), rpc.AppIDString(a.yid))
	}
	if !active(a) {
		return nil, rpc.Errorf(rpc.ClassYarnException, "App in %s state cannot be moved.", a.state())
	}
	if target == a.queue {
		return &pb.MoveApplicationAcrossQueuesResponseProto{}, nil
	}
	// The scheduler moves it first: its share follows its new queue's
	// weight at once, and its AM is told that queue's P(Altruism).
	if err := r.step(rm.AppMoved{App: a.id, Queue: corePath, Weight: weight}); err != nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "moving %s: %v", rpc.AppIDString(a.yid), err)
	}
	from := a.queue
	a.queue = target
	a.ctx.Queue = proto.String(target)
	r.persistApp(a)
	r.log.Info().Str("app", rpc.AppIDString(a.yid)).Str("from", from).Str("to", target).Str("user", caller(ctx)).Msg("application moved")
	return &pb.MoveApplicationAcrossQueuesResponseProto{}, nil
}

// UpdateApplicationPriority records an app's priority, capped at the
// cluster's maximum as YARN's CapacityScheduler caps it, and reports it
// (getApplicationReport's priority). Loom's policies do not order apps by
// it.
func (s clientService) UpdateApplicationPriority(ctx context.Context, req *pb.UpdateApplicationPriorityRequestProto) (*pb.UpdateApplicationPriorityResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := r.modifiableApp(ctx, req.GetApplicationId(), "update priority")
	if err != nil {
		return nil, err
	}
	current := func() *pb.PriorityProto {
		return &pb.PriorityProto{Priority: proto.Int32(a.ctx.GetPriority().GetPriority())}
	}
	if a.done() {
		return &pb.UpdateApplicationPriorityResponseProto{ApplicationPriority: current()}, nil
	}
	if !active(a) {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Application in %s state cannot update priority.", a.state())
	}
	if req.ApplicationPriority == nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Application %s: no application priority given", rpc.AppIDString(a.yid))
	}
	p := min(req.GetApplicationPriority().GetPriority(), r.cfg.MaxAppPriority)
	if a.ctx.Priority == nil || a.ctx.GetPriority().GetPriority() != p {
		a.ctx.Priority = &pb.PriorityProto{Priority: proto.Int32(p)}
		r.persistApp(a)
		r.log.Info().Str("app", rpc.AppIDString(a.yid)).Str("user", caller(ctx)).Int32("priority", p).Msg("priority updated")
	}
	return &pb.UpdateApplicationPriorityResponseProto{ApplicationPriority: current()}, nil
}

// UpdateApplicationTimeouts records an app's LIFETIME as YARN does: the
// new expiry, an ISO 8601 time after now, becomes the submission
// context's lifetime (seconds from submission), kept across restarts and
// shown by appTimeouts; the monitor kills the app at its expiry
// (killExpiredApps).
func (s clientService) UpdateApplicationTimeouts(ctx context.Context, req *pb.UpdateApplicationTimeoutsRequestProto) (*pb.UpdateApplicationTimeoutsResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := r.modifiableApp(ctx, req.GetApplicationId(), "update timeouts")
	if err != nil {
		return nil, err
	}
	if len(req.GetApplicationTimeouts()) == 0 {
		return nil, rpc.Errorf(rpc.ClassYarnException, "At least one ApplicationTimeoutType should be configured for updating timeouts.")
	}
	if a.done() {
		return &pb.UpdateApplicationTimeoutsResponseProto{ApplicationTimeouts: req.GetApplicationTimeouts()}, nil
	}
	if !active(a) {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Application is in %s state can not update timeout.", a.state())
	}
	now := time.Now()
	lifetimes := map[pb.ApplicationTimeoutTypeProto]int64{}
	resp := &pb.UpdateApplicationTimeoutsResponseProto{}
	for _, t := range req.GetApplicationTimeouts() {
		expiry, err := time.Parse(iso8601, t.GetExpireTime())
		if err != nil {
			return nil, rpc.Errorf(rpc.ClassYarnException, "Expire time is not in ISO8601 format. ISO8601 supported format is yyyy-MM-dd'T'HH:mm:ss.SSSZ")
		}
		if !expiry.After(now) {
			return nil, rpc.Errorf(rpc.ClassYarnException, "Expire time is less than current time, current-time=%s expire-time=%s",
				now.Format(iso8601), expiry.Format(iso8601))
		}
		lifetimes[t.GetApplicationTimeoutType()] = int64(math.Ceil(expiry.Sub(a.submitted).Seconds()))
		resp.ApplicationTimeouts = append(resp.ApplicationTimeouts, &pb.ApplicationUpdateTimeoutMapProto{
			ApplicationTimeoutType: t.GetApplicationTimeoutType().Enum(), ExpireTime: proto.String(expiry.Format(iso8601))})
	}
	var kept []*pb.ApplicationTimeoutMapProto
	for _, t := range a.ctx.GetApplicationTimeouts() {
		if _, replaced := lifetimes[t.GetApplicationTimeoutType()]; !replaced {
			kept = append(kept, t)
		}
	}
	for typ, secs := range lifetimes {
		kept = append(kept, &pb.ApplicationTimeoutMapProto{ApplicationTimeoutType: typ.Enum(), Timeout: proto.Int64(secs)})
	}
	a.ctx.ApplicationTimeouts = kept
	r.persistApp(a)
	r.log.Info().Str("app", rpc.AppIDString(a.yid)).Str("user", caller(ctx)).Msg("timeouts updated")
	return resp, nil
}

// lifetimeExceeded is YARN's diagnostic for an app killed at the end of
// its LIFETIME (RMAppLifetimeMonitor).
const lifetimeExceeded = "Application is killed by ResourceManager as it has exceeded the lifetime period."

// killExpiredApps kills every app past its LIFETIME timeout (seconds
// from submission: the submission context's, or as updated), as YARN's
// lifetime monitor does. Callers hold mu.
func (r *RM) killExpiredApps(now time.Time) {
	for _, a := range r.appOrder {
		if a.done() {
			continue
		}
		for _, t := range a.ctx.GetApplicationTimeouts() {
			if t.GetApplicationTimeoutType() != pb.ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME || t.GetTimeout() <= 0 {
				continue
			}
			if expiry := a.submitted.Add(time.Duration(t.GetTimeout()) * time.Second); now.After(expiry) {
				r.log.Warn().Str("app", rpc.AppIDString(a.yid)).Int64("lifetime_s", t.GetTimeout()).Msg("application killed: its lifetime is over")
				r.lifeStepLogged(lifecycle.Killed{App: lifecycle.AppID(a.id), Diagnostics: lifetimeExceeded})
				break
			}
		}
	}
}

// appTimeouts is YARN's appTimeouts of an application report: each
// timeout the app has with its expiry and the seconds left (YARN shows
// LIFETIME as UNLIMITED, -1, when none was set). Callers hold mu.
func (r *RM) appTimeouts(a *appRec, now time.Time) []*pb.AppTimeoutsMapProto {
	lifetime := pb.ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME
	t := &pb.ApplicationTimeoutProto{ApplicationTimeoutType: lifetime.Enum(), ExpireTime: proto.String("UNLIMITED"), RemainingTime: proto.Int64(-1)}
	for _, x := range a.ctx.GetApplicationTimeouts() {
		if x.GetApplicationTimeoutType() == lifetime && x.GetTimeout() > 0 {
			expiry := a.submitted.Add(time.Duration(x.GetTimeout()) * time.Second)
			t.ExpireTime = proto.String(expiry.Format(iso8601))
			t.RemainingTime = proto.Int64(max(0, int64(expiry.Sub(now)/time.Second)))
		}
	}
	return []*pb.AppTimeoutsMapProto{{ApplicationTimeoutType: lifetime.Enum(), ApplicationTimeout: t}}
}

// GetQueueUserAcls answers the caller's ACLs on root and each of
// loom.queues: anyone may submit (Loom has no queue submit ACLs), and
// administer a queue when they may administer the cluster (everyone
// unless yarn.acl.enable, then yarn.admin.acl).
func (s clientService) GetQueueUserAcls(ctx context.Context, _ *pb.GetQueueUserAclsInfoRequestProto) (*pb.GetQueueUserAclsInfoResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	acls := []pb.QueueACLProto{pb.QueueACLProto_QACL_SUBMIT_APPLICATIONS}
	if r.isAdmin(caller(ctx)) {
		acls = append(acls, pb.QueueACLProto_QACL_ADMINISTER_QUEUE)
	}
	queues := []string{"root"}
	for q := range r.cfg.Queues {
		queues = append(queues, q)
	}
	slices.Sort(queues[1:])
	resp := &pb.GetQueueUserAclsInfoResponseProto{}
	for _, q := range queues {
		resp.QueueUserAcls = append(resp.QueueUserAcls, &pb.QueueUserACLInfoProto{QueueName: proto.String(q), UserAcls: slices.Clone(acls)})
	}
	return resp, nil
}

// Node labels (labels.go): with yarn.node-labels.enabled false the
// answers are empty, as YARN's. Node attributes: Loom has none, and
// answers as YARN with none configured does, with empty lists.

func (s clientService) GetNodeToLabels(context.Context, *pb.GetNodesToLabelsRequestProto) (*pb.GetNodesToLabelsResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	_, byNode := r.nodeLabelsView()
	resp := &pb.GetNodesToLabelsResponseProto{}
	for _, n := range r.nodeByID {
		if l, ok := byNode[n]; ok {
			resp.NodeToLabels = append(resp.NodeToLabels, &pb.NodeIdToLabelsProto{NodeId: n.yid, NodeLabels: []string{l}})
		}
	}
	return resp, nil
}

func (s clientService) GetLabelsToNodes(_ context.Context, req *pb.GetLabelsToNodesRequestProto) (*pb.GetLabelsToNodesResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	parts, byNode := r.nodeLabelsView()
	resp := &pb.GetLabelsToNodesResponseProto{}
	for _, l := range labelProtos(parts) {
		if want := req.GetNodeLabels(); len(want) > 0 && !slices.Contains(want, l.GetName()) {
			continue
		}
		e := &pb.LabelsToNodeIdsProto{NodeLabels: l.Name}
		for _, n := range r.nodeByID {
			if byNode[n] == l.GetName() {
				e.NodeId = append(e.NodeId, n.yid)
			}
		}
		if len(e.NodeId) > 0 {
			resp.LabelsToNodes = append(resp.LabelsToNodes, e)
		}
	}
	return resp, nil
}

func (s clientService) GetClusterNodeLabels(context.Context, *pb.GetClusterNodeLabelsRequestProto) (*pb.GetClusterNodeLabelsResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	parts, _ := r.nodeLabelsView()
	resp := &pb.GetClusterNodeLabelsResponseProto{NodeLabels: labelProtos(parts)}
	for _, l := range resp.NodeLabels {
		resp.DeprecatedNodeLabels = append(resp.DeprecatedNodeLabels, l.GetName())
	}
	return resp, nil
}

func (s clientService) GetClusterNodeAttributes(context.Context, *pb.GetClusterNodeAttributesRequestProto) (*pb.GetClusterNodeAttributesResponseProto, error) {
	return &pb.GetClusterNodeAttributesResponseProto{}, nil
}

func (s clientService) GetAttributesToNodes(context.Context, *pb.GetAttributesToNodesRequestProto) (*pb.GetAttributesToNodesResponseProto, error) {
	return &pb.GetAttributesToNodesResponseProto{}, nil
}

func (s clientService) GetNodesToAttributes(context.Context, *pb.GetNodesToAttributesRequestProto) (*pb.GetNodesToAttributesResponseProto, error) {
	return &pb.GetNodesToAttributesResponseProto{}, nil
}

// SignalToContainer checks the call as YARN does (the app, MODIFY_APP,
// the container, the command) and hands the signal to the container's
// node with its next heartbeat, as YARN does; the NodeManager delivers it
// to the container's processes.
func (s clientService) SignalToContainer(ctx context.Context, req *pb.SignalContainerRequestProto) (*pb.SignalContainerResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	cid := req.GetContainerId()
	a, err := r.appByID(rpc.AppIDOf(cid))
	if err != nil {
		if rpc.IsClass(err, rpc.ClassApplicationNotFound) {
			return nil, rpc.Errorf(rpc.ClassYarnException, "Trying to signal an absent container %s", rpc.ContainerIDString(cid))
		}
		return nil, err
	}
	if err := r.checkModify(caller(ctx), a); err != nil {
		return nil, err
	}
	cr := r.contOf(cid, nil)
	if cr == nil || cr.state() == pb.ContainerStateProto_C_COMPLETE {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Trying to signal an absent container %s", rpc.ContainerIDString(cid))
	}
	if _, ok := pb.SignalContainerCommandProto_name[int32(req.GetCommand())]; !ok || req.Command == nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Invalid signal command %v for container %s", req.GetCommand(), rpc.ContainerIDString(cid))
	}
	cr.node.mail.signal(&pb.SignalContainerRequestProto{ContainerId: cr.yid, Command: req.GetCommand().Enum()})
	r.log.Info().Str("container", rpc.ContainerIDString(cr.yid)).Str("signal", req.GetCommand().String()).Str("by", caller(ctx)).
		Msg("signal sent to the container's node")
	return &pb.SignalContainerResponseProto{}, nil
}
