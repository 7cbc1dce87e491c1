package webui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
)

type capacitySchedulerResponse struct {
	Scheduler struct {
		SchedulerInfo dao.CapacitySchedulerInfo `json:"schedulerInfo"`
	} `json:"scheduler"`
}

// TestCapacityLayout: with the CapacityScheduler's layout (the default),
// each queue's capacity is its weight's part of the total and its used
// capacity its dominant usage against that. Hand-worked from the fake:
// weights 1 and 3 give 25% and 75%; default holds 6144 MB, 3 cores of
// 32768 MB, 16 cores: 18.75% of the cluster, 75% of its capacity; the
// root holds 8192 MB, 4 cores: 25%.
func TestCapacityLayout(t *testing.T) {
	f := newFakeBackend()
	f.grants = []Grant{{UnixMs: 1700000098500, Node: "nm1:45454", Container: "container_1700000000000_0001_01_000002",
		App: "application_1700000000000_0001", Queue: "default", User: "alice", Kind: "DEFAULT", Phase: "in-share",
		Resource: fairness.New(2048, 1)}}
	h := newServer(f, Config{Log: zerolog.Nop()}, fakeNow).handler()
	var got capacitySchedulerResponse
	decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler", ""), &got)
	info := got.Scheduler.SchedulerInfo
	if info.Type != "capacityScheduler" || info.Capacity != 100 || info.UsedCapacity != 25 || info.QueueName != "root" {
		t.Errorf("root %+v", info)
	}
	if info.Queues == nil || len(info.Queues.Queue) != 2 {
		t.Fatalf("queues %+v", info.Queues)
	}
	zero, one, maxApps := 0, 1, yarnMaxApplications
	three, five := 3, 5
	limit, factor, p := 100, 1.0, 0.8
	want := dao.CapacityQueue{Type: "capacitySchedulerLeafQueueInfo", QueuePath: "root.default", Capacity: 25, UsedCapacity: 75,
		MaxCapacity: 100, AbsoluteCapacity: 25, AbsoluteMaxCapacity: 100, AbsoluteUsedCapacity: 18.75, Weight: 1,
		NumApplications: 1, UsedResources: "<memory:6144, vCores:3>", QueueName: "default", State: "RUNNING",
		ResourcesUsed: dao.Resource{Memory: 6144, VCores: 3}, NumActiveApplications: &one, NumPendingApplications: &zero,
		NumContainers: &three, AllocatedContainers: &three, ReservedContainers: &zero, PendingContainers: &five,
		MaxApplications: &maxApps, MaxApplicationsPerUser: &maxApps, MaxActiveApplications: &maxApps,
		MaxActiveApplicationsPerUser: &maxApps, UserLimit: &limit, UserLimitFactor: &factor, PAltruism: &p,
		Users: &dao.UserList{User: []dao.QueueUser{{Username: "alice", ResourcesUsed: dao.Resource{Memory: 6144, VCores: 3},
			NumActiveApplications: 1}}}}
	if d := cmp.Diff(want, info.Queues.Queue[0]); d != "" {
		t.Errorf("root.default (-want +got):\n%s", d)
	}
	if q := info.Queues.Queue[1]; q.QueueName != "etl" || q.Capacity != 75 || q.UsedCapacity != 0 || *q.NumPendingApplications != 1 {
		t.Errorf("root.etl %+v", q)
	}
	if ops := info.Health.OperationsInfo; len(ops) != 4 || ops[0].Operation != "last-allocation" ||
		ops[0].ContainerID != "container_1700000000000_0001_01_000002" || ops[0].Queue != "root.default" || info.Health.LastRun != 1700000098500 {
		t.Errorf("health %+v", info.Health)
	}
	if d := info.Health.LastRunDetails; len(d) != 3 || d[1].Count != 1 || d[1].Resources != (dao.Resource{Memory: 2048, VCores: 1}) {
		t.Errorf("last run %+v", d)
	}
}

// TestActivities: the latest round's grants on a node, as YARN's
// activity tree, with why each was placed; an app's own; the
// configuration; bad input.
func TestActivities(t *testing.T) {
	f := newFakeBackend()
	h := newServer(f, Config{Log: zerolog.Nop()}, fakeNow).handler()
	var empty dao.ActivitiesResponse
	decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler/activities", ""), &empty)
	if empty.Activities.Diagnostic == "" || len(empty.Activities.Allocations) != 0 {
		t.Errorf("before any grant: %+v", empty)
	}
	f.grants = []Grant{
		{UnixMs: 1700000097000, Node: "nm2:45454", Container: "c1", App: "application_1700000000000_0001", Queue: "default", Kind: "DEFAULT", Phase: "in-share", Priority: 1, Resource: fairness.New(1024, 1)},
		{UnixMs: 1700000098000, Node: "nm1:45454", Container: "c2", App: "application_1700000000000_0001", Queue: "default", Kind: "ALTRUISTIC", Phase: "leftover", Priority: 2, Resource: fairness.New(2048, 1)},
		{UnixMs: 1700000098000, Node: "nm1:45454", Container: "c3", App: "application_1700000000000_0001", Queue: "default", Kind: "DEFAULT", Phase: "in-share", Priority: 1, Resource: fairness.New(1024, 1)},
	}
	var got dao.ActivitiesResponse
	decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler/activities", ""), &got)
	a := got.Activities
	if a.NodeID != "nm1:45454" || a.Timestamp != 1700000098000 || len(a.Allocations) != 2 || a.Allocations[0].UpdatedContainerID != "c2" {
		t.Fatalf("latest round %+v", a)
	}
	app := a.Allocations[0].Root.Children[0].Children[0]
	if app.Name != "application_1700000000000_0001" || app.Diagnostic != "ALTRUISTIC ask served from the leftover after every app's share" ||
		app.Children[0].ContainerID != "c2" || *app.Children[0].RequestPriority != 2 {
		t.Errorf("the path of c2: %+v", app)
	}
	decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler/activities?nodeid=nm2:45454", ""), &got)
	if got.Activities.NodeID != "nm2:45454" || len(got.Activities.Allocations) != 1 || got.Activities.Allocations[0].UpdatedContainerID != "c1" {
		t.Errorf("on nm2: %+v", got.Activities)
	}
	remoteException(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler/activities?nodeid=nosuch:1", ""), http.StatusBadRequest, "BadRequestException")
	remoteException(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler/activities?groupBy=colour", ""), http.StatusBadRequest, "BadRequestException")

	var appActs dao.AppActivitiesResponse
	decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler/app-activities/application_1700000000000_0001?limit=2", ""), &appActs)
	if as := appActs.AppActivities.Allocations; len(as) != 2 || as[0].Children[0].ContainerID != "c3" || as[1].QueueName != "root.default" {
		t.Errorf("app activities %+v", appActs)
	}
	remoteException(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler/app-activities/application_1700000000000_0099", ""), http.StatusNotFound, "NotFoundException")
	remoteException(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler/app-activities/bogus", ""), http.StatusBadRequest, "BadRequestException")
}

// TestSchedulerConf: the configuration the RM gives, in JSON and XML.
func TestSchedulerConf(t *testing.T) {
	f := newFakeBackend()
	conf := []dao.ConfProperty{{Name: "loom.scheduler.policy", Value: "carbyne"}, {Name: "loom.scheduler.p-altruism", Value: "0.8"}}
	h := newServer(f, Config{Log: zerolog.Nop(), SchedulerConf: func() []dao.ConfProperty { return conf }}, fakeNow).handler()
	var got dao.SchedConfResponse
	decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/scheduler-conf", ""), &got)
	if d := cmp.Diff(conf, got.Configuration.Property); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	x := serve(h, http.MethodGet, "/ws/v1/cluster/scheduler-conf", "", "Accept", "application/xml")
	if want := "<configuration><property><name>loom.scheduler.policy</name><value>carbyne</value></property>"; !strings.Contains(string(x.body), want) {
		t.Errorf("XML %s lacks %s", x.body, want)
	}
}
