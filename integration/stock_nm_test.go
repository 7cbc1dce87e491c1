package integration

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// stockNM speaks ResourceTracker and ContainerManagementProtocol as
// Apache Hadoop's NodeManager does, in the parts an RM meets: it
// registers and needs both master keys in the reply (a Java NM's status
// updater cannot build a heartbeat without them), heartbeats with its
// last known keys and its containers' statuses, takes the keys the RM
// rolls to, and serves its container manager with TOKEN auth only (SASL
// DIGEST-MD5 over NMTokens), starting only containers whose container
// token the RM signed, for the application the NMToken names. Containers
// do not run processes: the test says when they end.
type stockNM struct {
	t   *testing.T
	id  *pb.NodeIdProto
	rt  rpc.ResourceTrackerClient
	srv *rpc.Server

	mu              sync.Mutex
	containerKey    *pb.MasterKeyProto
	nmKey, nmPrev   *pb.MasterKeyProto
	respID          int32
	running         map[string]*pb.ContainerStatusProto
	done            []*pb.ContainerStatusProto
	launches        []*pb.StartContainerRequestProto
	callers         []*pb.NMTokenIdentifierProto // the NMToken of each start call
	appsCleaned     []string
	refusedStarts   int
	heartbeatErrors []error
	stop            chan struct{}
}

func startStockNM(t *testing.T, tracker string) *stockNM {
	t.Helper()
	n := &stockNM{t: t, running: map[string]*pb.ContainerStatusProto{}, stop: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.id = &pb.NodeIdProto{Host: proto.String("127.0.0.1"), Port: proto.Int32(int32(ln.Addr().(*net.TCPAddr).Port))}
	n.srv = rpc.NewServer(rpc.ServerOptions{Secrets: n, TokenOnly: true})
	n.srv.Register(rpc.ContainerManagementService(n))
	go n.srv.Serve(ln)
	cl := rpc.NewClient(tracker, rpc.ClientOptions{User: "yarn", Retries: 20})
	n.rt = rpc.ResourceTrackerClient{C: cl}
	resp, err := n.rt.RegisterNodeManager(context.Background(), &pb.RegisterNodeManagerRequestProto{NodeId: n.id,
		HttpPort: proto.Int32(8042), NmVersion: proto.String("3.3.6"),
		Resource:         &pb.ResourceProto{Memory: proto.Int64(8192), VirtualCores: proto.Int32(8)},
		PhysicalResource: &pb.ResourceProto{Memory: proto.Int64(8192), VirtualCores: proto.Int32(8)}})
	if err != nil || resp.GetNodeAction() != pb.NodeActionProto_NORMAL {
		t.Fatalf("register: %v %v", resp, err)
	}
	if resp.GetContainerTokenMasterKey() == nil || resp.GetNmTokenMasterKey() == nil {
		t.Fatalf("the registration reply has no container-token or NMToken master key (%v): a stock NodeManager fails every heartbeat without them", resp)
	}
	n.containerKey, n.nmKey = resp.GetContainerTokenMasterKey(), resp.GetNmTokenMasterKey()
	done := make(chan struct{})
	go n.heartbeats(done)
	t.Cleanup(func() {
		close(n.stop)
		<-done
		n.srv.Close()
		cl.Close()
	})
	return n
}

func (n *stockNM) heartbeats(done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		n.mu.Lock()
		st := &pb.NodeStatusProto{NodeId: n.id, ResponseId: proto.Int32(n.respID),
			NodeHealthStatus: &pb.NodeHealthStatusProto{IsNodeHealthy: proto.Bool(true), LastHealthReportTime: proto.Int64(time.Now().UnixMilli())}}
		for _, s := range n.running {
			st.ContainersStatuses = append(st.ContainersStatuses, s)
		}
		sent := n.done
		st.ContainersStatuses = append(st.ContainersStatuses, sent...)
		req := &pb.NodeHeartbeatRequestProto{NodeStatus: st, LastKnownContainerTokenMasterKey: n.containerKey, LastKnownNmTokenMasterKey: n.nmKey}
		n.mu.Unlock()
		resp, err := n.rt.NodeHeartbeat(context.Background(), req)
		n.mu.Lock()
		if err != nil {
			n.heartbeatErrors = append(n.heartbeatErrors, err)
			n.mu.Unlock()
			continue
		}
		n.respID = resp.GetResponseId()
		n.done = n.done[len(sent):]
		if k := resp.GetContainerTokenMasterKey(); k != nil {
			n.containerKey = k
		}
		if k := resp.GetNmTokenMasterKey(); k != nil && k.GetKeyId() != n.nmKey.GetKeyId() {
			n.nmPrev, n.nmKey = n.nmKey, k
		}
		for _, cid := range resp.GetContainersToCleanup() {
			n.endLocked(rpc.ContainerIDString(cid), -105)
		}
		for _, app := range resp.GetApplicationsToCleanup() {
			n.appsCleaned = append(n.appsCleaned, rpc.AppIDString(app))
		}
		n.mu.Unlock()
	}
}

// endLocked completes a running container. Callers hold mu.
func (n *stockNM) endLocked(cid string, exit int32) {
	if s, ok := n.running[cid]; ok {
		delete(n.running, cid)
		n.done = append(n.done, &pb.ContainerStatusProto{ContainerId: s.GetContainerId(), State: pb.ContainerStateProto_C_COMPLETE.Enum(),
			ExitStatus: proto.Int32(exit), Diagnostics: proto.String("")})
	}
}

// RetrievePassword takes NMTokens for this node under the current or the
// previous NMToken master key, naming the attempt as the caller.
func (n *stockNM) RetrievePassword(identifier []byte) ([]byte, string, error) {
	id, err := rpc.ParseNMTokenIdentifier(identifier)
	if err != nil {
		return nil, "", err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !proto.Equal(id.GetNodeId(), n.id) {
		return nil, "", fmt.Errorf("Given NMToken for application : %s is not valid for current node manager.", rpc.AttemptIDString(id.GetAppAttemptId()))
	}
	for _, k := range []*pb.MasterKeyProto{n.nmKey, n.nmPrev} {
		if k != nil && k.GetKeyId() == id.GetKeyId() {
			return rpc.TokenPassword(k.GetBytes(), identifier), rpc.AttemptIDString(id.GetAppAttemptId()), nil
		}
	}
	return nil, "", fmt.Errorf("Given NMToken for application : %s seems to have been generated illegally.", rpc.AttemptIDString(id.GetAppAttemptId()))
}

func (n *stockNM) StartContainers(ctx context.Context, req *pb.StartContainersRequestProto) (*pb.StartContainersResponseProto, error) {
	ci, _ := rpc.CallFromContext(ctx)
	caller, err := rpc.ParseNMTokenIdentifier(ci.Token)
	if err != nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Invalid NMToken")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.callers = append(n.callers, caller)
	resp := &pb.StartContainersResponseProto{}
	for _, s := range req.GetStartContainerRequest() {
		var tok pb.ContainerTokenIdentifierProto
		ct := s.GetContainerToken()
		if proto.Unmarshal(ct.GetIdentifier(), &tok) != nil || tok.GetMasterKeyId() != n.containerKey.GetKeyId() ||
			!rpc.TokenPasswordOK(n.containerKey.GetBytes(), ct.GetIdentifier(), ct.GetPassword()) ||
			!proto.Equal(rpc.AppIDOf(tok.GetContainerId()), caller.GetAppAttemptId().GetApplicationId()) {
			n.refusedStarts++
			resp.FailedRequests = append(resp.FailedRequests, &pb.ContainerExceptionMapProto{ContainerId: tok.GetContainerId(),
				Exception: &pb.SerializedExceptionProto{Message: proto.String("Unauthorized request to start container.")}})
			continue
		}
		n.launches = append(n.launches, s)
		n.running[rpc.ContainerIDString(tok.GetContainerId())] = &pb.ContainerStatusProto{ContainerId: tok.GetContainerId(),
			State: pb.ContainerStateProto_C_RUNNING.Enum(), ExitStatus: proto.Int32(-1000)}
		resp.SucceededRequests = append(resp.SucceededRequests, tok.GetContainerId())
	}
	return resp, nil
}

func (n *stockNM) StopContainers(ctx context.Context, req *pb.StopContainersRequestProto) (*pb.StopContainersResponseProto, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, cid := range req.GetContainerId() {
		n.endLocked(rpc.ContainerIDString(cid), -105)
	}
	return &pb.StopContainersResponseProto{SucceededRequests: req.GetContainerId()}, nil
}

func (n *stockNM) GetContainerStatuses(ctx context.Context, req *pb.GetContainerStatusesRequestProto) (*pb.GetContainerStatusesResponseProto, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	resp := &pb.GetContainerStatusesResponseProto{}
	for _, cid := range req.GetContainerId() {
		if s, ok := n.running[rpc.ContainerIDString(cid)]; ok {
			resp.Status = append(resp.Status, s)
		}
	}
	return resp, nil
}

// launched is the n-th start the NM took, once it has come.
func (n *stockNM) launched(c *cluster, k int) *pb.StartContainerRequestProto {
	n.t.Helper()
	var s *pb.StartContainerRequestProto
	c.waitFor(n.t, fmt.Sprintf("start %d on the stock NM", k+1), func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		if len(n.launches) > k {
			s = n.launches[k]
		}
		return s != nil
	})
	return s
}

// TestStockNodeManagerRunsAnAMAndItsContainers: a NodeManager that
// behaves as Apache Hadoop's joins a real Loom RM beside a Loom
// NodeManager (a mixed cluster, as one that keeps stock NMs for
// MapReduce's and Tez's shuffle services); the RM launches an AM on it
// with an NMToken for the attempt (as YARN's AMLauncher does), the AM's
// containers start on both nodes over TOKEN auth with the NMTokens the
// RM sent the AM, their completions reach the AM, and the app ends
// SUCCEEDED with the stock node told to clean it up.
func TestStockNodeManagerRunsAnAMAndItsContainers(t *testing.T) {
	c := startCluster(t, 1) // a Loom NM of 4096 MB
	nm := startStockNM(t, c.tracker)
	c.waitFor(t, "the stock NodeManager to be RUNNING", func() bool {
		m, err := c.ac.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
		return err == nil && m.GetClusterMetrics().GetNumNodeManagers() == 2
	})
	ctx := context.Background()
	// An AM of 6 GB fits the stock NM (8 GB) alone.
	na, err := c.ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	app := na.GetApplicationId()
	if _, err := c.ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
		ApplicationId: app, ApplicationName: proto.String("on-a-stock-nm"), Queue: proto.String("default"),
		Resource:        &pb.ResourceProto{Memory: proto.Int64(6144), VirtualCores: proto.Int32(1)},
		AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{"exec sleep 1000"}}}}); err != nil {
		t.Fatal(err)
	}
	amStart := nm.launched(c, 0)
	nm.mu.Lock()
	launcher := nm.callers[0]
	nm.mu.Unlock()
	attempt := rpc.AttemptIDString(c.report(t, app).GetCurrentApplicationAttemptId())
	if rpc.AttemptIDString(launcher.GetAppAttemptId()) != attempt || launcher.GetAppSubmitter() != "tester" || !proto.Equal(launcher.GetNodeId(), nm.id) {
		t.Fatalf("the RM launched the AM with the NMToken %v, want one for %s on %v for tester", launcher, attempt, nm.id)
	}
	creds, err := rpc.ParseCredentials(amStart.GetContainerLaunchContext().GetTokens())
	if err != nil || creds.Find(rpc.AMRMTokenKind) == nil {
		t.Fatalf("the AM container's credentials: %v %v", creds, err)
	}
	am := stockAMWith(t, c.scheduler, creds.Find(rpc.AMRMTokenKind))
	am.register()
	// Six containers of 1 GB fill both nodes: 2 on the stock NM, 4 on
	// Loom's.
	var conts []*pb.ContainerProto
	am.allocate(ask(6, 1024))
	c.waitFor(t, "6 containers", func() bool { conts = append(conts, am.allocate().GetAllocatedContainers()...); return len(conts) >= 6 })
	onStock := 0
	for i, ct := range conts {
		node := nodeAddr(ct.GetNodeId())
		if proto.Equal(ct.GetNodeId(), nm.id) {
			onStock++
		}
		resp, err := am.cm(node).StartContainers(ctx, startReq(ct, "true"))
		if err != nil || len(resp.GetSucceededRequests()) != 1 {
			t.Fatalf("start %d on %s: %v %v", i, node, resp, err)
		}
	}
	if onStock != 2 || len(am.nmTokens) != 2 {
		t.Fatalf("%d of 6 containers on the stock NM, NMTokens for %d nodes; want 2, and both nodes", onStock, len(am.nmTokens))
	}
	nm.mu.Lock()
	for _, ct := range conts {
		nm.endLocked(rpc.ContainerIDString(ct.GetId()), 0)
	}
	nm.mu.Unlock()
	exits := map[string]int32{}
	c.waitFor(t, "6 completions", func() bool {
		for _, cs := range am.allocate().GetCompletedContainerStatuses() {
			exits[rpc.ContainerIDString(cs.GetContainerId())] = cs.GetExitStatus()
		}
		return len(exits) == 6
	})
	for id, exit := range exits {
		if exit != 0 {
			t.Errorf("%s exited %d, want 0", id, exit)
		}
	}
	if _, err := am.am.FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}); err != nil {
		t.Fatal(err)
	}
	if rep := c.report(t, app); rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("the app ended %v: %s", rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	c.waitFor(t, "the NM told to clean the app up", func() bool {
		nm.mu.Lock()
		defer nm.mu.Unlock()
		for _, a := range nm.appsCleaned {
			if a == rpc.AppIDString(app) {
				return true
			}
		}
		return false
	})
	nm.mu.Lock()
	defer nm.mu.Unlock()
	if nm.refusedStarts != 0 || len(nm.heartbeatErrors) != 0 {
		t.Errorf("the stock NM refused %d starts and saw heartbeat errors %v", nm.refusedStarts, nm.heartbeatErrors)
	}
}
