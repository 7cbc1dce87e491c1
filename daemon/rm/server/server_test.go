package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// testNM is an in-process NodeManager stand-in over real RPC: it registers,
// serves ContainerManagementProtocol recording what it is asked to start,
// and heartbeats when the test says, reporting the statuses the test set.
// The real NodeManager is tested against the real RM in integration/.
type testNM struct {
	t      testing.TB
	rt     rpc.ResourceTrackerClient
	id     *pb.NodeIdProto
	srv    *rpc.Server
	mu     sync.Mutex
	starts []*pb.StartContainerRequestProto
	status map[string]*pb.ContainerStatusProto
	respID int32
	last   *pb.NodeHeartbeatResponseProto
	key    *pb.MasterKeyProto // the container-token master key, from registering
	nmKey  *pb.MasterKeyProto // the NMToken master key, from registering
	nmPrev *pb.MasterKeyProto // the one before the RM's last roll
	// callers are the NMTokens the container manager's connections
	// authenticated with, one per start call.
	callers []*pb.NMTokenIdentifierProto
	// gate, when set, holds each start call until it is closed; inStart
	// counts the calls under way, maxInStart the most at once.
	gate                chan struct{}
	inStart, maxInStart int
}

// RetrievePassword checks NMTokens as a stock NodeManager does: for this
// node, under the key the RM gave it.
func (n *testNM) RetrievePassword(identifier []byte) ([]byte, string, error) {
	id, err := rpc.ParseNMTokenIdentifier(identifier)
	if err != nil {
		return nil, "", err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	key := n.nmKey
	if n.nmPrev != nil && id.GetKeyId() == n.nmPrev.GetKeyId() {
		key = n.nmPrev
	}
	if id.GetKeyId() != key.GetKeyId() || !proto.Equal(id.GetNodeId(), n.id) {
		return nil, "", fmt.Errorf("NMToken under key %d for %v, want key %d for %v", id.GetKeyId(), id.GetNodeId(), n.nmKey.GetKeyId(), n.id)
	}
	return rpc.TokenPassword(key.GetBytes(), identifier), rpc.AttemptIDString(id.GetAppAttemptId()), nil
}

func (n *testNM) StartContainers(ctx context.Context, req *pb.StartContainersRequestProto) (*pb.StartContainersResponseProto, error) {
	caller, err := rpc.ParseNMTokenIdentifier(mustCall(ctx).Token)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	if gate := n.gate; gate != nil {
		n.inStart++
		n.maxInStart = max(n.maxInStart, n.inStart)
		n.mu.Unlock()
		<-gate
		n.mu.Lock()
		n.inStart--
	}
	defer n.mu.Unlock()
	n.callers = append(n.callers, caller)
	resp := &pb.StartContainersResponseProto{}
	for _, s := range req.GetStartContainerRequest() {
		var tok pb.ContainerTokenIdentifierProto
		if err := proto.Unmarshal(s.GetContainerToken().GetIdentifier(), &tok); err != nil {
			return nil, err
		}
		// As a real NM does: only tokens the RM signed start anything.
		if tok.GetMasterKeyId() != n.key.GetKeyId() ||
			!rpc.TokenPasswordOK(n.key.GetBytes(), s.GetContainerToken().GetIdentifier(), s.GetContainerToken().GetPassword()) {
			return nil, rpc.Errorf(rpc.ClassYarnException, "container token not signed with master key %d", n.key.GetKeyId())
		}
		n.starts = append(n.starts, s)
		n.status[rpc.ContainerIDString(tok.GetContainerId())] = &pb.ContainerStatusProto{ContainerId: tok.GetContainerId(), State: pb.ContainerStateProto_C_RUNNING.Enum()}
		resp.SucceededRequests = append(resp.SucceededRequests, tok.GetContainerId())
	}
	return resp, nil
}

func (n *testNM) StopContainers(ctx context.Context, req *pb.StopContainersRequestProto) (*pb.StopContainersResponseProto, error) {
	return &pb.StopContainersResponseProto{SucceededRequests: req.GetContainerId()}, nil
}

func (n *testNM) GetContainerStatuses(ctx context.Context, req *pb.GetContainerStatusesRequestProto) (*pb.GetContainerStatusesResponseProto, error) {
	return &pb.GetContainerStatusesResponseProto{}, nil
}

func startNM(t testing.TB, trackerAddr string, mem int64, cores int32) *testNM {
	t.Helper()
	return startNMOn(t, trackerAddr, "127.0.0.1", mem, cores)
}

// startNMOn starts a test NM that registers under host (a name for
// 127.0.0.1, such as localhost, to tell nodes apart by host).
func startNMOn(t testing.TB, trackerAddr, host string, mem int64, cores int32) *testNM {
	t.Helper()
	n := &testNM{t: t, status: map[string]*pb.ContainerStatusProto{}}
	// Token-only, as a stock NodeManager's container manager.
	n.srv = rpc.NewServer(rpc.ServerOptions{Secrets: n, TokenOnly: true})
	n.srv.Register(rpc.ContainerManagementService(n))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	n.id = &pb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(int32(port))}
	go n.srv.Serve(ln)
	t.Cleanup(func() { n.srv.Close() })
	cl := rpc.NewClient(trackerAddr, rpc.ClientOptions{User: "nm"})
	t.Cleanup(func() { cl.Close() })
	n.rt = rpc.ResourceTrackerClient{C: cl}
	resp, err := n.rt.RegisterNodeManager(context.Background(), &pb.RegisterNodeManagerRequestProto{NodeId: n.id, HttpPort: proto.Int32(8042),
		Resource: &pb.ResourceProto{Memory: proto.Int64(mem), VirtualCores: proto.Int32(cores)}})
	if err != nil || resp.GetNodeAction() != pb.NodeActionProto_NORMAL {
		t.Fatalf("register: %v %v", resp, err)
	}
	if n.key = resp.GetContainerTokenMasterKey(); len(n.key.GetBytes()) == 0 {
		t.Fatalf("the RM sent no container-token master key on registration")
	}
	n.mu.Lock()
	n.nmKey = resp.GetNmTokenMasterKey()
	n.mu.Unlock()
	if len(n.nmKey.GetBytes()) == 0 {
		t.Fatalf("the RM sent no NMToken master key on registration")
	}
	return n
}

// beat sends one heartbeat; completed statuses are sent once.
func (n *testNM) beat() *pb.NodeHeartbeatResponseProto {
	n.t.Helper()
	n.mu.Lock()
	st := &pb.NodeStatusProto{NodeId: n.id, ResponseId: proto.Int32(n.respID)}
	for id, s := range n.status {
		st.ContainersStatuses = append(st.ContainersStatuses, s)
		if s.GetState() == pb.ContainerStateProto_C_COMPLETE {
			delete(n.status, id)
		}
	}
	n.mu.Unlock()
	n.mu.Lock()
	known := n.nmKey
	n.mu.Unlock()
	resp, err := n.rt.NodeHeartbeat(context.Background(), &pb.NodeHeartbeatRequestProto{NodeStatus: st,
		LastKnownContainerTokenMasterKey: n.key, LastKnownNmTokenMasterKey: known})
	if err != nil {
		n.t.Fatalf("heartbeat: %v", err)
	}
	if k := resp.GetNmTokenMasterKey(); k != nil && k.GetKeyId() != known.GetKeyId() {
		n.mu.Lock()
		n.nmPrev, n.nmKey = n.nmKey, k
		n.mu.Unlock()
	}
	n.respID = resp.GetResponseId()
	n.last = resp
	return resp
}

func (n *testNM) finish(id *pb.ContainerIdProto, exit int32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.status[rpc.ContainerIDString(id)] = &pb.ContainerStatusProto{ContainerId: id, State: pb.ContainerStateProto_C_COMPLETE.Enum(), ExitStatus: proto.Int32(exit)}
}

func (n *testNM) waitStarts(k int) []*pb.StartContainerRequestProto {
	n.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n.mu.Lock()
		if len(n.starts) >= k {
			s := append([]*pb.StartContainerRequestProto(nil), n.starts...)
			n.mu.Unlock()
			return s
		}
		n.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	n.t.Fatalf("NM got fewer than %d container starts", k)
	return nil
}

func testConfig(t testing.TB, overrides ...string) Config {
	t.Helper()
	c := hadoopconf.New(Defaults)
	for _, kv := range []string{"yarn.resourcemanager.hostname=127.0.0.1", "yarn.resourcemanager.address=127.0.0.1:0",
		"yarn.resourcemanager.scheduler.address=127.0.0.1:0", "yarn.resourcemanager.resource-tracker.address=127.0.0.1:0",
		"yarn.resourcemanager.webapp.address=127.0.0.1:0", "loom.history.dir=" + t.TempDir(),
		"loom.queues=default,etl", "loom.queue.etl.weight=2",
		// Tests that restart an RM check what it grants at once; the
		// recovery wait is exercised by the integration tests.
		keySchedulingWait + "=0"} {
		k, v, _ := strings.Cut(kv, "=")
		c.Set(k, v)
	}
	for _, kv := range overrides {
		k, v, _ := strings.Cut(kv, "=")
		c.Set(k, v)
	}
	cfg, err := LoadConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func startRM(t testing.TB, overrides ...string) *RM {
	t.Helper()
	r, err := New(testConfig(t, overrides...), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r.Stop(ctx)
	})
	return r
}

func clientOf(t testing.TB, r *RM, user string) rpc.ApplicationClient {
	cl := rpc.NewClient(r.Addr("client"), rpc.ClientOptions{User: user})
	t.Cleanup(func() { cl.Close() })
	return rpc.ApplicationClient{C: cl}
}

// submit makes and submits an app whose AM runs a command.
func submit(t testing.TB, ac rpc.ApplicationClient, queue string, amMB int64) *pb.ApplicationIdProto {
	t.Helper()
	id, err := submitLaunch(t, ac, queue, amMB, &pb.ContainerLaunchContextProto{Command: []string{"echo", "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// submitLaunch makes and submits an app whose AM container is clc.
func submitLaunch(t testing.TB, ac rpc.ApplicationClient, queue string, amMB int64, clc *pb.ContainerLaunchContextProto) (*pb.ApplicationIdProto, error) {
	t.Helper()
	ctx := context.Background()
	na, err := ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), ApplicationName: proto.String("test"), Queue: proto.String(queue),
		Resource:        &pb.ResourceProto{Memory: proto.Int64(amMB), VirtualCores: proto.Int32(1)},
		AmContainerSpec: clc}})
	return na.GetApplicationId(), err
}

func report(t testing.TB, ac rpc.ApplicationClient, id *pb.ApplicationIdProto) *pb.ApplicationReportProto {
	t.Helper()
	r, err := ac.GetApplicationReport(context.Background(), &pb.GetApplicationReportRequestProto{ApplicationId: id})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetApplicationReport()
}

func env(s *pb.StartContainerRequestProto, key string) string {
	for _, kv := range s.GetContainerLaunchContext().GetEnvironment() {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return ""
}

func TestShellAMFinishesSucceeded(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	ac := clientOf(t, r, "alice")
	id := submit(t, ac, "", 1000)
	if st := report(t, ac, id).GetYarnApplicationState(); st != pb.YarnApplicationStateProto_ACCEPTED {
		t.Fatalf("after submit: %v, want ACCEPTED", st)
	}
	nm.beat()
	start := nm.waitStarts(1)[0]
	var tok pb.ContainerTokenIdentifierProto
	if err := proto.Unmarshal(start.GetContainerToken().GetIdentifier(), &tok); err != nil {
		t.Fatal(err)
	}
	// The AM's memory was normalised up to the 1024 MB minimum.
	if tok.GetResource().GetMemory() != 1024 || tok.GetAppSubmitter() != "alice" || tok.GetContainerType() != pb.ContainerTypeProto_APPLICATION_MASTER {
		t.Errorf("container token %v", &tok)
	}
	// The AM runs as its submitter, and its AMRM token names its attempt.
	if got := env(start, EnvHadoopUser); got != "alice" {
		t.Errorf("HADOOP_USER_NAME = %q, want the submitter", got)
	}
	var amrm pb.AMRMTokenIdentifierProto
	if tok := amToken(t, start); proto.Unmarshal(tok.GetIdentifier(), &amrm) != nil || amrm.GetAppAttemptId().GetAttemptId() != 1 ||
		amrm.GetAppAttemptId().GetApplicationId().GetId() != id.GetId() || tok.GetService() != r.Addr("scheduler") {
		t.Errorf("AMRM token %v for %v", tok, &amrm)
	}
	if got := env(start, EnvContainerID); got != rpc.ContainerIDString(tok.GetContainerId()) {
		t.Errorf("CONTAINER_ID = %q", got)
	}
	nm.beat()
	nm.finish(tok.GetContainerId(), 0)
	resp := nm.beat()
	rep := report(t, ac, id)
	if rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED || rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("after the AM exited 0: %v %v (%s)", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	if len(resp.GetApplicationsToCleanup()) != 1 {
		t.Errorf("apps to clean up: %v", resp.GetApplicationsToCleanup())
	}
}

// amToken is the AMRM token the RM put in an AM's launch request.
func amToken(t testing.TB, start *pb.StartContainerRequestProto) *hadooppb.TokenProto {
	t.Helper()
	creds, err := rpc.ParseCredentials(start.GetContainerLaunchContext().GetTokens())
	if err != nil {
		t.Fatalf("the AM's credentials: %v", err)
	}
	tok := creds.Find(rpc.AMRMTokenKind)
	if tok == nil {
		t.Fatalf("the AM's credentials hold no %s: %+v", rpc.AMRMTokenKind, creds)
	}
	return tok
}

// amClient talks to the scheduler as the AM launched by start, with the
// AMRM token it was given.
func amClient(t testing.TB, r *RM, start *pb.StartContainerRequestProto) rpc.ApplicationMasterClient {
	return amClientWith(t, r, rpc.ClientOptions{User: "appuser", Token: amToken(t, start)})
}

func amClientWith(t testing.TB, r *RM, opts rpc.ClientOptions) rpc.ApplicationMasterClient {
	cl := rpc.NewClient(r.Addr("scheduler"), opts)
	t.Cleanup(func() { cl.Close() })
	return rpc.ApplicationMasterClient{C: cl}
}

func TestAMAllocatesAndFinishes(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 16384, 16)
	ac := clientOf(t, r, "bob")
	id := submit(t, ac, "etl", 1024)
	nm.beat()
	am := amClient(t, r, nm.waitStarts(1)[0])
	ctx := context.Background()
	if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{Host: proto.String("am.host"), RpcPort: proto.Int32(0)}); err != nil {
		t.Fatal(err)
	}
	if st := report(t, ac, id).GetYarnApplicationState(); st != pb.YarnApplicationStateProto_RUNNING {
		t.Fatalf("after register: %v", st)
	}
	ask := func(n int32, kind pb.LoomAskKindProto) *pb.ResourceRequestProto {
		return &pb.ResourceRequestProto{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
			Capability: &pb.ResourceProto{Memory: proto.Int64(2048), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n),
			LoomAskKind: kind.Enum(), LoomRemainingWork: proto.Float64(100)}
	}
	resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: []*pb.ResourceRequestProto{ask(3, pb.LoomAskKindProto_LOOM_DEFAULT)}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetLoomPAltruism() != 1 || resp.GetLoomShare().GetMemory() == 0 {
		t.Errorf("first allocate: share %v, P %v", resp.GetLoomShare(), resp.GetLoomPAltruism())
	}
	nm.beat()
	resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId())})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.GetAllocatedContainers()
	if len(got) != 3 {
		t.Fatalf("allocated %d containers, want 3", len(got))
	}
	// A lost reply: the same response id again gets the same answer.
	again, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId() - 1)})
	if err != nil || len(again.GetAllocatedContainers()) != 3 {
		t.Errorf("replayed allocate: %d containers, %v", len(again.GetAllocatedContainers()), err)
	}
	if _, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId() + 5)}); !rpc.IsClass(err, rpc.ClassInvalidApplicationMasterRequest) {
		t.Errorf("out-of-step response id: %v", err)
	}
	// Start one on the NM, finish it: the AM hears the exit status.
	nm.finish(got[0].GetId(), 3)
	nm.beat()
	resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId()),
		Release: []*pb.ContainerIdProto{got[1].GetId()}})
	if err != nil {
		t.Fatal(err)
	}
	var exits []int32
	for _, cs := range resp.GetCompletedContainerStatuses() {
		exits = append(exits, cs.GetExitStatus())
	}
	if len(exits) != 2 || exits[0] != 3 || exits[1] != ExitAborted {
		t.Errorf("completed exit statuses %v, want [3 %d]", exits, ExitAborted)
	}
	if cl := nm.beat().GetContainersToCleanup(); len(cl) != 1 || cl[0].GetId() != got[1].GetId().GetId() {
		t.Errorf("containers to clean up after the release: %v", cl)
	}
	if _, err := am.FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum(),
		Diagnostics: proto.String("done")}); err != nil {
		t.Fatal(err)
	}
	rep := report(t, ac, id)
	if rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED || rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("after finish: %v %v", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus())
	}
	if n := len(nm.beat().GetContainersToCleanup()); n != 2 { // the AM and the last task
		t.Errorf("%d containers to clean up after finish, want 2", n)
	}
	// As YARN's RM, no record of the finished app's task containers is
	// kept: the attempt lists its AM container alone, a task's report is
	// not found, and the metrics count how they ended.
	attempt := rep.GetCurrentApplicationAttemptId()
	conts, err := ac.GetContainers(ctx, &pb.GetContainersRequestProto{ApplicationAttemptId: attempt})
	if err != nil || len(conts.GetContainers()) != 1 || conts.GetContainers()[0].GetContainerId().GetId() != 1 {
		t.Errorf("the finished attempt's containers: %v (%v), want its AM container alone", conts.GetContainers(), err)
	}
	if _, err := ac.GetContainerReport(ctx, &pb.GetContainerReportRequestProto{ContainerId: got[0].GetId()}); !rpc.IsClass(err, rpc.ClassContainerNotFound) {
		t.Errorf("a finished app's task container: %v, want ContainerNotFoundException", err)
	}
	r.mu.Lock()
	kept := len(r.conts)
	r.mu.Unlock()
	if kept != 1 {
		t.Errorf("%d container records kept for the finished app, want 1 (its AM's)", kept)
	}
	for _, c := range []struct {
		container, exit string
		want            float64
	}{{"TASK", "NONZERO", 1}, {"TASK", "ABORTED", 1}, {"TASK", "SUCCESS", 0}, {"AM", "SUCCESS", 0}} {
		if got := gauge(t, r, "loom_containers_completed_total", "container", c.container, "exit_status", c.exit); got != c.want {
			t.Errorf("loom_containers_completed_total{container=%q,exit_status=%q} = %v, want %v", c.container, c.exit, got, c.want)
		}
	}
}

func TestBadRequestsGetYARNErrors(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 16384, 16)
	ac := clientOf(t, r, "carol")
	ctx := context.Background()
	na, _ := ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	sub := func(id *pb.ApplicationIdProto, queue string, mb int64) error {
		_, err := ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
			ApplicationId: id, Queue: proto.String(queue), Resource: &pb.ResourceProto{Memory: proto.Int64(mb), VirtualCores: proto.Int32(1)},
			AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{"true"}}}})
		return err
	}
	forged := &pb.ApplicationIdProto{Id: proto.Int32(99), ClusterTimestamp: proto.Int64(1)}
	tests := []struct {
		name  string
		err   error
		class string
		msg   string
	}{
		{"unknown queue", sub(na.GetApplicationId(), "nope", 1024), rpc.ClassYarnException, "unknown queue: nope (queues: default, etl"},
		{"AM too big", sub(na.GetApplicationId(), "default", 1<<20), rpc.ClassInvalidResourceRequest, "maximum allowed allocation"},
		{"id not issued", sub(forged, "default", 1024), rpc.ClassYarnException, "was not issued by this ResourceManager"},
		{"unknown app", func() error {
			_, err := ac.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: forged})
			return err
		}(), rpc.ClassApplicationNotFound, "application_1_0099"},
		{"kill unknown app", func() error {
			_, err := ac.ForceKillApplication(ctx, &pb.KillApplicationRequestProto{ApplicationId: forged})
			return err
		}(), rpc.ClassApplicationNotFound, "doesn't exist"},
		{"AM call from a user", func() error {
			_, err := amClientWith(t, r, rpc.ClientOptions{User: "carol"}).RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{})
			return err
		}(), rpc.ClassAccessControl, `No AMRMToken found for user carol`},
	}
	for _, tc := range tests {
		if !rpc.IsClass(tc.err, tc.class) || !strings.Contains(tc.err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want %s containing %q", tc.name, tc.err, tc.class, tc.msg)
		}
	}
	// Asks beyond the maximum or negative fail the whole allocate.
	id := submit(t, ac, "default", 1024)
	nm.beat()
	am := amClient(t, r, nm.waitStarts(1)[0])
	if _, err := am.Allocate(ctx, &pb.AllocateRequestProto{}); !rpc.IsClass(err, rpc.ClassApplicationMasterNotRegistered) {
		t.Errorf("allocate before register: %v", err)
	}
	am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{})
	for _, bad := range []*pb.ResourceProto{{Memory: proto.Int64(1 << 20), VirtualCores: proto.Int32(1)}, {Memory: proto.Int64(-5), VirtualCores: proto.Int32(1)},
		{Memory: proto.Int64(1024), VirtualCores: proto.Int32(99)}} {
		_, err := am.Allocate(ctx, &pb.AllocateRequestProto{Ask: []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)},
			ResourceName: proto.String("*"), Capability: bad, NumContainers: proto.Int32(1)}}})
		if !rpc.IsClass(err, rpc.ClassInvalidResourceRequest) {
			t.Errorf("ask %v: %v, want InvalidResourceRequestException", bad, err)
		}
	}
	// An ask for a resource type no node offers could never be placed.
	_, err := am.Allocate(ctx, &pb.AllocateRequestProto{Ask: []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)},
		ResourceName: proto.String("*"), Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1),
			ResourceValueMap: []*pb.ResourceInformationProto{{Key: proto.String("loom.io/disk"), Value: proto.Int64(40)}}},
		NumContainers: proto.Int32(1)}}})
	if !rpc.IsClass(err, rpc.ClassInvalidResourceRequest) || !strings.Contains(err.Error(), "no node can hold") {
		t.Errorf("an ask for disk no node offers: %v", err)
	}
	if st := report(t, ac, id).GetYarnApplicationState(); st != pb.YarnApplicationStateProto_RUNNING {
		t.Errorf("a refused ask changed the app: %v", st)
	}
}

func TestKillAndLostNode(t *testing.T) {
	r := startRM(t, "yarn.nm.liveness-monitor.expiry-interval-ms=300", "loom.heartbeat.interval-ms=100")
	nmA := startNM(t, r.Addr("tracker"), 8192, 8)
	ac := clientOf(t, r, "dave")
	ctx := context.Background()
	// Kill: the app ends KILLED and its node is told to clean up.
	id := submit(t, ac, "default", 1024)
	nmA.beat()
	nmA.waitStarts(1)
	if _, err := ac.ForceKillApplication(ctx, &pb.KillApplicationRequestProto{ApplicationId: id}); err != nil {
		t.Fatal(err)
	}
	if rep := report(t, ac, id); rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_KILLED ||
		rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_KILLED || !strings.Contains(rep.GetDiagnostics(), "killed by user dave") {
		t.Errorf("after kill: %v %v %q", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	if hb := nmA.beat(); len(hb.GetContainersToCleanup()) != 1 || len(hb.GetApplicationsToCleanup()) != 1 {
		t.Errorf("cleanup after kill: %v", hb)
	}
	// Lost node: its AM container is lost, and a second attempt starts
	// on the node still alive.
	id2 := submit(t, ac, "default", 1024)
	nmA.beat()
	nmA.waitStarts(2)
	nmB := startNM(t, r.Addr("tracker"), 8192, 8)
	// Node B keeps heartbeating, as a live NM does: the second attempt's
	// AM container is placed in one of B's heartbeats after A is lost,
	// which may come after the one that saw A lost.
	deadline := time.Now().Add(5 * time.Second)
	for lost := false; ; {
		nmB.beat()
		if !lost {
			m, _ := ac.GetClusterMetrics(ctx, &pb.GetClusterMetricsRequestProto{})
			lost = m.GetClusterMetrics().GetNumLostNms() == 1
		}
		nmB.mu.Lock()
		started := len(nmB.starts) >= 1
		nmB.mu.Unlock()
		if lost && started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: node A LOST %v, an AM container started on node B %v", lost, started)
		}
		time.Sleep(50 * time.Millisecond)
	}
	atts, err := ac.GetApplicationAttempts(ctx, &pb.GetApplicationAttemptsRequestProto{ApplicationId: id2})
	if err != nil || len(atts.GetApplicationAttempts()) != 2 {
		t.Fatalf("attempts: %v %v", atts, err)
	}
	first := atts.GetApplicationAttempts()[0]
	if first.GetYarnApplicationAttemptState() != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED || !strings.Contains(first.GetDiagnostics(), "lost") {
		t.Errorf("first attempt: %v %q", first.GetYarnApplicationAttemptState(), first.GetDiagnostics())
	}
	nodes, _ := ac.GetClusterNodes(ctx, &pb.GetClusterNodesRequestProto{NodeStates: []pb.NodeStateProto{pb.NodeStateProto_NS_LOST}})
	if len(nodes.GetNodeReports()) != 1 || nodes.GetNodeReports()[0].GetNodeId().GetPort() != nmA.id.GetPort() {
		t.Errorf("lost nodes: %v", nodes.GetNodeReports())
	}
	// The lost node coming back is told to re-register.
	if hb := nmA.beat(); hb.GetNodeAction() != pb.NodeActionProto_RESYNC {
		t.Errorf("lost node's heartbeat: %v, want RESYNC", hb.GetNodeAction())
	}
}

func TestConfigRefusesBadValues(t *testing.T) {
	tests := []struct{ set, want string }{
		{"yarn.scheduler.minimum-allocation-mb=9000", "yarn.scheduler.minimum-allocation-mb: 9000 is above yarn.scheduler.maximum-allocation-mb = 8192"},
		{"loom.scheduler.p-altruism=1.5", "loom.scheduler.p-altruism: 1.5 is not between 0 and 1"},
		{"loom.scheduler.policy=fifo", `loom.scheduler.policy: unknown policy "fifo"`},
		{"loom.scheduler.leftover-order=random", "loom.scheduler.leftover-order"},
		{"loom.scheduler.recall=-1", "loom.scheduler.recall: -1 must be a finite multiple"},
		{"loom.scheduler.promise-slack=-0.5", "loom.scheduler.promise-slack: -0.5 must be a finite part of a job's first promised span"},
		{"loom.scheduler.promise-slack=soon", `loom.scheduler.promise-slack: "soon"`},
		{"loom.scheduler.share-growth=sometimes", `loom.scheduler.share-growth: "sometimes" is not true or false`},
		{"yarn.resourcemanager.am.max-attempts=0", "yarn.resourcemanager.am.max-attempts: 0 is below the minimum of 1"},
		{"yarn.resourcemanager.amlauncher.thread-count=0", "yarn.resourcemanager.amlauncher.thread-count: 0 is below the minimum of 1"},
		{"yarn.resourcemanager.address=nohost", `yarn.resourcemanager.address: "nohost" is not host:port`},
		{"yarn.nm.liveness-monitor.expiry-interval-ms=500", "every node would be lost"},
		{"loom.queue.ghost.weight=2", `loom.queue.ghost.weight: queue "ghost" is not in loom.queues`},
		{"loom.queue.default.weight=-1", "weight -1 must be positive"},
		{"loom.queue.default.p-altruism=2", "loom.queue.default.p-altruism: 2 is not between 0 and 1"},
		{"loom.queue.ghost.p-altruism=0.5", `loom.queue.ghost.p-altruism: queue "ghost" is not in loom.queues`},
		{"loom.queue.default.priority=3", "queues take only loom.queue.<name>.weight and loom.queue.<name>.p-altruism"},
		{"loom.queues=a,a", `queue "a" is listed twice`},
		{"loom.heartbeat.interval-ms=abc", `loom.heartbeat.interval-ms: "abc" is not an integer`},
		{"yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs=1800",
			"yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs: 30m0s should be more than 3 X yarn.am.liveness-monitor.expiry-interval-ms (10m0s)"},
		{"yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs=0", "below the minimum of 1"},
		{"loom.resourcemanager.gc-percent=5", "loom.resourcemanager.gc-percent: 5 is not between 10 and 10000"},
		{"loom.resourcemanager.gc-percent=off", `loom.resourcemanager.gc-percent: "off" is not an integer`},
		{"loom.resourcemanager.memory-limit-mb=-1", "loom.resourcemanager.memory-limit-mb: -1 must not be negative"},
		{"loom.resourcemanager.min-procs=-1", "loom.resourcemanager.min-procs: -1 is not between 0 and 1024"},
		{"loom.resourcemanager.min-procs=many", `loom.resourcemanager.min-procs: "many" is not an integer`},
		{"loom.scheduler.pass-nice=20", "loom.scheduler.pass-nice: 20 is not between 0 and 19"},
		{"loom.scheduler.pass-nice=-1", "loom.scheduler.pass-nice: -1 is not between 0 and 19"},
		{"loom.resourcemanager.call-nice=20", "loom.resourcemanager.call-nice: 20 is not between 0 and 19"},
		{"loom.resourcemanager.call-nice=low", `loom.resourcemanager.call-nice: "low" is not an integer`},
		{"loom.resourcemanager.call-threads=0", "loom.resourcemanager.call-threads: 0 is not between 1 and 256"},
		{"loom.resourcemanager.call-threads=257", "loom.resourcemanager.call-threads: 257 is not between 1 and 256"},
		{"loom.resourcemanager.app.max-completed-containers=-5", "loom.resourcemanager.app.max-completed-containers: -5 is below the minimum of 0"},
	}
	for _, tc := range tests {
		c := hadoopconf.New(Defaults)
		k, v, _ := strings.Cut(tc.set, "=")
		c.Set(k, v)
		_, err := LoadConfig(c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.set, err, tc.want)
		}
	}
	cfg, err := LoadConfig(hadoopconf.New(Defaults))
	if err != nil || cfg.ClientAddr != "0.0.0.0:8032" || cfg.SchedulerAddr != "0.0.0.0:8030" || cfg.TrackerAddr != "0.0.0.0:8031" ||
		cfg.MaxAttempts != 2 || cfg.Queues["default"] != 1 || cfg.AMRMRoll != 24*time.Hour || cfg.GCPercent != 400 || cfg.MemoryLimitMB != 0 || cfg.CallNice != 5 || cfg.CallThreads != 4 {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
}

func TestOldFinishedAppsAreForgotten(t *testing.T) {
	r := startRM(t, "yarn.resourcemanager.max-completed-applications=2")
	startNM(t, r.Addr("tracker"), 8192, 8)
	ac := clientOf(t, r, "erin")
	ctx := context.Background()
	var ids []*pb.ApplicationIdProto
	for range 4 {
		id := submit(t, ac, "default", 1024)
		if _, err := ac.ForceKillApplication(ctx, &pb.KillApplicationRequestProto{ApplicationId: id}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	apps, err := ac.GetApplications(ctx, &pb.GetApplicationsRequestProto{})
	if err != nil || len(apps.GetApplications()) != 2 {
		t.Fatalf("%d apps remembered, want the 2 newest (%v)", len(apps.GetApplications()), err)
	}
	if _, err := ac.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: ids[0]}); !rpc.IsClass(err, rpc.ClassApplicationNotFound) {
		t.Errorf("the oldest app: %v, want ApplicationNotFoundException", err)
	}
	if rep := report(t, ac, ids[3]); rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_KILLED {
		t.Errorf("the newest app: %v", rep.GetYarnApplicationState())
	}
	r.mu.Lock()
	n := len(r.conts)
	r.mu.Unlock()
	if n > 2 {
		t.Errorf("%d container records kept for 2 remembered apps", n)
	}
}

// registeredAM starts an RM and a 32 GB node, submits an app for user and
// registers its AM.
func registeredAM(t *testing.T, user string) (*testNM, rpc.ApplicationMasterClient) {
	t.Helper()
	return registeredAMOn(t, startRM(t), user)
}

// registeredAMOn is registeredAM on an RM the caller started.
func registeredAMOn(t *testing.T, r *RM, user string) (*testNM, rpc.ApplicationMasterClient) {
	t.Helper()
	nm := startNM(t, r.Addr("tracker"), 32768, 32)
	submit(t, clientOf(t, r, user), "default", 1024)
	nm.beat()
	am := amClient(t, r, nm.waitStarts(1)[0])
	if _, err := am.RegisterApplicationMaster(context.Background(), &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	return nm, am
}

// TestInFlightContainersServeTheAsk: an AM that asks again before it has
// seen the containers already granted for its ask does not get them twice.
func TestInFlightContainersServeTheAsk(t *testing.T) {
	nm, am := registeredAM(t, "gina")
	ctx := context.Background()
	ask := []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(3)}}
	resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: ask})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat() // grants the 3
	// The AM has not seen them yet and asks for 3 again.
	resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId()), Ask: ask})
	if err != nil || len(resp.GetAllocatedContainers()) != 3 {
		t.Fatalf("%d containers, %v; want the 3 granted", len(resp.GetAllocatedContainers()), err)
	}
	nm.beat()
	resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId())})
	if err != nil || len(resp.GetAllocatedContainers()) != 0 {
		t.Errorf("%d more containers after the ask was served, want 0 (%v)", len(resp.GetAllocatedContainers()), err)
	}
}

// TestTheSameAskAgainIsANewAsk: an AM whose task failed asks for one
// container of the same shape again, with the very ask table it sent for
// the first; it gets a second container (an ask is outstanding for one
// fewer once granted, as YARN counts it).
func TestTheSameAskAgainIsANewAsk(t *testing.T) {
	nm, am := registeredAM(t, "hal")
	ctx := context.Background()
	askFor := func(prio int32, n int32) []*pb.ResourceRequestProto {
		return []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(prio)}, ResourceName: proto.String("*"),
			Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n)}}
	}
	// A first stage's container.
	resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: askFor(1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId()), Ask: askFor(1, 0)})
	if err != nil || len(resp.GetAllocatedContainers()) != 1 {
		t.Fatalf("%d containers, %v; want the 1 granted", len(resp.GetAllocatedContainers()), err)
	}
	// The stage ends: its container goes back and the next stage's one
	// task is asked for; the room is offered again in this very call.
	released := resp.GetAllocatedContainers()[0].GetId()
	resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId()), Ask: askFor(2, 1),
		Release: []*pb.ContainerIdProto{released}})
	if err != nil || len(resp.GetAllocatedContainers()) != 1 {
		t.Fatalf("the next stage got %d containers, %v; want 1 in the same call", len(resp.GetAllocatedContainers()), err)
	}
	// Its task fails at once: release it, and ask for one again, the same
	// ask as before.
	failed := resp.GetAllocatedContainers()[0].GetId()
	resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId()), Ask: askFor(2, 1),
		Release: []*pb.ContainerIdProto{failed}})
	if err != nil || len(resp.GetAllocatedContainers()) != 1 {
		t.Fatalf("the retry got %d containers, %v; want 1", len(resp.GetAllocatedContainers()), err)
	}
	if resp.GetAllocatedContainers()[0].GetId().GetId() == failed.GetId() {
		t.Errorf("the retry got the released container %d back", failed.GetId())
	}
}

// TestContainersByAttempt: getContainers lists an attempt's own
// containers, live and ended, in id order, from the attempt's index; a
// forgotten app takes its container records with it.
func TestContainersByAttempt(t *testing.T) {
	r := startRM(t, "yarn.resourcemanager.max-completed-applications=1")
	nm := startNM(t, r.Addr("tracker"), 16384, 16)
	ac := clientOf(t, r, "fay")
	ctx := context.Background()
	id := submit(t, ac, "default", 1024)
	nm.beat()
	first := nm.waitStarts(1)[0]
	am := amClient(t, r, first)
	am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{})
	am.Allocate(ctx, &pb.AllocateRequestProto{Ask: []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)},
		ResourceName: proto.String("*"), Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		NumContainers: proto.Int32(2)}}})
	nm.beat()
	nm.finish(containerOf(t, first), 1) // attempt 1's AM dies
	nm.beat()
	nm.beat()
	second := nm.waitStarts(2)[1]
	list := func(attempt int32) []int64 {
		resp, err := ac.GetContainers(ctx, &pb.GetContainersRequestProto{ApplicationAttemptId: &pb.ApplicationAttemptIdProto{
			ApplicationId: id, AttemptId: proto.Int32(attempt)}})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, c := range resp.GetContainers() {
			ids = append(ids, c.GetContainerId().GetId())
		}
		return ids
	}
	a1 := containerOf(t, first).GetId()
	if got := list(1); len(got) != 3 || got[0] != a1 || got[1] != a1+1 || got[2] != a1+2 {
		t.Errorf("attempt 1's containers %v, want its AM %d and its 2 tasks, in order", got, a1)
	}
	if got := list(2); len(got) != 1 || got[0] != containerOf(t, second).GetId() {
		t.Errorf("attempt 2's containers %v, want its AM only", got)
	}
	// Two more apps end: the first is forgotten, and so are its records.
	for range 2 {
		other := submit(t, ac, "default", 1024)
		ac.ForceKillApplication(ctx, &pb.KillApplicationRequestProto{ApplicationId: other})
	}
	ac.ForceKillApplication(ctx, &pb.KillApplicationRequestProto{ApplicationId: id})
	ac.ForceKillApplication(ctx, &pb.KillApplicationRequestProto{ApplicationId: submit(t, ac, "default", 1024)})
	if _, err := ac.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: id}); !rpc.IsClass(err, rpc.ClassApplicationNotFound) {
		t.Fatalf("the app was not forgotten: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for cid, cr := range r.conts {
		if rpc.AppIDString(cr.app.yid) == rpc.AppIDString(id) {
			t.Errorf("container %d of the forgotten app is still kept", cid)
		}
	}
}

// mustCall is the call a handler serves.
func mustCall(ctx context.Context) *rpc.CallInfo {
	ci, _ := rpc.CallFromContext(ctx)
	if ci == nil {
		return &rpc.CallInfo{}
	}
	return ci
}

// A running app's ended task containers are kept up to
// loom.resourcemanager.app.max-completed-containers, dropped oldest first
// in batches once more than twice as many (and 64) have ended.
func TestRunningAppsKeepBoundedEndedContainers(t *testing.T) {
	r := startRM(t, "loom.resourcemanager.app.max-completed-containers=1")
	nm, am := registeredAMOn(t, r, "jo")
	ctx := context.Background()
	ask := func(n int32) []*pb.ResourceRequestProto {
		return []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
			Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n)}}
	}
	respID, ended := int32(0), 0
	var last *pb.ContainerIdProto
	for ended < 90 {
		resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(respID), Ask: ask(30)})
		if err != nil {
			t.Fatal(err)
		}
		nm.beat()
		resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId()), Ask: ask(0)})
		if err != nil {
			t.Fatal(err)
		}
		respID = resp.GetResponseId()
		for _, ct := range resp.GetAllocatedContainers() {
			nm.finish(ct.GetId(), 0)
			last = ct.GetId()
			ended++
		}
		nm.beat()
	}
	if ended != 90 {
		t.Fatalf("%d tasks ended, want 90", ended)
	}
	// 65 ended (over 2 x 1 and 64): all but the newest went; 25 ended since.
	r.mu.Lock()
	kept := len(r.conts)
	r.mu.Unlock()
	if want := 1 + 1 + 25; kept != want {
		t.Errorf("%d container records, want %d (the AM, the newest ended before the batch, 25 since)", kept, want)
	}
	rep, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(respID)})
	if err != nil {
		t.Fatal(err)
	}
	// The last round's 30 ends reach the AM, records retired or not.
	if n := len(rep.GetCompletedContainerStatuses()); n != 30 {
		t.Errorf("%d completions delivered after the last round, want 30", n)
	}
	ac := clientOf(t, r, "jo")
	if _, err := ac.GetContainerReport(ctx, &pb.GetContainerReportRequestProto{ContainerId: last}); err != nil {
		t.Errorf("the newest ended task's report: %v", err)
	}
	if got := gauge(t, r, "loom_containers_completed_total", "container", "TASK", "exit_status", "SUCCESS"); got != 90 {
		t.Errorf("%v task completions counted, want 90", got)
	}
}
