package server

import (
	"context"
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
