package server

import (
	"context"
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// gauge reads one sample of the RM's metrics.
func gauge(t *testing.T, r *RM, name string, labels ...string) float64 {
	t.Helper()
	fams, err := r.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}
				if !found {
					continue next
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s %v", name, labels)
	return 0
}

// TestAltruismMetrics: what an AM yields, what is held over shares and
// who waits below its share, worked by hand for one app on one node of
// 4 GB and 32 vcores. The app holds its AM (1 GB, 1 vcore) and asks for
// two ALTRUISTIC containers of 3.5 GB, 1 vcore, which YARN's rounding to
// the 1 GB minimum makes 4 GB each, so neither fits beside the AM. Its
// demand is 1 + 8 = 9 GB and 3 vcores; alone on the node its DRF share is
// that demand scaled to the node's 4 GB: (4096 MB, 4/9 × 3 = 1.333
// vcores). It asks nothing DEFAULT, so it yields its share less what it
// holds: 3072 MB and 0.333 vcores; it holds nothing over its share, and
// with no DEFAULT ask waiting it is not behind.
func TestAltruismMetrics(t *testing.T) {
	rm := startRM(t)
	nm := startNM(t, rm.Addr("tracker"), 4096, 32)
	submit(t, clientOf(t, rm, "ida"), "default", 1024)
	nm.beat()
	am := amClient(t, rm, nm.waitStarts(1)[0])
	if _, err := am.RegisterApplicationMaster(context.Background(), &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	ask := &pb.ResourceRequestProto{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(3584), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(2),
		LoomAskKind: pb.LoomAskKindProto_LOOM_ALTRUISTIC.Enum()}
	if _, err := am.Allocate(context.Background(), &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: []*pb.ResourceRequestProto{ask}}); err != nil {
		t.Fatal(err)
	}
	// Shares follow a change of demand at the share interval (500 ms, as
	// YARN's fair scheduler), on a node's heartbeat.
	time.Sleep(600 * time.Millisecond)
	nm.beat()
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"loom_yielded", []string{"resource", "memory-mb"}, 3072},
		{"loom_yielded", []string{"resource", "vcores"}, 4.0/9*3 - 1},
		{"loom_held_over_share", []string{"resource", "memory-mb"}, 0},
		{"loom_held_over_share", []string{"resource", "vcores"}, 0},
		{"loom_apps_waiting_below_share", nil, 0},
	} {
		if got := gauge(t, rm, c.name, c.labels...); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s %v = %g, want %g", c.name, c.labels, got, c.want)
		}
	}
	// The cluster page's timeline says the same as dominant shares of the
	// node: 3072 of 4096 MB yielded (0.75, above 0.333 of 32 vcores),
	// nothing held over, nobody behind.
	rm.mu.Lock()
	rm.sample(time.Now())
	last := rm.timeline.samples[len(rm.timeline.samples)-1]
	rm.mu.Unlock()
	if math.Abs(last.Yielded-0.75) > 1e-9 || last.HeldOverShare != 0 || last.BehindShare != 0 {
		t.Errorf("timeline sample: yielded %g, held over %g, behind %d; want 0.75, 0, 0", last.Yielded, last.HeldOverShare, last.BehindShare)
	}
}
