package webui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/loomrm/loom/daemon/webui/dao"
)

// TestNodeLabelsOff: with no node labels, the reads answer empty
// documents as YARN's do, an unknown node is a 404, and a write says
// labels are disabled and which key enables them in YARN.
func TestNodeLabelsOff(t *testing.T) {
	b := writableBackend()
	b.noLabels = true
	h := newTestHandler(b, adminKey, nil)
	var l2n dao.LabelsToNodesInfo
	decode(t, serve(h, http.MethodGet, "/ws/v1/cluster/label-mappings", ""), &l2n)
	if len(l2n.LabelsToNodes.Entry) != 0 {
		t.Errorf("label-mappings %+v", l2n)
	}
	x := serve(h, http.MethodGet, "/ws/v1/cluster/label-mappings", "", "Accept", "application/xml")
	if !strings.Contains(string(x.body), "<labelsToNodesInfo><labelsToNodes></labelsToNodes></labelsToNodesInfo>") {
		t.Errorf("label-mappings in XML: %s", x.body)
	}
	var onNode dao.NodeLabelsInfo
	a := serve(h, http.MethodGet, "/ws/v1/cluster/nodes/nm1:45454/get-labels", "")
	decode(t, a, &onNode)
	if onNode.NodeLabelInfo == nil || len(onNode.NodeLabelInfo) != 0 || !strings.Contains(string(a.body), `"nodeLabelInfo":[]`) {
		t.Errorf("labels on nm1: %s", a.body)
	}
	remoteException(t, serve(h, http.MethodGet, "/ws/v1/cluster/nodes/nowhere:1/get-labels", ""), http.StatusNotFound, "NotFoundException")
	re := remoteException(t, serve(h, http.MethodPost, "/ws/v1/cluster/add-node-labels?user.name=yarn", `{"nodeLabelInfo":[{"name":"gpu"}]}`),
		http.StatusServiceUnavailable, "YarnException")
	if !strings.Contains(re.Message, "Node-label-based scheduling is disabled") || !strings.Contains(re.Message, "yarn.node-labels.enabled") {
		t.Errorf("refusal %+v", re)
	}
}
