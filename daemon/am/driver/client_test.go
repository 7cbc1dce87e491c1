package driver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/daemon/rm/server"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// node is a minimal NodeManager over real RPC: it registers, heartbeats
// when told, and records the containers it is asked to start.
type node struct {
	rt     rpc.ResourceTrackerClient
	id     *pb.NodeIdProto
	mu     sync.Mutex
	starts []*pb.StartContainerRequestProto
	respID int32
}

func (n *node) StartContainers(ctx context.Context, req *pb.StartContainersRequestProto) (*pb.StartContainersResponseProto, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.starts = append(n.starts, req.GetStartContainerRequest()...)
	return &pb.StartContainersResponseProto{}, nil
}
func (n *node) StopContainers(ctx context.Context, req *pb.StopContainersRequestProto) (*pb.StopContainersResponseProto, error) {
	return &pb.StopContainersResponseProto{}, nil
}
func (n *node) GetContainerStatuses(ctx context.Context, req *pb.GetContainerStatusesRequestProto) (*pb.GetContainerStatusesResponseProto, error) {
	return &pb.GetContainerStatusesResponseProto{}, nil
}

func (n *node) beat(t *testing.T) {
	resp, err := n.rt.NodeHeartbeat(context.Background(), &pb.NodeHeartbeatRequestProto{
		NodeStatus: &pb.NodeStatusProto{NodeId: n.id, ResponseId: proto.Int32(n.respID)}})
	if err != nil {
		t.Fatal(err)
	}
	n.respID = resp.GetResponseId()
}

func env(s *pb.StartContainerRequestProto) map[string]string {
	m := map[string]string{}
	for _, kv := range s.GetContainerLaunchContext().GetEnvironment() {
		m[kv.GetKey()] = kv.GetValue()
	}
	return m
}

func TestClientAgainstARealRM(t *testing.T) {
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

	n := &node{}
	srv := rpc.NewServer(rpc.ServerOptions{})
	srv.Register(rpc.ContainerManagementService(n))
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Close()
	n.id = &pb.NodeIdProto{Host: proto.String("127.0.0.1"), Port: proto.Int32(int32(ln.Addr().(*net.TCPAddr).Port))}
	tcl := rpc.NewClient(r.Addr("tracker"), rpc.ClientOptions{User: "nm"})
	defer tcl.Close()
	n.rt = rpc.ResourceTrackerClient{C: tcl}
	if _, err := n.rt.RegisterNodeManager(ctx, &pb.RegisterNodeManagerRequestProto{NodeId: n.id,
		Resource: rpc.ResourceFromVector(fairness.New(16384, 16))}); err != nil {
		t.Fatal(err)
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
	n.beat(t)
	var amEnv map[string]string
	deadline := time.Now().Add(5 * time.Second)
	for amEnv == nil {
		n.mu.Lock()
		if len(n.starts) > 0 {
			amEnv = env(n.starts[0])
		}
		n.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the AM was never launched")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The NM writes the AM's credentials to a file, as YARN's does.
	tokens := filepath.Join(t.TempDir(), "container_tokens")
	n.mu.Lock()
	os.WriteFile(tokens, n.starts[0].GetContainerLaunchContext().GetTokens(), 0o600)
	n.mu.Unlock()
	t.Setenv(EnvSchedulerAddress, amEnv[EnvSchedulerAddress])
	t.Setenv(EnvTokenFile, tokens)
	launch, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(launch.Attempt, "appattempt_") || !strings.HasSuffix(launch.Attempt, "_000001") {
		t.Errorf("the token names attempt %q", launch.Attempt)
	}
	cl := Dial(launch)
	defer cl.Close()
	if err := cl.Register(ctx, "127.0.0.1", 0, ""); err != nil {
		t.Fatal(err)
	}
	if cl.MaxCapability != fairness.New(8192, 4) {
		t.Errorf("max capability %v", cl.MaxCapability)
	}
	req := am.Request{Asks: []am.Ask{{Priority: 1, Demand: fairness.New(2048, 1), Kind: altruism.Default, Count: 2},
		{Priority: 2, Demand: fairness.New(1024, 1), Kind: altruism.Altruistic, Count: 1}}, RemainingWork: 50, CriticalTime: time.Minute}
	resp, err := cl.Allocate(ctx, req, nil, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if resp.PAltruism != 1 || resp.Share.IsZero() || resp.Nodes != 1 || resp.Capacity != fairness.New(16384, 16) {
		t.Errorf("first reply: share %v, P %v, nodes %d, capacity %v", resp.Share, resp.PAltruism, resp.Nodes, resp.Capacity)
	}
	n.beat(t)
	resp, err = cl.Allocate(ctx, req, nil, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Granted) != 3 || len(resp.Tokens) != 3 {
		t.Fatalf("granted %d containers, want 3", len(resp.Granted))
	}
	kinds := map[altruism.AskKind]int{}
	for _, g := range resp.Granted {
		kinds[g.Kind]++
		if g.Node != n.id.GetHost()+":"+itoa(n.id.GetPort()) || resp.Tokens[g.ID].GetContainerToken() == nil {
			t.Errorf("grant %+v without its node or token", g)
		}
	}
	if kinds[altruism.Default] != 2 || kinds[altruism.Altruistic] != 1 {
		t.Errorf("grants by kind %v, want 2 DEFAULT and 1 ALTRUISTIC", kinds)
	}
	resp, err = cl.Allocate(ctx, am.Request{}, []int64{resp.Granted[0].ID}, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Completed) != 1 || resp.Completed[0].GetExitStatus() != server.ExitAborted {
		t.Errorf("completed after a release: %v", resp.Completed)
	}
	if err := cl.Finish(ctx, true, "ok"); err != nil {
		t.Fatal(err)
	}
	rep, _ := ac.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: na.GetApplicationId()})
	if rep.GetApplicationReport().GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("final status %v", rep.GetApplicationReport().GetFinalApplicationStatus())
	}
	// Without the RM's environment, or with credentials holding no AMRM
	// token, the AM says what is missing.
	notCreds := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(notCreds, []byte("junk"), 0o600)
	noAMRM := filepath.Join(t.TempDir(), "other")
	os.WriteFile(noAMRM, (&rpc.Credentials{}).Marshal(), 0o600)
	for file, want := range map[string]string{"": "must be set", notCreds: "no HDTS header", noAMRM: "hold no YARN_AM_RM_TOKEN"} {
		t.Setenv(EnvTokenFile, file)
		if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FromEnv with %q: %v, want an error naming %q", file, err, want)
		}
	}
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }

// TestDroppedAsksAreCancelled: YARN keeps an ask until told otherwise, so
// an ask the AM stops making is sent once more with count 0.
func TestDroppedAsksAreCancelled(t *testing.T) {
	var got []*pb.AllocateRequestProto
	srv := rpc.NewServer(rpc.ServerOptions{})
	srv.Register(rpc.Protocol{Name: rpc.ApplicationMasterProtocol, Methods: []rpc.Method{
		rpc.Unary("allocate", func(ctx context.Context, req *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
			got = append(got, req)
			return &pb.AllocateResponseProto{ResponseId: proto.Int32(req.GetResponseId() + 1)}, nil
		})}})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Close()
	cl := Dial(Launch{Addr: ln.Addr().String(), Attempt: "appattempt_1_0001_000001"})
	defer cl.Close()
	ctx := context.Background()
	a := am.Ask{Priority: 1, Demand: fairness.New(1024, 1), Kind: altruism.Altruistic, Count: 4}
	b := am.Ask{Priority: 2, Demand: fairness.New(2048, 1), Kind: altruism.Default, Count: 1}
	for _, asks := range [][]am.Ask{{a, b}, {b}, {b}} {
		if _, err := cl.Allocate(ctx, am.Request{Asks: asks}, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	count := func(r *pb.AllocateRequestProto) map[int32]int32 {
		m := map[int32]int32{}
		for _, rr := range r.GetAsk() {
			m[rr.GetPriority().GetPriority()] = rr.GetNumContainers()
		}
		return m
	}
	want := []map[int32]int32{{1: 4, 2: 1}, {1: 0, 2: 1}, {2: 1}}
	for i, w := range want {
		if c := count(got[i]); len(c) != len(w) || c[1] != w[1] || c[2] != w[2] {
			t.Errorf("call %d asked %v, want %v", i, c, w)
		}
	}
}

// recordingSecrets accepts tokens whose identifier names an attempt and
// records which identifier each connection authenticated with.
type recordingSecrets struct {
	mu   sync.Mutex
	used []string
}

func (s *recordingSecrets) RetrievePassword(id []byte) ([]byte, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used = append(s.used, string(id))
	return []byte("pw-" + string(id)), "appattempt_1_0001_000001", nil
}

// TestClientTakesTheRolledToken: when the RM rolls its AMRM key and sends
// a new token in an allocate reply, the AM's next connection uses it.
func TestClientTakesTheRolledToken(t *testing.T) {
	tok := func(id string) *hadooppb.TokenProto {
		return &hadooppb.TokenProto{Identifier: []byte(id), Password: []byte("pw-" + id), Kind: proto.String(rpc.AMRMTokenKind), Service: proto.String("scheduler")}
	}
	secrets := &recordingSecrets{}
	srv := rpc.NewServer(rpc.ServerOptions{Secrets: secrets})
	calls := 0
	srv.Register(rpc.Protocol{Name: rpc.ApplicationMasterProtocol, Methods: []rpc.Method{
		rpc.Unary("allocate", func(ctx context.Context, req *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
			calls++
			resp := &pb.AllocateResponseProto{ResponseId: proto.Int32(req.GetResponseId() + 1)}
			if calls == 1 {
				resp.AmRmToken = tok("rolled")
			}
			return resp, nil
		})}})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Close()
	cl := Dial(Launch{Addr: ln.Addr().String(), Attempt: "appattempt_1_0001_000001", Token: tok("first")})
	defer cl.Close()
	ctx := context.Background()
	if _, err := cl.Allocate(ctx, am.Request{}, nil, 0); err != nil {
		t.Fatal(err)
	}
	cl.rpc.Close() // the connection breaks; the next call dials again
	if _, err := cl.Allocate(ctx, am.Request{}, nil, 0); err != nil {
		t.Fatal(err)
	}
	secrets.mu.Lock()
	defer secrets.mu.Unlock()
	if len(secrets.used) != 2 || secrets.used[0] != "first" || secrets.used[1] != "rolled" {
		t.Errorf("connections authenticated with %q, want first then rolled", secrets.used)
	}
}

// TestReregistersAsOftenAsTheRMsChange: after quick successive failovers
// the RM an AM registered with again may itself be gone by its next call,
// and the next RM says the AM is not registered once more. The AM
// registers again each time (it once gave up after one, and its attempt
// failed with the exception), starting its response ids over.
func TestReregistersAsOftenAsTheRMsChange(t *testing.T) {
	var mu sync.Mutex
	registers, refusals := 0, 2
	var ids []int32
	cl := amrmStandIn(t, func() {
		mu.Lock()
		defer mu.Unlock()
		registers++
	}, func(req *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, req.GetResponseId())
		if refusals > 0 {
			refusals--
			return nil, rpc.Errorf(rpc.ClassApplicationMasterNotRegistered, "AM is not registered for known application attempt")
		}
		return &pb.AllocateResponseProto{ResponseId: proto.Int32(req.GetResponseId() + 1)}, nil
	})
	ctx := context.Background()
	cl.respID = 5 // well into the conversation with the first RM
	if _, err := cl.Allocate(ctx, am.Request{}, nil, 0); err != nil {
		t.Fatalf("allocate across two RMs that did not know the AM: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if registers != 3 || len(ids) != 3 || ids[0] != 5 || ids[1] != 0 || ids[2] != 0 {
		t.Errorf("%d registrations, response ids %v; want 3 (the first and two again), 5 then 0 and 0", registers, ids)
	}
}

// TestReleasesAgainAfterAFailover: a container the AM released and the
// RM reported completed is released again to an RM that takes over: the
// RM that completed it may have died before its node heard to stop it,
// and the node would report it running to the next RM. (By hand: the
// AM releases 7; the first RM reports 7 completed; the next call meets
// an RM that does not know the AM, which registers again and releases 7
// again beside 8, released just now.)
func TestReleasesAgainAfterAFailover(t *testing.T) {
	var mu sync.Mutex
	var released [][]int64
	failover := false
	cl := amrmStandIn(t, nil, func(req *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
		mu.Lock()
		defer mu.Unlock()
		var ids []int64
		for _, r := range req.GetRelease() {
			ids = append(ids, r.GetId())
		}
		slices.Sort(ids)
		released = append(released, ids)
		if failover {
			failover = false
			return nil, rpc.Errorf(rpc.ClassApplicationMasterNotRegistered, "AM is not registered for known application attempt")
		}
		resp := &pb.AllocateResponseProto{ResponseId: proto.Int32(req.GetResponseId() + 1)}
		for _, id := range ids {
			resp.CompletedContainerStatuses = append(resp.CompletedContainerStatuses, &pb.ContainerStatusProto{
				ContainerId: &pb.ContainerIdProto{Id: proto.Int64(id)}, State: pb.ContainerStateProto_C_COMPLETE.Enum()})
		}
		return resp, nil
	})
	ctx := context.Background()
	if _, err := cl.Allocate(ctx, am.Request{}, []int64{7}, 0); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	failover = true
	mu.Unlock()
	if _, err := cl.Allocate(ctx, am.Request{}, []int64{8}, 0); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := [][]int64{{7}, {8}, {7, 8}}
	if fmt.Sprint(released) != fmt.Sprint(want) {
		t.Errorf("releases per call %v, want %v", released, want)
	}
}

// amrmStandIn serves registerApplicationMaster (calling registered, if
// set) and allocate on loopback, and returns a client registered with
// it, closed when the test ends.
func amrmStandIn(t *testing.T, registered func(), allocate func(*pb.AllocateRequestProto) (*pb.AllocateResponseProto, error)) *Client {
	t.Helper()
	srv := rpc.NewServer(rpc.ServerOptions{})
	srv.Register(rpc.Protocol{Name: rpc.ApplicationMasterProtocol, Methods: []rpc.Method{
		rpc.Unary("registerApplicationMaster", func(ctx context.Context, req *pb.RegisterApplicationMasterRequestProto) (*pb.RegisterApplicationMasterResponseProto, error) {
			if registered != nil {
				registered()
			}
			return &pb.RegisterApplicationMasterResponseProto{MaximumCapability: rpc.ResourceFromVector(fairness.New(8192, 8))}, nil
		}),
		rpc.Unary("allocate", func(ctx context.Context, req *pb.AllocateRequestProto) (*pb.AllocateResponseProto, error) {
			return allocate(req)
		})}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	cl := Dial(Launch{Addr: ln.Addr().String(), Attempt: "appattempt_1_0001_000001"})
	t.Cleanup(func() { cl.Close() })
	if err := cl.Register(context.Background(), "127.0.0.1", 0, ""); err != nil {
		t.Fatal(err)
	}
	return cl
}
