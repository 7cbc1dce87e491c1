package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestFailureAccounting: as in YARN, an AM that ends through no fault of
// its own (its node lost, its disks failed, preempted, killed by the RM)
// does not count against max attempts, and with an attempt failure
// validity interval only failures within it count.
func TestFailureAccounting(t *testing.T) {
	r := startRM(t) // yarn.resourcemanager.am.max-attempts 2
	nm := startNM(t, r.Addr("tracker"), 65536, 64)
	ac := clientOf(t, r, "vic")
	res := &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}
	started := 0
	// endAM ends the app's current AM container with exit and returns the
	// app's state and attempt count after it.
	endAM := func(id *pb.ApplicationIdProto, exit int32) (pb.YarnApplicationStateProto, int) {
		t.Helper()
		nm.beat()
		started++
		nm.finish(containerOf(t, nm.waitStarts(started)[started-1]), exit)
		nm.beat()
		rep := report(t, ac, id)
		return rep.GetYarnApplicationState(), int(rep.GetCurrentApplicationAttemptId().GetAttemptId())
	}

	id, err := submitContext(t, ac, &pb.ApplicationSubmissionContextProto{Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		exit        int32
		wantState   pb.YarnApplicationStateProto
		wantAttempt int
	}{
		{ExitAborted, pb.YarnApplicationStateProto_ACCEPTED, 2},     // node lost: free
		{ExitPreempted, pb.YarnApplicationStateProto_ACCEPTED, 3},   // preempted: free
		{ExitDisksFailed, pb.YarnApplicationStateProto_ACCEPTED, 4}, // disks failed: free
		{ExitKilledByRM, pb.YarnApplicationStateProto_ACCEPTED, 5},  // killed by the RM: free
		{1, pb.YarnApplicationStateProto_ACCEPTED, 6},               // its own fault: 1 of 2
		{-104, pb.YarnApplicationStateProto_FAILED, 6},              // over its memory: 2 of 2
	} {
		if state, attempt := endAM(id, tc.exit); state != tc.wantState || attempt != tc.wantAttempt {
			t.Fatalf("step %d (exit %d): %v at attempt %d, want %v at attempt %d", i, tc.exit, state, attempt, tc.wantState, tc.wantAttempt)
		}
	}
	if d := report(t, ac, id).GetDiagnostics(); !strings.Contains(d, "failed 2 times") {
		t.Errorf("diagnostics %q, want it to count the 2 failures that count", d)
	}

	// Failures older than the validity interval are forgotten.
	id, err = submitContext(t, ac, &pb.ApplicationSubmissionContextProto{Resource: res, AttemptFailuresValidityInterval: proto.Int64(300)})
	if err != nil {
		t.Fatal(err)
	}
	if state, _ := endAM(id, 1); state == pb.YarnApplicationStateProto_FAILED {
		t.Fatal("failed after one failure")
	}
	time.Sleep(400 * time.Millisecond)
	if state, attempt := endAM(id, 1); state == pb.YarnApplicationStateProto_FAILED || attempt != 3 {
		t.Fatalf("a failure outside the 300 ms window still counted: %v at attempt %d", state, attempt)
	}
	if state, _ := endAM(id, 1); state != pb.YarnApplicationStateProto_FAILED {
		t.Fatalf("two failures within the window: %v, want FAILED", state)
	}
}

// TestSilentAMFailsOneAttempt: an AM that stops calling fails its
// attempt once: its still-running AM container is killed with it
// (KILLED_BY_RESOURCEMANAGER) and exactly one new attempt starts. The
// container's end used to fail the attempt a second time.
func TestSilentAMFailsOneAttempt(t *testing.T) {
	r := startRM(t, "yarn.am.liveness-monitor.expiry-interval-ms=300", "yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs=10",
		"yarn.resourcemanager.am.max-attempts=3")
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	ac := clientOf(t, r, "walt")
	id, err := submitContext(t, ac, &pb.ApplicationSubmissionContextProto{KeepContainersAcrossApplicationAttempts: proto.Bool(true),
		Resource: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	start := nm.waitStarts(1)[0]
	amCont := containerOf(t, start)
	if _, err := amClient(t, r, start).RegisterApplicationMaster(context.Background(), &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for report(t, ac, id).GetCurrentApplicationAttemptId().GetAttemptId() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the silent AM's attempt did not fail")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	atts, err := ac.GetApplicationAttempts(context.Background(), &pb.GetApplicationAttemptsRequestProto{ApplicationId: id})
	if err != nil || len(atts.GetApplicationAttempts()) != 2 {
		t.Fatalf("%d attempts after one silent AM, want 2 (%v)", len(atts.GetApplicationAttempts()), err)
	}
	cleaned := false
	for _, c := range nm.beat().GetContainersToCleanup() {
		cleaned = cleaned || rpc.ContainerIDString(c) == rpc.ContainerIDString(amCont)
	}
	if !cleaned {
		t.Errorf("the silent AM's container %s was not cleaned up (even though the app keeps containers)", rpc.ContainerIDString(amCont))
	}
}
