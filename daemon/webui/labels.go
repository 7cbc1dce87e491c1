package webui

import (
	"net/http"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Loom has no node labels: yarn.node-labels.enabled is not a key it
// takes. The reads answer as YARN does with labels off (nothing), and the
// writes are refused as YARN refuses them then: its label manager's
// IOException, wrapped by the admin service in a YarnException, which
// YARN's web services answer with 503.
const labelsDisabled = "java.io.IOException: Node-label-based scheduling is disabled. Please check yarn.node-labels.enabled"

func refuseLabels(*call) error {
	return &webError{status: http.StatusServiceUnavailable, class: rpc.ClassYarnException,
		message: labelsDisabled}
}

// getLabelsToNodes is /label-mappings: each label and its nodes (none).
func getLabelsToNodes(c *call) error {
	if _, err := c.s.b.GetLabelsToNodes(c.ctx(), &pb.GetLabelsToNodesRequestProto{NodeLabels: c.r.URL.Query()["labels"]}); err != nil {
		return err
	}
	return c.json(http.StatusOK, dao.LabelsToNodesInfo{LabelsToNodes: dao.LabelsToNodesMap{}})
}

// getLabelsOnNode is /nodes/{nodeid}/get-labels: a known node's labels
// (none).
func getLabelsOnNode(c *call) error {
	id := c.vars()["nodeid"]
	for _, n := range c.nodeIDs() {
		if n == id {
			return c.json(http.StatusOK, dao.NodeLabelsInfo{NodeLabelInfo: []dao.NodeLabel{}})
		}
	}
	return notFound("nodeId, %s, is not found", id)
}
