package driver

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/daemon/rm/server"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

var (
	small = fairness.New(1024, 1)
	big   = fairness.New(4096, 2)
)

// TestLocalityRequests: the host and rack requests of a call's asks, by
// hand.
func TestLocalityRequests(t *testing.T) {
	hosts := map[string]int{"h1": 2, "h2": 1}
	racks := map[string]int{"/r1": 3}
	tests := []struct {
		name string
		asks []am.Ask
		want map[localKey]int
	}{
		{"no inputs, no requests", []am.Ask{{Priority: 0, Demand: small, Count: 4}}, map[localKey]int{}},
		{"one request per host and per rack, at the ask's priority and capability",
			[]am.Ask{{Priority: 1, Demand: small, Count: 3, Hosts: hosts, Racks: racks}},
			map[localKey]int{{1, small, "h1"}: 2, {1, small, "h2"}: 1, {1, small, "/r1"}: 3}},
		{"a stage's DEFAULT and ALTRUISTIC asks count its tasks once",
			[]am.Ask{{Priority: 1, Demand: small, Kind: altruism.Default, Count: 1, Hosts: hosts, Racks: racks},
				{Priority: 1, Demand: small, Kind: altruism.Altruistic, Count: 2, Hosts: hosts, Racks: racks}},
			map[localKey]int{{1, small, "h1"}: 2, {1, small, "h2"}: 1, {1, small, "/r1"}: 3}},
		{"two stages on one host ask for it apart",
			[]am.Ask{{Priority: 0, Demand: small, Count: 1, Hosts: map[string]int{"h1": 1}, Racks: map[string]int{"/r1": 1}},
				{Priority: 2, Demand: big, Count: 5, Hosts: map[string]int{"h1": 4, "h3": 1}, Racks: map[string]int{"/r1": 4, "/r2": 1}}},
			map[localKey]int{{0, small, "h1"}: 1, {0, small, "/r1"}: 1, {2, big, "h1"}: 4, {2, big, "h3"}: 1, {2, big, "/r1"}: 4, {2, big, "/r2"}: 1}},
		{"a zero count is no request",
			[]am.Ask{{Priority: 1, Demand: small, Count: 1, Hosts: map[string]int{"h1": 0, "h2": 1}, Racks: map[string]int{"/r1": 1}}},
			map[localKey]int{{1, small, "h2"}: 1, {1, small, "/r1"}: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, localityRequests(tc.asks), cmp.AllowUnexported(localKey{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// wire is a call's asks as "priority name count", in the order sent;
// every one must relax locality.
func wire(t *testing.T, req *pb.AllocateRequestProto) []string {
	var out []string
	for _, rr := range req.GetAsk() {
		if !rr.GetRelaxLocality() {
			t.Errorf("%s asked without relax_locality", rr.GetResourceName())
		}
		out = append(out, fmt.Sprintf("%d %s %d", rr.GetPriority().GetPriority(), rr.GetResourceName(), rr.GetNumContainers()))
	}
	return out
}

// TestLocalityRequestsOnTheWire: the first call sends every host and rack
// request beside the "*" one; later calls send only the ones whose count
// changed, a request gone at count 0, nothing for an unchanged one; after
// the RM lost the app (it restarted) and the AM registered again, all of
// them.
func TestLocalityRequestsOnTheWire(t *testing.T) {
	var mu sync.Mutex
	var got []*pb.AllocateRequestProto
	forget := false // the next allocate finds the AM unregistered
	cl := amrmStandIn(t, nil, func(req *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
		mu.Lock()
		defer mu.Unlock()
		if forget {
			forget = false
			return nil, rpc.Errorf(rpc.ClassApplicationMasterNotRegistered, "not registered")
		}
		got = append(got, req)
		return &pb.AllocateResponseProto{ResponseId: proto.Int32(req.GetResponseId() + 1)}, nil
	})
	ctx := context.Background()
	ask := func(count int, hosts, racks map[string]int) []am.Ask {
		return []am.Ask{{Priority: 1, Demand: small, Count: count, Hosts: hosts, Racks: racks}}
	}
	calls := []struct {
		name   string
		asks   []am.Ask
		forget bool
		want   []string
	}{
		{"first call: every request", ask(3, map[string]int{"h1": 2, "h2": 1}, map[string]int{"/r1": 3}),
			false, []string{"1 * 3", "1 /r1 3", "1 h1 2", "1 h2 1"}},
		{"nothing changed: the * ask only", ask(3, map[string]int{"h1": 2, "h2": 1}, map[string]int{"/r1": 3}),
			false, []string{"1 * 3"}},
		{"a task on h1 started: h1 and its rack", ask(2, map[string]int{"h1": 1, "h2": 1}, map[string]int{"/r1": 2}),
			false, []string{"1 * 2", "1 /r1 2", "1 h1 1"}},
		{"the task on h2 started: h2 gone at 0", ask(1, map[string]int{"h1": 1}, map[string]int{"/r1": 1}),
			false, []string{"1 * 1", "1 /r1 1", "1 h2 0"}},
		{"registered again: all of them", ask(1, map[string]int{"h1": 1}, map[string]int{"/r1": 1}),
			true, []string{"1 * 1", "1 /r1 1", "1 h1 1"}},
		{"the stage is running: everything at 0", nil,
			false, []string{"1 * 0", "1 /r1 0", "1 h1 0"}},
		{"nothing asked", nil, false, nil},
	}
	for i, c := range calls {
		mu.Lock()
		forget = c.forget
		mu.Unlock()
		if _, err := cl.Allocate(ctx, am.Request{Asks: c.asks}, nil, 0); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		mu.Lock()
		if len(got) != i+1 {
			t.Fatalf("%s: %d calls reached the RM, want %d", c.name, len(got), i+1)
		}
		if diff := cmp.Diff(c.want, wire(t, got[i])); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
		mu.Unlock()
	}
}

// TestRMPlacesOnTheInputsHost: against a real RM with two nodes, the AM
// asks for two containers whose inputs are on the second node's host;
// the RM passes over the first node (delay scheduling) and places both on
// the second, and the grants say its host, which the AM core binds by.
func TestRMPlacesOnTheInputsHost(t *testing.T) {
	c := hadoopconf.New(server.Defaults)
	for k, v := range map[string]string{"yarn.resourcemanager.address": "127.0.0.1:0",
		"yarn.resourcemanager.scheduler.address": "127.0.0.1:0", "yarn.resourcemanager.resource-tracker.address": "127.0.0.1:0",
		"yarn.resourcemanager.webapp.address": "127.0.0.1:0", "loom.history.dir": t.TempDir()} {
		c.Set(k, v)
	}
	cfg, err := server.LoadConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	r, err := server.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	defer r.Stop(context.Background())
	ctx := context.Background()
	tcl := rpc.NewClient(r.Addr("tracker"), rpc.ClientOptions{User: "nm"})
	defer tcl.Close()
	// Two nodes on two loopback addresses, so that their hosts differ.
	var nodes []*node
	for _, host := range []string{"127.0.0.2", "127.0.0.3"} {
		n := &node{rt: rpc.ResourceTrackerClient{C: tcl}}
		srv := rpc.NewServer(rpc.ServerOptions{})
		srv.Register(rpc.ContainerManagementService(n))
		ln, err := net.Listen("tcp", host+":0")
		if err != nil {
			t.Skipf("cannot listen on %s: %v", host, err)
		}
		go srv.Serve(ln)
		defer srv.Close()
		n.id = &pb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(int32(ln.Addr().(*net.TCPAddr).Port))}
		if _, err := n.rt.RegisterNodeManager(ctx, &pb.RegisterNodeManagerRequestProto{NodeId: n.id,
			Resource: rpc.ResourceFromVector(fairness.New(16384, 16))}); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	ccl := rpc.NewClient(r.Addr("client"), rpc.ClientOptions{User: "frank"})
	defer ccl.Close()
	ac := rpc.ApplicationClient{C: ccl}
	na, _ := ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if _, err := ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), Resource: rpc.ResourceFromVector(fairness.New(1024, 1)),
		AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{"loom", "am"}}}}); err != nil {
		t.Fatal(err)
	}
	// The AM container goes to the first node that heartbeats.
	var launched *node
	deadline := time.Now().Add(10 * time.Second)
	for launched == nil {
		for _, n := range nodes {
			n.beat(t)
			n.mu.Lock()
			if len(n.starts) > 0 {
				launched = n
			}
			n.mu.Unlock()
			if launched != nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the AM was never launched")
		}
		time.Sleep(5 * time.Millisecond)
	}
	launched.mu.Lock()
	amStart := launched.starts[0]
	launched.mu.Unlock()
	tokFile := t.TempDir() + "/container_tokens"
	if err := os.WriteFile(tokFile, amStart.GetContainerLaunchContext().GetTokens(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvSchedulerAddress, env(amStart)[EnvSchedulerAddress])
	t.Setenv(EnvTokenFile, tokFile)
	launch, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cl := Dial(launch)
	defer cl.Close()
	if err := cl.Register(ctx, "127.0.0.1", 0, ""); err != nil {
		t.Fatal(err)
	}
	// The inputs are on the node that does not run the AM.
	other := nodes[0]
	if other == launched {
		other = nodes[1]
	}
	host := other.id.GetHost()
	req := am.Request{Demand: small.Scale(2), Asks: []am.Ask{{Priority: 0, Demand: small, Kind: altruism.Default, Count: 2,
		Hosts: map[string]int{host: 2}, Racks: map[string]int{"/default-rack": 2}}}}
	if _, err := cl.Allocate(ctx, req, nil, 0); err != nil {
		t.Fatal(err)
	}
	// The AM's node heartbeats first: it has room, but is not where
	// the inputs are.
	var granted []am.Grant
	for range 5 {
		launched.beat(t)
		other.beat(t)
		resp, err := cl.Allocate(ctx, req, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		granted = append(granted, resp.Granted...)
		if len(granted) >= 2 {
			break
		}
	}
	if len(granted) != 2 {
		t.Fatalf("granted %d containers, want 2", len(granted))
	}
	for _, g := range granted {
		if g.Host != host || g.Node != fmt.Sprintf("%s:%d", host, other.id.GetPort()) {
			t.Errorf("granted %+v, want it on %s, where the inputs are", g, host)
		}
	}
}
