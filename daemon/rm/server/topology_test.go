package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/internal/hadoopconf"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestNodeRacks: the RM places nodes on the racks core-site.xml's
// topology names (here a script), and says so in node reports, as YARN's
// RackResolver does; a node the script cannot place is on /default-rack.
func TestNodeRacks(t *testing.T) {
	script := filepath.Join(t.TempDir(), "rack.sh")
	// 127.0.0.1 is the only host the test's NMs have: the script puts it
	// on /dc1/rack7.
	if err := os.WriteFile(script, []byte("#!/bin/sh\nfor h; do if [ \"$h\" = 127.0.0.1 ]; then printf '/dc1/rack7 '; else printf '/default-rack '; fi; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := startRM(t, "net.topology.script.file.name="+script)
	startNM(t, r.Addr("tracker"), 8192, 8)
	resp, err := clientOf(t, r, "alice").GetClusterNodes(context.Background(), &pb.GetClusterNodesRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	if n := resp.GetNodeReports(); len(n) != 1 || n[0].GetRackName() != "/dc1/rack7" {
		t.Errorf("node reports %v, want one node on /dc1/rack7", n)
	}

	plain := startRM(t)
	startNM(t, plain.Addr("tracker"), 8192, 8)
	resp, err = clientOf(t, plain, "alice").GetClusterNodes(context.Background(), &pb.GetClusterNodesRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	if n := resp.GetNodeReports(); len(n) != 1 || n[0].GetRackName() != "/default-rack" {
		t.Errorf("without a topology: %v, want /default-rack", n)
	}

	c := hadoopconf.New(Defaults)
	c.Set("net.topology.node.switch.mapping.impl", "org.apache.hadoop.net.TableMapping")
	if _, err := LoadConfig(c); err == nil || !strings.Contains(err.Error(), "net.topology.table.file.name") {
		t.Errorf("TableMapping without net.topology.table.file.name: %v", err)
	}
}

// TestLocalityAsks: a stock AM's host and rack ResourceRequests beside
// its "*" one place its containers with delay scheduling
// (yarn.scheduler.capacity.node-locality-delay, capped at the two nodes
// here): on the named host when its node heartbeats before the delay
// runs out, else on the named rack.
func TestLocalityAsks(t *testing.T) {
	r := startRM(t)
	a := startNMOn(t, r.Addr("tracker"), "127.0.0.1", 8192, 8)
	b := startNMOn(t, r.Addr("tracker"), "localhost", 8192, 8)
	submit(t, clientOf(t, r, "ann"), "default", 1024)
	a.beat()
	am := amClient(t, r, a.waitStarts(1)[0])
	ctx := context.Background()
	if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	capability := &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}
	ask := func(name string, n int32, relax bool) *pb.ResourceRequestProto {
		return &pb.ResourceRequestProto{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String(name),
			Capability: capability, NumContainers: proto.Int32(n), RelaxLocality: proto.Bool(relax)}
	}
	resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0),
		Ask: []*pb.ResourceRequestProto{ask("localhost", 1, true), ask("/default-rack", 1, true), ask("*", 1, true)}})
	if err != nil {
		t.Fatal(err)
	}
	next := func() []*pb.ContainerProto {
		t.Helper()
		r, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId())})
		if err != nil {
			t.Fatal(err)
		}
		resp = r
		return r.GetAllocatedContainers()
	}
	a.beat() // node a is not the host asked for: one missed opportunity
	if got := next(); len(got) != 0 {
		t.Fatalf("node a took %v of an ask for host localhost", got)
	}
	b.beat()
	got := next()
	if len(got) != 1 || got[0].GetNodeId().GetHost() != "localhost" {
		t.Fatalf("after node b's heartbeat: %v, want one container on localhost", got)
	}

	// A host that never heartbeats, on a rack that does: after two missed
	// opportunities (the node delay, capped at the cluster's two nodes)
	// node a takes it rack-local.
	if _, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId()),
		Ask: []*pb.ResourceRequestProto{ask("elsewhere", 1, true), ask("/default-rack", 1, true), ask("*", 1, true)}}); err != nil {
		t.Fatal(err)
	}
	resp.ResponseId = proto.Int32(resp.GetResponseId() + 1)
	placed := 0
	for beat := 1; beat <= 3; beat++ {
		a.beat()
		got := next()
		switch {
		case beat < 3 && len(got) != 0:
			t.Fatalf("heartbeat %d of node a placed %v before the node delay", beat, got)
		case beat == 3 && (len(got) != 1 || got[0].GetNodeId().GetHost() != "127.0.0.1"):
			t.Fatalf("heartbeat 3 of node a placed %v, want one container there, rack-local", got)
		}
		placed += len(got)
	}
	if placed != 1 {
		t.Errorf("placed %d containers, want 1", placed)
	}
	for _, c := range []struct {
		locality string
		want     float64
	}{{"NODE_LOCAL", 1}, {"RACK_LOCAL", 1}, {"OFF_SWITCH", 0}, {"ANY", 1}} { // ANY: the AM container
		if got := gauge(t, r, "loom_container_placements_total", "locality", c.locality); got != c.want {
			t.Errorf("loom_container_placements_total{locality=%q} = %v, want %v", c.locality, got, c.want)
		}
	}
}
