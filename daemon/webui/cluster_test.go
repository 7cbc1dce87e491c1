package webui

import (
	"math"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
)

func intp(n int) *int { return &n }

// The expected documents below are written out by hand from the fake
// cluster in fake_test.go.

var wantClusterInfo = dao.ClusterInfoResponse{ClusterInfo: dao.ClusterInfo{ID: 1700000000000, StartedOn: 1700000000000,
	State: "STARTED", HAState: "ACTIVE", ResourceManagerVersion: "0.9.0-test",
	ResourceManagerBuildVersion: "loom 0.9.0-test", HadoopVersion: "0.9.0-test", HadoopBuildVersion: "loom 0.9.0-test",
	RMStateStoreName:           "org.apache.hadoop.yarn.server.resourcemanager.recovery.NullRMStateStore",
	HAZooKeeperConnectionState: "Could not find leader elector. Verify both HA and automatic failover are enabled."}}

var wantMetrics = dao.ClusterMetricsResponse{ClusterMetrics: dao.ClusterMetrics{
	AppsSubmitted: 5, AppsCompleted: 1, AppsPending: 1, AppsRunning: 1, AppsFailed: 1, AppsKilled: 1,
	AvailableMB: 24576, AllocatedMB: 8192, TotalMB: 32768,
	AvailableVirtualCores: 12, AllocatedVirtualCores: 4, TotalVirtualCores: 16,
	ContainersAllocated: 3, ContainersPending: 5,
	TotalNodes: 3, ActiveNodes: 2, LostNodes: 1}}

// fairSchedulerResponse is /ws/v1/cluster/scheduler in the
// FairScheduler's layout, for decoding.
type fairSchedulerResponse struct {
	Scheduler fairSchedulerWrapper `json:"scheduler" xml:"scheduler"`
}

type fairSchedulerWrapper struct {
	SchedulerInfo dao.FairSchedulerInfo `json:"schedulerInfo" xml:"schedulerInfo"`
}

var wantScheduler = func() fairSchedulerResponse {
	cluster := dao.Resource{Memory: 32768, VCores: 16}
	return fairSchedulerResponse{Scheduler: fairSchedulerWrapper{SchedulerInfo: dao.FairSchedulerInfo{
		Type: "fairScheduler",
		RootQueue: dao.FairQueue{QueueName: "root", Weight: 1, SchedulingPolicy: "carbyne", MaxApps: math.MaxInt32,
			MaxResources: cluster, UsedResources: dao.Resource{Memory: 8192, VCores: 4}, SteadyFairResources: cluster,
			FairResources: dao.Resource{Memory: 16384, VCores: 8}, DemandResources: dao.Resource{Memory: 20480, VCores: 6},
			ClusterResources: cluster, AllocatedContainers: 3, PendingContainers: 5,
			ChildQueues: &dao.QueueList{Queue: []dao.FairQueue{
				{Type: "fairSchedulerLeafQueueInfo", QueueName: "root.default", Weight: 1, SchedulingPolicy: "carbyne",
					MaxApps: math.MaxInt32, MaxResources: cluster, UsedResources: dao.Resource{Memory: 6144, VCores: 3},
					SteadyFairResources: dao.Resource{Memory: 8192, VCores: 4}, FairResources: dao.Resource{Memory: 16384, VCores: 8},
					DemandResources:  dao.Resource{Memory: 20480, VCores: 6},
					ClusterResources: cluster, AllocatedContainers: 3, PendingContainers: 5,
					NumActiveApps: intp(1), NumPendingApps: intp(0)},
				{Type: "fairSchedulerLeafQueueInfo", QueueName: "root.etl", Weight: 3, SchedulingPolicy: "carbyne",
					MaxApps: math.MaxInt32, MaxResources: cluster, SteadyFairResources: dao.Resource{Memory: 24576, VCores: 12},
					ClusterResources: cluster, NumActiveApps: intp(0), NumPendingApps: intp(1)},
			}}}}}}
}()

var (
	wantNM1 = dao.Node{Rack: "/default-rack", State: "RUNNING", ID: "nm1:45454", NodeHostName: "nm1",
		NodeHTTPAddress: "nm1:8042", LastHealthUpdate: 1700000099000, Version: "loom-test", NumContainers: 2, UsedMemoryMB: 6144,
		AvailMemoryMB: 10240, UsedVirtualCores: 3, AvailableVirtualCores: 5,
		ResourceUtilization: &dao.ResourceUtilization{NodePhysicalMemoryMB: 9000, NodeVirtualMemoryMB: 9500, NodeCPUUsage: 2.5,
			AggregatedContainersPhysicalMemoryMB: 5000, AggregatedContainersVirtualMemoryMB: 7000, ContainersCPUUsage: 1.75},
		UsedResource: dao.Resource{Memory: 6144, VCores: 3}, AvailableResource: dao.Resource{Memory: 10240, VCores: 5},
		TotalResource: dao.Resource{Memory: 16384, VCores: 8}, NodeLabels: []string{"gpu"}}
	wantNM2 = dao.Node{Rack: "/default-rack", State: "RUNNING", ID: "nm2:45454", NodeHostName: "nm2",
		NodeHTTPAddress: "nm2:8042", LastHealthUpdate: 1700000099000, Version: "loom-test", NumContainers: 1, UsedMemoryMB: 2048,
		AvailMemoryMB: 14336, UsedVirtualCores: 1, AvailableVirtualCores: 7,
		UsedResource: dao.Resource{Memory: 2048, VCores: 1}, AvailableResource: dao.Resource{Memory: 14336, VCores: 7},
		TotalResource: dao.Resource{Memory: 16384, VCores: 8}}
	wantNM3 = dao.Node{Rack: "/default-rack", State: "LOST", ID: "nm3:45454", NodeHostName: "nm3",
		NodeHTTPAddress: "nm3:8042", LastHealthUpdate: 1700000099000, Version: "loom-test", AvailMemoryMB: 16384, AvailableVirtualCores: 8,
		AvailableResource: dao.Resource{Memory: 16384, VCores: 8}, TotalResource: dao.Resource{Memory: 16384, VCores: 8}}
)

var wantLoomScheduler = dao.Scheduler{Policy: "carbyne", PAltruism: 0.8, LeftoverOrder: "efficiency-first", LeftoverCap: 2, Recall: 0.25, ShareGrowth: true,
	Capacity: fairness.New(32768, 16).With(fairness.Disk, 1000), Used: fairness.New(8192, 4).With(fairness.Disk, 80),
	Leftover: fairness.New(4096, 2),
	Apps: []dao.AppShare{{ID: "application_1700000000000_0001", Name: "tpch-q5", Queue: "default", User: "alice",
		Share: fairness.New(16384, 8), DominantShare: 0.5, Usage: fairness.New(6144, 3), DominantUsage: 0.1875,
		Demand: fairness.New(20480, 6), RemainingWork: 120.5, PendingDefault: 2, PendingAltruistic: 3, Running: 3,
		// 3, 0 and 1 of the 4 whose asks named hosts; its AM apart.
		Placements: dao.Placements{NodeLocal: 3, OffSwitch: 1, Any: 1, WithLocality: 4, NodeLocalShare: 0.75, OffSwitchShare: 0.25},
		Promise:    &dao.Promise{SpanMs: 20000, FinishMs: 62000, LimitMs: 50000, Late: true}}},
	Queues: []dao.QueueShare{{Name: "default", Weight: 1, PAltruism: 0.8, Usage: fairness.New(6144, 3), Apps: 1},
		{Name: "etl", Weight: 3, PAltruism: 0.8}},
	// 12, 4 and 4 of 20; the four AMs apart.
	Placements: dao.Placements{NodeLocal: 12, RackLocal: 4, OffSwitch: 4, Any: 4, WithLocality: 20,
		NodeLocalShare: 0.6, RackLocalShare: 0.2, OffSwitchShare: 0.2}}

// TestShapes reads every GET resource and compares the whole document
// with the one written out above.
func TestShapes(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	for _, tc := range []struct {
		path string
		into any // a pointer to a zero value of the document's type
		want any
	}{
		{"/ws/v1/cluster", &dao.ClusterInfoResponse{}, &wantClusterInfo},
		{"/ws/v1/cluster/info", &dao.ClusterInfoResponse{}, &wantClusterInfo},
		{"/ws/v1/cluster/info/", &dao.ClusterInfoResponse{}, &wantClusterInfo},
		{"/ws/v1/cluster/metrics", &dao.ClusterMetricsResponse{}, &wantMetrics},
		{"/ws/v1/cluster/scheduler", &fairSchedulerResponse{}, &wantScheduler},
		{"/ws/v1/cluster/nodes", &dao.NodesResponse{}, &dao.NodesResponse{Nodes: &dao.NodeList{Node: []dao.Node{wantNM1, wantNM2, wantNM3}}}},
		{"/ws/v1/cluster/nodes?states=lost", &dao.NodesResponse{}, &dao.NodesResponse{Nodes: &dao.NodeList{Node: []dao.Node{wantNM3}}}},
		{"/ws/v1/cluster/nodes?states=RUNNING,LOST", &dao.NodesResponse{}, &dao.NodesResponse{Nodes: &dao.NodeList{Node: []dao.Node{wantNM1, wantNM2, wantNM3}}}},
		{"/ws/v1/cluster/nodes?states=DECOMMISSIONED", &dao.NodesResponse{}, &dao.NodesResponse{}},
		{"/ws/v1/cluster/nodes/nm2:45454", &dao.NodeResponse{}, &dao.NodeResponse{Node: wantNM2}},
		{"/ws/v1/cluster/apps", &dao.AppsResponse{}, &dao.AppsResponse{Apps: &dao.AppList{App: wantApps}}},
		{"/ws/v1/cluster/apps/application_1700000000000_0001", &dao.AppResponse{}, &dao.AppResponse{App: wantApp1}},
		{"/ws/v1/cluster/apps/application_1700000000000_0002", &dao.AppResponse{}, &dao.AppResponse{App: wantApp2WithAM}},
		{"/ws/v1/cluster/apps/application_1700000000000_0001/appattempts", &dao.AppAttemptsResponse{}, &wantAttempts1},
		{"/ws/v1/cluster/apps/application_1700000000000_0003/appattempts", &dao.AppAttemptsResponse{}, &wantAttempts3},
		{"/ws/v1/cluster/apps/application_1700000000000_0001/state", &dao.AppState{}, &dao.AppState{State: "RUNNING"}},
		{"/ws/v1/cluster/apps/application_1700000000000_0005/state", &dao.AppState{}, &dao.AppState{State: "FAILED"}},
		{"/ws/v1/loom/scheduler", &dao.Scheduler{}, &wantLoomScheduler},
		{"/ws/v1/loom/scheduler/altruism", &dao.Altruism{}, &dao.Altruism{P: 0.8, Queues: map[string]float64{},
			Changes: []dao.AltruismChange{{UnixMs: 1700000000000, P: 0.8, Who: "config"}}}},
		{"/ws/v1/loom/apps/application_1700000000000_0001/dag", &dao.DAG{}, &wantDAG},
		{"/ws/v1/loom/apps/application_1700000000000_0001/tasks", &dao.Tasks{}, &wantTasks},
		{"/ws/v1/loom/apps/application_1700000000000_0001/timeline", &dao.AppTimeline{}, &dao.AppTimeline{
			App: "application_1700000000000_0001", Samples: []dao.AppSample{
				{UnixMs: 1700000096000, DominantShare: 0.5, DominantUsage: 0.25},
				{UnixMs: 1700000097000, DominantShare: 0.5, DominantUsage: 0.375},
				{UnixMs: 1700000098000, DominantShare: 0.45, DominantUsage: 0.5},
				{UnixMs: 1700000099000, DominantShare: 0.5, DominantUsage: 0.1875}}}},
		{"/ws/v1/loom/apps/application_1700000000000_0003/timeline", &dao.AppTimeline{}, &dao.AppTimeline{
			App: "application_1700000000000_0003", Samples: []dao.AppSample{}}},
		// A finished app's placements: 9, 4 and 3 of 16.
		{"/ws/v1/loom/apps/application_1700000000000_0002/placements", &dao.AppPlacements{}, &dao.AppPlacements{
			App: "application_1700000000000_0002", Placements: dao.Placements{NodeLocal: 9, RackLocal: 4, OffSwitch: 3, Any: 1,
				WithLocality: 16, NodeLocalShare: 0.5625, RackLocalShare: 0.25, OffSwitchShare: 0.1875}}},
		// Only its AM, which asked for no host: no share applies.
		{"/ws/v1/loom/apps/application_1700000000000_0004/placements", &dao.AppPlacements{}, &dao.AppPlacements{
			App: "application_1700000000000_0004", Placements: dao.Placements{Any: 1}}},
		// Accepted, nothing granted yet.
		{"/ws/v1/loom/apps/application_1700000000000_0003/placements", &dao.AppPlacements{}, &dao.AppPlacements{
			App: "application_1700000000000_0003"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			for _, accept := range []string{"", "*/*", "application/json"} {
				a := serve(h, http.MethodGet, tc.path, "", "Accept", accept)
				if a.code != http.StatusOK {
					t.Fatalf("Accept %q: status %d; body %s", accept, a.code, a.body)
				}
				if ct := a.contentType(); ct != "application/json" {
					t.Errorf("Accept %q: Content-Type %q, want application/json", accept, ct)
				}
			}
			a := serve(h, http.MethodGet, tc.path, "")
			decode(t, a, tc.into)
			if d := cmp.Diff(tc.want, tc.into); d != "" {
				t.Errorf("document differs (-want +got):\n%s", d)
			}
		})
	}
}

// TestRawShapes checks what the decoded structs cannot: YARN's null for
// an empty list, the names of the resource kinds, HEAD.
func TestRawShapes(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	for _, tc := range []struct{ method, path, want string }{
		{http.MethodGet, "/ws/v1/cluster/apps?user=nobody", `{"apps":null}`},
		{http.MethodGet, "/ws/v1/cluster/nodes?states=SHUTDOWN", `{"nodes":null}`},
		{http.MethodGet, "/ws/v1/cluster/apps/application_1700000000000_0004/state", `{"state":"KILLED"}`},
		{http.MethodGet, "/ws/v1/loom/apps/application_1700000000000_0001/timeline?x=1",
			`{"app":"application_1700000000000_0001","samples":[{"unixMs":1700000096000,"dominantShare":0.5,"dominantUsage":0.25},` +
				`{"unixMs":1700000097000,"dominantShare":0.5,"dominantUsage":0.375},{"unixMs":1700000098000,"dominantShare":0.45,"dominantUsage":0.5},` +
				`{"unixMs":1700000099000,"dominantShare":0.5,"dominantUsage":0.1875}]}`},
		{http.MethodGet, "/ws/v1/loom/apps/application_1700000000000_0001/placements",
			`{"app":"application_1700000000000_0001","placements":{"nodeLocal":3,"rackLocal":0,"offSwitch":1,"any":1,` +
				`"withLocality":4,"nodeLocalShare":0.75,"rackLocalShare":0,"offSwitchShare":0.25}}`},
		{http.MethodHead, "/ws/v1/cluster/info", ``},
	} {
		a := serve(h, tc.method, tc.path, "")
		if a.code != http.StatusOK || string(a.body) != tc.want {
			t.Errorf("%s %s: %d %s, want 200 %s", tc.method, tc.path, a.code, a.body, tc.want)
		}
	}
	// Vectors keep YARN's resource names.
	a := serve(h, http.MethodGet, "/ws/v1/loom/scheduler", "")
	var raw map[string]any
	decode(t, a, &raw)
	want := map[string]any{"memory-mb": 32768.0, "vcores": 16.0, "loom.io/disk": 1000.0}
	if d := cmp.Diff(want, raw["capacity"]); d != "" {
		t.Errorf("capacity (-want +got):\n%s", d)
	}
}

func TestTimeline(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	a := serve(h, http.MethodGet, "/ws/v1/loom/timeline", "")
	var tl dao.Timeline
	decode(t, a, &tl)
	if len(tl.Samples) != 30 {
		t.Fatalf("%d samples, want 30", len(tl.Samples))
	}
	want := dao.Sample{UnixMs: 1700000070000, Utilisation: fairness.New(0.2, 0.1).With(fairness.Disk, 0.6), Jain: 1, RunningApps: 1}
	if d := cmp.Diff(want, tl.Samples[0]); d != "" {
		t.Errorf("first sample (-want +got):\n%s", d)
	}
	if last := tl.Samples[29]; last.UnixMs != 1700000099000 || last.RunningApps != 3 || last.PendingDefault != 1 || last.PendingAltruistic != 4 {
		t.Errorf("last sample %+v", last)
	}
}

// TestNonFinite: a share of a resource the cluster lacks is +Inf, which
// JSON cannot carry; the answer must still be JSON.
func TestNonFinite(t *testing.T) {
	f := newFakeBackend()
	f.sched.Apps[0].DominantShare = math.Inf(1)
	f.sched.Apps[0].Share[fairness.GPU] = math.Inf(1)
	f.sched.PAltruism = math.NaN()
	a := serve(newTestHandler(f, adminKey, nil), http.MethodGet, "/ws/v1/loom/scheduler", "")
	var s dao.Scheduler
	decode(t, a, &s)
	if a.code != 200 || s.Apps[0].DominantShare != 0 || s.Apps[0].Share[fairness.GPU] != 0 || s.PAltruism != 0 {
		t.Errorf("%d %s", a.code, a.body)
	}
}
