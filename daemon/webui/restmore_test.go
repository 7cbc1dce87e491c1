package webui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/loomrm/loom/daemon/webui/dao"
)

// TestRESTMoreResources: userinfo, container signals, node resources,
// queue access, delegation tokens and reservations answer as YARN's.
func TestRESTMoreResources(t *testing.T) {
	f := writableBackend()
	h := newTestHandler(f, adminKey, nil)

	var ui dao.ClusterUserInfoResponse
	decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/userinfo?user.name=eve", ""), &ui)
	if ui.ClusterUserInfo.RequestedUser != "eve" {
		t.Errorf("userinfo %+v", ui)
	}

	// A signal reaches the client protocol as the caller; a bad command
	// or id is a 400.
	a := serve(h, http.MethodPost, "/ws/v1/cluster/containers/container_1700000000000_0001_01_000001/signal/graceful_shutdown?user.name=alice", "")
	if a.code != http.StatusOK {
		t.Fatalf("signal: %d %s", a.code, a.body)
	}
	if ci := f.lastCall("SignalToContainer"); ci == nil || ci.User != "alice" {
		t.Errorf("signal call %+v", ci)
	}
	remoteException(t, serve(h, http.MethodPost, "/ws/v1/cluster/containers/container_1700000000000_0001_01_000001/signal/HUP", ""),
		http.StatusBadRequest, "BadRequestException")
	remoteException(t, serve(h, http.MethodPost, "/ws/v1/cluster/containers/nope/signal/GRACEFUL_SHUTDOWN", ""),
		http.StatusBadRequest, "BadRequestException")

	// Node resources: an admin sets them; others are refused; an unknown
	// node is a 404; a bad body a 400.
	var ri dao.ResourceInfoResponse
	decode(t, serve(h, http.MethodPost, "/ws/v1/cluster/nodes/nm1:45454/resource?user.name=yarn", `{"resource":{"memory":8192,"vCores":4},"overCommitTimeout":-1}`), &ri)
	if ri.ResourceInfo != (dao.Resource{Memory: 8192, VCores: 4}) {
		t.Errorf("new resource %+v", ri)
	}
	var node dao.NodeResponse
	decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/nodes/nm1:45454", ""), &node)
	if node.Node.TotalResource != (dao.Resource{Memory: 8192, VCores: 4}) {
		t.Errorf("the node after the update: %+v", node.Node.TotalResource)
	}
	remoteException(t, serve(h, http.MethodPost, "/ws/v1/cluster/nodes/nm1:45454/resource?user.name=eve", `{"resource":{"memory":1,"vCores":1}}`),
		http.StatusForbidden, "ForbiddenException")
	remoteException(t, serve(h, http.MethodPost, "/ws/v1/cluster/nodes/nowhere:1/resource?user.name=yarn", `{"resource":{"memory":1,"vCores":1}}`),
		http.StatusNotFound, "NotFoundException")
	remoteException(t, serve(h, http.MethodPost, "/ws/v1/cluster/nodes/nm1:45454/resource?user.name=yarn", `{"resource":{"memory":0}}`),
		http.StatusBadRequest, "BadRequestException")

	// Queue access: an admin asks about others.
	var acl dao.QueueACLInfo
	decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/queues/root.etl/access?user.name=yarn&user=eve&queue-acl-type=SUBMIT_APPLICATIONS", ""), &acl)
	if !acl.Allowed || acl.User != "eve" {
		t.Errorf("eve submits to etl: %+v", acl)
	}
	decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/queues/etl/access?user.name=yarn&user=eve&queue-acl-type=ADMINISTER_QUEUE", ""), &acl)
	if acl.Allowed || !strings.Contains(acl.Diagnostics, "doesn't have access") {
		t.Errorf("eve administers etl: %+v", acl)
	}
	remoteException(t, serve(h, http.MethodGet, "/ws/v1/cluster/queues/etl/access?user.name=eve&user=bob", ""), http.StatusForbidden, "ForbiddenException")
	remoteException(t, serve(h, http.MethodGet, "/ws/v1/cluster/queues/ghost/access?user.name=yarn&user=bob", ""), http.StatusNotFound, "NotFoundException")
	remoteException(t, serve(h, http.MethodGet, "/ws/v1/cluster/queues/etl/access?user.name=yarn&user=bob&queue-acl-type=READ", ""), http.StatusBadRequest, "BadRequestException")

	// Delegation tokens: only over Kerberos, as YARN.
	re := remoteException(t, serve(h, http.MethodPost, "/ws/v1/cluster/delegation-token?user.name=alice", `{"renewer":"alice"}`), http.StatusForbidden, "ForbiddenException")
	if !strings.Contains(re.Message, "Kerberos authenticated channel") {
		t.Errorf("delegation token without Kerberos: %q", re.Message)
	}
	re = remoteException(t, serve(h, http.MethodPost, "/ws/v1/cluster/reservation/new-reservation", ""), http.StatusServiceUnavailable, "YarnException")
	if !strings.Contains(re.Message, "Reservation is not enabled") {
		t.Errorf("reservation: %q", re.Message)
	}
	re = remoteException(t, serve(h, http.MethodPost, "/ws/v1/cluster/scheduler/logs?time=10", ""), http.StatusBadRequest, "BadRequestException")
	if !strings.Contains(re.Message, "activities") {
		t.Errorf("scheduler logs: %q", re.Message)
	}
}
