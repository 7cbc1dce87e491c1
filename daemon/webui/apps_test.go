package webui

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
)

var (
	wantApp1 = dao.App{ID: "application_1700000000000_0001", User: "alice", Name: "tpch-q5", Queue: "default",
		State: "RUNNING", FinalStatus: "UNDEFINED", Progress: 25, TrackingUI: "ApplicationMaster",
		TrackingURL: "http://nm1:7001/", ClusterID: 1700000000000, ApplicationType: "LOOM", ApplicationTags: "tpch,q5",
		StartedTime: 1700000010000, LaunchTime: 1700000011000, ElapsedTime: 90000,
		AMContainerLogs:   "http://nm1:8042/node/containerlogs/container_1700000000000_0001_01_000001/alice",
		AMHostHTTPAddress: "nm1:8042", AMRPCAddress: "nm1:7000", AllocatedMB: 6144, AllocatedVCores: 3,
		RunningContainers: 3, MemorySeconds: 123456, VcoreSeconds: 60, LogAggregation: "DISABLED"}
	wantApp2 = dao.App{ID: "application_1700000000000_0002", User: "bob", Name: "nightly-etl", Queue: "etl",
		State: "FINISHED", FinalStatus: "SUCCEEDED", Progress: 100, TrackingUI: "History", ClusterID: 1700000000000,
		ApplicationType: "MAPREDUCE", ApplicationTags: "nightly", StartedTime: 1700000020000, LaunchTime: 1700000021000,
		FinishedTime: 1700000050000, ElapsedTime: 30000, LogAggregation: "DISABLED"}
	wantApp2WithAM = func() dao.App {
		a := wantApp2
		a.AMHostHTTPAddress = "nm2:8042"
		a.AMContainerLogs = "http://nm2:8042/node/containerlogs/container_1700000000000_0002_01_000001/bob"
		return a
	}()
	wantApps = []dao.App{wantApp1, wantApp2,
		{ID: "application_1700000000000_0003", User: "alice", Name: "shell", Queue: "etl", State: "ACCEPTED",
			FinalStatus: "UNDEFINED", TrackingUI: "UNASSIGNED", ClusterID: 1700000000000, ApplicationType: "YARN",
			StartedTime: 1700000030000, LaunchTime: 1700000031000, ElapsedTime: 70000, LogAggregation: "DISABLED"},
		{ID: "application_1700000000000_0004", User: "carol", Name: "spark-pi", Queue: "default", State: "KILLED",
			FinalStatus: "KILLED", Progress: 100, TrackingUI: "History", ClusterID: 1700000000000, ApplicationType: "SPARK",
			StartedTime: 1700000040000, LaunchTime: 1700000041000, FinishedTime: 1700000060000, ElapsedTime: 20000,
			LogAggregation: "DISABLED"},
		{ID: "application_1700000000000_0005", User: "dave", Name: "broken", Queue: "default", State: "FAILED",
			FinalStatus: "FAILED", Progress: 100, TrackingUI: "History", Diagnostics: "AM exited with code 1",
			ClusterID: 1700000000000, ApplicationType: "LOOM", StartedTime: 1700000045000, LaunchTime: 1700000046000,
			FinishedTime: 1700000070000, ElapsedTime: 25000, LogAggregation: "DISABLED"},
	}
	wantAttempts1 = dao.AppAttemptsResponse{AppAttempts: dao.AppAttemptList{AppAttempt: []dao.AppAttempt{{ID: 1,
		StartTime: 1700000010500, ContainerID: "container_1700000000000_0001_01_000001", NodeHTTPAddress: "nm1:8042",
		NodeID: "nm1:45454", LogsLink: "http://nm1:8042/node/containerlogs/container_1700000000000_0001_01_000001/alice",
		AppAttemptID: "appattempt_1700000000000_0001_000001", AppAttemptState: "RUNNING"}}}}
	wantAttempts3 = dao.AppAttemptsResponse{AppAttempts: dao.AppAttemptList{AppAttempt: []dao.AppAttempt{{ID: 1,
		StartTime: 1700000030500, AppAttemptID: "appattempt_1700000000000_0003_000001", AppAttemptState: "SCHEDULED"}}}}
	wantDAG = dao.DAG{App: "application_1700000000000_0001", Job: "tpch-q5", Attempt: 1, State: "RUNNING",
		StartUnixMs: 1700000012000, UpdatedUnixMs: 1700000099000, Stages: []dao.Stage{
			{Name: "scan", Tasks: 4, Parents: []string{}, DurationMs: 8000, Demand: fairness.New(2048, 1).With(fairness.Disk, 40),
				State: "SUCCEEDED", Succeeded: 4, Failed: 1},
			{Name: "dim", Tasks: 1, Parents: []string{}, DurationMs: 900, Demand: fairness.New(1024, 1), State: "SUCCEEDED", Succeeded: 1},
			{Name: "join", Tasks: 2, Parents: []string{"scan", "dim"}, DurationMs: 3000, Demand: fairness.New(4096, 1),
				State: "RUNNING", Running: 2},
			{Name: "agg", Tasks: 1, Parents: []string{"join"}, DurationMs: 1500, Demand: fairness.New(2048, 1), State: "WAITING"},
		}}
	wantTasks = dao.Tasks{App: "application_1700000000000_0001", StartUnixMs: 1700000012000, Tasks: []dao.Task{
		{Stage: "scan", Task: 0, Container: 2, Node: "nm1:45454", StartMs: 1000, EndMs: 9000, StartUnixMs: 1700000013000, EndUnixMs: 1700000021000, Kind: "DEFAULT", State: "SUCCEEDED"},
		{Stage: "scan", Task: 1, Container: 3, Node: "nm2:45454", StartMs: 1000, EndMs: 9500, StartUnixMs: 1700000013000, EndUnixMs: 1700000021500, Kind: "DEFAULT", State: "SUCCEEDED"},
		{Stage: "scan", Task: 2, Container: 4, Node: "nm1:45454", StartMs: 1200, EndMs: 4000, StartUnixMs: 1700000013200, EndUnixMs: 1700000016000, Kind: "ALTRUISTIC", State: "FAILED"},
		{Stage: "dim", Task: 0, Container: 5, Node: "nm2:45454", StartMs: 1500, EndMs: 2400, StartUnixMs: 1700000013500, EndUnixMs: 1700000014400, Kind: "ALTRUISTIC", State: "SUCCEEDED"},
		{Stage: "scan", Task: 3, Container: 6, Node: "nm2:45454", StartMs: 2500, EndMs: 10500, StartUnixMs: 1700000014500, EndUnixMs: 1700000022500, Kind: "ALTRUISTIC", State: "SUCCEEDED"},
		{Stage: "scan", Task: 2, Attempt: 1, Container: 7, Node: "nm1:45454", StartMs: 4100, EndMs: 12000, StartUnixMs: 1700000016100, EndUnixMs: 1700000024000, Kind: "DEFAULT", State: "SUCCEEDED"},
		{Stage: "join", Task: 0, Container: 8, Node: "nm1:45454", StartMs: 12100, StartUnixMs: 1700000024100, Kind: "DEFAULT", State: "RUNNING"},
		{Stage: "join", Task: 1, Container: 9, Node: "nm2:45454", StartMs: 12300, StartUnixMs: 1700000024300, Kind: "ALTRUISTIC", State: "RUNNING"},
	}}
)

// appIDs lists the apps of GET apps by their sequence numbers.
func appIDs(t *testing.T, h http.Handler, query string) []string {
	t.Helper()
	a := serve(h, http.MethodGet, "/ws/v1/cluster/apps?"+query, "")
	if a.code != http.StatusOK {
		t.Fatalf("%s: status %d: %s", query, a.code, a.body)
	}
	var r dao.AppsResponse
	decode(t, a, &r)
	ids := []string{}
	if r.Apps != nil {
		for _, app := range r.Apps.App {
			ids = append(ids, strings.TrimPrefix(app.ID, "application_1700000000000_"))
		}
	}
	return ids
}

func TestAppsFilters(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"0001", "0002", "0003", "0004", "0005"}},
		{"states=running", []string{"0001"}},
		{"states=RUNNING,accepted", []string{"0001", "0003"}},
		{"states=RUNNING&states=KILLED", []string{"0001", "0004"}},
		{"state=KILLED", []string{"0004"}},
		{"states=FINISHED&state=failed", []string{"0002", "0005"}},
		{"states=NEW,SUBMITTED", []string{}},
		{"finalStatus=SUCCEEDED", []string{"0002"}},
		{"finalStatus=undefined", []string{"0001", "0003"}},
		{"user=alice", []string{"0001", "0003"}},
		{"user=nobody", []string{}},
		{"queue=etl", []string{"0002", "0003"}},
		{"queue=root.etl", []string{"0002", "0003"}},
		{"limit=2", []string{"0001", "0002"}},
		{"limit=2&user=alice", []string{"0001", "0003"}},
		{"startedTimeBegin=1700000030000", []string{"0003", "0004", "0005"}},
		{"startedTimeEnd=1700000020000", []string{"0001", "0002"}},
		{"startedTimeBegin=1700000015000&startedTimeEnd=1700000035000", []string{"0002", "0003"}},
		{"finishedTimeBegin=1700000055000", []string{"0004", "0005"}},
		// As in YARN, an unfinished app's finish time is 0, inside any
		// range that starts at 0.
		{"finishedTimeEnd=1700000055000", []string{"0001", "0002", "0003"}},
		{"finishedTimeBegin=1700000040000&finishedTimeEnd=1700000065000", []string{"0002", "0004"}},
		{"applicationTypes=loom", []string{"0001", "0005"}},
		{"applicationTypes=SPARK,mapreduce", []string{"0002", "0004"}},
		{"applicationTypes=spark&applicationTypes=yarn", []string{"0003", "0004"}},
		{"applicationTags=Q5", []string{"0001"}},
		{"applicationTags=nightly,tpch", []string{"0001", "0002"}},
		{"name=spark-pi", []string{"0004"}},
		{"states=running,finished&user=bob", []string{"0002"}},
		{"user.name=eve&states=", []string{"0001", "0002", "0003", "0004", "0005"}},
	} {
		if got := appIDs(t, h, tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("%q: apps %v, want %v", tc.query, got, tc.want)
		}
	}
}

func TestAppsBadFilters(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	for _, tc := range []struct{ query, param string }{
		{"states=BOGUS", "states"},
		{"states=RUNNING,,nope", "states"},
		{"state=nope", "state"},
		{"finalStatus=DONE", "finalStatus"},
		{"limit=-1", "limit"},
		{"limit=0", "limit"},
		{"limit=abc", "limit"},
		{"startedTimeBegin=abc", "startedTimeBegin"},
		{"startedTimeEnd=-5", "startedTimeEnd"},
		{"finishedTimeBegin=x", "finishedTimeBegin"},
		{"finishedTimeEnd=1.5", "finishedTimeEnd"},
		{"startedTimeBegin=10&startedTimeEnd=5", "startedTimeEnd"},
		{"finishedTimeBegin=10&finishedTimeEnd=5", "finishedTimeEnd"},
	} {
		a := serve(h, http.MethodGet, "/ws/v1/cluster/apps?"+tc.query, "")
		re := remoteException(t, a, http.StatusBadRequest, "BadRequestException")
		if !strings.HasPrefix(re.Message, tc.param) {
			t.Errorf("%q: message %q does not start with the parameter %s", tc.query, re.Message, tc.param)
		}
	}
	a := serve(h, http.MethodGet, "/ws/v1/cluster/nodes?states=RUNNING,BOGUS", "")
	if re := remoteException(t, a, http.StatusBadRequest, "BadRequestException"); !strings.Contains(re.Message, `states: invalid node state "BOGUS"`) {
		t.Errorf("nodes: %q", re.Message)
	}
}

func TestErrors(t *testing.T) {
	f := writableBackend()
	h := newTestHandler(f, adminKey, nil)
	for _, tc := range []struct {
		method, path, body string
		status             int
		exception, message string
	}{
		{"GET", "/ws/v1/cluster/apps/application_1700000000000_0099", "", 404, "NotFoundException",
			"Application with id 'application_1700000000000_0099' doesn't exist in RM."},
		{"GET", "/ws/v1/cluster/apps/application_1700000000000_0099/state", "", 404, "NotFoundException", "application_1700000000000_0099"},
		{"GET", "/ws/v1/cluster/apps/application_1700000000000_0099/appattempts", "", 404, "NotFoundException", "application_1700000000000_0099"},
		{"PUT", "/ws/v1/cluster/apps/application_1700000000000_0099/state", `{"state":"KILLED"}`, 404, "NotFoundException", "application_1700000000000_0099"},
		{"GET", "/ws/v1/cluster/apps/bogus", "", 400, "BadRequestException", `Invalid ApplicationId: "bogus" is not an application id`},
		{"GET", "/ws/v1/cluster/apps/application_x_1/state", "", 400, "BadRequestException", "Invalid ApplicationId"},
		{"PUT", "/ws/v1/cluster/apps/application_1700000000000_0001/state", `{"state":"RUNNING"}`, 400, "BadRequestException",
			`state: only 'KILLED' is allowed as a target state, got "RUNNING"`},
		{"PUT", "/ws/v1/cluster/apps/application_1700000000000_0001/state", `{"state":7}`, 400, "BadRequestException",
			"state: expected a string, got number at offset 10"},
		{"PUT", "/ws/v1/cluster/apps/application_1700000000000_0001/state", `{}`, 400, "BadRequestException", "state is missing"},
		{"PUT", "/ws/v1/cluster/apps/application_1700000000000_0001/state", `{"state":`, 400, "BadRequestException", "malformed JSON"},
		{"GET", "/ws/v1/cluster/nodes/nm9:45454", "", 404, "NotFoundException", "nodeId, nm9:45454, is not found"},
		{"GET", "/ws/v1/cluster/nope", "", 404, "NotFoundException", "no resource at /ws/v1/cluster/nope"},
		{"GET", "/ws/v1/nope", "", 404, "NotFoundException", "/ws/v1/nope"},
		{"DELETE", "/ws/v1/cluster/apps", "", 405, "NotAllowedException", "DELETE is not allowed on /ws/v1/cluster/apps; allowed: GET, HEAD, POST"},
		{"POST", "/ws/v1/cluster/metrics", "", 405, "NotAllowedException", "POST is not allowed"},
		{"GET", "/ws/v1/cluster/apps/new-application", "", 405, "NotAllowedException", "allowed: POST"},
		{"POST", "/ws/v1/cluster/apps/application_1700000000000_0001/state", "", 405, "NotAllowedException", "allowed: GET, HEAD, PUT"},
		{"PUT", "/ws/v1/loom/scheduler", "", 405, "NotAllowedException", "allowed: GET, HEAD"},
		{"GET", "/ws/v1/loom/apps/application_1700000000000_0003/dag", "", 404, "NotFoundException",
			"app application_1700000000000_0003 has no DAG history: it was not run by Loom's DAG AM (a stock YARN AM writes none)"},
		{"GET", "/ws/v1/loom/apps/application_1700000000000_0003/tasks", "", 404, "NotFoundException", "has no DAG history"},
		{"GET", "/ws/v1/loom/apps/application_1700000000000_0099/dag", "", 404, "NotFoundException", "app with id: application_1700000000000_0099 not found"},
		{"GET", "/ws/v1/loom/apps/application_1700000000000_0099/timeline", "", 404, "NotFoundException", "app with id: application_1700000000000_0099 not found"},
		{"GET", "/ws/v1/loom/apps/application_1700000000000_0099/placements", "", 404, "NotFoundException", "app with id: application_1700000000000_0099 not found"},
		{"GET", "/ws/v1/loom/apps/x/placements", "", 400, "BadRequestException", "Invalid ApplicationId"},
		{"GET", "/ws/v1/loom/apps/x/dag", "", 400, "BadRequestException", "Invalid ApplicationId"},
	} {
		a := serve(h, tc.method, tc.path, tc.body, "Content-Type", "application/json")
		re := remoteException(t, a, tc.status, tc.exception)
		if !strings.Contains(re.Message, tc.message) {
			t.Errorf("%s %s: message %q does not say %q", tc.method, tc.path, re.Message, tc.message)
		}
		if tc.status == 405 && a.header.Get("Allow") == "" {
			t.Errorf("%s %s: a 405 without Allow", tc.method, tc.path)
		}
	}
}

// TestBackendFailure: an error the web cannot place is the server's, and
// still a RemoteException.
func TestBackendFailure(t *testing.T) {
	f := newFakeBackend()
	f.failWith = rpc.Errorf(rpc.ClassStandby, "this RM is standby")
	h := newTestHandler(f, adminKey, nil)
	a := serve(h, http.MethodGet, "/ws/v1/cluster/apps", "")
	if a.code != 500 {
		t.Fatalf("status %d", a.code)
	}
	var e dao.RemoteExceptionResponse
	decode(t, a, &e)
	want := dao.RemoteException{Exception: "StandbyException", Message: "this RM is standby", JavaClassName: rpc.ClassStandby}
	if e.RemoteException != want {
		t.Errorf("%+v, want %+v", e.RemoteException, want)
	}
	f.failWith = rpc.Errorf(rpc.ClassAccessControl, "User eve cannot perform operation VIEW_APP")
	remoteException(t, serve(h, http.MethodGet, "/ws/v1/cluster/apps/application_1700000000000_0001", ""), 403, "ForbiddenException")
}

// TestCaller: every Backend call carries the REST caller.
func TestCaller(t *testing.T) {
	f := newFakeBackend()
	h := newTestHandler(f, adminKey, nil)
	remote := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 5555}
	for _, tc := range []struct {
		path, method, route, user string
	}{
		{"/ws/v1/cluster/apps?user.name=eve", "GetApplications", "getApps", "eve"},
		{"/ws/v1/cluster/apps", "GetApplications", "getApps", "dr.who"},
		{"/ws/v1/cluster/metrics?user.name=ops", "GetClusterMetrics", "getClusterMetrics", "ops"},
		{"/ws/v1/cluster/apps/application_1700000000000_0001/appattempts?user.name=al", "GetApplicationAttempts", "getAppAttempts", "al"},
		{"/ws/v1/cluster/scheduler", "GetQueueInfo", "getSchedulerInfo", "dr.who"},
		{"/ws/v1/cluster/nodes/nm1:45454?user.name=n", "GetClusterNodes", "getNode", "n"},
	} {
		if a := serve(h, http.MethodGet, tc.path, ""); a.code != 200 {
			t.Fatalf("%s: %d %s", tc.path, a.code, a.body)
		}
		ci := f.lastCall(tc.method)
		if ci == nil {
			t.Fatalf("%s: no %s call", tc.path, tc.method)
		}
		want := rpc.CallInfo{User: tc.user, Protocol: "REST", Method: tc.route, Remote: remote}
		if d := cmp.Diff(want, *ci); d != "" {
			t.Errorf("%s: call info (-want +got):\n%s", tc.path, d)
		}
	}
}

func TestKill(t *testing.T) {
	f := writableBackend()
	h := newTestHandler(f, adminKey, nil)
	path := "/ws/v1/cluster/apps/application_1700000000000_0001/state"
	a := serve(h, http.MethodPut, path+"?user.name=alice", `{"state":"KILLED"}`, "Content-Type", "application/json")
	if a.code != http.StatusAccepted || string(a.body) != `{"state":"KILLED"}` || a.contentType() != "application/json" {
		t.Fatalf("first PUT: %d %q %s", a.code, a.contentType(), a.body)
	}
	if loc := a.header.Get("Location"); loc != "http://example.com"+path {
		t.Errorf("Location %q", loc)
	}
	if len(f.kills) != 1 || f.kills[0].GetDiagnostics() != "killed through the web service by alice from 192.0.2.7" ||
		rpc.AppIDString(f.kills[0].GetApplicationId()) != "application_1700000000000_0001" {
		t.Errorf("kills %v", f.kills)
	}
	if ci := f.lastCall("ForceKillApplication"); ci.User != "alice" || ci.Method != "updateAppState" {
		t.Errorf("kill call %+v", ci)
	}
	// Again: the app is over; YARN answers 200 with its state.
	a = serve(h, http.MethodPut, path, `{"state":"killed"}`)
	if a.code != http.StatusOK || string(a.body) != `{"state":"KILLED"}` {
		t.Errorf("second PUT: %d %s", a.code, a.body)
	}
	if len(f.kills) != 1 {
		t.Errorf("a finished app was killed again")
	}
	a = serve(h, http.MethodPut, "/ws/v1/cluster/apps/application_1700000000000_0002/state", `{"state":"KILLED"}`)
	if a.code != http.StatusOK || string(a.body) != `{"state":"FINISHED"}` {
		t.Errorf("finished app: %d %s", a.code, a.body)
	}
	a = serve(h, http.MethodGet, path, "")
	if string(a.body) != `{"state":"KILLED"}` {
		t.Errorf("state after the kill: %s", a.body)
	}
}
