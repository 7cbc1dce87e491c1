package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// ask1G asks for n containers of 1 GB and a vcore.
func ask1G(n int32) []*pb.ResourceRequestProto {
	return []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n)}}
}

// allocator calls allocate in step, as an AM does.
type allocator struct {
	t    *testing.T
	am   rpc.ApplicationMasterClient
	next int32
}

func (a *allocator) call(asks []*pb.ResourceRequestProto, release ...*pb.ContainerIdProto) *pb.AllocateResponseProto {
	a.t.Helper()
	resp, err := a.am.Allocate(context.Background(), &pb.AllocateRequestProto{ResponseId: proto.Int32(a.next), Ask: asks, Release: release})
	if err != nil {
		a.t.Fatal(err)
	}
	a.next = resp.GetResponseId()
	return resp
}

// checkNMToken checks an NMToken as a NodeManager would: it names attempt
// and node, and is signed with the NMToken master key the node was given.
func checkNMToken(t *testing.T, nt *pb.NMTokenProto, attempt string, nm *testNM) *pb.NMTokenIdentifierProto {
	t.Helper()
	tok := nt.GetToken()
	id, err := rpc.ParseNMTokenIdentifier(tok.GetIdentifier())
	if err != nil {
		t.Fatalf("NMToken identifier: %v", err)
	}
	nm.mu.Lock()
	key := nm.nmKey
	nm.mu.Unlock()
	switch {
	case rpc.AttemptIDString(id.GetAppAttemptId()) != attempt:
		t.Errorf("NMToken for %s, want %s", rpc.AttemptIDString(id.GetAppAttemptId()), attempt)
	case !proto.Equal(id.GetNodeId(), nm.id) || !proto.Equal(nt.GetNodeId(), nm.id):
		t.Errorf("NMToken for node %v (sent for %v), want %v", id.GetNodeId(), nt.GetNodeId(), nm.id)
	case tok.GetKind() != rpc.NMTokenKind || tok.GetService() != nodeKey(nm.id):
		t.Errorf("NMToken kind %q service %q", tok.GetKind(), tok.GetService())
	case id.GetKeyId() != key.GetKeyId() || !rpc.TokenPasswordOK(key.GetBytes(), tok.GetIdentifier(), tok.GetPassword()):
		t.Errorf("NMToken under key %d is not signed with the node's key %d", id.GetKeyId(), key.GetKeyId())
	}
	return id
}

func tokensByNode(resp *pb.AllocateResponseProto) map[string]*pb.NMTokenProto {
	m := map[string]*pb.NMTokenProto{}
	for _, nt := range resp.GetNmTokens() {
		m[nodeKey(nt.GetNodeId())] = nt
	}
	return m
}

// TestNMTokens: the RM launches AMs with an NMToken, and gives an AM one
// NMToken per node, the first time its attempt gets a container there,
// and again after the node registers again or the NMToken key rolls, as
// YARN's NMTokenSecretManagerInRM does.
func TestNMTokens(t *testing.T) {
	r := startRM(t)
	nm1 := startNM(t, r.Addr("tracker"), 4096, 4)
	submit(t, clientOf(t, r, "kim"), "default", 1024)
	nm1.beat()
	start := nm1.waitStarts(1)[0]
	attempt := rpc.AttemptIDString(containerOf(t, start).GetAppAttemptId())
	nm1.mu.Lock()
	launcher := nm1.callers[0]
	nm1.mu.Unlock()
	if rpc.AttemptIDString(launcher.GetAppAttemptId()) != attempt || launcher.GetAppSubmitter() != "kim" || !proto.Equal(launcher.GetNodeId(), nm1.id) {
		t.Errorf("the RM launched the AM with an NMToken for %v, want attempt %s, submitter kim, node %v", launcher, attempt, nm1.id)
	}
	nm2 := startNM(t, r.Addr("tracker"), 4096, 4)
	am := amClient(t, r, start)
	reg, err := am.RegisterApplicationMaster(context.Background(), &pb.RegisterApplicationMasterRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, rt := range reg.GetResourceTypes() {
		types = append(types, fmt.Sprintf("%s/%s/%v", rt.GetName(), rt.GetUnits(), rt.GetType()))
	}
	if want := []string{"memory-mb/Mi/COUNTABLE", "vcores//COUNTABLE"}; !slices.Equal(types, want) {
		t.Errorf("register reply's resource types %v, want %v", types, want)
	}
	if reg.GetMaximumCapability().GetMemory() == 0 || reg.GetQueue() != "default" || len(reg.GetSchedulerResourceTypes()) == 0 {
		t.Errorf("register reply: %v", reg)
	}

	a := &allocator{t: t, am: am}
	a.call(ask1G(6))
	nm1.beat()
	nm2.beat()
	resp := a.call(nil)
	held := resp.GetAllocatedContainers()
	onNode := map[string]int{}
	for _, ct := range resp.GetAllocatedContainers() {
		onNode[nodeKey(ct.GetNodeId())]++
	}
	toks := tokensByNode(resp)
	if len(resp.GetAllocatedContainers()) != 6 || len(onNode) != 2 || len(toks) != 2 {
		t.Fatalf("6 containers on %v came with NMTokens for %d nodes, want one for each of 2", onNode, len(toks))
	}
	// The AM's own node included: the AM container gave it no token.
	checkNMToken(t, toks[nodeKey(nm1.id)], attempt, nm1)
	checkNMToken(t, toks[nodeKey(nm2.id)], attempt, nm2)

	// More containers on the same nodes come with no token; after nm2
	// registers again, its next container brings a new one.
	release := resp.GetAllocatedContainers()[:2]
	a.call(ask1G(0), release[0].GetId(), release[1].GetId())
	if _, err := nm2.rt.RegisterNodeManager(context.Background(), &pb.RegisterNodeManagerRequestProto{NodeId: nm2.id, HttpPort: proto.Int32(8042),
		Resource: &pb.ResourceProto{Memory: proto.Int64(4096), VirtualCores: proto.Int32(4)}}); err != nil {
		t.Fatal(err)
	}
	nm2.respID = 0
	a.call(ask1G(2))
	nm1.beat()
	nm2.beat()
	resp = a.call(nil)
	held = append(held[2:], resp.GetAllocatedContainers()...)
	toks = tokensByNode(resp)
	if _, again := toks[nodeKey(nm1.id)]; again {
		t.Errorf("a second NMToken for %s, which the attempt already holds one for", nodeKey(nm1.id))
	}
	gotNM2 := false
	for _, ct := range resp.GetAllocatedContainers() {
		gotNM2 = gotNM2 || proto.Equal(ct.GetNodeId(), nm2.id)
	}
	if _, ok := toks[nodeKey(nm2.id)]; ok != gotNM2 {
		t.Errorf("after nm2 registered again: a container there %v, a new token for it %v", gotNM2, ok)
	}

	// The key rolls: the next key goes to the nodes at once and signs
	// nothing; once it is active every node's token comes again, under it.
	old := r.nmKey.cur.GetKeyId()
	t0 := r.nmKey.rolled
	if _, err := r.roll(&r.nmKey, t0.Add(r.nmKey.every)); err != nil || r.nmKey.next == nil {
		t.Fatalf("roll: %v", err)
	}
	next := r.nmKey.next.GetKeyId()
	if k := nm1.beat().GetNmTokenMasterKey(); k.GetKeyId() != next {
		t.Fatalf("a heartbeat during the roll carried key %v, want the next key %d", k, next)
	}
	if k := nm1.beat().GetNmTokenMasterKey(); k != nil {
		t.Errorf("the node that has the next key is sent it again: %v", k)
	}
	nm2.beat()
	r.rollKeys(t0.Add(r.nmKey.every + r.nmKey.activation))
	if r.nmKey.cur.GetKeyId() != next || r.nmKey.next != nil {
		t.Fatalf("key %d still current after its activation time (next %v)", r.nmKey.cur.GetKeyId(), r.nmKey.next)
	}
	var all []*pb.ContainerIdProto
	for _, ct := range held {
		all = append(all, ct.GetId())
	}
	// Released room is offered again at once: the grants may come in
	// this very reply, or after the next heartbeat.
	resp = a.call(ask1G(2), all...)
	if len(resp.GetAllocatedContainers()) == 0 {
		nm1.beat()
		resp = a.call(nil)
	}
	toks = tokensByNode(resp)
	if len(resp.GetAllocatedContainers()) == 0 || len(toks) == 0 {
		t.Fatalf("after activation: %d containers, tokens %v", len(resp.GetAllocatedContainers()), toks)
	}
	for _, nt := range toks {
		id, _ := rpc.ParseNMTokenIdentifier(nt.GetToken().GetIdentifier())
		if id.GetKeyId() != next || id.GetKeyId() == old {
			t.Errorf("after activation a token under key %d, want %d", id.GetKeyId(), next)
		}
	}
}

// submitContext submits an app whose AM runs a command, with ctx's other
// fields set by the caller.
func submitContext(t *testing.T, ac rpc.ApplicationClient, sc *pb.ApplicationSubmissionContextProto) (*pb.ApplicationIdProto, error) {
	t.Helper()
	na, err := ac.GetNewApplication(context.Background(), &pb.GetNewApplicationRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	sc.ApplicationId = na.GetApplicationId()
	sc.AmContainerSpec = &pb.ContainerLaunchContextProto{Command: []string{"sleep", "100"}}
	_, err = ac.SubmitApplication(context.Background(), &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: sc})
	return sc.ApplicationId, err
}

// TestAMKeepsContainersAcrossAttempts: with
// keep_containers_across_application_attempts, a failed AM's containers
// run on; the next attempt's AM container is numbered 000001 of attempt
// 2, as YARN numbers them, and its AM inherits the running containers
// with an NMToken for their node, and hears when they end.
func TestAMKeepsContainersAcrossAttempts(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	ac := clientOf(t, r, "lee")
	id, err := submitContext(t, ac, &pb.ApplicationSubmissionContextProto{KeepContainersAcrossApplicationAttempts: proto.Bool(true),
		Resource: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	start1 := nm.waitStarts(1)[0]
	am1Cont := containerOf(t, start1)
	app := strings.TrimPrefix(rpc.AppIDString(id), "application_")
	if got, want := rpc.ContainerIDString(am1Cont), "container_"+app+"_01_000001"; got != want {
		t.Errorf("attempt 1's AM container %s, want %s", got, want)
	}
	am1 := amClient(t, r, start1)
	if _, err := am1.RegisterApplicationMaster(context.Background(), &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	a1 := &allocator{t: t, am: am1}
	a1.call(ask1G(2))
	nm.beat()
	kept := a1.call(nil).GetAllocatedContainers()
	if len(kept) != 2 || rpc.ContainerIDString(kept[0].GetId()) != "container_"+app+"_01_000002" {
		t.Fatalf("attempt 1's containers %v, want _01_000002 and _01_000003", kept)
	}

	// The AM dies; its containers run on.
	nm.finish(am1Cont, 137)
	nm.beat()
	if cl := nm.beat().GetContainersToCleanup(); len(cl) != 0 {
		t.Fatalf("the kept containers were cleaned up: %v", cl)
	}
	start2 := nm.waitStarts(2)[1]
	if got, want := rpc.ContainerIDString(containerOf(t, start2)), "container_"+app+"_02_000001"; got != want {
		t.Errorf("attempt 2's AM container %s, want %s", got, want)
	}
	am2 := amClient(t, r, start2)
	reg, err := am2.RegisterApplicationMaster(context.Background(), &pb.RegisterApplicationMasterRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	var inherited []string
	for _, ct := range reg.GetContainersFromPreviousAttempts() {
		inherited = append(inherited, rpc.ContainerIDString(ct.GetId()))
	}
	if want := []string{rpc.ContainerIDString(kept[0].GetId()), rpc.ContainerIDString(kept[1].GetId())}; !slices.Equal(inherited, want) {
		t.Errorf("attempt 2 inherited %v, want %v", inherited, want)
	}
	if toks := reg.GetNmTokensFromPreviousAttempts(); len(toks) != 1 {
		t.Errorf("%d NMTokens from previous attempts, want 1 for the one node", len(toks))
	} else {
		// As YARN's: the token names the containers' own attempt.
		checkNMToken(t, toks[0], rpc.AttemptIDString(kept[0].GetId().GetAppAttemptId()), nm)
	}

	// One kept container ends, the new AM hears it; it releases the other.
	nm.finish(kept[0].GetId(), 0)
	nm.beat()
	a2 := &allocator{t: t, am: am2}
	done := a2.call(nil).GetCompletedContainerStatuses()
	if len(done) != 1 || rpc.ContainerIDString(done[0].GetContainerId()) != rpc.ContainerIDString(kept[0].GetId()) || done[0].GetExitStatus() != 0 {
		t.Fatalf("attempt 2 heard %v, want the kept container's exit 0", done)
	}
	a2.call(nil, kept[1].GetId())
	if cl := nm.beat().GetContainersToCleanup(); len(cl) != 1 || rpc.ContainerIDString(cl[0]) != rpc.ContainerIDString(kept[1].GetId()) {
		t.Errorf("after the release the node was told to clean up %v", cl)
	}
	if _, err := am2.FinishApplicationMaster(context.Background(), &pb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}); err != nil {
		t.Fatal(err)
	}
	if rep := report(t, ac, id); rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("the app ended %v", rep.GetFinalApplicationStatus())
	}
}

// TestAMResourceAndAttempts: the AM's size follows YARN's rules
// (am_container_resource_request wins over resource), bad requests are
// refused with YARN's words, and an app's own max_app_attempts counts
// when it is within the cluster's.
func TestAMResourceAndAttempts(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 32768, 32)
	ac := clientOf(t, r, "max")
	res := func(mb int64) *pb.ResourceProto {
		return &pb.ResourceProto{Memory: proto.Int64(mb), VirtualCores: proto.Int32(1)}
	}
	anyReq := func(name string, mb int64) *pb.ResourceRequestProto {
		return &pb.ResourceRequestProto{ResourceName: proto.String(name), Capability: res(mb), NumContainers: proto.Int32(1),
			Priority: &pb.PriorityProto{Priority: proto.Int32(0)}}
	}
	tests := []struct {
		name   string
		sc     *pb.ApplicationSubmissionContextProto
		wantMB int64
		err    string
	}{
		{"resource only", &pb.ApplicationSubmissionContextProto{Resource: res(1024)}, 1024, ""},
		{"am request wins", &pb.ApplicationSubmissionContextProto{Resource: res(64),
			AmContainerResourceRequest: []*pb.ResourceRequestProto{anyReq("*", 2048)}}, 2048, ""},
		{"host and ANY requests", &pb.ApplicationSubmissionContextProto{
			AmContainerResourceRequest: []*pb.ResourceRequestProto{anyReq("host1", 64), anyReq("*", 3072)}}, 3072, ""},
		{"nothing asked", &pb.ApplicationSubmissionContextProto{}, 0, "Invalid resource request, no resources requested"},
		{"two ANY", &pb.ApplicationSubmissionContextProto{
			AmContainerResourceRequest: []*pb.ResourceRequestProto{anyReq("*", 64), anyReq("*", 128)}}, 0,
			"Invalid resource request, only one resource request with * is allowed"},
		{"no ANY", &pb.ApplicationSubmissionContextProto{
			AmContainerResourceRequest: []*pb.ResourceRequestProto{anyReq("host1", 64)}}, 0,
			"Invalid resource request, no resource request specified with *"},
	}
	started := 0
	for _, tc := range tests {
		_, err := submitContext(t, ac, tc.sc)
		if tc.err != "" {
			if !rpc.IsClass(err, rpc.ClassInvalidResourceRequest) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want InvalidResourceRequestException %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		nm.beat()
		started++
		var tok pb.ContainerTokenIdentifierProto
		proto.Unmarshal(nm.waitStarts(started)[started-1].GetContainerToken().GetIdentifier(), &tok)
		if got := tok.GetResource().GetMemory(); got != tc.wantMB {
			t.Errorf("%s: the AM container has %d MB, want %d", tc.name, got, tc.wantMB)
		}
	}

	// max_app_attempts 1 (the cluster allows 2): one failure ends it.
	id, err := submitContext(t, ac, &pb.ApplicationSubmissionContextProto{Resource: res(256), MaxAppAttempts: proto.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	started++
	start := nm.waitStarts(started)[started-1]
	if env(start, EnvMaxAppAttempts) != "1" {
		t.Errorf("MAX_APP_ATTEMPTS %q, want 1", env(start, EnvMaxAppAttempts))
	}
	nm.finish(containerOf(t, start), 1)
	nm.beat()
	if rep := report(t, ac, id); rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FAILED ||
		!strings.Contains(rep.GetDiagnostics(), "failed 1 times (the app's max_app_attempts)") {
		t.Errorf("after one failure: %v %q", rep.GetYarnApplicationState(), rep.GetDiagnostics())
	}
	// More than the cluster allows: the cluster's maximum.
	if _, err := submitContext(t, ac, &pb.ApplicationSubmissionContextProto{Resource: res(256), MaxAppAttempts: proto.Int32(9)}); err != nil {
		t.Fatal(err)
	}
	nm.beat()
	started++
	if got := env(nm.waitStarts(started)[started-1], EnvMaxAppAttempts); got != fmt.Sprint(r.cfg.MaxAttempts) {
		t.Errorf("max_app_attempts 9: MAX_APP_ATTEMPTS %s, want the cluster's %d", got, r.cfg.MaxAttempts)
	}
}

// TestResourceTypesAndProfiles: YarnClient.start of Hadoop 3.1/3.2 asks
// for the resource types; profiles are off, and say so as YARN does.
func TestResourceTypesAndProfiles(t *testing.T) {
	r := startRM(t)
	ac := clientOf(t, r, "ned")
	ctx := context.Background()
	types, err := ac.GetResourceTypeInfo(ctx, &pb.GetAllResourceTypeInfoRequestProto{})
	if err != nil || len(types.GetResourceTypeInfo()) != 2 || types.GetResourceTypeInfo()[0].GetName() != "memory-mb" ||
		types.GetResourceTypeInfo()[0].GetUnits() != "Mi" || types.GetResourceTypeInfo()[1].GetName() != "vcores" {
		t.Errorf("getResourceTypeInfo: %v %v", types, err)
	}
	const off = "Resource profile is not enabled, please enable resource profile feature before using its functions. " +
		"(by setting yarn.resourcemanager.resource-profiles.enabled to true)"
	if _, err := ac.GetResourceProfiles(ctx, &pb.GetAllResourceProfilesRequestProto{}); !rpc.IsClass(err, rpc.ClassYARNFeatureNotEnabled) ||
		!strings.Contains(err.Error(), off) {
		t.Errorf("getResourceProfiles: %v", err)
	}
	if _, err := ac.GetResourceProfile(ctx, &pb.GetResourceProfileRequestProto{Profile: proto.String("small")}); !rpc.IsClass(err, rpc.ClassYARNFeatureNotEnabled) {
		t.Errorf("getResourceProfile: %v", err)
	}
}
