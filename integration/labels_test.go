package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"google.golang.org/protobuf/proto"
)

// TestNodeLabels runs an RM with node labels reported by the NMs
// (distributed), an exclusive partition gpu and a non-exclusive one
// shared, and three NMs: nm0 in gpu, nm1 in shared, nm2 in the default
// partition. A DAG job submitted in gpu runs its AM and every task on nm0
// and succeeds; a stock-protocol AM's asks labelled gpu land on nm0 only;
// its unlabelled asks never do (gpu is exclusive); the label reads
// (client protocol and REST) name what the NMs reported; a label the
// cluster lacks is refused with YARN's exception.
func TestNodeLabels(t *testing.T) {
	c := startCluster(t, 0, "-D", "yarn.node-labels.enabled=true", "-D", "yarn.node-labels.configuration-type=distributed",
		"-D", "loom.node-labels.partitions=gpu(exclusive=true),shared(exclusive=false)")
	for i, label := range []string{"gpu", "shared", ""} {
		dir := filepath.Join(c.dir, fmt.Sprintf("nm%d", i))
		args := []string{"nm", "--rm", c.tracker, "--address", "127.0.0.1:0", "--memory-mb", "4096", "--vcores", "4",
			"--local-dirs", filepath.Join(dir, "local"), "--log-dirs", filepath.Join(dir, "logs")}
		if label != "" {
			args = append(args, "-D", "yarn.nodemanager.node-labels.provider=config",
				"-D", "yarn.nodemanager.node-labels.provider.configured-node-partition="+label)
		}
		c.nms = append(c.nms, start(t, fmt.Sprintf("nm%d", i), args...))
	}
	ctx := context.Background()
	byLabel := map[string]string{} // label -> node id
	c.waitFor(t, "3 NodeManagers, two of them labelled", func() bool {
		nodes, err := c.ac.GetClusterNodes(ctx, &pb.GetClusterNodesRequestProto{})
		if err != nil || len(nodes.GetNodeReports()) != 3 {
			return false
		}
		clear(byLabel)
		for _, n := range nodes.GetNodeReports() {
			l := strings.Join(n.GetNodeLabels(), ",")
			byLabel[l] = fmt.Sprintf("%s:%d", n.GetNodeId().GetHost(), n.GetNodeId().GetPort())
		}
		return byLabel["gpu"] != "" && byLabel["shared"] != "" && byLabel[""] != ""
	})

	// `loom nodes` names each node's label.
	out, err := exec.Command(loomBin, "nodes", "--rm", c.client).CombinedOutput()
	if err != nil {
		t.Fatalf("loom nodes: %v\n%s", err, out)
	}
	for label, node := range byLabel {
		if label == "" {
			label = "default"
		}
		if !regexp.MustCompile(regexp.QuoteMeta(node) + `\s+RUNNING\s+` + label + `\s`).Match(out) {
			t.Errorf("loom nodes does not show %s in %s:\n%s", node, label, out)
		}
	}

	// `loom queues` says what each queue may use (flat queues: every label).
	if out, err := exec.Command(loomBin, "queues", "--rm", c.client).CombinedOutput(); err != nil ||
		!regexp.MustCompile(`(?m)^\s+root\.default\s.*\s\*\s+-\s*$`).Match(out) {
		t.Errorf("loom queues: %v, want root.default with node labels * and no default:\n%s", err, out)
	}

	labels, err := c.ac.GetClusterNodeLabels(ctx, &pb.GetClusterNodeLabelsRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, l := range labels.GetNodeLabels() {
		got[l.GetName()] = l.GetIsExclusive()
	}
	if len(got) != 2 || !got["gpu"] || got["shared"] {
		t.Errorf("getClusterNodeLabels %v, want gpu exclusive and shared not", got)
	}
	l2n, err := c.ac.GetLabelsToNodes(ctx, &pb.GetLabelsToNodesRequestProto{NodeLabels: []string{"gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if e := l2n.GetLabelsToNodes(); len(e) != 1 || len(e[0].GetNodeId()) != 1 ||
		fmt.Sprintf("%s:%d", e[0].GetNodeId()[0].GetHost(), e[0].GetNodeId()[0].GetPort()) != byLabel["gpu"] {
		t.Errorf("getLabelsToNodes(gpu) = %v, want %s alone", e, byLabel["gpu"])
	}
	resp, err := http.Get("http://" + c.web + "/ws/v1/cluster/get-node-to-labels")
	if err != nil {
		t.Fatal(err)
	}
	var n2l struct {
		NodeToLabels struct {
			Entry []struct {
				Key   string `json:"key"`
				Value struct {
					NodeLabelInfo []struct {
						Name        string `json:"name"`
						Exclusivity bool   `json:"exclusivity"`
					} `json:"nodeLabelInfo"`
				} `json:"value"`
			} `json:"entry"`
		} `json:"nodeToLabels"`
	}
	err = json.NewDecoder(resp.Body).Decode(&n2l)
	resp.Body.Close()
	if err != nil || len(n2l.NodeToLabels.Entry) != 2 {
		t.Errorf("REST get-node-to-labels: %v %+v, want two nodes", err, n2l)
	}
	for _, e := range n2l.NodeToLabels.Entry {
		if l := e.Value.NodeLabelInfo; len(l) != 1 || byLabel[l[0].Name] != e.Key || l[0].Exclusivity != (l[0].Name == "gpu") {
			t.Errorf("REST get-node-to-labels entry %+v, want the label its NM reported with its exclusivity", e)
		}
	}

	// A submission naming a label the cluster lacks.
	na, err := c.ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), ApplicationName: proto.String("nolabel"), Queue: proto.String("default"),
		NodeLabelExpression: proto.String("fpga"),
		Resource:            &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec:     &pb.ContainerLaunchContextProto{Command: []string{"true"}}}})
	if !rpc.IsClass(err, "org.apache.hadoop.yarn.exceptions.InvalidLabelResourceRequestException") || !strings.Contains(err.Error(), "fpga") {
		t.Errorf("submit with node label fpga: %v, want InvalidLabelResourceRequestException naming it", err)
	}

	// A DAG job (Loom's AM) submitted in gpu: its AM and every task run
	// on nm0, and it succeeds.
	jobFile, history := filepath.Join(c.dir, "job.json"), filepath.Join(c.dir, "history.json")
	if err := os.WriteFile(jobFile, []byte(dagJob), 0o644); err != nil {
		t.Fatal(err)
	}
	na, err = c.ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), ApplicationName: proto.String("gpu-etl"), Queue: proto.String("default"),
		NodeLabelExpression: proto.String("gpu"),
		Resource:            &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec:     &pb.ContainerLaunchContextProto{Command: []string{loomBin + " am --job " + jobFile + " --history " + history}}}}); err != nil {
		t.Fatal(err)
	}
	var rep *pb.ApplicationReportProto
	c.waitFor(t, "the gpu job to end", func() bool {
		rep = c.report(t, na.GetApplicationId())
		s := rep.GetYarnApplicationState()
		return s == pb.YarnApplicationStateProto_FINISHED || s == pb.YarnApplicationStateProto_FAILED || s == pb.YarnApplicationStateProto_KILLED
	})
	if rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Fatalf("the gpu job ended %v: %s", rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	b, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Tasks []struct {
			Stage string `json:"stage"`
			Node  string `json:"node"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(b, &h); err != nil || len(h.Tasks) != 12 {
		t.Fatalf("the gpu job's history: %v, %d tasks, want 12", err, len(h.Tasks))
	}
	for _, tk := range h.Tasks {
		if tk.Node != byLabel["gpu"] {
			t.Errorf("the gpu job's %s task ran on %s, not the gpu node %s", tk.Stage, tk.Node, byLabel["gpu"])
		}
	}

	_, _, am := c.stockAM(t, "labels")
	if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{Host: proto.String("127.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	respID := int32(0)
	allocate := func(asks ...*pb.ResourceRequestProto) (*pb.AllocateResponseProto, error) {
		r, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(respID), Ask: asks})
		if err == nil {
			respID = r.GetResponseId()
		}
		return r, err
	}
	ask := func(prio int32, n int32, label *string) *pb.ResourceRequestProto {
		return &pb.ResourceRequestProto{Priority: &pb.PriorityProto{Priority: proto.Int32(prio)}, ResourceName: proto.String("*"),
			Capability: &pb.ResourceProto{Memory: proto.Int64(512), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n),
			NodeLabelExpression: label}
	}
	if _, err := allocate(ask(1, 1, proto.String("fpga"))); !rpc.IsClass(err, "org.apache.hadoop.yarn.exceptions.InvalidLabelResourceRequestException") {
		t.Errorf("an ask for node label fpga: %v, want InvalidLabelResourceRequestException", err)
	}
	// Four gpu containers fill nm0 (4 vcores); eight unlabelled ones go
	// to nm1 (shared lends its room) and nm2, never to nm0, although it
	// would have room once the gpu ones end.
	if _, err := allocate(ask(1, 4, proto.String("gpu")), ask(2, 6, nil)); err != nil {
		t.Fatal(err)
	}
	where := map[string]map[int32]int{} // node -> priority -> containers
	count := 0
	c.waitFor(t, "10 containers", func() bool {
		r, err := allocate()
		if err != nil {
			t.Fatal(err)
		}
		for _, ct := range r.GetAllocatedContainers() {
			node := fmt.Sprintf("%s:%d", ct.GetNodeId().GetHost(), ct.GetNodeId().GetPort())
			if where[node] == nil {
				where[node] = map[int32]int{}
			}
			where[node][ct.GetPriority().GetPriority()]++
			count++
		}
		return count >= 10
	})
	if n := where[byLabel["gpu"]][1]; n != 4 {
		t.Errorf("%d gpu containers on the gpu node, want 4 (where: %v)", n, where)
	}
	if n := where[byLabel["gpu"]][2]; n != 0 {
		t.Errorf("%d unlabelled containers on the exclusive gpu node", n)
	}
	if n := where[byLabel["shared"]][2] + where[byLabel[""]][2]; n != 6 {
		t.Errorf("%d unlabelled containers on the shared and default nodes, want 6 (where: %v)", n, where)
	}
	if n := where[byLabel["shared"]][1] + where[byLabel[""]][1]; n != 0 {
		t.Errorf("%d gpu containers off the gpu node", n)
	}
}
