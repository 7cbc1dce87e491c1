package webui

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/workload"
)

// The fake cluster: five apps in different states, three nodes (two
// running, one lost), two queues, and one DAG app with a history.
const (
	clusterTS = int64(1700000000000)
	nowMs     = clusterTS + 100_000
	adminKey  = "s3cret-admin"
)

var fakeNow = func() time.Time { return time.UnixMilli(nowMs) }

func appIDProto(n int32) *pb.ApplicationIdProto {
	return &pb.ApplicationIdProto{Id: proto.Int32(n), ClusterTimestamp: proto.Int64(clusterTS)}
}

func attemptID(app, n int32) *pb.ApplicationAttemptIdProto {
	return &pb.ApplicationAttemptIdProto{ApplicationId: appIDProto(app), AttemptId: proto.Int32(n)}
}

func containerID(app, attempt int32, n int64) *pb.ContainerIdProto {
	return &pb.ContainerIdProto{AppId: appIDProto(app), AppAttemptId: attemptID(app, attempt), Id: proto.Int64(n)}
}

func res(mb int64, vcores int32) *pb.ResourceProto {
	return &pb.ResourceProto{Memory: proto.Int64(mb), VirtualCores: proto.Int32(vcores)}
}

func nodeID(host string) *pb.NodeIdProto {
	return &pb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(45454)}
}

type fakeApp struct {
	report   *pb.ApplicationReportProto
	attempts []*pb.ApplicationAttemptReportProto
	conts    map[int32][]*pb.ContainerReportProto // by attempt
	history  *am.History                          // nil: a stock YARN app
	timeline []AppSample
	// placements are its containers by locality, as AppPlacements
	// answers them.
	placements Placements
}

// fakeBackend is the RM as the web server sees it, in memory.
type fakeBackend struct {
	mu       sync.Mutex
	recorded []*workload.Job
	apps     []*fakeApp
	nodes    []*pb.NodeReportProto
	grants   []Grant
	nextApp  int32
	issued   map[int32]bool
	sched    Scheduler
	changes  []AltruismChange
	calls    map[string]*rpc.CallInfo // the last call of each method
	submits  []*pb.ApplicationSubmissionContextProto
	kills    []*pb.KillApplicationRequestProto
	failWith error // every ApplicationClientServer call fails with it
	// restWrites is RESTWritesEnabled: off, as a real RM is by default.
	restWrites bool
	// noLabels: the cluster has no node labels, as a real Loom RM.
	noLabels bool
	// rpcQueues are the queues GetQueueInfo lists under root, by the
	// names apps give them; nil: default and etl.
	rpcQueues []string
}

var _ Backend = (*fakeBackend)(nil)

func dagHistory() *am.History {
	mem := func(mb float64) fairness.Vector { return fairness.New(mb, 1) }
	return &am.History{Job: "tpch-q5", App: "application_1700000000000_0001", Attempt: 1, State: am.StateRunning,
		StartUnixMs: clusterTS + 12_000, UpdatedUnixMs: clusterTS + 99_000,
		Stages: []am.HistoryStage{
			{Name: "scan", Tasks: 4, DurationMs: 8000, Demand: mem(2048).With(fairness.Disk, 40), State: am.StateSucceeded, Succeeded: 4, Failed: 1},
			{Name: "dim", Tasks: 1, DurationMs: 900, Demand: mem(1024), State: am.StateSucceeded, Succeeded: 1},
			{Name: "join", Tasks: 2, Parents: []string{"scan", "dim"}, DurationMs: 3000, Demand: mem(4096), State: am.StateRunning, Running: 2},
			{Name: "agg", Tasks: 1, Parents: []string{"join"}, DurationMs: 1500, Demand: mem(2048), State: am.StateWaiting},
		},
		Tasks: []am.HistoryTask{
			{Stage: "scan", Task: 0, Attempt: 0, Container: 2, Node: "nm1:45454", StartMs: 1000, EndMs: 9000, Kind: "DEFAULT", State: am.StateSucceeded, Succeeded: true},
			{Stage: "scan", Task: 1, Attempt: 0, Container: 3, Node: "nm2:45454", StartMs: 1000, EndMs: 9500, Kind: "DEFAULT", State: am.StateSucceeded, Succeeded: true},
			{Stage: "scan", Task: 2, Attempt: 0, Container: 4, Node: "nm1:45454", StartMs: 1200, EndMs: 4000, Kind: "ALTRUISTIC", State: am.StateFailed},
			{Stage: "dim", Task: 0, Attempt: 0, Container: 5, Node: "nm2:45454", StartMs: 1500, EndMs: 2400, Kind: "ALTRUISTIC", State: am.StateSucceeded, Succeeded: true},
			{Stage: "scan", Task: 3, Attempt: 0, Container: 6, Node: "nm2:45454", StartMs: 2500, EndMs: 10500, Kind: "ALTRUISTIC", State: am.StateSucceeded, Succeeded: true},
			{Stage: "scan", Task: 2, Attempt: 1, Container: 7, Node: "nm1:45454", StartMs: 4100, EndMs: 12000, Kind: "DEFAULT", State: am.StateSucceeded, Succeeded: true},
			{Stage: "join", Task: 0, Attempt: 0, Container: 8, Node: "nm1:45454", StartMs: 12100, Kind: "DEFAULT", State: am.StateRunning},
			{Stage: "join", Task: 1, Attempt: 0, Container: 9, Node: "nm2:45454", StartMs: 12300, Kind: "ALTRUISTIC", State: am.StateRunning},
		}}
}

func newFakeBackend() *fakeBackend {
	f := &fakeBackend{nextApp: 5, issued: map[int32]bool{}, calls: map[string]*rpc.CallInfo{}}
	app := func(n int32, user, queue, name string, st pb.YarnApplicationStateProto, fin pb.FinalApplicationStatusProto,
		typ string, tags []string, startS, finishS int64) *fakeApp {
		r := &pb.ApplicationReportProto{ApplicationId: appIDProto(n), User: proto.String(user), Queue: proto.String(queue),
			Name: proto.String(name), Host: proto.String("N/A"), RpcPort: proto.Int32(-1), YarnApplicationState: st.Enum(),
			FinalApplicationStatus: fin.Enum(), ApplicationType: proto.String(typ), ApplicationTags: tags,
			StartTime: proto.Int64(clusterTS + startS*1000), LaunchTime: proto.Int64(clusterTS + startS*1000 + 1000),
			Diagnostics: proto.String(""), Priority: &pb.PriorityProto{Priority: proto.Int32(0)},
			CurrentApplicationAttemptId: attemptID(n, 1),
			AppResource_Usage:           &pb.ApplicationResourceUsageReportProto{NumUsedContainers: proto.Int32(0), UsedResources: res(0, 0)}}
		if finishS > 0 {
			r.FinishTime = proto.Int64(clusterTS + finishS*1000)
			r.Progress = proto.Float32(1)
		} else {
			r.FinishTime = proto.Int64(0)
		}
		return &fakeApp{report: r, conts: map[int32][]*pb.ContainerReportProto{},
			attempts: []*pb.ApplicationAttemptReportProto{{ApplicationAttemptId: attemptID(n, 1),
				YarnApplicationAttemptState: pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_RUNNING.Enum(),
				StartTime:                   proto.Int64(clusterTS + startS*1000 + 500), AmContainerId: containerID(n, 1, 1)}}}
	}
	amCont := func(app int32, node string) *pb.ContainerReportProto {
		return &pb.ContainerReportProto{ContainerId: containerID(app, 1, 1), NodeId: nodeID(node), Resource: res(1024, 1)}
	}

	a1 := app(1, "alice", "default", "tpch-q5", pb.YarnApplicationStateProto_RUNNING, pb.FinalApplicationStatusProto_APP_UNDEFINED,
		"LOOM", []string{"tpch", "q5"}, 10, 0)
	a1.report.Progress = proto.Float32(0.25)
	a1.report.Host, a1.report.RpcPort = proto.String("nm1"), proto.Int32(7000)
	a1.report.TrackingUrl = proto.String("http://nm1:7001/")
	a1.report.AppResource_Usage = &pb.ApplicationResourceUsageReportProto{NumUsedContainers: proto.Int32(3),
		UsedResources: res(6144, 3), MemorySeconds: proto.Int64(123456), VcoreSeconds: proto.Int64(60)}
	a1.conts[1] = []*pb.ContainerReportProto{amCont(1, "nm1"),
		{ContainerId: containerID(1, 1, 8), NodeId: nodeID("nm1"), Resource: res(4096, 1)}}
	a1.report.AppTimeouts = []*pb.AppTimeoutsMapProto{{
		ApplicationTimeoutType: pb.ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME.Enum(),
		ApplicationTimeout: &pb.ApplicationTimeoutProto{ApplicationTimeoutType: pb.ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME.Enum(),
			ExpireTime: proto.String("2023-11-14T22:16:40.000+0000"), RemainingTime: proto.Int64(3600)}}}
	a1.conts[1][0].ContainerState = pb.ContainerStateProto_C_RUNNING.Enum()
	a1.conts[1][0].CreationTime = proto.Int64(clusterTS + 11_000)
	a1.conts[1][0].Priority = &pb.PriorityProto{Priority: proto.Int32(0)}
	a1.history = dagHistory()
	a1.timeline = []AppSample{{UnixMs: nowMs - 4000, DominantShare: 0.5, DominantUsage: 0.25},
		{UnixMs: nowMs - 3000, DominantShare: 0.5, DominantUsage: 0.375}, {UnixMs: nowMs - 2000, DominantShare: 0.45, DominantUsage: 0.5},
		{UnixMs: nowMs - 1000, DominantShare: 0.5, DominantUsage: 0.1875}}

	// Its AM's container went anywhere; of its four tasks that asked for
	// hosts, three ran on one of them and one off their racks.
	a1.placements = Placements{NodeLocal: 3, OffSwitch: 1, Any: 1}

	a2 := app(2, "bob", "etl", "nightly-etl", pb.YarnApplicationStateProto_FINISHED, pb.FinalApplicationStatusProto_APP_SUCCEEDED,
		"MAPREDUCE", []string{"nightly"}, 20, 50)
	a2.attempts[0].YarnApplicationAttemptState = pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FINISHED.Enum()
	a2.attempts[0].FinishTime = proto.Int64(clusterTS + 50_000)
	a2.conts[1] = []*pb.ContainerReportProto{amCont(2, "nm2")}
	a2.conts[1][0].ContainerState = pb.ContainerStateProto_C_COMPLETE.Enum()
	a2.conts[1][0].CreationTime = proto.Int64(clusterTS + 21_000)
	a2.conts[1][0].FinishTime = proto.Int64(clusterTS + 50_000)
	a2.conts[1][0].ContainerExitStatus = proto.Int32(0)
	a2.conts[1][0].DiagnosticsInfo = proto.String("N/A")
	a2.placements = Placements{NodeLocal: 9, RackLocal: 4, OffSwitch: 3, Any: 1}

	a3 := app(3, "alice", "etl", "shell", pb.YarnApplicationStateProto_ACCEPTED, pb.FinalApplicationStatusProto_APP_UNDEFINED,
		"YARN", nil, 30, 0)
	a3.attempts[0].YarnApplicationAttemptState = pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_SCHEDULED.Enum()
	a3.attempts[0].AmContainerId = nil

	a4 := app(4, "carol", "default", "spark-pi", pb.YarnApplicationStateProto_KILLED, pb.FinalApplicationStatusProto_APP_KILLED,
		"SPARK", nil, 40, 60)
	a4.placements = Placements{Any: 1} // its AM: spark-pi asks for no hosts
	a5 := app(5, "dave", "default", "broken", pb.YarnApplicationStateProto_FAILED, pb.FinalApplicationStatusProto_APP_FAILED,
		"LOOM", nil, 45, 70)
	a5.report.Diagnostics = proto.String("AM exited with code 1")
	a5.placements = Placements{Any: 1}
	f.apps = []*fakeApp{a1, a2, a3, a4, a5}

	node := func(host string, st pb.NodeStateProto, usedMB int64, usedV int32, n int32) *pb.NodeReportProto {
		return &pb.NodeReportProto{NodeId: nodeID(host), HttpAddress: proto.String(host + ":8042"),
			RackName: proto.String("/default-rack"), Used: res(usedMB, usedV), Capability: res(16384, 8),
			NumContainers: proto.Int32(n), NodeState: st.Enum(), HealthReport: proto.String(""),
			LastHealthReportTime: proto.Int64(nowMs - 1000)}
	}
	f.nodes = []*pb.NodeReportProto{node("nm2", pb.NodeStateProto_NS_RUNNING, 2048, 1, 1),
		node("nm1", pb.NodeStateProto_NS_RUNNING, 6144, 3, 2), node("nm3", pb.NodeStateProto_NS_LOST, 0, 0, 0)}
	// nm1 has measured itself: 9000 MB and 2.5 cores in use, 5000 MB and
	// 1.75 cores of it its containers'.
	f.nodes[1].NodeLabels = []string{"gpu"} // as GetNodeToLabels says
	f.nodes[1].NodeUtilization = &pb.ResourceUtilizationProto{Pmem: proto.Int32(9000), Vmem: proto.Int32(9500), Cpu: proto.Float32(2.5)}
	f.nodes[1].ContainersUtilization = &pb.ResourceUtilizationProto{Pmem: proto.Int32(5000), Vmem: proto.Int32(7000), Cpu: proto.Float32(1.75)}

	capacity := fairness.New(32768, 16).With(fairness.Disk, 1000)
	f.sched = Scheduler{Policy: "carbyne", PAltruism: 0.8, LeftoverOrder: "efficiency-first", LeftoverCap: 2, Recall: 0.25, ShareGrowth: true,
		Capacity: capacity, Used: fairness.New(8192, 4).With(fairness.Disk, 80), Leftover: fairness.New(4096, 2),
		Apps: []AppShare{{ID: "application_1700000000000_0001", Name: "tpch-q5", Queue: "default", User: "alice",
			Share: fairness.New(16384, 8), DominantShare: 0.5, Usage: fairness.New(6144, 3), DominantUsage: 0.1875,
			Demand: fairness.New(20480, 6), RemainingWork: 120.5, PendingDefault: 2, PendingAltruistic: 3, Running: 3,
			Placements: a1.placements,
			// Promised 20 s; its fluid finish now 62 s, past 2.5 x 20.
			Promise: rm.PromiseState{Kept: true, Span: 20 * time.Second, Finish: 62 * time.Second, Limit: 50 * time.Second, Late: true}}},
		Queues: []QueueShare{{Name: "default", Weight: 1, PAltruism: 0.8, Usage: fairness.New(6144, 3), Apps: 1},
			{Name: "etl", Weight: 3, PAltruism: 0.8, Apps: 0}},
		// The five apps' together.
		Placements: Placements{NodeLocal: 12, RackLocal: 4, OffSwitch: 4, Any: 4}}
	f.changes = []AltruismChange{{UnixMs: clusterTS, P: 0.8, Who: "config"}}
	return f
}

// writableBackend is the fake with REST writes on, for the tests of
// what submit, new-application and kill do once they are allowed.
func writableBackend() *fakeBackend {
	f := newFakeBackend()
	f.restWrites = true
	return f
}

func (f *fakeBackend) record(ctx context.Context, method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ci, _ := rpc.CallFromContext(ctx)
	f.calls[method] = ci
	return f.failWith
}

func (f *fakeBackend) lastCall(method string) *rpc.CallInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *fakeBackend) find(id *pb.ApplicationIdProto) (*fakeApp, error) {
	for _, a := range f.apps {
		if proto.Equal(a.report.GetApplicationId(), id) {
			return a, nil
		}
	}
	return nil, rpc.Errorf(rpc.ClassApplicationNotFound, "Application with id '%s' doesn't exist in RM.", rpc.AppIDString(id))
}

func (f *fakeBackend) GetNewApplication(ctx context.Context, _ *pb.GetNewApplicationRequestProto) (*pb.GetNewApplicationResponseProto, error) {
	if err := f.record(ctx, "GetNewApplication"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextApp++
	f.issued[f.nextApp] = true
	return &pb.GetNewApplicationResponseProto{ApplicationId: appIDProto(f.nextApp), MaximumCapability: res(8192, 4)}, nil
}

func (f *fakeBackend) SubmitApplication(ctx context.Context, req *pb.SubmitApplicationRequestProto) (*pb.SubmitApplicationResponseProto, error) {
	if err := f.record(ctx, "SubmitApplication"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sc := req.GetApplicationSubmissionContext()
	id := sc.GetApplicationId()
	if id.GetClusterTimestamp() != clusterTS || !f.issued[id.GetId()] {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Application id %s was not issued by this ResourceManager", rpc.AppIDString(id))
	}
	if sc.GetQueue() != "default" && sc.GetQueue() != "etl" {
		return nil, rpc.Errorf(rpc.ClassYarnException, "unknown queue: %s", sc.GetQueue())
	}
	delete(f.issued, id.GetId())
	f.submits = append(f.submits, sc)
	ci, _ := rpc.CallFromContext(ctx)
	f.apps = append(f.apps, &fakeApp{report: &pb.ApplicationReportProto{ApplicationId: id, User: proto.String(ci.User),
		Queue: sc.Queue, Name: sc.ApplicationName, YarnApplicationState: pb.YarnApplicationStateProto_ACCEPTED.Enum(),
		FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_UNDEFINED.Enum(), ApplicationType: sc.ApplicationType,
		ApplicationTags: sc.ApplicationTags, StartTime: proto.Int64(nowMs)}})
	return &pb.SubmitApplicationResponseProto{}, nil
}

func (f *fakeBackend) GetApplicationReport(ctx context.Context, req *pb.GetApplicationReportRequestProto) (*pb.GetApplicationReportResponseProto, error) {
	if err := f.record(ctx, "GetApplicationReport"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.find(req.GetApplicationId())
	if err != nil {
		return nil, err
	}
	return &pb.GetApplicationReportResponseProto{ApplicationReport: proto.CloneOf(a.report)}, nil
}

// GetApplications ignores the request's filters: the web server filters
// itself, and asks for every app.
func (f *fakeBackend) GetApplications(ctx context.Context, _ *pb.GetApplicationsRequestProto) (*pb.GetApplicationsResponseProto, error) {
	if err := f.record(ctx, "GetApplications"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &pb.GetApplicationsResponseProto{}
	for _, a := range f.apps {
		resp.Applications = append(resp.Applications, proto.CloneOf(a.report))
	}
	return resp, nil
}

func (f *fakeBackend) ForceKillApplication(ctx context.Context, req *pb.KillApplicationRequestProto) (*pb.KillApplicationResponseProto, error) {
	if err := f.record(ctx, "ForceKillApplication"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.find(req.GetApplicationId())
	if err != nil {
		return nil, err
	}
	f.kills = append(f.kills, req)
	if !isFinal(a.report.GetYarnApplicationState()) {
		a.report.YarnApplicationState = pb.YarnApplicationStateProto_KILLED.Enum()
		a.report.FinalApplicationStatus = pb.FinalApplicationStatusProto_APP_KILLED.Enum()
		a.report.FinishTime = proto.Int64(nowMs)
	}
	return &pb.KillApplicationResponseProto{IsKillCompleted: proto.Bool(true)}, nil
}

func (f *fakeBackend) GetClusterMetrics(ctx context.Context, _ *pb.GetClusterMetricsRequestProto) (*pb.GetClusterMetricsResponseProto, error) {
	if err := f.record(ctx, "GetClusterMetrics"); err != nil {
		return nil, err
	}
	return &pb.GetClusterMetricsResponseProto{ClusterMetrics: &pb.YarnClusterMetricsProto{NumNodeManagers: proto.Int32(2),
		NumActiveNms: proto.Int32(2), NumLostNms: proto.Int32(1), NumDecommissionedNms: proto.Int32(0),
		NumUnhealthyNms: proto.Int32(0), NumRebootedNms: proto.Int32(0)}}, nil
}

// GetClusterNodes answers as daemon/rm/server does: no states means the
// running nodes only.
func (f *fakeBackend) GetClusterNodes(ctx context.Context, req *pb.GetClusterNodesRequestProto) (*pb.GetClusterNodesResponseProto, error) {
	if err := f.record(ctx, "GetClusterNodes"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &pb.GetClusterNodesResponseProto{}
	for _, n := range f.nodes {
		st := req.GetNodeStates()
		if len(st) == 0 && n.GetNodeState() == pb.NodeStateProto_NS_RUNNING || slices.Contains(st, n.GetNodeState()) {
			resp.NodeReports = append(resp.NodeReports, proto.CloneOf(n))
		}
	}
	return resp, nil
}

func (f *fakeBackend) GetApplicationAttempts(ctx context.Context, req *pb.GetApplicationAttemptsRequestProto) (*pb.GetApplicationAttemptsResponseProto, error) {
	if err := f.record(ctx, "GetApplicationAttempts"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.find(req.GetApplicationId())
	if err != nil {
		return nil, err
	}
	resp := &pb.GetApplicationAttemptsResponseProto{}
	for _, at := range a.attempts {
		resp.ApplicationAttempts = append(resp.ApplicationAttempts, proto.CloneOf(at))
	}
	return resp, nil
}

func (f *fakeBackend) GetContainers(ctx context.Context, req *pb.GetContainersRequestProto) (*pb.GetContainersResponseProto, error) {
	if err := f.record(ctx, "GetContainers"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a, err := f.find(req.GetApplicationAttemptId().GetApplicationId())
	if err != nil {
		return nil, err
	}
	resp := &pb.GetContainersResponseProto{}
	for _, c := range a.conts[req.GetApplicationAttemptId().GetAttemptId()] {
		resp.Containers = append(resp.Containers, proto.CloneOf(c))
	}
	return resp, nil
}

func (f *fakeBackend) GetQueueInfo(ctx context.Context, req *pb.GetQueueInfoRequestProto) (*pb.GetQueueInfoResponseProto, error) {
	if err := f.record(ctx, "GetQueueInfo"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.GetQueueName() != "root" {
		return nil, rpc.Errorf("java.io.IOException", "Unknown queue: %s", req.GetQueueName())
	}
	root := &pb.QueueInfoProto{QueueName: proto.String("root"), QueuePath: proto.String("root")}
	queues := f.rpcQueues
	if queues == nil {
		queues = []string{"default", "etl"}
	}
	for _, q := range queues {
		qi := &pb.QueueInfoProto{QueueName: proto.String(q), QueuePath: proto.String("root." + q)}
		for _, a := range f.apps {
			if a.report.GetQueue() == q {
				qi.Applications = append(qi.Applications, proto.CloneOf(a.report))
			}
		}
		root.ChildQueues = append(root.ChildQueues, qi)
	}
	return &pb.GetQueueInfoResponseProto{QueueInfo: root}, nil
}

func (f *fakeBackend) GetResourceTypeInfo(ctx context.Context, _ *pb.GetAllResourceTypeInfoRequestProto) (*pb.GetAllResourceTypeInfoResponseProto, error) {
	return &pb.GetAllResourceTypeInfoResponseProto{}, f.record(ctx, "GetResourceTypeInfo")
}

func (f *fakeBackend) GetResourceProfiles(ctx context.Context, _ *pb.GetAllResourceProfilesRequestProto) (*pb.GetAllResourceProfilesResponseProto, error) {
	return &pb.GetAllResourceProfilesResponseProto{}, f.record(ctx, "GetResourceProfiles")
}

func (f *fakeBackend) GetResourceProfile(ctx context.Context, _ *pb.GetResourceProfileRequestProto) (*pb.GetResourceProfileResponseProto, error) {
	return &pb.GetResourceProfileResponseProto{}, f.record(ctx, "GetResourceProfile")
}

// The rest of ApplicationClientProtocol: the web UI calls none of it, so
// the fake only records the call.

func (f *fakeBackend) FailApplicationAttempt(ctx context.Context, _ *pb.FailApplicationAttemptRequestProto) (*pb.FailApplicationAttemptResponseProto, error) {
	return &pb.FailApplicationAttemptResponseProto{}, f.record(ctx, "FailApplicationAttempt")
}

func (f *fakeBackend) SetApplicationTags(ctx context.Context, _ *pb.SetApplicationTagsRequestProto) (*pb.SetApplicationTagsResponseProto, error) {
	return &pb.SetApplicationTagsResponseProto{}, f.record(ctx, "SetApplicationTags")
}

func (f *fakeBackend) MoveApplicationAcrossQueues(ctx context.Context, _ *pb.MoveApplicationAcrossQueuesRequestProto) (*pb.MoveApplicationAcrossQueuesResponseProto, error) {
	return &pb.MoveApplicationAcrossQueuesResponseProto{}, f.record(ctx, "MoveApplicationAcrossQueues")
}

func (f *fakeBackend) UpdateApplicationPriority(ctx context.Context, _ *pb.UpdateApplicationPriorityRequestProto) (*pb.UpdateApplicationPriorityResponseProto, error) {
	return &pb.UpdateApplicationPriorityResponseProto{}, f.record(ctx, "UpdateApplicationPriority")
}

func (f *fakeBackend) UpdateApplicationTimeouts(ctx context.Context, _ *pb.UpdateApplicationTimeoutsRequestProto) (*pb.UpdateApplicationTimeoutsResponseProto, error) {
	return &pb.UpdateApplicationTimeoutsResponseProto{}, f.record(ctx, "UpdateApplicationTimeouts")
}

// GetQueueUserAcls: everyone submits to default and etl; yarn
// administers them.
func (f *fakeBackend) GetQueueUserAcls(ctx context.Context, _ *pb.GetQueueUserAclsInfoRequestProto) (*pb.GetQueueUserAclsInfoResponseProto, error) {
	acls := []pb.QueueACLProto{pb.QueueACLProto_QACL_SUBMIT_APPLICATIONS}
	if ci, _ := rpc.CallFromContext(ctx); ci.User == "yarn" {
		acls = append(acls, pb.QueueACLProto_QACL_ADMINISTER_QUEUE)
	}
	resp := &pb.GetQueueUserAclsInfoResponseProto{}
	for _, q := range []string{"root", "default", "etl"} {
		resp.QueueUserAcls = append(resp.QueueUserAcls, &pb.QueueUserACLInfoProto{QueueName: proto.String(q), UserAcls: acls})
	}
	return resp, f.record(ctx, "GetQueueUserAcls")
}

func (f *fakeBackend) GetDelegationToken(ctx context.Context, _ *hadooppb.GetDelegationTokenRequestProto) (*hadooppb.GetDelegationTokenResponseProto, error) {
	return &hadooppb.GetDelegationTokenResponseProto{}, f.record(ctx, "GetDelegationToken")
}

func (f *fakeBackend) RenewDelegationToken(ctx context.Context, _ *hadooppb.RenewDelegationTokenRequestProto) (*hadooppb.RenewDelegationTokenResponseProto, error) {
	return &hadooppb.RenewDelegationTokenResponseProto{}, f.record(ctx, "RenewDelegationToken")
}

func (f *fakeBackend) CancelDelegationToken(ctx context.Context, _ *hadooppb.CancelDelegationTokenRequestProto) (*hadooppb.CancelDelegationTokenResponseProto, error) {
	return &hadooppb.CancelDelegationTokenResponseProto{}, f.record(ctx, "CancelDelegationToken")
}

func (f *fakeBackend) GetApplicationAttemptReport(ctx context.Context, req *pb.GetApplicationAttemptReportRequestProto) (*pb.GetApplicationAttemptReportResponseProto, error) {
	if err := f.record(ctx, "GetApplicationAttemptReport"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := req.GetApplicationAttemptId()
	a, err := f.find(id.GetApplicationId())
	if err != nil {
		return nil, err
	}
	for _, at := range a.attempts {
		if proto.Equal(at.GetApplicationAttemptId(), id) {
			return &pb.GetApplicationAttemptReportResponseProto{ApplicationAttemptReport: proto.CloneOf(at)}, nil
		}
	}
	return nil, rpc.Errorf(rpc.ClassApplicationAttemptNotFound, "ApplicationAttempt with id '%s' doesn't exist in RM.", rpc.AttemptIDString(id))
}

func (f *fakeBackend) GetContainerReport(ctx context.Context, req *pb.GetContainerReportRequestProto) (*pb.GetContainerReportResponseProto, error) {
	if err := f.record(ctx, "GetContainerReport"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cid := req.GetContainerId()
	a, err := f.find(cid.GetAppId())
	if err != nil {
		return nil, err
	}
	for _, c := range a.conts[cid.GetAppAttemptId().GetAttemptId()] {
		if proto.Equal(c.GetContainerId(), cid) {
			return &pb.GetContainerReportResponseProto{ContainerReport: proto.CloneOf(c)}, nil
		}
	}
	return nil, rpc.Errorf(rpc.ClassContainerNotFound, "Container with id '%s' doesn't exist in RM.", rpc.ContainerIDString(cid))
}

func (f *fakeBackend) GetNewReservation(ctx context.Context, _ *pb.GetNewReservationRequestProto) (*pb.GetNewReservationResponseProto, error) {
	if err := f.record(ctx, "GetNewReservation"); err != nil {
		return nil, err
	}
	return nil, rpc.Errorf(rpc.ClassYarnException, "Reservation is not enabled. Please enable & try again")
}

func (f *fakeBackend) SubmitReservation(ctx context.Context, _ *pb.ReservationSubmissionRequestProto) (*pb.ReservationSubmissionResponseProto, error) {
	if err := f.record(ctx, "SubmitReservation"); err != nil {
		return nil, err
	}
	return nil, rpc.Errorf(rpc.ClassYarnException, "Reservation is not enabled. Please enable & try again")
}

func (f *fakeBackend) UpdateReservation(ctx context.Context, _ *pb.ReservationUpdateRequestProto) (*pb.ReservationUpdateResponseProto, error) {
	if err := f.record(ctx, "UpdateReservation"); err != nil {
		return nil, err
	}
	return nil, rpc.Errorf(rpc.ClassYarnException, "Reservation is not enabled. Please enable & try again")
}

func (f *fakeBackend) DeleteReservation(ctx context.Context, _ *pb.ReservationDeleteRequestProto) (*pb.ReservationDeleteResponseProto, error) {
	if err := f.record(ctx, "DeleteReservation"); err != nil {
		return nil, err
	}
	return nil, rpc.Errorf(rpc.ClassYarnException, "Reservation is not enabled. Please enable & try again")
}

func (f *fakeBackend) ListReservations(ctx context.Context, _ *pb.ReservationListRequestProto) (*pb.ReservationListResponseProto, error) {
	if err := f.record(ctx, "ListReservations"); err != nil {
		return nil, err
	}
	return nil, rpc.Errorf(rpc.ClassYarnException, "Reservation is not enabled. Please enable & try again")
}

// GetNodeToLabels gives nm1 the gpu label (the fake's only label) and
// nm2 none, unless noLabels.
func (f *fakeBackend) GetNodeToLabels(ctx context.Context, _ *pb.GetNodesToLabelsRequestProto) (*pb.GetNodesToLabelsResponseProto, error) {
	if err := f.record(ctx, "GetNodeToLabels"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noLabels {
		return &pb.GetNodesToLabelsResponseProto{}, nil
	}
	return &pb.GetNodesToLabelsResponseProto{NodeToLabels: []*pb.NodeIdToLabelsProto{
		{NodeId: nodeID("nm1"), NodeLabels: []string{"gpu"}}}}, nil
}

func (f *fakeBackend) GetLabelsToNodes(ctx context.Context, _ *pb.GetLabelsToNodesRequestProto) (*pb.GetLabelsToNodesResponseProto, error) {
	return &pb.GetLabelsToNodesResponseProto{}, f.record(ctx, "GetLabelsToNodes")
}

func (f *fakeBackend) GetClusterNodeLabels(ctx context.Context, _ *pb.GetClusterNodeLabelsRequestProto) (*pb.GetClusterNodeLabelsResponseProto, error) {
	if err := f.record(ctx, "GetClusterNodeLabels"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noLabels {
		return &pb.GetClusterNodeLabelsResponseProto{}, nil
	}
	return &pb.GetClusterNodeLabelsResponseProto{NodeLabels: []*pb.NodeLabelProto{
		{Name: proto.String("gpu"), IsExclusive: proto.Bool(true)}, {Name: proto.String("ssd"), IsExclusive: proto.Bool(false)}}}, nil
}

func (f *fakeBackend) GetClusterNodeAttributes(ctx context.Context, _ *pb.GetClusterNodeAttributesRequestProto) (*pb.GetClusterNodeAttributesResponseProto, error) {
	return &pb.GetClusterNodeAttributesResponseProto{}, f.record(ctx, "GetClusterNodeAttributes")
}

func (f *fakeBackend) GetAttributesToNodes(ctx context.Context, _ *pb.GetAttributesToNodesRequestProto) (*pb.GetAttributesToNodesResponseProto, error) {
	return &pb.GetAttributesToNodesResponseProto{}, f.record(ctx, "GetAttributesToNodes")
}

func (f *fakeBackend) GetNodesToAttributes(ctx context.Context, _ *pb.GetNodesToAttributesRequestProto) (*pb.GetNodesToAttributesResponseProto, error) {
	return &pb.GetNodesToAttributesResponseProto{}, f.record(ctx, "GetNodesToAttributes")
}

func (f *fakeBackend) SignalToContainer(ctx context.Context, _ *pb.SignalContainerRequestProto) (*pb.SignalContainerResponseProto, error) {
	return &pb.SignalContainerResponseProto{}, f.record(ctx, "SignalToContainer")
}

// UpdateNodeResource: admins (yarn) may set a known node's capacity.
func (f *fakeBackend) UpdateNodeResource(ctx context.Context, node string, capacity fairness.Vector) (fairness.Vector, error) {
	if err := f.record(ctx, "UpdateNodeResource"); err != nil {
		return fairness.Vector{}, err
	}
	if ci, _ := rpc.CallFromContext(ctx); ci.User != "yarn" {
		return fairness.Vector{}, rpc.Errorf(rpc.ClassAccessControl, "User %s doesn't have permission to call 'updateNodeResource'", ci.User)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.nodes {
		if nodeIDString(n.GetNodeId()) == node {
			n.Capability = res(int64(capacity[fairness.Memory]), int32(capacity[fairness.VCores]))
			return capacity, nil
		}
	}
	return fairness.Vector{}, fmt.Errorf("node %s: %w", node, ErrNotFound)
}

// ChangeNodeLabels: the fake has node labels off, as YARN by default.
func (f *fakeBackend) ChangeNodeLabels(ctx context.Context, ch LabelChange) error {
	if err := f.record(ctx, "ChangeNodeLabels"); err != nil {
		return err
	}
	return rpc.Errorf(rpc.ClassYarnException, "java.io.IOException: Node-label-based scheduling is disabled. Please check yarn.node-labels.enabled")
}

// RecentGrants: the fake's last grants.
func (f *fakeBackend) RecentGrants() []Grant {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.grants)
}

// NodeVersions: every node runs the same NodeManager.
func (f *fakeBackend) NodeVersions() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for _, n := range f.nodes {
		out[nodeIDString(n.GetNodeId())] = "loom-test"
	}
	return out
}

func (f *fakeBackend) RESTWritesEnabled() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restWrites
}

func (f *fakeBackend) Info() ClusterInfo {
	return ClusterInfo{ID: clusterTS, StartedOnMs: clusterTS, State: "STARTED", HAState: "ACTIVE", Version: "0.9.0-test",
		StateStore: "org.apache.hadoop.yarn.server.resourcemanager.recovery.NullRMStateStore"}
}

func (f *fakeBackend) Scheduler() Scheduler {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sched
}

func (f *fakeBackend) SetAltruism(_ context.Context, set AltruismSet, who string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !set.Clear && (set.P < 0 || set.P > 1) {
		return fmt.Errorf("P(Altruism) %v is outside [0, 1]", set.P)
	}
	if set.Queue == "" {
		f.sched.PAltruism = set.P
		for i := range f.sched.Queues {
			if !f.sched.Queues[i].Override {
				f.sched.Queues[i].PAltruism = set.P
			}
		}
	} else {
		i := slices.IndexFunc(f.sched.Queues, func(q QueueShare) bool { return q.Name == set.Queue })
		if i < 0 {
			return fmt.Errorf("queue %q is not in loom.queues", set.Queue)
		}
		q := &f.sched.Queues[i]
		q.Override, q.PAltruism = !set.Clear, set.P
		if set.Clear {
			q.PAltruism = f.sched.PAltruism
		}
	}
	f.changes = append(f.changes, AltruismChange{UnixMs: nowMs, P: set.P, Who: who, Queue: set.Queue, Cleared: set.Clear})
	return nil
}

func (f *fakeBackend) AltruismChanges() []AltruismChange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.changes)
}

func (f *fakeBackend) Timeline() []Sample {
	var out []Sample
	for i := range 30 {
		x := float64(i) / 29
		out = append(out, Sample{UnixMs: nowMs - int64(30-i)*1000,
			Utilisation: fairness.New(0.2+0.5*x, 0.1+0.4*x).With(fairness.Disk, 0.6+0.3*x*x),
			Jain:        1 - 0.3*x*(1-x), RunningApps: 1 + i%3, PendingDefault: i % 4, PendingAltruistic: i % 5,
			Yielded: 0.3 * x, HeldOverShare: 0.2 * x, AltruisticPerSec: float64(i % 7), BehindShare: i % 3})
	}
	return out
}

func (f *fakeBackend) AppTimeline(appID string) ([]AppSample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.apps {
		if rpc.AppIDString(a.report.GetApplicationId()) == appID {
			return slices.Clone(a.timeline), nil
		}
	}
	return nil, fmt.Errorf("app %s: %w", appID, ErrNotFound)
}

func (f *fakeBackend) RecordedJobs() []*workload.Job { return f.recorded }

func (f *fakeBackend) AppPlacements(appID string) (Placements, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.apps {
		if rpc.AppIDString(a.report.GetApplicationId()) == appID {
			return a.placements, nil
		}
	}
	return Placements{}, fmt.Errorf("app %s: %w", appID, ErrNotFound)
}

func (f *fakeBackend) AppHistory(appID string) (*am.History, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.apps {
		if rpc.AppIDString(a.report.GetApplicationId()) == appID {
			if a.history == nil {
				return nil, ErrNoHistory
			}
			h := *a.history
			return &h, nil
		}
	}
	return nil, fmt.Errorf("app %s: %w", appID, ErrNotFound)
}

// newTestHandler serves the fake with the test clock and the admin key;
// the log goes to logs.
func newTestHandler(f *fakeBackend, secret string, logs *syncBuffer) http.Handler {
	log := zerolog.Nop()
	if logs != nil {
		log = zerolog.New(logs)
	}
	return newServer(f, Config{AdminSecret: secret, Log: log, WhatIf: (&fakeWhatIf{}).run, SchedulerLayout: LayoutFair,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write([]byte("loom_apps_running 1\n"))
		})}, fakeNow).handler()
}

// syncBuffer is a log sink safe across goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
