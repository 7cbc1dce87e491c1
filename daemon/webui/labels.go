package webui

import (
	"net/http"
	"strings"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// The node-label writes are an admin's (YARN's AdminService): the
// backend checks who calls and whether labels are on.

// labelBody is add-node-labels' body, YARN's NodeLabelsInfo; Jersey may
// write exclusivity as a string.
type labelBody struct {
	NodeLabelInfo []struct {
		Name        string `json:"name" xml:"name"`
		Exclusivity any    `json:"exclusivity" xml:"exclusivity"`
	} `json:"nodeLabelInfo" xml:"nodeLabelInfo"`
}

func addNodeLabels(c *call) error {
	var body labelBody
	if err := readBodyOrXML(c, &body, "nodeLabelsInfo"); err != nil {
		return err
	}
	add := map[string]bool{}
	for _, l := range body.NodeLabelInfo {
		excl := true
		switch v := l.Exclusivity.(type) {
		case nil:
		case bool:
			excl = v
		case string:
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true", "":
			case "false":
				excl = false
			default:
				return badRequest("label %s: exclusivity %q is not true or false", l.Name, v)
			}
		default:
			return badRequest("label %s: exclusivity %v is not true or false", l.Name, v)
		}
		add[l.Name] = excl
	}
	if len(add) == 0 {
		return badRequest("nodeLabelInfo: no labels to add")
	}
	return labelsChanged(c, LabelChange{Op: "addToClusterNodeLabels", Add: add})
}

func removeNodeLabels(c *call) error {
	names := c.r.URL.Query()["labels"]
	return labelsChanged(c, LabelChange{Op: "removeFromClusterNodeLabels", Remove: names})
}

// nodeToLabelsBody is replace-node-to-labels' body, YARN's
// NodeToLabelsEntryList.
type nodeToLabelsBody struct {
	NodeToLabels []struct {
		NodeID     string   `json:"nodeId" xml:"nodeId"`
		NodeLabels []string `json:"nodeLabels" xml:"nodeLabels"`
	} `json:"nodeToLabels" xml:"nodeToLabels"`
}

func replaceNodeToLabels(c *call) error {
	var body nodeToLabelsBody
	if err := readBodyOrXML(c, &body, "nodeToLabelsName"); err != nil {
		return err
	}
	repl := map[string]string{}
	for _, e := range body.NodeToLabels {
		l, err := oneLabel(e.NodeID, e.NodeLabels)
		if err != nil {
			return err
		}
		repl[e.NodeID] = l
	}
	if len(repl) == 0 {
		return badRequest("nodeToLabels: no nodes")
	}
	return labelsChanged(c, LabelChange{Op: "replaceLabelsOnNodes", Replace: repl})
}

func replaceLabelsOnNode(c *call) error {
	node := c.vars()["nodeid"]
	l, err := oneLabel(node, c.r.URL.Query()["labels"])
	if err != nil {
		return err
	}
	return labelsChanged(c, LabelChange{Op: "replaceLabelsOnNode", Replace: map[string]string{node: l}})
}

// oneLabel is a node's label from a list: a node has at most one.
func oneLabel(node string, labels []string) (string, error) {
	var names []string
	for _, l := range labels {
		if l = strings.TrimSpace(l); l != "" {
			names = append(names, l)
		}
	}
	switch {
	case node == "":
		return "", badRequest("a node id is missing")
	case len(names) > 1:
		return "", badRequest("node %s: a node has one label at most, got %v", node, names)
	case len(names) == 1:
		return names[0], nil
	}
	return "", nil
}

func labelsChanged(c *call, ch LabelChange) error {
	if err := c.s.b.ChangeNodeLabels(c.ctx(), ch); err != nil {
		switch {
		case rpc.IsClass(err, rpc.ClassYarnException):
			// Labels are off: YARN's 503.
			return &webError{status: http.StatusServiceUnavailable, class: rpc.ClassYarnException, message: err.Error()}
		case rpc.IsClass(err, rpc.ClassIOException):
			return &webError{status: http.StatusBadRequest, class: rpc.ClassIOException, message: err.Error()}
		}
		return err
	}
	c.w.WriteHeader(http.StatusOK)
	return nil
}

// getLabelsToNodes is /label-mappings: each label and its nodes, those
// of ?labels= only when given.
func getLabelsToNodes(c *call) error {
	resp, err := c.s.b.GetLabelsToNodes(c.ctx(), &pb.GetLabelsToNodesRequestProto{NodeLabels: c.r.URL.Query()["labels"]})
	if err != nil {
		return err
	}
	excl, err := exclusivity(c)
	if err != nil {
		return err
	}
	out := dao.LabelsToNodesInfo{LabelsToNodes: dao.LabelsToNodesMap{}}
	for _, e := range resp.GetLabelsToNodes() {
		ent := dao.LabelNodesEntry{Key: dao.NodeLabel{Name: e.GetNodeLabels(), Exclusivity: excl[e.GetNodeLabels()]}}
		for _, n := range e.GetNodeId() {
			ent.Value.NodeID = append(ent.Value.NodeID, nodeIDString(n))
		}
		out.LabelsToNodes.Entry = append(out.LabelsToNodes.Entry, ent)
	}
	return c.json(http.StatusOK, out)
}

// exclusivity is each cluster label's exclusivity.
func exclusivity(c *call) (map[string]bool, error) {
	resp, err := c.s.b.GetClusterNodeLabels(c.ctx(), &pb.GetClusterNodeLabelsRequestProto{})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, l := range resp.GetNodeLabels() {
		out[l.GetName()] = l.GetIsExclusive()
	}
	return out, nil
}

// getLabelsOnNode is /nodes/{nodeid}/get-labels: a known node's labels.
func getLabelsOnNode(c *call) error {
	id := c.vars()["nodeid"]
	known := false
	for _, n := range c.nodeIDs() {
		known = known || n == id
	}
	if !known {
		return notFound("nodeId, %s, is not found", id)
	}
	byNode, err := labelsByNode(c)
	if err != nil {
		return err
	}
	out, ok := byNode[id]
	if !ok {
		out = dao.NodeLabelsInfo{NodeLabelInfo: []dao.NodeLabel{}}
	}
	return c.json(http.StatusOK, out)
}

// labelsByNode is each labelled node's labels (by node id), with their
// exclusivity.
func labelsByNode(c *call) (map[string]dao.NodeLabelsInfo, error) {
	resp, err := c.s.b.GetNodeToLabels(c.ctx(), &pb.GetNodesToLabelsRequestProto{})
	if err != nil {
		return nil, err
	}
	excl, err := exclusivity(c)
	if err != nil {
		return nil, err
	}
	out := map[string]dao.NodeLabelsInfo{}
	for _, e := range resp.GetNodeToLabels() {
		v := dao.NodeLabelsInfo{NodeLabelInfo: []dao.NodeLabel{}}
		for _, l := range e.GetNodeLabels() {
			v.NodeLabelInfo = append(v.NodeLabelInfo, dao.NodeLabel{Name: l, Exclusivity: excl[l]})
		}
		out[nodeIDString(e.GetNodeId())] = v
	}
	return out, nil
}
