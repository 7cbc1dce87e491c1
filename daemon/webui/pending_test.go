package webui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
)

// TestMetricsPendingResources: pendingMB and pendingVirtualCores are what
// the apps' outstanding asks add up to (they were 0 beside thousands of
// pending containers).
func TestMetricsPendingResources(t *testing.T) {
	fb := newFakeBackend()
	// The fake's one running app asks for 2 DEFAULT and 3 ALTRUISTIC
	// containers of 1536 MB and 1 vcore: 7680 MB and 5 vcores.
	fb.sched.Apps[0].Pending = fairness.New(7680, 5)
	h := newTestHandler(fb, adminKey, nil)
	var m dao.ClusterMetricsResponse
	a := serve(h, http.MethodGet, "/ws/v1/cluster/metrics", "")
	decode(t, a, &m)
	if got := m.ClusterMetrics; got.PendingMB != 7680 || got.PendingVirtualCores != 5 || got.ContainersPending != 5 {
		t.Errorf("pendingMB %d, pendingVirtualCores %d, containersPending %d; want 7680, 5, 5", got.PendingMB, got.PendingVirtualCores, got.ContainersPending)
	}
}

// TestYARNUIPaths: YARN's UI paths answer 200 with the web UI, as
// YARN's do; client libraries probe GET /cluster for the active RM.
func TestYARNUIPaths(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	for _, path := range []string{"/cluster", "/cluster/apps", "/cluster/apps/RUNNING", "/cluster/app/application_1700000000000_0001",
		"/cluster/nodes", "/cluster/scheduler"} {
		a := serve(h, http.MethodGet, path, "")
		if a.code != http.StatusOK || !strings.HasPrefix(a.contentType(), "text/html") || !strings.Contains(string(a.body), "/ui/js/main.js") {
			t.Errorf("GET %s: %d %q", path, a.code, a.contentType())
		}
	}
	if a := serve(h, http.MethodGet, "/cluster/bogus", ""); a.code != http.StatusNotFound {
		t.Errorf("GET /cluster/bogus: %d, want 404", a.code)
	}
}
