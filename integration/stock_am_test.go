package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// The stock application master below is written against YARN's protocol
// alone, doing what Hadoop's AMRMClient and NMClient do, in their order:
// it authenticates to the scheduler with the AMRM token from its
// container's credentials file, registers and reads the resource types,
// asks, keeps the NMTokens each allocate reply brings (NMTokenCache), and
// starts, polls and stops containers on each node's container manager
// over TOKEN auth with that node's NMToken. It uses no Loom package but
// the wire (rpc: Hadoop IPC and SASL DIGEST-MD5, itself checked against
// the JDK's DIGEST-MD5) and the protobuf messages of YARN's .proto files.

// stockAMProc is one attempt of a stock AM.
type stockAMProc struct {
	t        *testing.T
	attempt  string
	sched    *rpc.Client
	am       rpc.ApplicationMasterClient
	respID   int32
	nmTokens map[string]*hadooppb.TokenProto // by node host:port, as NMTokenCache
}

// stockAMAttempt waits for the AM container of attempt n of app to hand
// over its credentials (the container copies the file the NM wrote at
// HADOOP_TOKEN_FILE_LOCATION to dir/<container id>.tokens) and connects
// to the scheduler with the AMRM token in it, as UserGroupInformation
// would.
func stockAMAttempt(t *testing.T, c *cluster, app *pb.ApplicationIdProto, n int) *stockAMProc {
	t.Helper()
	cid := fmt.Sprintf("container_%s_%02d_000001", strings.TrimPrefix(rpc.AppIDString(app), "application_"), n)
	var creds *rpc.Credentials
	c.waitFor(t, cid+" to hand over its credentials", func() bool {
		var err error
		creds, err = rpc.ReadCredentialsFile(filepath.Join(c.dir, cid+".tokens"))
		return err == nil
	})
	tok := creds.Find(rpc.AMRMTokenKind)
	if tok == nil {
		t.Fatalf("%s's credentials hold no %s", cid, rpc.AMRMTokenKind)
	}
	return stockAMWith(t, c.scheduler, tok)
}

// stockAMWith connects to the scheduler with an AMRM token.
func stockAMWith(t *testing.T, scheduler string, tok *hadooppb.TokenProto) *stockAMProc {
	t.Helper()
	id, err := rpc.ParseAMRMIdentifier(tok.GetIdentifier())
	if err != nil {
		t.Fatal(err)
	}
	cl := rpc.NewClient(scheduler, rpc.ClientOptions{Token: tok, Retries: -1})
	t.Cleanup(func() { cl.Close() })
	return &stockAMProc{t: t, attempt: rpc.AttemptIDString(id.GetAppAttemptId()), sched: cl, am: rpc.ApplicationMasterClient{C: cl},
		nmTokens: map[string]*hadooppb.TokenProto{}}
}

func nodeAddr(id *pb.NodeIdProto) string { return fmt.Sprintf("%s:%d", id.GetHost(), id.GetPort()) }

func (a *stockAMProc) keep(toks []*pb.NMTokenProto) {
	for _, nt := range toks {
		a.nmTokens[nodeAddr(nt.GetNodeId())] = nt.GetToken()
	}
}

func (a *stockAMProc) register() *pb.RegisterApplicationMasterResponseProto {
	a.t.Helper()
	resp, err := a.am.RegisterApplicationMaster(context.Background(), &pb.RegisterApplicationMasterRequestProto{
		Host: proto.String("127.0.0.1"), RpcPort: proto.Int32(0), TrackingUrl: proto.String("")})
	if err != nil {
		a.t.Fatalf("register %s: %v", a.attempt, err)
	}
	// A Java AM sizes every Resource by these (Distributed Shell calls
	// ResourceUtils.reinitializeResources with them): none is fatal.
	var names []string
	for _, rt := range resp.GetResourceTypes() {
		names = append(names, rt.GetName())
	}
	if !slices.Contains(names, "memory-mb") || !slices.Contains(names, "vcores") || resp.GetMaximumCapability().GetMemory() <= 0 {
		a.t.Fatalf("register reply: resource types %v, maximum %v", names, resp.GetMaximumCapability())
	}
	a.keep(resp.GetNmTokensFromPreviousAttempts())
	return resp
}

func (a *stockAMProc) allocate(asks ...*pb.ResourceRequestProto) *pb.AllocateResponseProto {
	return a.allocateRelease(nil, asks...)
}

func (a *stockAMProc) allocateRelease(release []*pb.ContainerIdProto, asks ...*pb.ResourceRequestProto) *pb.AllocateResponseProto {
	a.t.Helper()
	resp, err := a.am.Allocate(context.Background(), &pb.AllocateRequestProto{ResponseId: proto.Int32(a.respID), Ask: asks,
		Release: release, Progress: proto.Float32(0.5)})
	if err != nil {
		a.t.Fatalf("allocate %s: %v", a.attempt, err)
	}
	a.respID = resp.GetResponseId()
	a.keep(resp.GetNmTokens())
	return resp
}

// cm connects to a node's container manager as NMClient does: as the
// attempt, with the node's NMToken; a node it has none for is
// InvalidToken, as in ContainerManagementProtocolProxy.
func (a *stockAMProc) cm(node string) rpc.ContainerManagementClient {
	a.t.Helper()
	tok := a.nmTokens[node]
	if tok == nil {
		a.t.Fatalf("InvalidToken: No NMToken sent for %s", node)
	}
	return cmWith(a.t, node, a.attempt, tok)
}

func cmWith(t *testing.T, node, user string, tok *hadooppb.TokenProto) rpc.ContainerManagementClient {
	cl := rpc.NewClient(node, rpc.ClientOptions{User: user, Token: tok, Retries: -1})
	t.Cleanup(func() { cl.Close() })
	return rpc.ContainerManagementClient{C: cl}
}

func startReq(ct *pb.ContainerProto, command string) *pb.StartContainersRequestProto {
	return &pb.StartContainersRequestProto{StartContainerRequest: []*pb.StartContainerRequestProto{{ContainerToken: ct.GetContainerToken(),
		ContainerLaunchContext: &pb.ContainerLaunchContextProto{Command: []string{command}}}}}
}

func ask(n int32, mb int64) *pb.ResourceRequestProto {
	return &pb.ResourceRequestProto{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(mb), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n),
		RelaxLocality: proto.Bool(true)}
}

// handOverCredentials is an AM command that gives the test its
// credentials file and pid, then waits to be killed.
func handOverCredentials(dir string) string {
	return fmt.Sprintf(`f=%s/$CONTAINER_ID; echo $$ > $f.pid; cp "$HADOOP_TOKEN_FILE_LOCATION" $f.part && mv $f.part $f.tokens && exec sleep 1000`, dir)
}

// startBigNM starts a NodeManager with room for everything a test runs,
// so that every container lands on it.
func startBigNM(t *testing.T, c *cluster) {
	t.Helper()
	dir := filepath.Join(c.dir, "nm-big")
	c.nms = append(c.nms, start(t, "nm-big", "nm", "--rm", c.tracker, "--address", "127.0.0.1:0",
		"--memory-mb", "16384", "--vcores", "16", "--local-dirs", filepath.Join(dir, "local"), "--log-dirs", filepath.Join(dir, "logs")))
	c.waitFor(t, "the NodeManager to register", func() bool {
		m, err := c.ac.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
		return err == nil && m.GetClusterMetrics().GetNumNodeManagers() == 1
	})
}

// TestStockAMWithNMTokens runs a stock-protocol AM against real Loom
// processes: a Hadoop 3 submission (the AM's size in
// am_container_resource_request), YarnClient's resource-type call, AMRM
// token auth, NMTokens, containers started over TOKEN-authenticated
// ContainerManagementProtocol, refusals of a missing, forged and another
// app's NMToken, then the AM killed mid-run: attempt 2 (AM container
// _02_000001) inherits the running containers with their NMTokens, stops
// them, and the app ends SUCCEEDED.
func TestStockAMWithNMTokens(t *testing.T) {
	c := startCluster(t, 0)
	startBigNM(t, c)
	ctx := context.Background()

	// What YarnClient.start asks of Hadoop 3.1/3.2 clients.
	types, err := c.ac.GetResourceTypeInfo(ctx, &pb.GetAllResourceTypeInfoRequestProto{})
	if err != nil || len(types.GetResourceTypeInfo()) < 2 {
		t.Fatalf("getResourceTypeInfo: %v %v", types, err)
	}
	if _, err := c.ac.GetResourceProfiles(ctx, &pb.GetAllResourceProfilesRequestProto{}); !rpc.IsClass(err, rpc.ClassYARNFeatureNotEnabled) {
		t.Errorf("getResourceProfiles: %v, want YARNFeatureNotEnabledException", err)
	}

	submit := func(name string, sc *pb.ApplicationSubmissionContextProto) *pb.ApplicationIdProto {
		t.Helper()
		na, err := c.ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
		if err != nil {
			t.Fatal(err)
		}
		sc.ApplicationId, sc.ApplicationName, sc.Queue = na.GetApplicationId(), proto.String(name), proto.String("default")
		sc.AmContainerSpec = &pb.ContainerLaunchContextProto{Command: []string{handOverCredentials(c.dir)}}
		if _, err := c.ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: sc}); err != nil {
			t.Fatal(err)
		}
		return sc.ApplicationId
	}
	// As Hadoop 3's YarnClient submits: the AM's size in the AM resource
	// request; resource is what older clients fill (here a size the AM
	// would not survive on).
	appA := submit("stock-a", &pb.ApplicationSubmissionContextProto{
		Resource: &pb.ResourceProto{Memory: proto.Int64(64), VirtualCores: proto.Int32(1)},
		AmContainerResourceRequest: []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(0)},
			ResourceName: proto.String("*"), Capability: &pb.ResourceProto{Memory: proto.Int64(2048), VirtualCores: proto.Int32(1)},
			NumContainers: proto.Int32(1)}},
		KeepContainersAcrossApplicationAttempts: proto.Bool(true), MaxAppAttempts: proto.Int32(2)})
	appB := submit("stock-b", &pb.ApplicationSubmissionContextProto{Resource: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}})

	a := stockAMAttempt(t, c, appA, 1)
	a.register()
	attempts, err := c.ac.GetContainers(ctx, &pb.GetContainersRequestProto{ApplicationAttemptId: c.report(t, appA).GetCurrentApplicationAttemptId()})
	if err != nil || len(attempts.GetContainers()) != 1 || attempts.GetContainers()[0].GetResource().GetMemory() != 2048 {
		t.Fatalf("the AM container: %v %v, want one of 2048 MB (am_container_resource_request)", attempts, err)
	}
	b := stockAMAttempt(t, c, appB, 1)
	b.register()

	// B gets a container, and with it an NMToken for the node.
	var bConts []*pb.ContainerProto
	b.allocate(ask(1, 1024))
	c.waitFor(t, "B's container", func() bool {
		bConts = append(bConts, b.allocate().GetAllocatedContainers()...)
		return len(bConts) == 1
	})
	node := nodeAddr(bConts[0].GetNodeId())
	if b.nmTokens[node] == nil {
		t.Fatalf("B's container on %s came with no NMToken", node)
	}

	// A asks for 3; the reply brings an NMToken for the node, its AM's
	// own included.
	var conts []*pb.ContainerProto
	a.allocate(ask(3, 1024))
	c.waitFor(t, "A's 3 containers", func() bool { conts = append(conts, a.allocate().GetAllocatedContainers()...); return len(conts) >= 3 })
	if len(a.nmTokens) != 1 || a.nmTokens[node] == nil {
		t.Fatalf("A holds NMTokens for %v, want one for %s", a.nmTokens, node)
	}

	// Refused: no NMToken (SIMPLE), a forged one, B's.
	simple := rpc.NewClient(node, rpc.ClientOptions{User: a.attempt, Retries: -1})
	defer simple.Close()
	forged := proto.Clone(a.nmTokens[node]).(*hadooppb.TokenProto)
	forged.Password = []byte("0123456789abcdefghij")
	if _, err := (rpc.ContainerManagementClient{C: simple}).StartContainers(ctx, startReq(conts[0], "exit 0")); !rpc.IsClass(err, rpc.ClassAccessControl) ||
		!strings.Contains(err.Error(), "SIMPLE authentication is not enabled.  Available:[TOKEN]") {
		t.Errorf("a start without an NMToken: %v", err)
	}
	if _, err := cmWith(t, node, a.attempt, forged).StartContainers(ctx, startReq(conts[0], "exit 0")); !rpc.IsClass(err, "javax.security.sasl.SaslException") {
		t.Errorf("a start with a forged NMToken: %v", err)
	}
	resp, err := b.cm(node).StartContainers(ctx, startReq(conts[0], "exit 0"))
	want := fmt.Sprintf("Unauthorized request to start container.\nNMToken for application attempt : %s was used for starting container "+
		"with container token issued for application attempt : %s", b.attempt, a.attempt)
	if err != nil || len(resp.GetFailedRequests()) != 1 || resp.GetFailedRequests()[0].GetException().GetMessage() != want {
		t.Errorf("A's container started with B's NMToken: %v %v, want the failure %q", resp, err, want)
	}

	// A starts its three: two run on, one exits 3.
	commands := []string{"exec sleep 120", "exit 3", "exec sleep 120"}
	for i, ct := range conts[:3] {
		resp, err := a.cm(node).StartContainers(ctx, startReq(ct, commands[i]))
		if err != nil || len(resp.GetSucceededRequests()) != 1 {
			t.Fatalf("start %d with A's NMToken: %v %v", i, resp, err)
		}
	}
	exits := map[string]int32{}
	c.waitFor(t, "the exit 3", func() bool {
		for _, cs := range a.allocate().GetCompletedContainerStatuses() {
			exits[rpc.ContainerIDString(cs.GetContainerId())] = cs.GetExitStatus()
		}
		return len(exits) > 0
	})
	if got := exits[rpc.ContainerIDString(conts[1].GetId())]; len(exits) != 1 || got != 3 {
		t.Fatalf("completions %v, want %s with exit 3", exits, rpc.ContainerIDString(conts[1].GetId()))
	}

	// The AM dies (kill -9). Attempt 2 starts as _02_000001 and
	// inherits the two running containers, with an NMToken for the node.
	am1 := fmt.Sprintf("container_%s_01_000001", strings.TrimPrefix(rpc.AppIDString(appA), "application_"))
	pid, err := os.ReadFile(filepath.Join(c.dir, am1+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the AM: %v", err)
	}
	a2 := stockAMAttempt(t, c, appA, 2)
	reg := a2.register()
	var inherited []string
	for _, ct := range reg.GetContainersFromPreviousAttempts() {
		inherited = append(inherited, rpc.ContainerIDString(ct.GetId()))
	}
	slices.Sort(inherited)
	if wantKept := []string{rpc.ContainerIDString(conts[0].GetId()), rpc.ContainerIDString(conts[2].GetId())}; !slices.Equal(inherited, wantKept) {
		t.Fatalf("attempt 2 inherited %v, want %v", inherited, wantKept)
	}
	if a2.nmTokens[node] == nil {
		t.Fatalf("attempt 2 got no NMToken for %s with the containers it inherited", node)
	}
	kept := []*pb.ContainerIdProto{conts[0].GetId(), conts[2].GetId()}
	st, err := a2.cm(node).GetContainerStatuses(ctx, &pb.GetContainerStatusesRequestProto{ContainerId: kept})
	if err != nil || len(st.GetStatus()) != 2 {
		t.Fatalf("attempt 2 reading the kept containers: %v %v", st, err)
	}
	for _, s := range st.GetStatus() {
		if s.GetState() != pb.ContainerStateProto_C_RUNNING {
			t.Errorf("kept container %s is %v, want RUNNING: the AM's death must not end it", rpc.ContainerIDString(s.GetContainerId()), s.GetState())
		}
	}
	// It stops one on the node, releases the other, and hears both end.
	if sp, err := a2.cm(node).StopContainers(ctx, &pb.StopContainersRequestProto{ContainerId: kept[:1]}); err != nil || len(sp.GetSucceededRequests()) != 1 {
		t.Fatalf("attempt 2 stopping a kept container: %v %v", sp, err)
	}
	ended := map[string]bool{}
	note := func(resp *pb.AllocateResponseProto) {
		for _, cs := range resp.GetCompletedContainerStatuses() {
			ended[rpc.ContainerIDString(cs.GetContainerId())] = true
		}
	}
	note(a2.allocateRelease(kept[1:]))
	c.waitFor(t, "both kept containers to end", func() bool {
		note(a2.allocate())
		return ended[rpc.ContainerIDString(kept[0])] && ended[rpc.ContainerIDString(kept[1])]
	})
	for _, am := range []*stockAMProc{a2, b} {
		if _, err := am.am.FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{
			FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}); err != nil {
			t.Fatalf("finish %s: %v", am.attempt, err)
		}
	}
	for _, app := range []*pb.ApplicationIdProto{appA, appB} {
		rep := c.report(t, app)
		if rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED || rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
			t.Errorf("%s ended %v/%v: %s", rpc.AppIDString(app), rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
		}
	}
	atts, err := c.ac.GetApplicationAttempts(ctx, &pb.GetApplicationAttemptsRequestProto{ApplicationId: appA})
	if err != nil || len(atts.GetApplicationAttempts()) != 2 {
		t.Errorf("app A's attempts: %v %v, want 2", atts, err)
	}
}

// TestStockAMUnmanaged runs the same stock-protocol AM unmanaged, as
// Hadoop's UnmanagedAMLauncher does: the RM launches nothing, the AM
// takes its AMRM token from the app's report, and runs its containers
// on Loom NMs with the NMTokens it is sent.
func TestStockAMUnmanaged(t *testing.T) {
	c := startCluster(t, 1)
	ctx := context.Background()
	na, err := c.ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	app := na.GetApplicationId()
	if _, err := c.ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
		ApplicationId: app, ApplicationName: proto.String("unmanaged"), Queue: proto.String("default"), UnmanagedAm: proto.Bool(true),
		AmContainerSpec: &pb.ContainerLaunchContextProto{}}}); err != nil {
		t.Fatal(err)
	}
	var tok *hadooppb.TokenProto
	c.waitFor(t, "the AMRM token in the report", func() bool {
		tok = c.report(t, app).GetAmRmToken()
		return tok != nil
	})
	am := stockAMWith(t, c.scheduler, tok)
	am.register()
	var conts []*pb.ContainerProto
	am.allocate(ask(2, 1024))
	c.waitFor(t, "2 containers", func() bool { conts = append(conts, am.allocate().GetAllocatedContainers()...); return len(conts) >= 2 })
	for i, ct := range conts {
		if resp, err := am.cm(nodeAddr(ct.GetNodeId())).StartContainers(ctx, startReq(ct, "exit 0")); err != nil || len(resp.GetSucceededRequests()) != 1 {
			t.Fatalf("start %d: %v %v", i, resp, err)
		}
	}
	ended := 0
	c.waitFor(t, "2 completions", func() bool { ended += len(am.allocate().GetCompletedContainerStatuses()); return ended >= 2 })
	if _, err := am.am.FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}); err != nil {
		t.Fatal(err)
	}
	if rep := c.report(t, app); rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED ||
		rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED || !rep.GetUnmanagedApplication() {
		t.Errorf("ended %v/%v unmanaged=%v: %s", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(), rep.GetUnmanagedApplication(), rep.GetDiagnostics())
	}
}
