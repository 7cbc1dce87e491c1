package server

import (
	"context"
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// gauge reads one sample of the RM's metrics (a gauge's or a counter's).
func gauge(t *testing.T, r *RM, name string, labels ...string) float64 {
	t.Helper()
	m := sample(t, r, name, labels...)
	if m == nil {
		t.Fatalf("no metric %s %v", name, labels)
	}
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// sample is the RM's metric name with the given label pairs (name,
// value, ...), or nil.
func sample(t *testing.T, r *RM, name string, labels ...string) *dto.Metric {
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
			return m
		}
	}
	return nil
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
		// A stock AM's app sends no remaining work: never promised.
		{"loom_apps_late_for_first_promise", nil, 0},
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

// TestQueuePAltruism: loom.queue.<name>.p-altruism is what the AMs of that
// queue are told in every allocate reply; the other queues' AMs get the
// cluster's P(Altruism). A live change of the override reaches the next
// reply; clearing it brings the cluster's back.
func TestQueuePAltruism(t *testing.T) {
	r := startRM(t, "loom.queue.etl.p-altruism=0.25")
	nm := startNM(t, r.Addr("tracker"), 16384, 16)
	ac := clientOf(t, r, "bob")
	submit(t, ac, "etl", 1024)
	nm.beat()
	etl := amClient(t, r, nm.waitStarts(1)[0])
	submit(t, ac, "default", 1024)
	nm.beat()
	def := amClient(t, r, nm.waitStarts(2)[1])
	ctx := context.Background()
	ids := map[rpc.ApplicationMasterClient]int32{}
	p := func(am rpc.ApplicationMasterClient) float64 {
		t.Helper()
		resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(ids[am])})
		if err != nil {
			t.Fatal(err)
		}
		ids[am] = resp.GetResponseId()
		return resp.GetLoomPAltruism()
	}
	for _, am := range []rpc.ApplicationMasterClient{etl, def} {
		if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{Host: proto.String("h"), RpcPort: proto.Int32(0)}); err != nil {
			t.Fatal(err)
		}
	}
	if e, d := p(etl), p(def); e != 0.25 || d != 1 {
		t.Errorf("P told: etl %v, default %v; want 0.25 and 1", e, d)
	}
	web := webBackend{clientService{r}}
	if err := web.SetAltruism(asUser("yarn"), webui.AltruismSet{Queue: "etl", P: 0.75}, "test"); err != nil {
		t.Fatal(err)
	}
	if e := p(etl); e != 0.75 {
		t.Errorf("after the change, etl told %v, want 0.75", e)
	}
	if err := web.SetAltruism(asUser("yarn"), webui.AltruismSet{Queue: "etl", Clear: true}, "test"); err != nil {
		t.Fatal(err)
	}
	if e := p(etl); e != 1 {
		t.Errorf("after clearing, etl told %v, want the cluster's 1", e)
	}
	if err := web.SetAltruism(asUser("yarn"), webui.AltruismSet{Queue: "ghost", P: 0.5}, "test"); err == nil {
		t.Error("an override for a queue not in loom.queues was taken")
	}
}

// TestRPCMetrics: the RM times every call its handlers run, by protocol
// and method, as Hadoop's RpcQueueTime and RpcProcessingTime: after one
// registration, three heartbeats and one submission the histograms hold
// exactly those counts, and no method that was not called has a series.
func TestRPCMetrics(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 4096, 4) // registers
	for range 3 {
		nm.beat()
	}
	submit(t, clientOf(t, r, "ann"), "default", 1024)
	for _, name := range []string{"loom_rpc_queue_seconds", "loom_rpc_processing_seconds"} {
		for _, c := range []struct {
			protocol, method string
			want             uint64
		}{
			{"ResourceTracker", "registerNodeManager", 1},
			{"ResourceTracker", "nodeHeartbeat", 3},
			{"ApplicationClientProtocol", "submitApplication", 1},
			{"ApplicationClientProtocol", "killApplication", 0},
		} {
			if got := sample(t, r, name, "protocol", c.protocol, "method", c.method).GetHistogram().GetSampleCount(); got != c.want {
				t.Errorf("%s{protocol=%q, method=%q}: %d calls, want %d", name, c.protocol, c.method, got, c.want)
			}
		}
	}
}

// TestPreemptedByCause: a fresh RM exports loom_containers_preempted_total
// for each cause the core has, at 0, named as rm.PreemptCause says (the
// integration tests count real preemptions and recalls in them).
func TestPreemptedByCause(t *testing.T) {
	r := startRM(t)
	for _, cause := range []string{"queue_starved", "recall_below_share", "recall_late_for_promise"} {
		if got := gauge(t, r, "loom_containers_preempted_total", "cause", cause); got != 0 {
			t.Errorf("cause %s: %v containers on a fresh RM", cause, got)
		}
	}
	if m := sample(t, r, "loom_containers_preempted_total", "cause", "other"); m != nil {
		t.Errorf("a series for an unknown cause: %v", m)
	}
}
