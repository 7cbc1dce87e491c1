package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestReportFields: the values clients and dashboard exporters read from
// an app's report: launch time, a tracking URL (Loom's app page unless
// the AM gave its own while running), memory- and vcore-seconds, the
// cluster and queue usage of an app that holds containers, and the
// attempt's finish time.
func TestReportFields(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 16384, 16)
	ac := clientOf(t, r, "zoe")
	id := submit(t, ac, "default", 1024)
	nm.beat()
	am := amClient(t, r, nm.waitStarts(1)[0])
	ctx := context.Background()
	if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{TrackingUrl: proto.String("http://am:4040/")}); err != nil {
		t.Fatal(err)
	}
	a := &allocator{t: t, am: am}
	a.call(ask1G(3))
	nm.beat()
	a.call(nil)
	time.Sleep(300 * time.Millisecond)
	rep := report(t, ac, id)
	u := rep.GetAppResource_Usage()
	// The default queue's share of the cluster is its weight over all.
	var total float64
	for _, w := range r.cfg.Queues {
		total += w
	}
	wantQueue := float32(25 / (r.cfg.Queues["default"] / total))
	// 4 containers of 1024 MB and 1 vcore held for at least 0.3 s: at
	// least 1228 MB-seconds, a quarter of this 16 GB node, and of its
	// queue's share of it in proportion.
	if rep.GetLaunchTime() < rep.GetStartTime() || rep.GetTrackingUrl() != "http://am:4040/" ||
		u.GetMemorySeconds() < 1228 || u.GetVcoreSeconds() < 1 || u.GetClusterUsagePercentage() != 25 || u.GetQueueUsagePercentage() != wantQueue {
		t.Errorf("running: launch %d (start %d), tracking %q, %d MB-s, %d vcore-s, cluster %v%%, queue %v%%", rep.GetLaunchTime(), rep.GetStartTime(),
			rep.GetTrackingUrl(), u.GetMemorySeconds(), u.GetVcoreSeconds(), u.GetClusterUsagePercentage(), u.GetQueueUsagePercentage())
	}
	if _, err := am.FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}); err != nil {
		t.Fatal(err)
	}
	done := report(t, ac, id)
	if want := "http://" + advertised(r.Addr("web")) + "/#/apps/" + rpc.AppIDString(id); done.GetTrackingUrl() != want ||
		done.GetOriginalTrackingUrl() != "http://am:4040/" ||
		done.GetAppResource_Usage().GetMemorySeconds() < u.GetMemorySeconds() {
		t.Errorf("finished: tracking %q (original %q), %d MB-s", done.GetTrackingUrl(), done.GetOriginalTrackingUrl(), done.GetAppResource_Usage().GetMemorySeconds())
	}
	atts, err := ac.GetApplicationAttempts(ctx, &pb.GetApplicationAttemptsRequestProto{ApplicationId: id})
	if err != nil || len(atts.GetApplicationAttempts()) != 1 || atts.GetApplicationAttempts()[0].GetFinishTime() < rep.GetLaunchTime() {
		t.Errorf("attempt report %v %v, want a finish time", atts, err)
	}
}

// TestNodeUtilizationAndVersion: what a NodeManager says of its version
// at registration and of its utilisation in heartbeats reaches the node
// report and the web port; a heartbeat without a measurement keeps the
// last one, and registering again forgets it.
func TestNodeUtilizationAndVersion(t *testing.T) {
	r := startRM(t)
	rt := trackerClient(t, r, nil)
	ctx := context.Background()
	key := "10.0.0.7:45454"
	if _, err := rt.RegisterNodeManager(ctx, &pb.RegisterNodeManagerRequestProto{NodeId: nodeIDOf(key), HttpPort: proto.Int32(8042),
		Resource: &pb.ResourceProto{Memory: proto.Int64(8192), VirtualCores: proto.Int32(4)}, NmVersion: proto.String("3.3.6")}); err != nil {
		t.Fatal(err)
	}
	web := webBackend{clientService{r}}
	if v := web.NodeVersions()[key]; v != "3.3.6" {
		t.Errorf("version %q, want 3.3.6", v)
	}
	report := func() *pb.NodeReportProto {
		t.Helper()
		resp, err := clientOf(t, r, "alice").GetClusterNodes(ctx, &pb.GetClusterNodesRequestProto{})
		if err != nil || len(resp.GetNodeReports()) != 1 {
			t.Fatalf("nodes: %v %v", resp, err)
		}
		return resp.GetNodeReports()[0]
	}
	if n := report(); n.NodeUtilization != nil || n.ContainersUtilization != nil {
		t.Errorf("utilisation before any was measured: %v", n)
	}
	nodeU := &pb.ResourceUtilizationProto{Pmem: proto.Int32(3000), Vmem: proto.Int32(3500), Cpu: proto.Float32(1.5)}
	contU := &pb.ResourceUtilizationProto{Pmem: proto.Int32(1000), Vmem: proto.Int32(1200), Cpu: proto.Float32(0.5)}
	if _, err := rt.NodeHeartbeat(ctx, &pb.NodeHeartbeatRequestProto{NodeStatus: &pb.NodeStatusProto{NodeId: nodeIDOf(key),
		ResponseId: proto.Int32(0), NodeUtilization: nodeU, ContainersUtilization: contU}}); err != nil {
		t.Fatal(err)
	}
	n := report()
	if n.GetNodeUtilization().GetPmem() != 3000 || n.GetNodeUtilization().GetCpu() != 1.5 || n.GetContainersUtilization().GetVmem() != 1200 {
		t.Errorf("report after a measured heartbeat: node %v, containers %v", n.GetNodeUtilization(), n.GetContainersUtilization())
	}
	if _, err := rt.NodeHeartbeat(ctx, &pb.NodeHeartbeatRequestProto{NodeStatus: &pb.NodeStatusProto{NodeId: nodeIDOf(key),
		ResponseId: proto.Int32(1)}}); err != nil {
		t.Fatal(err)
	}
	if n := report(); n.GetNodeUtilization().GetPmem() != 3000 {
		t.Errorf("a heartbeat without a measurement lost the last one: %v", n.GetNodeUtilization())
	}
	if _, err := rt.RegisterNodeManager(ctx, &pb.RegisterNodeManagerRequestProto{NodeId: nodeIDOf(key), HttpPort: proto.Int32(8042),
		Resource: &pb.ResourceProto{Memory: proto.Int64(8192), VirtualCores: proto.Int32(4)}, NmVersion: proto.String("3.4.0")}); err != nil {
		t.Fatal(err)
	}
	if n := report(); n.NodeUtilization != nil || web.NodeVersions()[key] != "3.4.0" {
		t.Errorf("after registering again: utilisation %v, version %q", n.NodeUtilization, web.NodeVersions()[key])
	}
}

// TestUpdateNodeResource: an admin's new capacity for a node is what the
// scheduler and the reports see at once; with ACLs on, others are
// refused; an unknown node is not found.
func TestUpdateNodeResource(t *testing.T) {
	r := startRM(t, "yarn.acl.enable=true", "yarn.admin.acl=root")
	rt := trackerClient(t, r, nil)
	key := "10.0.0.9:45454"
	if _, err := registerNode(rt, key, 8192, 4); err != nil {
		t.Fatal(err)
	}
	web := webBackend{clientService{r}}
	if _, err := web.UpdateNodeResource(asUser("eve"), key, fairness.New(16384, 8)); !rpc.IsClass(err, rpc.ClassAccessControl) {
		t.Errorf("eve: %v, want AccessControlException", err)
	}
	got, err := web.UpdateNodeResource(asUser("root"), key, fairness.New(16384, 8))
	if err != nil || got[fairness.Memory] != 16384 || got[fairness.VCores] != 8 {
		t.Fatalf("root: %v %v", got, err)
	}
	m, err := clientOf(t, r, "alice").GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.core.Capacity(); c[fairness.Memory] != 16384 || c[fairness.VCores] != 8 {
		t.Errorf("the core's capacity %v, metrics %v", c, m)
	}
	if _, err := web.UpdateNodeResource(asUser("root"), "nowhere:1", fairness.New(1, 1)); !errors.Is(err, webui.ErrNotFound) {
		t.Errorf("unknown node: %v", err)
	}
}
