package webui

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
)

// The queue tree of these tests, on the fake's cluster of 32768 MB and 16
// vcores (and 1000 of disk):
//
//	root                     weight 1  max the cluster         policy drf
//	├── root.eng             weight 3  min 16384/8  max 24576/12  drf
//	│   ├── root.eng.etl     weight 2  min 12288/4  max 18432/8   fifo, 10 apps at most, P(Altruism) 0.5 (override)
//	│   └── root.eng.adhoc   weight 1  min 4096/4   max 24576/12  fair
//	└── root.ads             weight 1  min 8192/4   max the cluster, fair, 5 apps at most
//
// The fake's one running app (application _0001: 6144 MB, 3 vcores in 3
// containers, 5 asks pending, a share of 16384/8, a demand of 20480/6)
// runs in etl; _0003 (ACCEPTED) waits in adhoc; _0002 (FINISHED) was in
// ads; _0004 and _0005 (KILLED, FAILED) were in etl.
func treeQueues(cluster fairness.Vector) []QueueShare {
	used, share, demand := fairness.New(6144, 3), fairness.New(16384, 8), fairness.New(20480, 6)
	return []QueueShare{
		{Name: "root", Path: "root", Weight: 1, PAltruism: 0.8, Usage: used, Apps: 2, Share: share, Max: cluster,
			Demand: demand, Policy: "drf"},
		{Name: "eng", Path: "root.eng", Parent: "root", Weight: 3, PAltruism: 0.8, Usage: used, Apps: 2, Share: share,
			Min: fairness.New(16384, 8), Max: fairness.New(24576, 12), Demand: demand, Policy: "drf",
			SubmitACL: "alice,bob eng", AdminACL: "yarn"},
		{Name: "etl", Path: "root.eng.etl", Parent: "root.eng", Leaf: true, Weight: 2, PAltruism: 0.5, Override: true,
			Usage: used, Apps: 1, Share: share, Min: fairness.New(12288, 4), Max: fairness.New(18432, 8), Demand: demand,
			MaxRunningApps: 10, Policy: "fifo"},
		{Name: "adhoc", Path: "root.eng.adhoc", Parent: "root.eng", Leaf: true, Weight: 1, PAltruism: 0.8, Apps: 1,
			Min: fairness.New(4096, 4), Max: fairness.New(24576, 12), Policy: "fair"},
		{Name: "ads", Path: "root.ads", Parent: "root", Leaf: true, Weight: 1, PAltruism: 0.8,
			Min: fairness.New(8192, 4), Max: cluster, MaxRunningApps: 5, Policy: "fair"},
	}
}

// treeBackend is the fake with the tree above; apps name their queue as
// name makes of its full path (the Fair Scheduler's path, the Capacity
// Scheduler's leaf name).
func treeBackend(name func(path string) string) *fakeBackend {
	f := newFakeBackend()
	f.sched.Queues = treeQueues(f.sched.Capacity)
	where := map[int32]string{1: "root.eng.etl", 2: "root.ads", 3: "root.eng.adhoc", 4: "root.eng.etl", 5: "root.eng.etl"}
	for _, a := range f.apps {
		a.report.Queue = proto.String(name(where[a.report.GetApplicationId().GetId()]))
	}
	f.sched.Apps[0].Queue = name("root.eng.etl")
	f.rpcQueues = []string{name("root.eng.etl"), name("root.eng.adhoc"), name("root.ads")}
	return f
}

func fullPath(p string) string { return p }
func leafName(p string) string { return p[strings.LastIndexByte(p, '.')+1:] }

// TestQueueTreeFair: the Fair Scheduler's layout nests the tree under
// rootQueue's childQueues, each queue by its full path. Hand-worked:
// steady shares split the cluster by weight, eng 3/4 (24576/12), ads 1/4
// (8192/4), then eng's by 2:1, etl 16384/8 and adhoc 8192/4; the one
// running app's 3 containers and 5 asks count in etl, eng and root;
// etl's maxApps is its 10, adhoc's unlimited (2^31-1).
func TestQueueTreeFair(t *testing.T) {
	r := func(mb, v int64) dao.Resource { return dao.Resource{Memory: mb, VCores: v} }
	cluster, zero := r(32768, 16), r(0, 0)
	leaf := "fairSchedulerLeafQueueInfo"
	etl := dao.FairQueue{Type: leaf, QueueName: "root.eng.etl", Weight: 2, SchedulingPolicy: "fifo", MaxApps: 10,
		MinResources: r(12288, 4), MaxResources: r(18432, 8), UsedResources: r(6144, 3), SteadyFairResources: r(16384, 8),
		FairResources: r(16384, 8), DemandResources: r(20480, 6), ClusterResources: cluster, AllocatedContainers: 3,
		PendingContainers: 5, NumActiveApps: intp(1), NumPendingApps: intp(0)}
	adhoc := dao.FairQueue{Type: leaf, QueueName: "root.eng.adhoc", Weight: 1, SchedulingPolicy: "fair", MaxApps: math.MaxInt32,
		MinResources: r(4096, 4), MaxResources: r(24576, 12), UsedResources: zero, SteadyFairResources: r(8192, 4),
		ClusterResources: cluster, NumActiveApps: intp(0), NumPendingApps: intp(1)}
	eng := dao.FairQueue{QueueName: "root.eng", Weight: 3, SchedulingPolicy: "drf", MaxApps: math.MaxInt32,
		MinResources: r(16384, 8), MaxResources: r(24576, 12), UsedResources: r(6144, 3), SteadyFairResources: r(24576, 12),
		FairResources: r(16384, 8), DemandResources: r(20480, 6), ClusterResources: cluster, AllocatedContainers: 3,
		PendingContainers: 5, ChildQueues: &dao.QueueList{Queue: []dao.FairQueue{etl, adhoc}}}
	ads := dao.FairQueue{Type: leaf, QueueName: "root.ads", Weight: 1, SchedulingPolicy: "fair", MaxApps: 5,
		MinResources: r(8192, 4), MaxResources: cluster, SteadyFairResources: r(8192, 4), ClusterResources: cluster,
		NumActiveApps: intp(0), NumPendingApps: intp(0)}
	want := fairSchedulerResponse{Scheduler: fairSchedulerWrapper{SchedulerInfo: dao.FairSchedulerInfo{Type: "fairScheduler",
		RootQueue: dao.FairQueue{QueueName: "root", Weight: 1, SchedulingPolicy: "drf", MaxApps: math.MaxInt32,
			MaxResources: cluster, UsedResources: r(6144, 3), SteadyFairResources: cluster, FairResources: r(16384, 8),
			DemandResources: r(20480, 6), ClusterResources: cluster, AllocatedContainers: 3, PendingContainers: 5,
			ChildQueues: &dao.QueueList{Queue: []dao.FairQueue{eng, ads}}}}}}

	for _, tc := range []struct {
		name  string
		queue func(string) string
	}{{"apps name the full path", fullPath}, {"apps name the leaf", leafName}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHandler(treeBackend(tc.queue), adminKey, nil)
			a := serve(h, http.MethodGet, "/ws/v1/cluster/scheduler", "")
			var got fairSchedulerResponse
			decode(t, a, &got)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("JSON (-want +got):\n%s", d)
			}
			x := serve(h, http.MethodGet, "/ws/v1/cluster/scheduler", "", "Accept", "application/xml")
			var fromXML fairSchedulerResponse
			decodeXMLDocument(t, x.body, &fromXML)
			if d := cmp.Diff(want, fromXML); d != "" {
				t.Errorf("XML (-want +got):\n%s", d)
			}
			for _, s := range []string{
				`<rootQueue><queueName>root</queueName>`,
				`<childQueues><queue><queueName>root.eng</queueName>`,
				`<childQueues><queue xsi:type="fairSchedulerLeafQueueInfo"><queueName>root.eng.etl</queueName>`,
				`<queue xsi:type="fairSchedulerLeafQueueInfo"><queueName>root.ads</queueName>`,
			} {
				if !strings.Contains(string(x.body), s) {
					t.Errorf("the XML lacks %s: %s", s, x.body)
				}
			}
		})
	}
}

// capacitySchedulerDoc is /ws/v1/cluster/scheduler in the
// CapacityScheduler's layout, in JSON or XML.
type capacitySchedulerDoc struct {
	Scheduler capacitySchedulerWrapper `json:"scheduler" xml:"scheduler"`
}

type capacitySchedulerWrapper struct {
	SchedulerInfo dao.CapacitySchedulerInfo `json:"schedulerInfo" xml:"schedulerInfo"`
}

// TestQueueTreeCapacity: the Capacity Scheduler's layout nests the tree
// under schedulerInfo's queues, each queue by its own name and its path,
// percentages by memory (cluster 32768 MB). Hand-worked: eng is
// guaranteed 16384 MB, 50% of root and of the cluster, at most 24576 MB,
// 75%; it holds 6144 MB, 18.75% of the cluster, 37.5% of its guarantee.
// etl is guaranteed 12288 MB, 75% of eng's 16384 and 37.5% of the
// cluster, at most 18432 MB, 75% of eng's 24576 and 56.25% of the
// cluster; its 6144 MB are 50% of its guarantee. adhoc's 4096 MB are 25%
// of eng, 12.5% of the cluster; ads's 8192 MB 25% of root.
func TestQueueTreeCapacity(t *testing.T) {
	maxApps, noLimit, limit, factor := 10, yarnMaxApplications, 100, 1.0
	zero, one, three, five, five2 := 0, 1, 3, 5, 5
	pEtl, pOther := 0.5, 0.8
	etl := dao.CapacityQueue{Type: "capacitySchedulerLeafQueueInfo", QueuePath: "root.eng.etl", QueueName: "etl",
		Capacity: 75, UsedCapacity: 50, MaxCapacity: 75, AbsoluteCapacity: 37.5, AbsoluteMaxCapacity: 56.25,
		AbsoluteUsedCapacity: 18.75, Weight: 2, NumApplications: 1, UsedResources: "<memory:6144, vCores:3>", State: "RUNNING",
		ResourcesUsed: dao.Resource{Memory: 6144, VCores: 3}, NumActiveApplications: &one, NumPendingApplications: &zero,
		NumContainers: &three, AllocatedContainers: &three, ReservedContainers: &zero, PendingContainers: &five,
		MaxApplications: &maxApps, MaxApplicationsPerUser: &maxApps, MaxActiveApplications: &maxApps,
		MaxActiveApplicationsPerUser: &maxApps, UserLimit: &limit, UserLimitFactor: &factor, PAltruism: &pEtl,
		Users: &dao.UserList{User: []dao.QueueUser{{Username: "alice", ResourcesUsed: dao.Resource{Memory: 6144, VCores: 3},
			NumActiveApplications: 1}}}}
	adhoc := dao.CapacityQueue{Type: "capacitySchedulerLeafQueueInfo", QueuePath: "root.eng.adhoc", QueueName: "adhoc",
		Capacity: 25, MaxCapacity: 100, AbsoluteCapacity: 12.5, AbsoluteMaxCapacity: 75, Weight: 1, NumApplications: 1,
		UsedResources: "<memory:0, vCores:0>", State: "RUNNING", NumActiveApplications: &zero, NumPendingApplications: &one,
		NumContainers: &zero, AllocatedContainers: &zero, ReservedContainers: &zero, PendingContainers: &zero,
		MaxApplications: &noLimit, MaxApplicationsPerUser: &noLimit, MaxActiveApplications: &noLimit,
		MaxActiveApplicationsPerUser: &noLimit, UserLimit: &limit, UserLimitFactor: &factor, PAltruism: &pOther,
		Users: &dao.UserList{User: []dao.QueueUser{{Username: "alice", NumPendingApplications: 1}}}}
	eng := dao.CapacityQueue{QueuePath: "root.eng", QueueName: "eng", Capacity: 50, UsedCapacity: 37.5, MaxCapacity: 75,
		AbsoluteCapacity: 50, AbsoluteMaxCapacity: 75, AbsoluteUsedCapacity: 18.75, Weight: 3, NumApplications: 2,
		UsedResources: "<memory:6144, vCores:3>", State: "RUNNING", ResourcesUsed: dao.Resource{Memory: 6144, VCores: 3},
		Queues: &dao.CapacityQueueList{Queue: []dao.CapacityQueue{etl, adhoc}}}
	ads := dao.CapacityQueue{Type: "capacitySchedulerLeafQueueInfo", QueuePath: "root.ads", QueueName: "ads",
		Capacity: 25, MaxCapacity: 100, AbsoluteCapacity: 25, AbsoluteMaxCapacity: 100, Weight: 1,
		UsedResources: "<memory:0, vCores:0>", State: "RUNNING", NumActiveApplications: &zero, NumPendingApplications: &zero,
		NumContainers: &zero, AllocatedContainers: &zero, ReservedContainers: &zero, PendingContainers: &zero,
		MaxApplications: &five2, MaxApplicationsPerUser: &five2, MaxActiveApplications: &five2,
		MaxActiveApplicationsPerUser: &five2, UserLimit: &limit, UserLimitFactor: &factor, PAltruism: &pOther,
		Users: &dao.UserList{User: []dao.QueueUser{}}}

	for _, tc := range []struct {
		name  string
		queue func(string) string
	}{{"apps name the leaf", leafName}, {"apps name the full path", fullPath}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newServer(treeBackend(tc.queue), Config{Log: zerolog.Nop()}, fakeNow).handler()
			var got capacitySchedulerDoc
			decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler", ""), &got)
			info := got.Scheduler.SchedulerInfo
			if info.Type != "capacityScheduler" || info.QueueName != "root" || info.Capacity != 100 || info.MaxCapacity != 100 ||
				info.UsedCapacity != 18.75 {
				t.Errorf("root %+v", info)
			}
			want := &dao.CapacityQueueList{Queue: []dao.CapacityQueue{eng, ads}}
			if d := cmp.Diff(want, info.Queues); d != "" {
				t.Errorf("queues (-want +got):\n%s", d)
			}
			x := serve(h, http.MethodGet, "/ws/v1/cluster/scheduler", "", "Accept", "application/xml")
			if root := xmlRoot(t, x.body); root != "scheduler" {
				t.Errorf("root element <%s>", root)
			}
			var fromXML capacitySchedulerDoc
			decodeXMLDocument(t, x.body, &fromXML)
			if d := cmp.Diff(got, fromXML, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("the XML document differs from the JSON one (-json +xml):\n%s", d)
			}
			for _, s := range []string{
				`<schedulerInfo xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="capacityScheduler">`,
				`<queues><queue><queuePath>root.eng</queuePath><capacity>50.0</capacity>`,
				`<queues><queue xsi:type="capacitySchedulerLeafQueueInfo"><queuePath>root.eng.etl</queuePath>`,
			} {
				if !strings.Contains(string(x.body), s) {
					t.Errorf("the XML lacks %s: %s", s, x.body)
				}
			}
		})
	}
}

// TestQueueTreeLoom: Loom's view lists the tree in its order with each
// queue's depth, guarantee, maximum and share; a leaf carries its
// P(Altruism) and the name overrides take (the full path under the Fair
// Scheduler's layout, its own name under the Capacity Scheduler's), a
// parent none.
func TestQueueTreeLoom(t *testing.T) {
	for _, tc := range []struct {
		layout string
		queue  func(string) string
		etl    string
	}{{LayoutFair, fullPath, "root.eng.etl"}, {LayoutCapacity, leafName, "etl"}} {
		t.Run(tc.layout, func(t *testing.T) {
			f := treeBackend(tc.queue)
			h := newServer(f, Config{Log: zerolog.Nop(), AdminSecret: adminKey, SchedulerLayout: tc.layout, WhatIf: (&fakeWhatIf{}).run},
				fakeNow).handler()
			var got dao.Scheduler
			decode(t, serve(h, http.MethodGet, "/ws/v1/loom/scheduler", ""), &got)
			var rows []string
			for _, q := range got.Queues {
				rows = append(rows, strings.Join([]string{q.Path, q.Parent, strconv.Itoa(q.Depth), q.Queue}, "|"))
			}
			wantRows := []string{"root||0|", "root.eng|root|1|", "root.eng.etl|root.eng|2|" + tc.etl,
				"root.eng.adhoc|root.eng|2|" + tc.queue("root.eng.adhoc"), "root.ads|root|1|" + tc.queue("root.ads")}
			if d := cmp.Diff(wantRows, rows); d != "" {
				t.Fatalf("queues (-want +got):\n%s", d)
			}
			v := func(mb, c float64) *fairness.Vector { x := fairness.New(mb, c); return &x }
			cluster := f.sched.Capacity
			wantEtl := dao.QueueShare{Name: "etl", Weight: 2, PAltruism: 0.5, Override: true, Usage: fairness.New(6144, 3), Apps: 1,
				Path: "root.eng.etl", Parent: "root.eng", Depth: 2, Leaf: true, Queue: tc.etl, Share: v(16384, 8),
				Min: v(12288, 4), Max: v(18432, 8), Demand: v(20480, 6), MaxRunningApps: 10, Policy: "fifo"}
			if d := cmp.Diff(wantEtl, got.Queues[2]); d != "" {
				t.Errorf("etl (-want +got):\n%s", d)
			}
			wantEng := dao.QueueShare{Name: "eng", Weight: 3, Usage: fairness.New(6144, 3), Apps: 2, Path: "root.eng",
				Parent: "root", Depth: 1, Share: v(16384, 8), Min: v(16384, 8), Max: v(24576, 12), Demand: v(20480, 6),
				Policy: "drf", SubmitACL: "alice,bob eng", AdminACL: "yarn"}
			if d := cmp.Diff(wantEng, got.Queues[1]); d != "" {
				t.Errorf("eng (-want +got):\n%s", d)
			}
			if root := got.Queues[0]; *root.Max != cluster || root.Leaf || root.PAltruism != 0 {
				t.Errorf("root %+v", root)
			}

			// Overrides by the leaf's name; a parent takes none.
			var alt dao.Altruism
			decode(t, serve(h, http.MethodGet, "/ws/v1/loom/scheduler/altruism", ""), &alt)
			if d := cmp.Diff(map[string]float64{tc.etl: 0.5}, alt.Queues); d != "" {
				t.Errorf("overrides (-want +got):\n%s", d)
			}
			if a := serve(h, http.MethodGet, "/ws/v1/loom/whatif?queue="+tc.etl, ""); a.code != http.StatusOK {
				t.Errorf("what-if for %s: %d %s", tc.etl, a.code, a.body)
			}
			for _, parent := range []string{"root.eng", "eng", "root"} {
				remoteException(t, serve(h, http.MethodGet, "/ws/v1/loom/whatif?queue="+parent, ""), http.StatusBadRequest, "BadRequestException")
			}
		})
	}
}

// TestQueueTreeShapes: a tree's queue list may come without root and with
// a queue whose parent is not listed; both hang from a root that is the
// cluster.
func TestQueueTreeShapes(t *testing.T) {
	sched := Scheduler{Capacity: fairness.New(1000, 10), Used: fairness.New(100, 1), Queues: []QueueShare{
		{Name: "a", Path: "root.a", Parent: "root", Leaf: true},
		{Name: "b", Path: "root.x.b", Parent: "root.x", Leaf: true},
		{Name: "a", Path: "root.y.a", Parent: "root", Leaf: true},
		{Name: "c", Path: "root.c", Parent: "root"}, // a parent without children
	}}
	tr := newQueueTree(sched)
	if tr == nil || tr.root.Path != "root" || tr.root.Usage != sched.Used || len(tr.root.children) != 4 {
		t.Fatalf("tree %+v", tr)
	}
	for _, tc := range []struct{ queue, want string }{
		{"root.a", "root.a"}, {"a", "root.a"}, {"x.b", "root.x.b"}, {"b", "root.x.b"}, {"root.c", ""}, {"c", ""}, {"nope", ""},
	} {
		got := ""
		if n := tr.leafOf(tc.queue); n != nil {
			got = n.Path
		}
		if got != tc.want {
			t.Errorf("leafOf(%q) = %q, want %q", tc.queue, got, tc.want)
		}
	}
	if tr.byName["a"] != nil {
		t.Errorf("two leaves named a: the name names neither")
	}
	if newQueueTree(Scheduler{Queues: []QueueShare{{Name: "default"}}}) != nil {
		t.Errorf("a flat list made a tree")
	}
}

// TestQueueTreeActivities: with a tree, the scheduler's health and
// activities name a grant's queue by its leaf's full path, however apps
// name it.
func TestQueueTreeActivities(t *testing.T) {
	for _, queue := range []func(string) string{leafName, fullPath} {
		f := treeBackend(queue)
		f.grants = []Grant{{UnixMs: 1700000098000, Node: "nm1:45454", Container: "c1", App: "application_1700000000000_0001",
			Queue: queue("root.eng.etl"), Kind: "DEFAULT", Phase: "in-share", Priority: 1, Resource: fairness.New(1024, 1)}}
		h := newServer(f, Config{Log: zerolog.Nop()}, fakeNow).handler()
		var sched capacitySchedulerDoc
		decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler", ""), &sched)
		if ops := sched.Scheduler.SchedulerInfo.Health.OperationsInfo; len(ops) == 0 || ops[0].Queue != "root.eng.etl" {
			t.Errorf("%s: health %+v", queue("root.eng.etl"), ops)
		}
		var acts dao.ActivitiesResponse
		decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler/activities", ""), &acts)
		if as := acts.Activities.Allocations; len(as) != 1 || as[0].Root.Children[0].Name != "root.eng.etl" {
			t.Errorf("%s: activities %+v", queue("root.eng.etl"), acts.Activities)
		}
		var appActs dao.AppActivitiesResponse
		decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler/app-activities/application_1700000000000_0001", ""), &appActs)
		if as := appActs.AppActivities.Allocations; len(as) != 1 || as[0].QueueName != "root.eng.etl" {
			t.Errorf("%s: app activities %+v", queue("root.eng.etl"), appActs.AppActivities)
		}
	}
}
