package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

func reservationDef(arrival, deadline time.Time, containers int32, dur time.Duration) *pb.ReservationDefinitionProto {
	return &pb.ReservationDefinitionProto{Arrival: proto.Int64(arrival.UnixMilli()), Deadline: proto.Int64(deadline.UnixMilli()),
		ReservationName: proto.String("nightly"),
		ReservationRequests: &pb.ReservationRequestsProto{ReservationResources: []*pb.ReservationRequestProto{{
			Capability:    &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
			NumContainers: proto.Int32(containers), Concurrency: proto.Int32(1), Duration: proto.Int64(dur.Milliseconds())}}}}
}

// TestReservations: hand-worked on one node of <10240 MB, 10 vcores>
// with loom.reservation.max-share 0.8 (<8192, 8> reservable). Four
// containers of <1024, 1> for 10 min fit now; five more do not fit beside
// them (9 > 8) and start when the first ends; nine never fit. An app
// submitted to the first shares it; the core holds it; updates and
// deletes are the owner's.
func TestReservations(t *testing.T) {
	r := startRM(t, keyReservations+"=true", "yarn.acl.enable=true", "yarn.admin.acl=root")
	startNM(t, r.Addr("tracker"), 10240, 10)
	ann, eve := clientOf(t, r, "ann"), clientOf(t, r, "eve")
	ctx := context.Background()
	newID := func() *pb.ReservationIdProto {
		t.Helper()
		resp, err := ann.GetNewReservation(ctx, &pb.GetNewReservationRequestProto{})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetReservationId()
	}
	now := time.Now()
	first := newID()
	if _, err := ann.SubmitReservation(ctx, &pb.ReservationSubmissionRequestProto{Queue: proto.String("default"), ReservationId: first,
		ReservationDefinition: reservationDef(now, now.Add(time.Hour), 4, 10*time.Minute)}); err != nil {
		t.Fatal(err)
	}
	second := newID()
	if _, err := ann.SubmitReservation(ctx, &pb.ReservationSubmissionRequestProto{Queue: proto.String("default"), ReservationId: second,
		ReservationDefinition: reservationDef(now, now.Add(time.Hour), 5, 10*time.Minute)}); err != nil {
		t.Fatal(err)
	}
	list, err := ann.ListReservations(ctx, &pb.ReservationListRequestProto{Queue: proto.String("default"), IncludeResourceAllocations: proto.Bool(true)})
	if err != nil || len(list.GetReservations()) != 2 {
		t.Fatalf("list: %v %v", list, err)
	}
	a, b := list.GetReservations()[0], list.GetReservations()[1]
	if b.GetStartTime() != a.GetEndTime() || a.GetEndTime()-a.GetStartTime() != (10*time.Minute).Milliseconds() || a.GetUser() != "ann" {
		t.Errorf("windows [%d, %d) and [%d, %d): want the second to start when the first ends", a.GetStartTime(), a.GetEndTime(), b.GetStartTime(), b.GetEndTime())
	}
	if al := a.GetAllocationRequests(); len(al) != 1 || al[0].GetResource().GetMemory() != 4096 || al[0].GetResource().GetVirtualCores() != 4 {
		t.Errorf("first allocation %v, want <4096, 4>", al)
	}
	r.mu.Lock()
	held := r.core.Reserved()
	r.mu.Unlock()
	if held != fairness.New(4096, 4) {
		t.Errorf("the core holds %v now, want <4096, 4>", held)
	}

	// Errors, as YARN words them where it has words.
	for _, tc := range []struct {
		name string
		req  *pb.ReservationSubmissionRequestProto
		want string
	}{
		{"too big", &pb.ReservationSubmissionRequestProto{Queue: proto.String("default"), ReservationId: newID(),
			ReservationDefinition: reservationDef(now, now.Add(time.Hour), 9, 10*time.Minute)}, classPlanning},
		{"not issued", &pb.ReservationSubmissionRequestProto{Queue: proto.String("default"),
			ReservationId:         &pb.ReservationIdProto{ClusterTimestamp: proto.Int64(1), Id: proto.Int64(99)},
			ReservationDefinition: reservationDef(now, now.Add(time.Hour), 1, time.Minute)}, "was not issued"},
		{"unknown queue", &pb.ReservationSubmissionRequestProto{Queue: proto.String("ghost"), ReservationId: newID(),
			ReservationDefinition: reservationDef(now, now.Add(time.Hour), 1, time.Minute)}, "is not managed by reservation system"},
		{"past deadline", &pb.ReservationSubmissionRequestProto{Queue: proto.String("default"), ReservationId: newID(),
			ReservationDefinition: reservationDef(now.Add(-2*time.Hour), now.Add(-time.Hour), 1, time.Minute)}, "is the past"},
		{"no definition", &pb.ReservationSubmissionRequestProto{Queue: proto.String("default"), ReservationId: newID()}, "Missing reservation definition"},
		{"window shorter than the duration", &pb.ReservationSubmissionRequestProto{Queue: proto.String("default"), ReservationId: newID(),
			ReservationDefinition: reservationDef(now, now.Add(time.Minute), 1, time.Hour)}, "must be greater or equal to the duration"},
	} {
		if _, err := ann.SubmitReservation(ctx, tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}

	// An app submitted to the first reservation; one in the wrong queue
	// and one to no such reservation are refused.
	res := &pb.ResourceProto{Memory: proto.Int64(512), VirtualCores: proto.Int32(1)}
	if _, err := submitContext(t, ann, &pb.ApplicationSubmissionContextProto{Queue: proto.String("default"), ReservationId: first, Resource: res}); err != nil {
		t.Errorf("an app in the reservation: %v", err)
	}
	if _, err := submitContext(t, ann, &pb.ApplicationSubmissionContextProto{Queue: proto.String("etl"), ReservationId: first, Resource: res}); err == nil ||
		!strings.Contains(err.Error(), "held in queue default") {
		t.Errorf("wrong queue: %v", err)
	}
	if _, err := submitContext(t, ann, &pb.ApplicationSubmissionContextProto{Queue: proto.String("default"), Resource: res,
		ReservationId: &pb.ReservationIdProto{ClusterTimestamp: proto.Int64(r.clusterTS), Id: proto.Int64(77)}}); err == nil ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Errorf("no such reservation: %v", err)
	}

	// Only its owner (or an admin) changes it.
	if _, err := eve.DeleteReservation(ctx, &pb.ReservationDeleteRequestProto{ReservationId: first}); !rpc.IsClass(err, rpc.ClassAccessControl) {
		t.Errorf("eve deletes ann's reservation: %v", err)
	}
	if _, err := ann.UpdateReservation(ctx, &pb.ReservationUpdateRequestProto{ReservationId: first,
		ReservationDefinition: reservationDef(now, now.Add(time.Hour), 2, 10*time.Minute)}); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	held = r.core.Reserved()
	r.mu.Unlock()
	if held != fairness.New(2048, 2) {
		t.Errorf("after the update the core holds %v, want <2048, 2>", held)
	}
	if _, err := ann.DeleteReservation(ctx, &pb.ReservationDeleteRequestProto{ReservationId: first}); err != nil {
		t.Fatal(err)
	}
	list, _ = ann.ListReservations(ctx, &pb.ReservationListRequestProto{Queue: proto.String("default")})
	if len(list.GetReservations()) != 1 {
		t.Errorf("after the delete: %v", list.GetReservations())
	}
	if _, err := ann.DeleteReservation(ctx, &pb.ReservationDeleteRequestProto{ReservationId: first}); err == nil {
		t.Error("deleted twice")
	}
}
