package server

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestUnmanagedAM: with unmanaged_am the RM launches nothing; the
// attempt is LAUNCHED at once and its owner (no one else) finds the AMRM
// token in the app's report, registers the AM with it, runs containers
// and finishes SUCCEEDED, as with YARN.
func TestUnmanagedAM(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	owner, other := clientOf(t, r, "wes"), clientOf(t, r, "xena")
	id, err := submitContext(t, owner, &pb.ApplicationSubmissionContextProto{UnmanagedAm: proto.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	nm.beat()
	nm.mu.Lock()
	launched := len(nm.starts)
	nm.mu.Unlock()
	if launched != 0 {
		t.Fatalf("the RM launched %d containers for an unmanaged AM", launched)
	}
	rep := report(t, owner, id)
	atts, err := owner.GetApplicationAttempts(context.Background(), &pb.GetApplicationAttemptsRequestProto{ApplicationId: id})
	if err != nil || len(atts.GetApplicationAttempts()) != 1 ||
		atts.GetApplicationAttempts()[0].GetYarnApplicationAttemptState() != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_LAUNCHED {
		t.Fatalf("attempts %v %v, want one LAUNCHED", atts, err)
	}
	if rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_ACCEPTED || !rep.GetUnmanagedApplication() || rep.GetAmRmToken() == nil {
		t.Fatalf("owner's report: %v unmanaged=%v token=%v", rep.GetYarnApplicationState(), rep.GetUnmanagedApplication(), rep.GetAmRmToken())
	}
	if tok := report(t, other, id).GetAmRmToken(); tok != nil {
		t.Errorf("another user's report carries the AMRM token")
	}
	am := amClientWith(t, r, rpc.ClientOptions{Token: rep.GetAmRmToken()})
	ctx := context.Background()
	if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	if st := report(t, owner, id); st.GetYarnApplicationState() != pb.YarnApplicationStateProto_RUNNING || st.GetAmRmToken() != nil {
		t.Errorf("after register: %v, token still in the report: %v", st.GetYarnApplicationState(), st.GetAmRmToken() != nil)
	}
	a := &allocator{t: t, am: am}
	a.call(ask1G(2))
	nm.beat()
	resp := a.call(nil)
	if len(resp.GetAllocatedContainers()) != 2 || len(resp.GetNmTokens()) != 1 {
		t.Fatalf("%d containers, %d NMTokens; want 2 and 1", len(resp.GetAllocatedContainers()), len(resp.GetNmTokens()))
	}
	if _, err := am.FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}); err != nil {
		t.Fatal(err)
	}
	if st := report(t, owner, id); st.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED ||
		st.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("ended %v/%v", st.GetYarnApplicationState(), st.GetFinalApplicationStatus())
	}
}

// TestUnmanagedAMThatNeverComes: an unmanaged attempt whose AM never
// registers fails at the AM expiry, as a launched AM that goes silent.
func TestUnmanagedAMThatNeverComes(t *testing.T) {
	r := startRM(t, "yarn.am.liveness-monitor.expiry-interval-ms=300", "yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs=10")
	owner := clientOf(t, r, "yves")
	id, err := submitContext(t, owner, &pb.ApplicationSubmissionContextProto{UnmanagedAm: proto.Bool(true), MaxAppAttempts: proto.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for report(t, owner, id).GetYarnApplicationState() != pb.YarnApplicationStateProto_FAILED {
		if time.Now().After(deadline) {
			t.Fatalf("still %v after the AM expiry", report(t, owner, id).GetYarnApplicationState())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
