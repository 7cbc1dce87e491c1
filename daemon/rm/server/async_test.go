package server

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/lifecycle"
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

// TestAsyncHeartbeatDoesNotWaitForTheRM: with asynchronous scheduling a
// heartbeat takes only its node's lock: it is answered while something
// else holds the RM's lock (a long scheduling pass), and what it reported
// is applied by the next pass once the lock is free. Synchronously, the
// same heartbeat waits.
func TestAsyncHeartbeatDoesNotWaitForTheRM(t *testing.T) {
	for _, tc := range []struct {
		conf    string
		answers bool
	}{
		{"loom.scheduler.async.interval-ms=20", true},
		{"loom.scheduler.async.interval-ms=0", false},
	} {
		r := startRM(t, tc.conf)
		nm := startNM(t, r.Addr("tracker"), 8192, 8)
		r.mu.Lock()
		done := make(chan struct{})
		go func() { nm.beat(); close(done) }()
		select {
		case <-done:
			if !tc.answers {
				t.Errorf("%s: a heartbeat was answered while the RM's lock was held", tc.conf)
			}
		case <-time.After(2 * time.Second):
			if tc.answers {
				t.Errorf("%s: a heartbeat waited 2 s for the RM's lock", tc.conf)
			}
		}
		r.mu.Unlock()
		<-done
	}

	// What a heartbeat reports while the lock is held counts once it is
	// free: the AM container's exit is seen by the next pass.
	r := startRM(t, "loom.scheduler.async.interval-ms=20")
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	submit(t, clientOf(t, r, "ann"), "default", 1024)
	nm.beat()
	nm.waitStarts(1)
	r.mu.Lock()
	var cr *contRec
	for _, c := range r.conts {
		cr = c
	}
	if cr == nil {
		t.Fatal("no AM container")
	}
	nm.finish(cr.yid, 0)
	nm.beat() // reports the AM container COMPLETE
	if cr.lc.State == lifecycle.ContainerComplete {
		t.Errorf("the AM container's exit was taken in while the RM's lock was held")
	}
	r.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		st := cr.lc.State
		r.mu.Unlock()
		if st == lifecycle.ContainerComplete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the AM container is %s 5 s after its node reported it COMPLETE", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
