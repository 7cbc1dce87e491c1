package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/lifecycle"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// clientService serves ApplicationClientProtocol.
type clientService struct{ r *RM }

var _ rpc.ApplicationClientServer = clientService{}

func caller(ctx context.Context) string {
	if ci, ok := rpc.CallFromContext(ctx); ok && ci.User != "" {
		return ci.User
	}
	return "unknown"
}

func (s clientService) GetNewApplication(ctx context.Context, _ *pb.GetNewApplicationRequestProto) (*pb.GetNewApplicationResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextApp++
	r.reserved[r.nextApp] = true
	return &pb.GetNewApplicationResponseProto{
		ApplicationId:     &pb.ApplicationIdProto{Id: proto.Int32(r.nextApp), ClusterTimestamp: proto.Int64(r.clusterTS)},
		MaximumCapability: rpc.ResourceFromVector(r.cfg.MaxAlloc)}, nil
}

// appByID finds an app, or gives YARN's ApplicationNotFoundException.
func (r *RM) appByID(id *pb.ApplicationIdProto) (*appRec, error) {
	if id == nil {
		return nil, rpc.Errorf(rpc.ClassApplicationIDNotProvided, "ApplicationId is not provided")
	}
	if a, ok := r.apps[rm.AppID(id.GetId())]; ok && id.GetClusterTimestamp() == a.yid.GetClusterTimestamp() {
		return a, nil
	}
	return nil, rpc.Errorf(rpc.ClassApplicationNotFound, "Application with id '%s' doesn't exist in RM. Please check that the job submission was successful.", rpc.AppIDString(id))
}

// checkResource normalises a request to the minimum allocation and
// refuses one that is negative or beyond the maximum, as YARN's
// scheduler does.
func (r *RM) checkResource(what string, v fairness.Vector) (fairness.Vector, error) {
	for k := fairness.Kind(0); k < fairness.NumKinds; k++ {
		if v[k] < 0 || math.IsNaN(v[k]) || math.IsInf(v[k], 0) {
			return v, rpc.Errorf(rpc.ClassInvalidResourceRequest,
				"Invalid resource request, requested resource type=[%s] < 0 or greater than maximum allowed allocation. Requested resource=%v, maximum allowed allocation=%v (%s)",
				k, v, r.cfg.MaxAlloc, what)
		}
	}
	if m := r.cfg.MinAlloc[fairness.Memory]; m > 0 {
		v[fairness.Memory] = math.Max(m, math.Ceil(v[fairness.Memory]/m)*m)
	}
	v[fairness.VCores] = math.Max(v[fairness.VCores], r.cfg.MinAlloc[fairness.VCores])
	for _, k := range []fairness.Kind{fairness.Memory, fairness.VCores} {
		if v[k] > r.cfg.MaxAlloc[k] {
			return v, rpc.Errorf(rpc.ClassInvalidResourceRequest,
				"Invalid resource request, requested resource type=[%s] < 0 or greater than maximum allowed allocation. Requested resource=%v, maximum allowed allocation=%v (%s); raise yarn.scheduler.maximum-allocation-%s to allow it",
				k, v, r.cfg.MaxAlloc, what, map[fairness.Kind]string{fairness.Memory: "mb", fairness.VCores: "vcores"}[k])
		}
	}
	return v, nil
}

func (s clientService) SubmitApplication(ctx context.Context, req *pb.SubmitApplicationRequestProto) (*pb.SubmitApplicationResponseProto, error) {
	r := s.r
	sc := req.GetApplicationSubmissionContext()
	if sc == nil || sc.ApplicationId == nil {
		return nil, rpc.Errorf(rpc.ClassApplicationIDNotProvided, "ApplicationId is not provided in the submission context")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id := sc.GetApplicationId()
	if a, exists := r.apps[rm.AppID(id.GetId())]; exists && id.GetClusterTimestamp() == a.yid.GetClusterTimestamp() {
		return &pb.SubmitApplicationResponseProto{}, nil // YARN: a repeated submission succeeds
	}
	if id.GetClusterTimestamp() != r.clusterTS || !r.reserved[id.GetId()] {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Application id %s was not issued by this ResourceManager (cluster timestamp %d); call getNewApplication first",
			rpc.AppIDString(id), r.clusterTS)
	}
	queue := sc.GetQueue()
	if queue == "" {
		queue = "default"
	}
	if r.tree != nil {
		placed, err := r.placeApp(queue, caller(ctx), rpc.AppIDString(id))
		if err != nil {
			return nil, err
		}
		queue = placed
	}
	corePath, weight, ok := r.coreQueue(queue)
	if !ok {
		known := make([]string, 0, len(r.cfg.Queues))
		for q := range r.cfg.Queues {
			known = append(known, q)
		}
		slices.Sort(known)
		return nil, rpc.Errorf(rpc.ClassYarnException, "Application %s submitted by user %s to unknown queue: %s (queues: %s; add it to loom.queues)",
			rpc.AppIDString(id), caller(ctx), queue, strings.Join(known, ", "))
	}
	if sc.GetAmContainerSpec() == nil && !sc.GetUnmanagedAm() {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Application %s has no AM container spec (am_container_spec)", rpc.AppIDString(id))
	}
	if tok := sc.GetAmContainerSpec().GetTokens(); len(tok) > 0 {
		if _, err := rpc.ParseCredentials(tok); err != nil {
			return nil, rpc.Errorf(rpc.ClassYarnException, "Application %s: the AM container's tokens are not Hadoop credentials: %v", rpc.AppIDString(id), err)
		}
	}
	// An unmanaged AM runs outside the cluster: it has no container, so
	// no size to check (YARN's RMAppManager asks none of it either).
	var amRes fairness.Vector
	if !sc.GetUnmanagedAm() {
		amReq, err := amResourceRequest(sc)
		if err != nil {
			return nil, rpc.Errorf(rpc.ClassInvalidResourceRequest, "%v (the AM container of %s)", err, rpc.AppIDString(id))
		}
		if amRes, err = rpc.VectorFromResource(amReq); err != nil {
			return nil, rpc.Errorf(rpc.ClassInvalidResourceRequest, "AM resource of %s: %v", rpc.AppIDString(id), err)
		}
		if amRes, err = r.checkResource("the AM container of "+rpc.AppIDString(id), amRes); err != nil {
			return nil, err
		}
	}
	if sc.Priority != nil {
		// As YARN: a priority above the cluster's highest is that one.
		sc.Priority = &pb.PriorityProto{Priority: proto.Int32(min(sc.GetPriority().GetPriority(), r.cfg.MaxAppPriority))}
	}
	resv, err := r.reservationOf(sc, queue)
	if err != nil {
		return nil, err
	}
	delete(r.reserved, id.GetId())
	label, amLabel, err := r.submittedLabels(sc, corePath)
	if err != nil {
		return nil, err
	}
	a := &appRec{id: rm.AppID(id.GetId()), yid: id, ctx: sc, user: caller(ctx), queue: queue,
		submitted: time.Now(), amResource: amRes, nodesUsed: map[*nodeRec]bool{}, label: label, amLabel: amLabel}
	if err := r.step(rm.AppAdded{App: a.id, Queue: corePath, Weight: weight, User: a.user, Label: label}); err != nil {
		if strings.Contains(err.Error(), "node label") {
			return nil, rpc.Errorf(classInvalidLabel, "Invalid resource request, %v", err)
		}
		return nil, rpc.Errorf(rpc.ClassYarnException, "%v", err)
	}
	if resv != "" {
		if err := r.step(rm.AppReserved{App: a.id, Reservation: resv}); err != nil {
			r.log.Error().Err(err).Str("app", rpc.AppIDString(id)).Msg("core refused the app's reservation")
		}
	}
	r.apps[a.id] = a
	r.appOrder = append(r.appOrder, a)
	la := r.lifecycleApp(a)
	if err := r.lifeStep(lifecycle.Submitted{App: la.ID, Name: la.Name, Unmanaged: la.Unmanaged, KeepContainers: la.KeepContainers,
		MaxAttempts: la.MaxAttempts, MaxWhy: la.MaxWhy, FailuresValidity: la.FailuresValidity}); err != nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "%v", err)
	}
	r.log.Info().Str("app", rpc.AppIDString(id)).Str("user", a.user).Str("queue", queue).Str("name", sc.GetApplicationName()).Msg("submitted")
	return &pb.SubmitApplicationResponseProto{}, nil
}

func (s clientService) GetApplicationReport(ctx context.Context, req *pb.GetApplicationReportRequestProto) (*pb.GetApplicationReportResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := r.appByID(req.GetApplicationId())
	if err != nil {
		return nil, err
	}
	rep := r.report(a)
	// An unmanaged AM gets its AMRM token from its owner's report, while
	// its attempt waits for it (LAUNCHED), as in YARN.
	if at := a.current(); a.unmanaged() && at != nil && at.state() == pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_LAUNCHED &&
		!at.lc.Registered && caller(ctx) == a.user {
		rep.AmRmToken = r.amrmToken(at)
	}
	return &pb.GetApplicationReportResponseProto{ApplicationReport: rep}, nil
}

func millis(t time.Time) *int64 {
	if t.IsZero() {
		return proto.Int64(0)
	}
	return proto.Int64(t.UnixMilli())
}

func (r *RM) report(a *appRec) *pb.ApplicationReportProto {
	at := a.current()
	rep := &pb.ApplicationReportProto{ApplicationId: a.yid, User: proto.String(a.user), Queue: proto.String(a.queue),
		Name: proto.String(a.ctx.GetApplicationName()), Host: proto.String("N/A"), RpcPort: proto.Int32(-1),
		YarnApplicationState: a.state().Enum(), Diagnostics: proto.String(a.lc.Diagnostics),
		StartTime: millis(a.submitted), FinishTime: millis(a.lc.Finished), FinalApplicationStatus: a.final().Enum(),
		Progress: proto.Float32(a.progress), ApplicationType: proto.String(appType(a)),
		ApplicationTags: a.ctx.GetApplicationTags(), Priority: a.ctx.GetPriority(), UnmanagedApplication: proto.Bool(a.unmanaged())}
	if why, _ := r.core.Waiting(a.id); why != "" && !a.done() {
		// Held by its queues' or user's maxRunningApps, as the Fair
		// Scheduler says of an app that is not runnable.
		rep.Diagnostics = proto.String("waiting to start: " + why)
	}
	// The tracking URL is the AM's while it runs and gave one; otherwise,
	// and once the app is over, Loom's page of the app, which shows its
	// DAG, tasks and history.
	rep.TrackingUrl = proto.String(r.appPage(a))
	if at != nil {
		rep.CurrentApplicationAttemptId = at.yid
		rep.LaunchTime = millis(at.lc.Launched)
		if at.lc.Registered {
			rep.Host, rep.RpcPort = proto.String(at.host), proto.Int32(at.rpcPort)
			rep.OriginalTrackingUrl = proto.String(at.trackingURL)
			if at.trackingURL != "" && !a.done() {
				rep.TrackingUrl = proto.String(at.trackingURL)
			}
		}
	}
	if a.done() {
		rep.Progress = proto.Float32(1)
	}
	rep.LogAggregationStatus = r.logAggregationStatus(a).Enum()
	usage, _ := r.core.Usage(a.id)
	memSec, vcoreSec := a.memSec, a.vcoreSec
	now := time.Now()
	for _, cr := range a.live {
		held := now.Sub(cr.lc.Created).Seconds()
		memSec += cr.c.Resource[fairness.Memory] * held
		vcoreSec += cr.c.Resource[fairness.VCores] * held
	}
	ru := &pb.ApplicationResourceUsageReportProto{NumUsedContainers: proto.Int32(int32(len(a.live))),
		UsedResources: rpc.ResourceFromVector(usage), MemorySeconds: proto.Int64(int64(memSec)), VcoreSeconds: proto.Int64(int64(vcoreSec)),
		ClusterUsagePercentage: proto.Float32(0), QueueUsagePercentage: proto.Float32(0)}
	// Of the cluster and of the app's queue's share of it, by the
	// dominant resource, as YARN's DominantResourceCalculator reports.
	if capacity := r.core.Capacity(); !capacity.IsZero() {
		cluster := usage.DominantShare(capacity)
		ru.ClusterUsagePercentage = proto.Float32(float32(100 * cluster))
		var total float64
		for _, w := range r.cfg.Queues {
			total += w
		}
		if q := r.cfg.Queues[a.queue]; q > 0 && total > 0 {
			ru.QueueUsagePercentage = proto.Float32(float32(100 * cluster / (q / total)))
		}
	}
	rep.AppResource_Usage = ru
	rep.AppTimeouts = r.appTimeouts(a, now)
	return rep
}

func appType(a *appRec) string {
	if t := a.ctx.GetApplicationType(); t != "" {
		return t
	}
	return defaultAppType
}

func (s clientService) GetApplications(ctx context.Context, req *pb.GetApplicationsRequestProto) (*pb.GetApplicationsResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	in := func(list []string, v string, fold bool) bool {
		if len(list) == 0 {
			return true
		}
		for _, x := range list {
			if x == v || fold && strings.EqualFold(x, v) {
				return true
			}
		}
		return false
	}
	resp := &pb.GetApplicationsResponseProto{}
	who := caller(ctx)
	// Tags match as YARN stores them, lower-cased.
	var tags []string
	for _, t := range req.GetApplicationTags() {
		tags = append(tags, strings.ToLower(strings.TrimSpace(t)))
	}
	for _, a := range r.appOrder {
		if !in(req.GetApplicationTypes(), appType(a), true) || !in(req.GetUsers(), a.user, false) || !in(req.GetQueues(), a.queue, false) {
			continue
		}
		if len(tags) > 0 && !slices.ContainsFunc(a.ctx.GetApplicationTags(), func(t string) bool { return slices.Contains(tags, strings.ToLower(t)) }) {
			continue
		}
		if req.Name != nil && req.GetName() != a.ctx.GetApplicationName() {
			continue
		}
		switch req.GetScope() {
		case pb.ApplicationsRequestScopeProto_OWN:
			if a.user != who {
				continue
			}
		case pb.ApplicationsRequestScopeProto_VIEWABLE:
			if !r.canView(who, a) {
				continue
			}
		}
		if st := req.GetApplicationStates(); len(st) > 0 && !slices.Contains(st, a.state()) {
			continue
		}
		sub := a.submitted.UnixMilli()
		if req.StartBegin != nil && sub < req.GetStartBegin() || req.StartEnd != nil && sub > req.GetStartEnd() {
			continue
		}
		fin := a.lc.Finished.UnixMilli()
		if req.FinishBegin != nil && (a.lc.Finished.IsZero() || fin < req.GetFinishBegin()) ||
			req.FinishEnd != nil && (a.lc.Finished.IsZero() || fin > req.GetFinishEnd()) {
			continue
		}
		resp.Applications = append(resp.Applications, r.report(a))
		if req.Limit != nil && req.GetLimit() > 0 && int64(len(resp.Applications)) >= req.GetLimit() {
			break
		}
	}
	return resp, nil
}

func (s clientService) ForceKillApplication(ctx context.Context, req *pb.KillApplicationRequestProto) (*pb.KillApplicationResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := r.modifiableApp(ctx, req.GetApplicationId(), "kill")
	if err != nil {
		return nil, err
	}
	if !a.done() {
		diag := fmt.Sprintf("Application %s was killed by user %s", rpc.AppIDString(a.yid), caller(ctx))
		if d := req.GetDiagnostics(); d != "" {
			diag += ": " + d
		}
		r.lifeStepLogged(lifecycle.Killed{App: lifecycle.AppID(a.id), Diagnostics: diag})
	}
	return &pb.KillApplicationResponseProto{IsKillCompleted: proto.Bool(true)}, nil
}

func (s clientService) GetClusterMetrics(ctx context.Context, _ *pb.GetClusterMetricsRequestProto) (*pb.GetClusterMetricsResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	var active, lost int32
	for _, n := range r.nodeByID {
		switch {
		case n == nil:
		case n.state == pb.NodeStateProto_NS_RUNNING:
			active++
		case n.state == pb.NodeStateProto_NS_LOST:
			lost++
		}
	}
	return &pb.GetClusterMetricsResponseProto{ClusterMetrics: &pb.YarnClusterMetricsProto{NumNodeManagers: proto.Int32(active),
		NumActiveNms: proto.Int32(active), NumLostNms: proto.Int32(lost), NumDecommissionedNms: proto.Int32(0),
		NumUnhealthyNms: proto.Int32(0), NumRebootedNms: proto.Int32(0)}}, nil
}

func (s clientService) GetClusterNodes(ctx context.Context, req *pb.GetClusterNodesRequestProto) (*pb.GetClusterNodesResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	resp := &pb.GetClusterNodesResponseProto{}
	for _, n := range r.nodeByID {
		if n == nil || len(req.GetNodeStates()) > 0 && !slices.Contains(req.GetNodeStates(), n.state) ||
			len(req.GetNodeStates()) == 0 && n.state != pb.NodeStateProto_NS_RUNNING {
			continue
		}
		resp.NodeReports = append(resp.NodeReports, r.nodeReport(n))
	}
	return resp, nil
}

func (r *RM) nodeReport(n *nodeRec) *pb.NodeReportProto {
	var used fairness.Vector
	for _, cr := range n.conts {
		used = used.Add(cr.c.Resource)
	}
	rep := &pb.NodeReportProto{NodeId: n.yid, HttpAddress: proto.String(fmt.Sprintf("%s:%d", n.yid.GetHost(), n.httpPort)),
		RackName: proto.String(n.rack), Used: rpc.ResourceFromVector(used), Capability: rpc.ResourceFromVector(n.capacity),
		NumContainers: proto.Int32(int32(len(n.conts))), NodeState: n.state.Enum(), HealthReport: proto.String(""),
		LastHealthReportTime: millis(n.mail.seen()), NodeUtilization: n.nodeUtil, ContainersUtilization: n.contUtil}
	if n.part != "" {
		rep.NodeLabels = []string{n.part}
	}
	return rep
}

func (s clientService) GetApplicationAttempts(ctx context.Context, req *pb.GetApplicationAttemptsRequestProto) (*pb.GetApplicationAttemptsResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := r.appByID(req.GetApplicationId())
	if err != nil {
		return nil, err
	}
	resp := &pb.GetApplicationAttemptsResponseProto{}
	for _, at := range a.attempts {
		resp.ApplicationAttempts = append(resp.ApplicationAttempts, r.attemptReport(a, at))
	}
	return resp, nil
}

func (s clientService) GetContainers(ctx context.Context, req *pb.GetContainersRequestProto) (*pb.GetContainersResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	want := req.GetApplicationAttemptId()
	a, err := r.appByID(want.GetApplicationId())
	if err != nil {
		return nil, err
	}
	if want.GetAttemptId() < 1 || int(want.GetAttemptId()) > len(a.attempts) {
		return nil, rpc.Errorf(rpc.ClassApplicationAttemptNotFound, "ApplicationAttempt with id '%s' doesn't exist in RM.", rpc.AttemptIDString(want))
	}
	at := a.attempts[want.GetAttemptId()-1]
	resp := &pb.GetContainersResponseProto{}
	conts := slices.SortedFunc(slices.Values(at.conts), func(x, y *contRec) int { return cmp.Compare(x.c.ID, y.c.ID) })
	for _, cr := range conts {
		resp.Containers = append(resp.Containers, containerReport(cr))
	}
	return resp, nil
}

func (s clientService) GetQueueInfo(ctx context.Context, req *pb.GetQueueInfoRequestProto) (*pb.GetQueueInfoResponseProto, error) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	name := req.GetQueueName()
	if r.tree != nil {
		return r.treeQueueInfo(req)
	}
	var total float64
	for _, w := range r.cfg.Queues {
		total += w
	}
	info := func(q string) *pb.QueueInfoProto {
		qi := &pb.QueueInfoProto{QueueName: proto.String(q), Capacity: proto.Float32(float32(r.cfg.Queues[q] / total)),
			MaximumCapacity: proto.Float32(1), State: pb.QueueStateProto_Q_RUNNING.Enum(), QueuePath: proto.String("root." + q)}
		var used fairness.Vector
		for _, a := range r.appOrder {
			if a.queue != q {
				continue
			}
			u, _ := r.core.Usage(a.id)
			used = used.Add(u)
			if req.GetIncludeApplications() {
				qi.Applications = append(qi.Applications, r.report(a))
			}
		}
		if capacity := r.core.Capacity(); !capacity.IsZero() {
			qi.CurrentCapacity = proto.Float32(float32(used.DominantShare(capacity)))
		}
		if r.labels.Enabled {
			// Flat queues may ask for every label.
			qi.AccessibleNodeLabels = []string{"*"}
		}
		return qi
	}
	if name == "root" || name == "" {
		root := &pb.QueueInfoProto{QueueName: proto.String("root"), Capacity: proto.Float32(1), MaximumCapacity: proto.Float32(1),
			State: pb.QueueStateProto_Q_RUNNING.Enum(), QueuePath: proto.String("root")}
		if req.GetIncludeChildQueues() {
			qs := make([]string, 0, len(r.cfg.Queues))
			for q := range r.cfg.Queues {
				qs = append(qs, q)
			}
			slices.Sort(qs)
			for _, q := range qs {
				root.ChildQueues = append(root.ChildQueues, info(q))
			}
		}
		return &pb.GetQueueInfoResponseProto{QueueInfo: root}, nil
	}
	name = strings.TrimPrefix(name, "root.")
	if _, ok := r.cfg.Queues[name]; !ok {
		return nil, rpc.Errorf("java.io.IOException", "Unknown queue: %s", req.GetQueueName())
	}
	return &pb.GetQueueInfoResponseProto{QueueInfo: info(name)}, nil
}

// amResourceRequest is the AM container's resource by YARN's rules
// (RMAppManager): am_container_resource_request, which Hadoop 3's clients
// fill, wins; of its requests exactly one must be for "*", and its
// capability holds for all. Without any, the context's resource is the
// AM's; with neither, nothing was asked for.
func amResourceRequest(sc *pb.ApplicationSubmissionContextProto) (*pb.ResourceProto, error) {
	reqs := sc.GetAmContainerResourceRequest()
	if len(reqs) == 0 {
		if sc.Resource == nil {
			return nil, errors.New("Invalid resource request, no resources requested")
		}
		return sc.GetResource(), nil
	}
	var anyReq *pb.ResourceRequestProto
	for _, rr := range reqs {
		if rr.GetResourceName() != "*" {
			continue
		}
		if anyReq != nil {
			return nil, errors.New("Invalid resource request, only one resource request with * is allowed")
		}
		anyReq = rr
	}
	if anyReq == nil {
		return nil, errors.New("Invalid resource request, no resource request specified with *")
	}
	if anyReq.Capability == nil {
		return nil, errors.New("Invalid resource request, the request for * has no capability")
	}
	return anyReq.GetCapability(), nil
}

// attemptReport is YARN's report of one attempt. Callers hold mu.
func (r *RM) attemptReport(a *appRec, at *attemptRec) *pb.ApplicationAttemptReportProto {
	rep := &pb.ApplicationAttemptReportProto{ApplicationAttemptId: at.yid, Host: proto.String(at.host), RpcPort: proto.Int32(at.rpcPort),
		TrackingUrl: proto.String(r.appPage(a)), OriginalTrackingUrl: proto.String(at.trackingURL), Diagnostics: proto.String(at.lc.Diagnostics),
		YarnApplicationAttemptState: at.state().Enum(), StartTime: millis(at.lc.Started), FinishTime: millis(at.lc.Finished)}
	if at.trackingURL != "" && at == a.current() && !a.done() {
		rep.TrackingUrl = proto.String(at.trackingURL)
	}
	if cr, ok := r.conts[at.amID()]; ok {
		rep.AmContainerId = cr.yid
	}
	return rep
}

// appPage is the address of Loom's web page of an app.
func (r *RM) appPage(a *appRec) string {
	return "http://" + advertised(r.Addr("web")) + "/#/apps/" + rpc.AppIDString(a.yid)
}

func sortAsks(asks []rm.Ask) {
	slices.SortFunc(asks, func(x, y rm.Ask) int {
		if x.Priority != y.Priority {
			return x.Priority - y.Priority
		}
		if x.Kind != y.Kind {
			return int(x.Kind) - int(y.Kind)
		}
		for k := range x.Demand {
			if x.Demand[k] != y.Demand[k] {
				if x.Demand[k] < y.Demand[k] {
					return -1
				}
				return 1
			}
		}
		return 0
	})
}

// logAggregationStatus is the app's, from what its nodes said: DISABLED
// with aggregation off; NOT_START while it runs; once it is over,
// SUCCEEDED when every node that ran its containers has aggregated,
// FAILED when one failed and the rest have said, RUNNING(_WITH_FAILURE)
// while some have not, and TIME_OUT when they have not within
// yarn.log-aggregation-status.time-out.ms.
func (r *RM) logAggregationStatus(a *appRec) pb.LogAggregationStatusProto {
	if !r.cfg.LogAggregation {
		return pb.LogAggregationStatusProto_LOG_DISABLED
	}
	if !a.done() || len(a.nodesUsed) == 0 {
		return pb.LogAggregationStatusProto_LOG_NOT_START
	}
	pending, failed := 0, 0
	for n := range a.nodesUsed {
		switch a.logAgg[n.key] {
		case pb.LogAggregationStatusProto_LOG_SUCCEEDED:
		case pb.LogAggregationStatusProto_LOG_FAILED:
			failed++
		default:
			pending++
		}
	}
	switch {
	case pending == 0 && failed == 0:
		return pb.LogAggregationStatusProto_LOG_SUCCEEDED
	case pending == 0:
		return pb.LogAggregationStatusProto_LOG_FAILED
	case !a.lc.Finished.IsZero() && time.Since(a.lc.Finished) > r.cfg.LogAggregationTimeout:
		return pb.LogAggregationStatusProto_LOG_TIME_OUT
	case failed > 0:
		return pb.LogAggregationStatusProto_LOG_RUNNING_WITH_FAILURE
	}
	return pb.LogAggregationStatusProto_LOG_RUNNING
}
