package server

import (
	"context"
	"strings"
	"testing"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"
)

// TestAdminNodeLabels: centralized labels, changed by an admin through
// the web backend: others are refused; a label in use cannot go; a
// node's new label is what the core and the reports see; and the
// change survives a restart (the state store keeps it).
func TestAdminNodeLabels(t *testing.T) {
	conf := []string{"yarn.resourcemanager.recovery.enabled=true", "loom.store.dir=" + t.TempDir(),
		"yarn.acl.enable=true", "yarn.admin.acl=root", "yarn.node-labels.enabled=true",
		"loom.node-labels.partitions=gpu", "loom.node-labels.nodes=10.0.0.9=gpu"}
	r, err := New(testConfig(t, conf...), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	rt := trackerClient(t, r, nil)
	for _, key := range []string{"10.0.0.9:45454", "10.0.0.10:45454"} {
		if _, err := registerNode(rt, key, 8192, 4); err != nil {
			t.Fatal(err)
		}
	}
	web := webBackend{clientService{r}}
	if got, _ := r.core.NodePartition(r.nodes["10.0.0.9:45454"].id); got != "gpu" {
		t.Fatalf("10.0.0.9 is in %q, want gpu (loom.node-labels.nodes names its host)", got)
	}
	if err := web.ChangeNodeLabels(asUser("eve"), webui.LabelChange{Op: "addToClusterNodeLabels", Add: map[string]bool{"ssd": false}}); !rpc.IsClass(err, rpc.ClassAccessControl) {
		t.Errorf("eve adds a label: %v, want AccessControlException", err)
	}
	if err := web.ChangeNodeLabels(asUser("root"), webui.LabelChange{Op: "removeFromClusterNodeLabels", Remove: []string{"gpu"}}); err == nil ||
		!strings.Contains(err.Error(), "partition gpu cannot be removed") {
		t.Errorf("removing gpu while 10.0.0.9 is in it: %v", err)
	}
	if err := web.ChangeNodeLabels(asUser("root"), webui.LabelChange{Op: "addToClusterNodeLabels", Add: map[string]bool{"gpu": false}}); err == nil ||
		!strings.Contains(err.Error(), "Exclusivity of labels cannot be modified") {
		t.Errorf("making gpu non-exclusive: %v", err)
	}
	if err := web.ChangeNodeLabels(asUser("root"), webui.LabelChange{Op: "addToClusterNodeLabels", Add: map[string]bool{"ssd": false}}); err != nil {
		t.Fatal(err)
	}
	if err := web.ChangeNodeLabels(asUser("root"), webui.LabelChange{Op: "replaceLabelsOnNode",
		Replace: map[string]string{"10.0.0.10:45454": "ssd", "10.0.0.9": ""}}); err != nil {
		t.Fatal(err)
	}
	check := func(r *RM, when string, want int) {
		t.Helper()
		nodes, err := clientOf(t, r, "alice").GetClusterNodes(context.Background(), &pb.GetClusterNodesRequestProto{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, n := range nodes.GetNodeReports() {
			got[n.GetNodeId().GetHost()] = strings.Join(n.GetNodeLabels(), ",")
		}
		if got["10.0.0.9"] != "" || got["10.0.0.10"] != "ssd" {
			t.Errorf("%s: node labels %v, want 10.0.0.10 in ssd and 10.0.0.9 in none", when, got)
		}
		labels, err := clientOf(t, r, "alice").GetClusterNodeLabels(context.Background(), &pb.GetClusterNodeLabelsRequestProto{})
		if err != nil || len(labels.GetNodeLabels()) != want {
			t.Errorf("%s: cluster labels %v %v, want %d", when, labels, err, want)
		}
	}
	check(r, "after the change", 2)
	if err := web.ChangeNodeLabels(asUser("root"), webui.LabelChange{Op: "removeFromClusterNodeLabels", Remove: []string{"gpu"}}); err != nil {
		t.Errorf("removing gpu once no node is in it: %v", err)
	}
	r2 := restart(t, r, conf)
	rt2 := trackerClient(t, r2, nil)
	for _, key := range []string{"10.0.0.9:45454", "10.0.0.10:45454"} {
		if _, err := registerNode(rt2, key, 8192, 4); err != nil {
			t.Fatal(err)
		}
	}
	// The store's labels (ssd alone) are in force, not the configured
	// gpu and its mapping.
	check(r2, "after a restart", 1)
}

// FuzzParseLabels: the label keys' parsers never panic, and whatever they
// take is valid by YARN's rule.
func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{"gpu(exclusive=true),fast(exclusive=false),big", "h1=gpu h2:8041=fast,h3=", "a(exclusive=maybe)", "=x", "(", "gpu(exclusive=true"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if parts, err := ParsePartitions(s); err == nil {
			for name := range parts {
				if why := rm.ValidLabel(name); why != "" {
					t.Fatalf("ParsePartitions(%q) took %q: %s", s, name, why)
				}
			}
		}
		if nodes, err := ParseNodeLabels(s); err == nil {
			for node, l := range nodes {
				if node == "" || l != "" && rm.ValidLabel(l) != "" {
					t.Fatalf("ParseNodeLabels(%q) took %q=%q", s, node, l)
				}
			}
		}
	})
}

// TestCapacityTreeToTheCore: a capacity-scheduler.xml's node-label keys
// and user-limit-factor reach the core's queues: a leaf's accessible
// labels, its capacity in each (its weight there), its default label,
// and its user limit (-1 for none becomes none).
func TestCapacityTreeToTheCore(t *testing.T) {
	const p = "yarn.scheduler.capacity.root."
	c := hadoopconf.New(Defaults)
	var xml strings.Builder
	xml.WriteString("<configuration>")
	for _, kv := range [][2]string{{p + "queues", "etl,ml"}, {p + "etl.capacity", "70"}, {p + "ml.capacity", "30"},
		{p + "etl.user-limit-factor", "-1"}, {p + "ml.user-limit-factor", "2"},
		{p + "ml.accessible-node-labels", "gpu"}, {p + "ml.accessible-node-labels.gpu.capacity", "100"},
		{p + "ml.default-node-label-expression", "gpu"}} {
		xml.WriteString("<property><name>" + kv[0] + "</name><value>" + kv[1] + "</value></property>")
	}
	xml.WriteString("</configuration>")
	if err := c.Load("capacity-scheduler.xml", strings.NewReader(xml.String())); err != nil {
		t.Fatal(err)
	}
	tree, _, err := loadQueueTree(c)
	if err != nil {
		t.Fatal(err)
	}
	set, err := coreQueues(tree, 0)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]rm.QueueConf{}
	for _, q := range set.Queues {
		byName[q.Name] = q
	}
	etl, ml := byName["root.etl"], byName["root.ml"]
	if etl.UserLimitFactor != 0 || etl.Labels != nil || etl.DefaultLabel != "" {
		t.Errorf("root.etl: %+v, want no user limit and no labels of its own", etl)
	}
	if ml.UserLimitFactor != 2 || len(ml.Labels) != 1 || ml.Labels[0] != "gpu" || ml.LabelWeight["gpu"] != 1 || ml.DefaultLabel != "gpu" {
		t.Errorf("root.ml: %+v, want user limit 2, label gpu at capacity 1, default gpu", ml)
	}
}

// TestDistributedLabelsInHeartbeats: with distributed labels a node's
// report moves it: registered in gpu, a heartbeat saying gpu again keeps
// it there (accepted), one saying shared moves it, one naming a label the
// cluster lacks is refused and leaves it where it was.
func TestDistributedLabelsInHeartbeats(t *testing.T) {
	r := startRM(t, "yarn.node-labels.enabled=true", "yarn.node-labels.configuration-type=distributed",
		"loom.node-labels.partitions=gpu,shared(exclusive=false)")
	rt := trackerClient(t, r, nil)
	const key = "10.0.0.9:45454"
	labels := func(name string) *pb.NodeLabelsProto {
		return &pb.NodeLabelsProto{NodeLabels: []*pb.NodeLabelProto{{Name: proto.String(name)}}}
	}
	reg, err := rt.RegisterNodeManager(context.Background(), &pb.RegisterNodeManagerRequestProto{NodeId: nodeIDOf(key), HttpPort: proto.Int32(8042),
		Resource: &pb.ResourceProto{Memory: proto.Int64(8192), VirtualCores: proto.Int32(4)}, NodeLabels: labels("gpu")})
	if err != nil || !reg.GetAreNodeLabelsAcceptedByRM() {
		t.Fatalf("register in gpu: %v %v", reg, err)
	}
	part := func() string {
		r.mu.Lock()
		defer r.mu.Unlock()
		p, _ := r.core.NodePartition(r.nodes[key].id)
		return p
	}
	for i, step := range []struct {
		label, want string
		accepted    bool
	}{{"gpu", "gpu", true}, {"shared", "shared", true}, {"fpga", "shared", false}, {"shared", "shared", true}} {
		resp, err := rt.NodeHeartbeat(context.Background(), &pb.NodeHeartbeatRequestProto{
			NodeStatus: &pb.NodeStatusProto{NodeId: nodeIDOf(key), ResponseId: proto.Int32(int32(i))}, NodeLabels: labels(step.label)})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetAreNodeLabelsAcceptedByRM() != step.accepted || part() != step.want {
			t.Errorf("heartbeat %d reporting %s: accepted %v, node in %q; want %v, %q (%s)", i, step.label,
				resp.GetAreNodeLabelsAcceptedByRM(), part(), step.accepted, step.want, resp.GetDiagnosticsMessage())
		}
	}
}
