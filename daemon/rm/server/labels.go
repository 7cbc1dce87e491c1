package server

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/internal/queueconf"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"google.golang.org/protobuf/proto"
)

// Node labels, as YARN's RM keeps them (the scheduling is the core's,
// rm/labels.go). yarn.node-labels.enabled turns them on. The cluster's
// labels come from loom.node-labels.partitions at first start and from
// an admin's REST calls after (add-node-labels, remove-node-labels); the
// RM keeps the admin's in its state store, as YARN keeps them in its
// node-label store, and once it has, they are in force on every restart
// (the keys only seed a store that holds none). Which node is in which label is, as
// yarn.node-labels.configuration-type says, either the RM's own
// (centralized: loom.node-labels.nodes at start, replace-node-to-labels
// and nodes/{id}/replace-labels after) or each NodeManager's
// (distributed: it reports its label in every registration and
// heartbeat, from yarn.nodemanager.node-labels.provider.configured-node-partition).

// LabelsConfig is the node-label part of yarn-site.xml.
type LabelsConfig struct {
	Enabled     bool
	Distributed bool
	// Partitions are the labels at start and whether each is exclusive;
	// Nodes the centralized mappings at start, by host or host:port.
	Partitions map[string]bool
	Nodes      map[string]string
}

const (
	keyLabelsEnabled    = "yarn.node-labels.enabled"
	keyLabelsType       = "yarn.node-labels.configuration-type"
	keyLabelsPartitions = "loom.node-labels.partitions"
	keyLabelsNodes      = "loom.node-labels.nodes"
	// labelsRecord names the labels an admin set in the state store.
	labelsRecord = "NodeLabels"
	// classInvalidLabel is YARN's refusal of an ask's label.
	classInvalidLabel = "org.apache.hadoop.yarn.exceptions.InvalidLabelResourceRequestException"
)

func loadLabels(c *hadoopconf.Conf) (LabelsConfig, error) {
	var lc LabelsConfig
	var err error
	if lc.Enabled, err = c.Bool(keyLabelsEnabled); err != nil {
		return lc, err
	}
	typ, err := c.String(keyLabelsType)
	if err != nil {
		return lc, err
	}
	switch typ {
	case "centralized":
	case "distributed":
		lc.Distributed = true
	default:
		return lc, c.Errorf(keyLabelsType, "%q: Loom takes centralized or distributed (delegated-centralized needs a Java RMNodeLabelsMappingProvider)", typ)
	}
	raw, err := c.String(keyLabelsPartitions)
	if err != nil {
		return lc, err
	}
	if lc.Partitions, err = ParsePartitions(raw); err != nil {
		return lc, c.Errorf(keyLabelsPartitions, "%v", err)
	}
	if raw, err = c.String(keyLabelsNodes); err != nil {
		return lc, err
	}
	if lc.Nodes, err = ParseNodeLabels(raw); err != nil {
		return lc, c.Errorf(keyLabelsNodes, "%v", err)
	}
	if !lc.Enabled && (len(lc.Partitions) > 0 || len(lc.Nodes) > 0) {
		return lc, c.Errorf(keyLabelsPartitions, "node labels are set but %s is false", keyLabelsEnabled)
	}
	if lc.Distributed && len(lc.Nodes) > 0 {
		return lc, c.Errorf(keyLabelsNodes, "with %s distributed the NodeManagers say their labels; leave this unset", keyLabelsType)
	}
	for n, l := range lc.Nodes {
		if _, ok := lc.Partitions[l]; !ok && l != "" {
			return lc, c.Errorf(keyLabelsNodes, "node %s: label %s is not in %s", n, l, keyLabelsPartitions)
		}
	}
	return lc, nil
}

// ParsePartitions reads labels as `yarn rmadmin -addToClusterNodeLabels`
// takes them: "gpu(exclusive=true),fast(exclusive=false),big"; a label
// without "(exclusive=...)" is exclusive, as in YARN.
func ParsePartitions(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, excl := item, true
		if i := strings.IndexByte(item, '('); i >= 0 {
			attr, ok := strings.CutSuffix(item[i+1:], ")")
			k, v, _ := strings.Cut(attr, "=")
			if !ok || strings.TrimSpace(k) != "exclusive" || (strings.TrimSpace(v) != "true" && strings.TrimSpace(v) != "false") {
				return nil, fmt.Errorf("%q: write a label as name or name(exclusive=true|false)", item)
			}
			name, excl = strings.TrimSpace(item[:i]), strings.TrimSpace(v) == "true"
		}
		if why := rm.ValidLabel(name); why != "" {
			return nil, fmt.Errorf("%s", why)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("label %s is listed twice", name)
		}
		out[name] = excl
	}
	return out, nil
}

// ParseNodeLabels reads mappings as `yarn rmadmin -replaceLabelsOnNode`
// takes them: "host1=gpu host2:8041=fast host3=" (space or comma
// separated; one label per node, none for the default partition).
func ParseNodeLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' || r == '\t' }) {
		node, label, ok := strings.Cut(item, "=")
		if !ok || node == "" {
			return nil, fmt.Errorf("%q: write a mapping as host[:port]=label", item)
		}
		if strings.Contains(label, ",") || strings.Contains(label, "&") {
			return nil, fmt.Errorf("%q: one label per node", item)
		}
		if why := rm.ValidLabel(label); label != "" && why != "" {
			return nil, fmt.Errorf("%s", why)
		}
		out[node] = label
	}
	return out, nil
}

// storedLabels is what the state store keeps of an admin's changes.
type storedLabels struct {
	Partitions map[string]bool   `json:"partitions"`
	Nodes      map[string]string `json:"nodes"`
}

// startLabels gives the core the cluster's labels: the configured ones,
// then what an admin set before a restart. Callers are New.
func (r *RM) startLabels(secrets map[string][]byte) error {
	r.labels = LabelsConfig{Enabled: r.cfg.Labels.Enabled, Distributed: r.cfg.Labels.Distributed,
		Partitions: maps.Clone(r.cfg.Labels.Partitions), Nodes: maps.Clone(r.cfg.Labels.Nodes)}
	if r.labels.Partitions == nil {
		r.labels.Partitions = map[string]bool{}
	}
	if r.labels.Nodes == nil {
		r.labels.Nodes = map[string]string{}
	}
	if b, ok := secrets[labelsRecord]; ok && r.labels.Enabled {
		var st storedLabels
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("the state store's node labels are damaged: %v", err)
		}
		// The admin's labels replace the configured ones, which only
		// seed a store that has none.
		r.labels.Partitions, r.labels.Nodes = st.Partitions, st.Nodes
		if r.labels.Partitions == nil {
			r.labels.Partitions = map[string]bool{}
		}
		if r.labels.Nodes == nil {
			r.labels.Nodes = map[string]string{}
		}
	}
	if !r.labels.Enabled {
		return nil
	}
	return r.step(rm.PartitionsSet{Partitions: r.labels.Partitions})
}

// saveLabels keeps the labels in the state store. Callers hold mu.
func (r *RM) saveLabels() error {
	if r.store == nil {
		return nil
	}
	b, err := json.Marshal(storedLabels{Partitions: r.labels.Partitions, Nodes: r.labels.Nodes})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	return r.store.PutSecret(ctx, labelsRecord, b)
}

// nodePartition is the partition a node is in: the RM's mapping for it
// (centralized), or the one it reports (distributed), which is refused
// (accepted false, why says why) unless it is one label of the cluster's.
func (r *RM) nodePartition(n *nodeRec, reported *pb.NodeLabelsProto) (part string, accepted bool, why string) {
	if !r.labels.Enabled {
		return "", true, ""
	}
	if !r.labels.Distributed {
		if l, ok := r.labels.Nodes[n.key]; ok {
			return l, true, ""
		}
		return r.labels.Nodes[n.yid.GetHost()], true, ""
	}
	var names []string
	for _, l := range reported.GetNodeLabels() {
		if l.GetName() != "" {
			names = append(names, l.GetName())
		}
	}
	switch {
	case len(names) == 0:
		return "", true, ""
	case len(names) > 1:
		return "", false, fmt.Sprintf("a node has one label at most, and %s reported %v", n.key, names)
	}
	if _, ok := r.labels.Partitions[names[0]]; !ok {
		return "", false, fmt.Sprintf("label %s is not one of the cluster's (%v): add it first", names[0], slices.Sorted(maps.Keys(r.labels.Partitions)))
	}
	return names[0], true, ""
}

// relabel moves a registered node to its partition now. Callers hold mu.
func (r *RM) relabel(n *nodeRec, part string) error {
	if n.part == part {
		return nil
	}
	if err := r.step(rm.NodeLabeled{Node: n.id, Partition: part}); err != nil {
		return err
	}
	r.log.Info().Str("node", n.key).Str("was", n.part).Str("now", part).Msg("node moved to another node label")
	n.part = part
	r.schedule(nil, "scheduling pass after a node label change failed")
	return nil
}

// reportedLabels takes a distributed NodeManager's label from a
// heartbeat, if it sent one. Callers hold mu.
func (r *RM) reportedLabels(n *nodeRec, labels *pb.NodeLabelsProto, resp *pb.NodeHeartbeatResponseProto) {
	if labels == nil || !r.labels.Distributed {
		return
	}
	part, ok, why := r.nodePartition(n, labels)
	resp.AreNodeLabelsAcceptedByRM = proto.Bool(ok)
	if !ok {
		resp.DiagnosticsMessage = proto.String(why)
		r.log.Warn().Str("node", n.key).Msg("node labels refused: " + why)
		return
	}
	if err := r.relabel(n, part); err != nil {
		resp.AreNodeLabelsAcceptedByRM = proto.Bool(false)
		resp.DiagnosticsMessage = proto.String(err.Error())
		return
	}
	n.mail.mu.Lock()
	n.mail.label = labelsKey(labels)
	n.mail.mu.Unlock()
}

// labelsKey is what an NM reported of its labels, to compare with its
// last report; never "" (a report of no label is "-").
func labelsKey(l *pb.NodeLabelsProto) string {
	var names []string
	for _, x := range l.GetNodeLabels() {
		names = append(names, x.GetName())
	}
	return "-" + strings.Join(names, ",")
}

// appLabel is the partition an app runs in: its submission's
// node_label_expression, else its queue's default. Callers hold mu.
func (r *RM) appLabel(sc *pb.ApplicationSubmissionContextProto, corePath string) (string, error) {
	expr := strings.TrimSpace(sc.GetNodeLabelExpression())
	if sc.NodeLabelExpression == nil || expr == "" {
		if !r.labels.Enabled {
			return "", nil
		}
		return r.core.QueueDefaultLabel(corePath), nil
	}
	return expr, r.checkLabelExpr(expr)
}

// askLabel is the partition of one ResourceRequest: its own expression
// when it has one ("" is the default partition), else its app's.
func (r *RM) askLabel(a *appRec, rr *pb.ResourceRequestProto) (string, error) {
	if rr.NodeLabelExpression == nil {
		return a.label, nil
	}
	expr := strings.TrimSpace(rr.GetNodeLabelExpression())
	if expr == "" {
		return "", nil
	}
	if err := r.checkLabelExpr(expr); err != nil {
		return "", err
	}
	if err := r.core.CheckLabel(a.id, expr); err != nil {
		return "", rpc.Errorf(classInvalidLabel, "Invalid resource request, %v", err)
	}
	return expr, nil
}

// checkLabelExpr refuses what YARN refuses of a label expression.
func (r *RM) checkLabelExpr(expr string) error {
	switch {
	case !r.labels.Enabled:
		return rpc.Errorf(classInvalidLabel, "Invalid resource request, node label not enabled but request contains label expression %q (%s is false)", expr, keyLabelsEnabled)
	case strings.Contains(expr, "&&") || strings.Contains(expr, "||"):
		return rpc.Errorf(classInvalidLabel, "Invalid resource request, %q: && and || are not supported in a node label expression; name one label", expr)
	}
	if _, ok := r.labels.Partitions[expr]; !ok {
		return rpc.Errorf(classInvalidLabel, "Invalid resource request, node label %s is not one of the cluster's (%v)", expr, slices.Sorted(maps.Keys(r.labels.Partitions)))
	}
	return nil
}

// ChangeNodeLabels is an admin's change to the cluster's labels (REST's
// add-node-labels, remove-node-labels, replace-node-to-labels and
// nodes/{id}/replace-labels, as YARN's AdminService does them). Nothing
// changes on an error.
func (b webBackend) ChangeNodeLabels(ctx context.Context, ch webui.LabelChange) error {
	r := b.r
	r.mu.Lock()
	defer r.mu.Unlock()
	who := caller(ctx)
	if !r.isAdmin(who) {
		return rpc.Errorf(rpc.ClassAccessControl, "User %s doesn't have permission to call '%s'", who, ch.Op)
	}
	if !r.labels.Enabled {
		return rpc.Errorf(rpc.ClassYarnException, "java.io.IOException: Node-label-based scheduling is disabled. Please check %s", keyLabelsEnabled)
	}
	parts := maps.Clone(r.labels.Partitions)
	for name, excl := range ch.Add {
		if old, ok := parts[name]; ok && old != excl {
			return rpc.Errorf(rpc.ClassIOException, "Exclusivity of labels cannot be modified; label %s is exclusive=%v", name, old)
		}
		parts[name] = excl
	}
	for _, name := range ch.Remove {
		if _, ok := parts[name]; !ok {
			return rpc.Errorf(rpc.ClassIOException, "Node label=%s to be removed doesn't exist in cluster node labels collection.", name)
		}
		delete(parts, name)
	}
	nodes := maps.Clone(r.labels.Nodes)
	if len(ch.Replace) > 0 && r.labels.Distributed {
		return rpc.Errorf(rpc.ClassIOException, "%s is distributed: each NodeManager says its own label", keyLabelsType)
	}
	for node, l := range ch.Replace {
		if _, ok := parts[l]; !ok && l != "" {
			return rpc.Errorf(rpc.ClassIOException, "Label %s of node %s is not one of the cluster's (%v)", l, node, slices.Sorted(maps.Keys(parts)))
		}
		if l == "" {
			delete(nodes, node)
		} else {
			nodes[node] = l
		}
	}
	// New labels first, then nodes move, then removed labels go: the
	// core refuses to remove a label a node or app still uses.
	grown := maps.Clone(r.labels.Partitions)
	maps.Copy(grown, parts)
	if err := r.step(rm.PartitionsSet{Partitions: grown}); err != nil {
		return rpc.Errorf(rpc.ClassIOException, "%v", err)
	}
	prev := r.labels.Nodes
	r.labels.Nodes = nodes
	moved := map[*nodeRec]string{}
	undo := func() {
		for n, was := range moved {
			r.relabel(n, was)
		}
		r.labels.Nodes = prev
		r.step(rm.PartitionsSet{Partitions: r.labels.Partitions})
	}
	for _, n := range r.nodeByID {
		if n.state != pb.NodeStateProto_NS_RUNNING {
			continue
		}
		part, _, _ := r.nodePartition(n, nil)
		was := n.part
		if err := r.relabel(n, part); err != nil {
			undo()
			return rpc.Errorf(rpc.ClassIOException, "%v", err)
		}
		if was != part {
			moved[n] = was
		}
	}
	if err := r.step(rm.PartitionsSet{Partitions: parts}); err != nil {
		undo()
		return rpc.Errorf(rpc.ClassIOException, "%v", err)
	}
	r.labels.Partitions = parts
	if err := r.saveLabels(); err != nil {
		r.log.Error().Err(err).Msg("could not keep the node labels in the state store; they hold until a restart")
	}
	r.log.Info().Str("by", who).Str("op", ch.Op).Str("labels", fmt.Sprint(parts)).Str("nodes", fmt.Sprint(nodes)).Msg("node labels changed")
	return nil
}

// NodeLabels is the cluster's labels, each node's and each label's
// nodes, for the REST reads and the client protocol.
func (r *RM) nodeLabelsView() (parts map[string]bool, byNode map[*nodeRec]string) {
	byNode = map[*nodeRec]string{}
	for _, n := range r.nodeByID {
		if n.part != "" && n.state == pb.NodeStateProto_NS_RUNNING {
			byNode[n] = n.part
		}
	}
	return maps.Clone(r.labels.Partitions), byNode
}

// labelProtos are the cluster's labels as YARN's NodeLabelProto, by name.
func labelProtos(parts map[string]bool) []*pb.NodeLabelProto {
	out := make([]*pb.NodeLabelProto, 0, len(parts))
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		out = append(out, &pb.NodeLabelProto{Name: proto.String(name), IsExclusive: proto.Bool(parts[name])})
	}
	return out
}

// submittedLabels are an app's partition and its AM container's: the
// AM's "*" request's own expression when it has one, else the app's.
// Callers hold mu.
func (r *RM) submittedLabels(sc *pb.ApplicationSubmissionContextProto, corePath string) (label, amLabel string, err error) {
	if label, err = r.appLabel(sc, corePath); err != nil {
		return "", "", err
	}
	amLabel = label
	for _, rr := range sc.GetAmContainerResourceRequest() {
		if rr.GetResourceName() == "*" && rr.NodeLabelExpression != nil {
			if amLabel = strings.TrimSpace(rr.GetNodeLabelExpression()); amLabel != "" {
				if err := r.checkLabelExpr(amLabel); err != nil {
					return "", "", err
				}
			}
		}
	}
	return label, amLabel, nil
}

// queueLabels are the labels a queue may access: its own setting or the
// nearest above it ("*" at root).
func queueLabels(q *queueconf.Queue) []string {
	for ; q != nil; q = q.Parent {
		if q.Labels != nil {
			return slices.Clone(q.Labels)
		}
	}
	return []string{"*"}
}
