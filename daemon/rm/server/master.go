package server

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/lifecycle"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// masterService serves ApplicationMasterProtocol.
type masterService struct{ r *RM }

var _ rpc.ApplicationMasterServer = masterService{}

// attemptOf finds the attempt an AM call belongs to: the one its
// connection's AMRM token names, as in YARN.
func (r *RM) attemptOf(ctx context.Context) (*appRec, *attemptRec, error) {
	id, err := tokenAttempt(ctx)
	if err != nil {
		return nil, nil, err
	}
	a, err := r.appByID(id.GetApplicationId())
	if err != nil {
		return nil, nil, err
	}
	at := a.current()
	if at == nil || at.n != id.GetAttemptId() {
		return nil, nil, rpc.Errorf(rpc.ClassApplicationAttemptNotFound,
			"%s is not the current attempt of %s", rpc.AttemptIDString(id), rpc.AppIDString(a.yid))
	}
	if a.done() {
		return nil, nil, rpc.Errorf(rpc.ClassApplicationAttemptNotFound,
			"%s has finished (%s): its AM may not call the scheduler", rpc.AppIDString(a.yid), a.state())
	}
	return a, at, nil
}

func (s masterService) RegisterApplicationMaster(ctx context.Context, req *pb.RegisterApplicationMasterRequestProto) (*pb.RegisterApplicationMasterResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	a, at, err := r.attemptOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.lifeStep(lifecycle.Registered{App: lifecycle.AppID(a.id)}); err != nil {
		return nil, rpc.Errorf(rpc.ClassApplicationAttemptNotFound, "%s: %v", rpc.AttemptIDString(at.yid), err)
	}
	at.lastSeen = time.Now()
	at.host, at.rpcPort, at.trackingURL = req.GetHost(), req.GetRpcPort(), req.GetTrackingUrl()
	r.log.Info().Str("attempt", rpc.AttemptIDString(at.yid)).Str("host", at.host).Msg("AM registered")
	resp := &pb.RegisterApplicationMasterResponseProto{MaximumCapability: rpc.ResourceFromVector(r.cfg.MaxAlloc),
		Queue:                  proto.String(a.queue),
		SchedulerResourceTypes: []pb.SchedulerResourceTypes{pb.SchedulerResourceTypes_MEMORY, pb.SchedulerResourceTypes_CPU},
		ResourceTypes:          resourceTypes(), Application_ACLs: a.ctx.GetAmContainerSpec().GetApplication_ACLs()}
	// The containers this AM inherits: those an earlier attempt kept
	// running (keep_containers_across_application_attempts), and after an
	// RM restart the ones the nodes gave back, so that the AM can release
	// those it no longer uses. With them, an NMToken for each of their
	// nodes; every other node's token comes with its next container.
	var prev []*contRec
	for _, cr := range a.live {
		if !cr.lc.IsAM && (cr.attempt != at || at.lc.Recovered) {
			prev = append(prev, cr)
		}
	}
	slices.SortFunc(prev, func(x, y *contRec) int { return cmp.Compare(x.c.ID, y.c.ID) })
	clear(at.nmTokenNodes)
	for _, cr := range prev {
		resp.ContainersFromPreviousAttempts = append(resp.ContainersFromPreviousAttempts, r.containerProto(cr))
	}
	resp.NmTokensFromPreviousAttempts = r.nmTokensFor(at, prev)
	return resp, nil
}

// Allocate serves an AM's allocate call. One attempt's calls run one at
// a time (YARN's AllocateResponseLock), and the RM's lock is let go
// before the reply's container tokens are signed: an HMAC and a marshal
// each, the largest part of a busy AM's call, that no other AM or the
// scheduler need wait for.
func (s masterService) Allocate(ctx context.Context, req *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
	r := s.r
	r.mu.Lock()
	a, at, err := r.lockAllocate(ctx)
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	defer at.allocMu.Unlock()
	resp, unsigned, err := s.allocate(ctx, a, at, req)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	// Only this attempt's next call could read this reply (as the one to
	// send again), and it waits for allocMu.
	for i, t := range unsigned {
		resp.AllocatedContainers[i].ContainerToken = t.sign()
	}
	return resp, nil
}

// lockAllocate takes the calling attempt's allocate lock. Callers hold
// mu, which it lets go while it waits for another call of the attempt.
func (r *RM) lockAllocate(ctx context.Context) (*appRec, *attemptRec, error) {
	a, at, err := r.attemptOf(ctx)
	if err != nil || at.allocMu.TryLock() {
		return a, at, err
	}
	r.mu.Unlock()
	at.allocMu.Lock()
	r.mu.Lock()
	// The attempt may have ended meanwhile.
	if a, now, err := r.attemptOf(ctx); err != nil || now != at {
		at.allocMu.Unlock()
		if err == nil {
			err = rpc.Errorf(rpc.ClassApplicationAttemptNotFound, "%s is no longer the current attempt of %s", rpc.AttemptIDString(at.yid), rpc.AppIDString(a.yid))
		}
		return nil, nil, err
	}
	return a, at, nil
}

// allocate is Allocate under mu and the attempt's allocate lock; the
// reply's containers come back without tokens, and what to sign for each.
func (s masterService) allocate(ctx context.Context, a *appRec, at *attemptRec, req *pb.AllocateRequestProto) (*pb.AllocateResponseProto, []tokenToSign, error) {
	r := s.r
	if !at.lc.Registered {
		return nil, nil, rpc.Errorf(rpc.ClassApplicationMasterNotRegistered,
			"AM is not registered for known application attempt: %s or RM had restarted after AM registered. AM should re-register.", rpc.AttemptIDString(at.yid))
	}
	at.lastSeen = time.Now()
	// YARN's response ids: the same id again means the last reply was
	// lost, so it is sent again; anything else out of step is refused.
	if last := a.lastResp; last != nil {
		switch req.GetResponseId() {
		case last.GetResponseId():
		case last.GetResponseId() - 1:
			return last, nil, nil
		default:
			return nil, nil, rpc.Errorf(rpc.ClassInvalidApplicationMasterRequest,
				"Invalid responseId in AllocateRequest from application attempt: %s, expect responseId to be %d, but get %d",
				rpc.AttemptIDString(at.yid), last.GetResponseId(), req.GetResponseId())
		}
	}
	// Every ask is checked before anything changes: a bad one fails the
	// call.
	next, err := r.readAsks(a, at, req)
	if err != nil {
		return nil, nil, err
	}
	freed := r.release(a, at, req.GetRelease())
	if req.Progress != nil {
		if p := req.GetProgress(); p >= 0 && p <= 1 {
			a.progress = p
		}
	}
	r.updateAsks(a, next)
	// Room an AM gives back is offered again now, not at its node's next
	// heartbeat: a DAG AM releases a container per task, and a heartbeat's
	// wait per task would leave short tasks' nodes idle most of the time.
	// The containers this grants to this AM go out in this very reply.
	if len(freed) > 0 {
		r.schedule(freed, "scheduling pass on released room failed")
	}
	resp, unsigned := r.allocateResponse(ctx, a, at, req.GetResponseId()+1)
	resp.UpdateErrors = r.refuseUpdates(a, req.GetUpdateRequests())
	a.newConts, a.newKeys, a.completed = nil, nil, nil
	a.lastResp = resp
	return resp, unsigned, nil
}

// refuseUpdates answers container update requests (resource increase or
// decrease, promotion or demotion) with an error each, as YARN answers
// the ones it cannot take, rather than dropping them: a container that is
// not the app's live one is YARN's INVALID_CONTAINER_ID; any other
// Loom does not do. Callers hold mu.
func (r *RM) refuseUpdates(a *appRec, reqs []*pb.UpdateContainerRequestProto) []*pb.UpdateContainerErrorProto {
	var out []*pb.UpdateContainerErrorProto
	for _, u := range reqs {
		reason := "UPDATE_NOT_SUPPORTED: Loom does not change a running container's resource or execution type (" +
			u.GetUpdateType().String() + "); release it and ask for a new one"
		if cr := r.contOf(u.GetContainerId(), nil); cr == nil || cr.app != a || a.live[cr.c.ID] == nil {
			reason = "INVALID_CONTAINER_ID"
		}
		out = append(out, &pb.UpdateContainerErrorProto{Reason: proto.String(reason), UpdateRequest: u, CurrentContainerVersion: proto.Int32(0)})
	}
	return out
}

// askState is what an allocate call says the app wants: its asks by
// key, and a Loom AM's remaining work, critical path and DAG demand.
type askState struct {
	asks map[askKey]int
	// local are the host and rack ResourceRequests beside an ask's "*"
	// one (by priority and capability, as YARN groups them), with their
	// relax_locality; the "*" request's says whether the containers may
	// go off their racks.
	local    map[localKey]localAsk
	work     float64
	critical time.Duration
	demand   *fairness.Vector
}

// readAsks checks an allocate call's asks and demand and returns the
// app's asks as they would be after it, changing nothing. Callers hold
// mu.
func (r *RM) readAsks(a *appRec, at *attemptRec, req *pb.AllocateRequestProto) (askState, error) {
	next := askState{asks: maps.Clone(a.asks), local: maps.Clone(a.local), work: a.work, critical: a.critical, demand: a.demand}
	if next.asks == nil {
		next.asks = map[askKey]int{}
	}
	if next.local == nil {
		next.local = map[localKey]localAsk{}
	}
	if req.LoomDemand != nil {
		d, err := rpc.VectorFromResource(req.GetLoomDemand())
		if err == nil && d.HasNegative() {
			err = fmt.Errorf("%v is negative", d)
		}
		if err != nil {
			return next, rpc.Errorf(rpc.ClassInvalidResourceRequest, "loom_demand of %s: %v", rpc.AttemptIDString(at.yid), err)
		}
		next.demand = &d
	}
	for _, rr := range req.GetAsk() {
		d, err := rpc.AskDemand(rr)
		if err != nil {
			return next, rpc.Errorf(rpc.ClassInvalidResourceRequest, "%v", err)
		}
		if d, err = r.checkResource("an ask of "+rpc.AttemptIDString(at.yid), d); err != nil {
			return next, err
		}
		if err := r.checkFitsANode(d); err != nil {
			return next, err
		}
		n := rr.GetNumContainers()
		if n < 0 {
			return next, rpc.Errorf(rpc.ClassInvalidResourceRequest, "Invalid resource request, num_containers %d is negative", n)
		}
		if name := rr.GetResourceName(); name != "*" && name != "" {
			// A host or a rack (racks are paths, as the topology names
			// them): where the "*" ask's containers would rather run.
			lk := localKey{priority: int(rr.GetPriority().GetPriority()), demand: d, name: name}
			if n == 0 {
				delete(next.local, lk)
			} else {
				next.local[lk] = localAsk{count: int(n), relax: rr.GetRelaxLocality()}
			}
			continue
		}
		if rr.RelaxLocality != nil {
			next.local[localKey{priority: int(rr.GetPriority().GetPriority()), demand: d, name: "*"}] = localAsk{relax: rr.GetRelaxLocality()}
		}
		kind := altruism.Default
		if rpc.IsAltruistic(rr) {
			kind = altruism.Altruistic
		}
		label, err := r.askLabel(a, rr)
		if err != nil {
			return next, err
		}
		key := askKey{priority: int(rr.GetPriority().GetPriority()), demand: d, kind: kind, label: label}
		// The AM asked without knowing of the containers this reply
		// brings it: they already serve part of its ask.
		for _, k := range a.newKeys {
			if k == key && n > 0 {
				n--
			}
		}
		next.asks[key] = int(n)
		if rr.LoomRemainingWork != nil {
			if w := rr.GetLoomRemainingWork(); w >= 0 && !math.IsInf(w, 0) && !math.IsNaN(w) {
				next.work = w
			}
		}
		if rr.LoomCriticalPathMs != nil && rr.GetLoomCriticalPathMs() >= 0 {
			next.critical = time.Duration(rr.GetLoomCriticalPathMs()) * time.Millisecond
		}
	}
	return next, nil
}

// release ends the containers an AM gives back and returns their nodes.
// YARN ignores releases of unknown or finished containers. Callers hold
// mu.
func (r *RM) release(a *appRec, at *attemptRec, ids []*pb.ContainerIdProto) []rm.NodeID {
	var freed []rm.NodeID
	for _, id := range ids {
		cr := r.contOf(id, at)
		if cr == nil && time.Since(r.start) <= r.cfg.NMExpiry {
			// Not reported by its node yet: this RM may have just taken
			// over, and the node not yet registered with the container.
			// It is stopped when the node does, rather than taken back
			// and held for an AM that has let it go.
			attempt := id.GetAppAttemptId().GetAttemptId()
			if id.GetAppAttemptId() == nil {
				attempt = at.n
			}
			if a.pendingRelease == nil {
				a.pendingRelease = map[wireKey]bool{}
			}
			a.pendingRelease[wireKey{attempt, id.GetId()}] = true
			continue
		}
		if cr == nil || cr.app != a || cr.lc.State == lifecycle.ContainerComplete {
			continue
		}
		r.endContainer(cr.c.ID, ExitAborted, "Container released by application", true)
		if !slices.Contains(freed, cr.node.id) {
			freed = append(freed, cr.node.id)
		}
	}
	return freed
}

// updateAsks sends the app's asks to the scheduling core when they
// changed. Callers hold mu.
func (r *RM) updateAsks(a *appRec, next askState) {
	changed := len(next.asks) != len(a.asks) || next.work != a.work || next.critical != a.critical || !sameDemand(next.demand, a.demand)
	for k, n := range next.asks {
		if old := a.asks[k]; old != n {
			changed = true
			if n > old {
				r.metrics.asks.WithLabelValues(k.kind.String()).Add(float64(n - old))
			}
		}
	}
	if !maps.Equal(next.local, a.local) {
		changed = true
	}
	if changed {
		a.asks, a.local, a.work, a.critical, a.demand = next.asks, next.local, next.work, next.critical, next.demand
		r.pushAsks(a)
	}
}

// allocateResponse is the reply to an allocate call: the containers
// granted since the last, those that ended, NMTokens for new nodes, and
// Loom's share, leftover and policy. Callers hold mu.
func (r *RM) allocateResponse(ctx context.Context, a *appRec, at *attemptRec, responseID int32) (*pb.AllocateResponseProto, []tokenToSign) {
	share, _ := r.core.Share(a.id)
	usage, _ := r.core.Usage(a.id)
	capacity, used := r.core.Capacity(), r.core.Used()
	// Altruism is Carbyne's: under the baseline policies AMs are told
	// never to yield, so they ask for everything DEFAULT, as the
	// simulator's baselines do.
	p, _ := r.core.PAltruismOf(a.id)
	pAltruism := r.cfg.EffectivePAltruism(p)
	granted := make([]*pb.ContainerProto, len(a.newConts))
	unsigned := make([]tokenToSign, len(a.newConts))
	for i, cr := range a.newConts {
		granted[i], unsigned[i] = r.unsignedContainerProto(cr), r.containerTokenToSign(cr)
	}
	resp := &pb.AllocateResponseProto{ResponseId: proto.Int32(responseID),
		AllocatedContainers: granted, CompletedContainerStatuses: a.completed, NmTokens: r.nmTokensFor(at, a.newConts),
		Limit:           rpc.ResourceFromVector(share.Sub(usage).ClampZero()),
		NumClusterNodes: proto.Int32(int32(r.liveNodes)),
		LoomShare:       rpc.ResourceFromVector(share), LoomPAltruism: proto.Float64(pAltruism),
		LoomLeftover: rpc.ResourceFromVector(capacity.Sub(used).ClampZero()), LoomClusterCapacity: rpc.ResourceFromVector(capacity),
		LoomPolicy: proto.String(r.cfg.Policy), LoomShareGrowth: shareGrowth(r.core.ShareGrowth(a.id))}
	resp.AmRmToken = r.rolledAMRMToken(ctx, at)
	resp.Preempt = r.preemptionMessage(a)
	return resp, unsigned
}

// shareGrowth is the core's projection of a share as an AM reads it.
func shareGrowth(steps []altruism.ShareStep) []*pb.LoomShareStepProto {
	if len(steps) == 0 {
		return nil
	}
	out := make([]*pb.LoomShareStepProto, len(steps))
	for i, s := range steps {
		out[i] = &pb.LoomShareStepProto{AfterMs: proto.Int64(s.After.Milliseconds()), Factor: proto.Float64(s.Factor)}
	}
	return out
}

// sameDemand says whether two demands an AM sent are the same.
func sameDemand(x, y *fairness.Vector) bool {
	return x == nil && y == nil || x != nil && y != nil && *x == *y
}

// checkFitsANode refuses an ask no live node could ever hold, such as one
// for a resource type no node offers, instead of leaving it pending
// forever. With no live node there is nothing to check against.
func (r *RM) checkFitsANode(d fairness.Vector) error {
	var largest fairness.Vector
	live := false
	for _, n := range r.nodeByID {
		if n == nil || n.state != pb.NodeStateProto_NS_RUNNING {
			continue
		}
		if d.FitsIn(n.capacity) {
			return nil
		}
		live = true
		largest = largest.Max(n.capacity)
	}
	if !live {
		return nil
	}
	return rpc.Errorf(rpc.ClassInvalidResourceRequest,
		"Invalid resource request: no node can hold %v; the largest on each resource type offer %v", d, largest)
}

func (s masterService) FinishApplicationMaster(ctx context.Context, req *pb.FinishApplicationMasterRequestProto) (*pb.FinishApplicationMasterResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	a, at, err := r.attemptOf(ctx)
	if err != nil {
		return nil, err
	}
	if !at.lc.Registered {
		return nil, rpc.Errorf(rpc.ClassApplicationMasterNotRegistered,
			"Application Master is trying to unregister before registering for: %s", rpc.AttemptIDString(at.yid))
	}
	if u := req.GetTrackingUrl(); u != "" {
		at.trackingURL = u
	}
	final := lifecycle.FinalUndefined
	switch req.GetFinalApplicationStatus() {
	case pb.FinalApplicationStatusProto_APP_SUCCEEDED:
		final = lifecycle.FinalSucceeded
	case pb.FinalApplicationStatusProto_APP_ENDED:
		final = lifecycle.FinalEnded
	case pb.FinalApplicationStatusProto_APP_FAILED:
		final = lifecycle.FinalFailed
	case pb.FinalApplicationStatusProto_APP_KILLED:
		final = lifecycle.FinalKilled
	}
	if err := r.lifeStep(lifecycle.Unregistered{App: lifecycle.AppID(a.id), Final: final, Diagnostics: req.GetDiagnostics()}); err != nil {
		return nil, rpc.Errorf(rpc.ClassApplicationMasterNotRegistered, "%s: %v", rpc.AttemptIDString(at.yid), err)
	}
	return &pb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
}
