package server

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/lifecycle"
	"github.com/loomrm/loom/rpc"
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

// TestRecallRunsWhenDueWithoutAHeartbeat: the RM runs a scheduling pass at
// the instant the core has recall due, as the simulator does, rather than
// at the next heartbeat. App A fills the node with ALTRUISTIC tasks (paid
// by the leftover); app B then asks for DEFAULT ones below its share and
// a heartbeat once the shares moved sees it waiting. No heartbeat
// follows, yet once B's wait
// (recall 0.25 of its 2 s critical path) runs out one of A's containers is
// taken back and B is granted it.
func TestRecallRunsWhenDueWithoutAHeartbeat(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	ctx := context.Background()
	start := func(user string, k int) rpc.ApplicationMasterClient {
		submit(t, clientOf(t, r, user), "default", 1024)
		nm.beat()
		am := amClient(t, r, nm.waitStarts(k)[k-1])
		if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{}); err != nil {
			t.Fatal(err)
		}
		return am
	}
	ask := func(n int32, kind pb.LoomAskKindProto) []*pb.ResourceRequestProto {
		return []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
			Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n),
			LoomAskKind: kind.Enum(), LoomRemainingWork: proto.Float64(10), LoomCriticalPathMs: proto.Int64(2000)}}
	}
	a := start("ann", 1)
	b := start("bob", 2)
	respA, err := a.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: ask(20, pb.LoomAskKindProto_LOOM_ALTRUISTIC)})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	if respA, err = a.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(respA.GetResponseId())}); err != nil {
		t.Fatal(err)
	}
	if n := len(respA.GetAllocatedContainers()); n != 6 {
		t.Fatalf("A got %d ALTRUISTIC containers, want the 6 the two AMs leave", n)
	}
	respB, err := b.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: ask(2, pb.LoomAskKindProto_LOOM_DEFAULT)})
	if err != nil {
		t.Fatal(err)
	}
	// Shares follow moved demands at most every 500 ms: the first pass
	// after that sees B below its share on a full node, and B waits from
	// then on.
	time.Sleep(600 * time.Millisecond)
	nm.beat()
	asked := time.Now()
	taken := func() float64 {
		return gauge(t, r, "loom_containers_preempted_total", "cause", "recall_below_share") +
			gauge(t, r, "loom_containers_preempted_total", "cause", "recall_late_for_promise")
	}
	for taken() == 0 {
		if time.Since(asked) > 5*time.Second {
			t.Fatal("no container taken back 5 s after B's wait began, with no heartbeat since")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Not before B's wait ran out.
	if waited := time.Since(asked); waited < 400*time.Millisecond {
		t.Errorf("a container was taken back %v after B began to wait, before its 500 ms wait ran out", waited)
	}
	if respB, err = b.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(respB.GetResponseId())}); err != nil {
		t.Fatal(err)
	}
	if n := len(respB.GetAllocatedContainers()); n != 1 {
		t.Errorf("B got %d containers after the recall, want the 1 it freed", n)
	}
}
