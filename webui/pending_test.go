package webui

import (
	"net/http"
	"testing"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/webui/dao"
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
