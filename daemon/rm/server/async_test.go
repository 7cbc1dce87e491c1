package server

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestAsyncScheduling: with loom.scheduler.async.interval-ms, a heartbeat
// places nothing itself; the scheduling loop places the AM and then the
// AM's asks on the nodes that heartbeated, within a few intervals.
func TestAsyncScheduling(t *testing.T) {
	// A loop that never comes round: heartbeats alone place nothing.
	idle := startRM(t, "loom.scheduler.async.interval-ms=3600000")
	idleNM := startNM(t, idle.Addr("tracker"), 8192, 8)
	submit(t, clientOf(t, idle, "ann"), "default", 1024)
	for range 5 {
		idleNM.beat()
		time.Sleep(20 * time.Millisecond)
	}
	idle.mu.Lock()
	if n := len(idle.conts); n != 0 {
		t.Errorf("heartbeats placed %d containers themselves", n)
	}
	idle.mu.Unlock()

	r := startRM(t, "loom.scheduler.async.interval-ms=20")
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	submit(t, clientOf(t, r, "ann"), "default", 1024)
	nm.beat()
	am := amClient(t, r, nm.waitStarts(1)[0])
	ctx := context.Background()
	if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	ask := []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(3)}}
	resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: ask})
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	deadline := time.Now().Add(5 * time.Second)
	for got < 3 && time.Now().Before(deadline) {
		nm.beat()
		time.Sleep(30 * time.Millisecond)
		resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId())})
		if err != nil {
			t.Fatal(err)
		}
		got += len(resp.GetAllocatedContainers())
	}
	if got != 3 {
		t.Errorf("%d of 3 task containers granted by the scheduling loop", got)
	}
}
