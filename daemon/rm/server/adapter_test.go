package server

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestAMDemandReachesTheCore: a Loom AM's loom_demand, not its asks, is
// its DRF demand (plus its AM container), as in the simulator; a stock AM
// is estimated from what it holds and asks for. The reply names the
// policy, so that the AM plans as the simulator's does under it.
func TestAMDemandReachesTheCore(t *testing.T) {
	for _, tc := range []struct {
		name   string
		demand *pb.ResourceProto
		want   fairness.Vector
	}{
		// The AM container (1024 MB, 1 vcore) plus the DAG's 6144 MB, 6.
		{"Loom AM", &pb.ResourceProto{Memory: proto.Int64(6144), VirtualCores: proto.Int32(6)}, fairness.New(7168, 7)},
		// The AM container plus its one ask of 1024 MB.
		{"stock AM", nil, fairness.New(2048, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRM(t, "loom.scheduler.policy=drf")
			nm := startNM(t, r.Addr("tracker"), 16384, 16)
			id := submit(t, clientOf(t, r, "uma"), "default", 1024)
			nm.beat()
			am := amClient(t, r, nm.waitStarts(1)[0])
			if _, err := am.RegisterApplicationMaster(context.Background(), &pb.RegisterApplicationMasterRequestProto{}); err != nil {
				t.Fatal(err)
			}
			resp, err := am.Allocate(context.Background(), &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: ask1G(1), LoomDemand: tc.demand})
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetLoomPolicy() != "drf" || resp.GetLoomPAltruism() != 0 {
				t.Errorf("reply names policy %q with P(Altruism) %v, want drf and 0", resp.GetLoomPolicy(), resp.GetLoomPAltruism())
			}
			r.mu.Lock()
			a, _ := r.appByID(id)
			got, err := r.core.Demand(a.id)
			r.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("the core's demand for the app is %v, want %v", got, tc.want)
			}
		})
	}
	// A negative demand is refused with YARN's exception for bad asks.
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 16384, 16)
	submit(t, clientOf(t, r, "uma"), "default", 1024)
	nm.beat()
	am := amClient(t, r, nm.waitStarts(1)[0])
	am.RegisterApplicationMaster(context.Background(), &pb.RegisterApplicationMasterRequestProto{})
	_, err := am.Allocate(context.Background(), &pb.AllocateRequestProto{ResponseId: proto.Int32(0),
		LoomDemand: &pb.ResourceProto{Memory: proto.Int64(-5), VirtualCores: proto.Int32(1)}})
	if !rpc.IsClass(err, rpc.ClassInvalidResourceRequest) {
		t.Errorf("a negative loom_demand: %v", err)
	}
}

// TestAllocateSendsShareGrowth: with loom.scheduler.share-growth on, an
// allocate reply carries the core's projection of the app's share, as the
// simulator's AM gets it (one path), as it does by default. Two apps with equal weights: A has 10
// share-seconds left, B 100, so under processor sharing A is done after
// 10 x 2 = 20 s, and B's share doubles then (the cap, a dominant share of
// the whole cluster, is not reached: B's share is at most half). Off, the
// reply carries none.
func TestAllocateSendsShareGrowth(t *testing.T) {
	for _, on := range []bool{true, false} {
		r := startRM(t, fmt.Sprintf("loom.scheduler.share-growth=%t", on))
		nm := startNM(t, r.Addr("tracker"), 16384, 16)
		ac := clientOf(t, r, "uma")
		a := submit(t, ac, "default", 1024)
		submit(t, ac, "default", 1024)
		nm.beat()
		starts := nm.waitStarts(2)
		if containerOf(t, starts[0]).GetAppAttemptId().GetApplicationId().GetId() != a.GetId() {
			starts[0], starts[1] = starts[1], starts[0]
		}
		ctx := context.Background()
		var replies []*pb.AllocateResponseProto
		for i, work := range []float64{10, 100} {
			am := amClient(t, r, starts[i])
			if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{}); err != nil {
				t.Fatal(err)
			}
			ask := ask1G(1)
			ask[0].LoomRemainingWork = proto.Float64(work)
			resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: ask,
				LoomDemand: &pb.ResourceProto{Memory: proto.Int64(4096), VirtualCores: proto.Int32(4)}})
			if err != nil {
				t.Fatal(err)
			}
			replies = append(replies, resp)
		}
		got := replies[1].GetLoomShareGrowth()
		if !on {
			if len(got) != 0 {
				t.Errorf("share growth off: B's reply carries %v", got)
			}
			continue
		}
		// The projection may have been made up to ShareInterval (500 ms)
		// before B's reply (at A's), and the step comes nearer by that.
		if len(got) != 1 || got[0].GetAfterMs() > 20000 || got[0].GetAfterMs() < 19500 || got[0].GetFactor() != 2 {
			t.Errorf("B's reply carries %v, want one step: after 19500-20000 ms, factor 2", got)
		}
	}
}
