package server

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestWorkPreservingRestart: an RM with recovery on stops in the middle of
// an app; a new RM on the same store recovers the app and its attempt, the
// node re-registers with its running containers and they are taken back
// (in the app's usage, not killed), the AM is told to register again and
// goes on, and new containers are numbered past the new epoch.
func TestWorkPreservingRestart(t *testing.T) {
	r1, conf := recoveringRM(t)
	ctx := context.Background()
	nm := startNM(t, r1.Addr("tracker"), 8192, 8)
	ac := clientOf(t, r1, "ivy")
	id := submit(t, ac, "etl", 1024)
	finished := submit(t, ac, "default", 1024)
	nm.beat()
	starts := nm.waitStarts(2)
	// The AM of app id (the NM may have started the two in either order).
	if containerOf(t, starts[0]).GetAppAttemptId().GetApplicationId().GetId() != id.GetId() {
		starts[0], starts[1] = starts[1], starts[0]
	}
	am := amClient(t, r1, starts[0])
	am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{})
	ask := []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(2)}}
	resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: ask})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId())})
	if err != nil || len(resp.GetAllocatedContainers()) != 2 {
		t.Fatalf("%d containers before the restart, %v", len(resp.GetAllocatedContainers()), err)
	}
	task := resp.GetAllocatedContainers()[0]
	// The task container runs on the NM (the AM started it there).
	nm.mu.Lock()
	nm.status[rpc.ContainerIDString(task.GetId())] = &pb.ContainerStatusProto{ContainerId: task.GetId(), State: pb.ContainerStateProto_C_RUNNING.Enum()}
	nm.mu.Unlock()
	// The second app's AM container exits 0: a command that was the app.
	second := containerOf(t, starts[1])
	nm.finish(second, 0)
	nm.beat()
	if rep := report(t, ac, finished); rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED {
		t.Fatalf("the second app is %v before the restart", rep.GetYarnApplicationState())
	}
	// A new RM on the same store, and the same addresses for the NM.
	r2 := restart(t, r1, conf)
	if r2.epoch != 2 {
		t.Errorf("epoch %d after the second start, want 2", r2.epoch)
	}
	ac2 := clientOf(t, r2, "ivy")
	if rep := report(t, ac2, finished); rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED ||
		rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("the finished app came back %v/%v", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus())
	}
	rep := report(t, ac2, id)
	if rep.GetYarnApplicationState() == pb.YarnApplicationStateProto_FAILED || rep.GetQueue() != "etl" || rep.GetUser() != "ivy" {
		t.Fatalf("the running app came back %v in %q for %q", rep.GetYarnApplicationState(), rep.GetQueue(), rep.GetUser())
	}
	// The NM's next heartbeat is told to resync; it registers again with
	// what it runs: the AM container and the task.
	if a := nm.beat().GetNodeAction(); a != pb.NodeActionProto_RESYNC {
		t.Fatalf("heartbeat to the new RM: %v, want RESYNC", a)
	}
	var running []*pb.NMContainerStatusProto
	nm.mu.Lock()
	for _, s := range nm.status {
		running = append(running, &pb.NMContainerStatusProto{ContainerId: s.GetContainerId(), ContainerState: s.GetState().Enum(),
			Resource: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}})
	}
	nm.mu.Unlock()
	if len(running) != 2 {
		t.Fatalf("the NM runs %d containers, want the AM's and the task's", len(running))
	}
	reg, err := nm.rt.RegisterNodeManager(ctx, &pb.RegisterNodeManagerRequestProto{NodeId: nm.id, HttpPort: proto.Int32(8042),
		Resource: &pb.ResourceProto{Memory: proto.Int64(8192), VirtualCores: proto.Int32(8)}, ContainerStatuses: running})
	if err != nil || reg.GetNodeAction() != pb.NodeActionProto_NORMAL {
		t.Fatalf("re-register: %v %v", reg, err)
	}
	nm.respID = 0
	if len(nm.beat().GetContainersToCleanup()) != 0 {
		t.Errorf("the new RM cleans up containers of a recovered app: %v", nm.last.GetContainersToCleanup())
	}
	usage := func() int64 {
		rep := report(t, ac2, id)
		return rep.GetAppResource_Usage().GetUsedResources().GetMemory()
	}
	if u := usage(); u != 2048 {
		t.Errorf("the recovered app uses %d MB, want its AM's and its task's 2048", u)
	}
	// The AM's next call: register again, then go on.
	// with the token it had: the AMRM master key outlived the RM.
	am2 := amClient(t, r2, starts[0])
	_, err = am2.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId())})
	if !rpc.IsClass(err, rpc.ClassApplicationMasterNotRegistered) {
		t.Fatalf("allocate before registering again: %v, want ApplicationMasterNotRegisteredException", err)
	}
	if _, err := am2.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	resp, err = am2.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: []*pb.ResourceRequestProto{{
		Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	resp, err = am2.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId())})
	if err != nil || len(resp.GetAllocatedContainers()) != 1 {
		t.Fatalf("%d containers after the restart, %v", len(resp.GetAllocatedContainers()), err)
	}
	if got := resp.GetAllocatedContainers()[0].GetId().GetId(); got>>40 != 2 {
		t.Errorf("a container granted after the restart is %s: want epoch 2 in its id", rpc.ContainerIDString(resp.GetAllocatedContainers()[0].GetId()))
	}
	if u := usage(); u != 3072 {
		t.Errorf("usage %d MB after one more container, want 3072", u)
	}
	// A new app gets a fresh id, not one of the recovered ones.
	if n := submit(t, ac2, "default", 1024); n.GetId() <= finished.GetId() {
		t.Errorf("a new app after the restart got number %d", n.GetId())
	}
}

// TestReleaseBeforeTheNodeReportsIt: after a restart (or a failover) an
// AM may register again and release a container before that container's
// node has registered with the new RM. The release is kept, and when the
// node reports the container it is stopped, not taken back: taken back,
// it was held for an AM that had let it go, and enough of them filled a
// small cluster so that nothing could run (TestRMFailoverUnderLoad hung).
func TestReleaseBeforeTheNodeReportsIt(t *testing.T) {
	run := recoveringAM(t)
	r1, conf, nm, id, start, am := run.r, run.conf, run.nm, run.id, run.start, run.am
	ctx := context.Background()
	ask := []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(1)}}
	resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: ask})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId())})
	if err != nil || len(resp.GetAllocatedContainers()) != 1 {
		t.Fatalf("%d containers before the restart, %v", len(resp.GetAllocatedContainers()), err)
	}
	task := resp.GetAllocatedContainers()[0].GetId()
	nm.mu.Lock()
	nm.status[rpc.ContainerIDString(task)] = &pb.ContainerStatusProto{ContainerId: task, State: pb.ContainerStateProto_C_RUNNING.Enum()}
	nm.mu.Unlock()
	nm.beat()
	r2 := restart(t, r1, conf)
	// The AM comes back first and releases its task container (its task
	// ended while no RM was there): the new RM does not know it yet.
	am2 := amClient(t, r2, start)
	if _, err := am2.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	if _, err := am2.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Release: []*pb.ContainerIdProto{task}}); err != nil {
		t.Fatal(err)
	}
	// Then the node registers with the AM's container and the task's.
	var running []*pb.NMContainerStatusProto
	nm.mu.Lock()
	for _, s := range nm.status {
		running = append(running, &pb.NMContainerStatusProto{ContainerId: s.GetContainerId(), ContainerState: s.GetState().Enum(),
			Resource: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}})
	}
	nm.mu.Unlock()
	if len(running) != 2 {
		t.Fatalf("the NM runs %d containers, want the AM's and the task's", len(running))
	}
	if _, err := nm.rt.RegisterNodeManager(ctx, &pb.RegisterNodeManagerRequestProto{NodeId: nm.id, HttpPort: proto.Int32(8042),
		Resource: &pb.ResourceProto{Memory: proto.Int64(8192), VirtualCores: proto.Int32(8)}, ContainerStatuses: running}); err != nil {
		t.Fatal(err)
	}
	nm.respID = 0
	cleanup := nm.beat().GetContainersToCleanup()
	if len(cleanup) != 1 || cleanup[0].GetId() != task.GetId() {
		t.Errorf("the node was told to clean up %v, want the released task container %s", cleanup, rpc.ContainerIDString(task))
	}
	if u := report(t, clientOf(t, r2, "ivy"), id).GetAppResource_Usage().GetUsedResources().GetMemory(); u != 1024 {
		t.Errorf("the app holds %d MB, want only its AM's 1024: the released container was taken back", u)
	}
}

// restart stops r1 and starts an RM with conf on its addresses (and so,
// with recovery, on its store), stopped when the test ends.
func restart(t *testing.T, r1 *RM, conf []string) *RM {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	r1.Stop(ctx)
	cancel()
	r2, err := New(testConfig(t, append(conf, "yarn.resourcemanager.address="+r1.Addr("client"),
		"yarn.resourcemanager.scheduler.address="+r1.Addr("scheduler"),
		"yarn.resourcemanager.resource-tracker.address="+r1.Addr("tracker"))...), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r2.Stop(ctx)
	})
	return r2
}

// recoveringRM starts an RM that keeps its state in a store of its own
// (the conf says where, for restart).
func recoveringRM(t *testing.T) (*RM, []string) {
	t.Helper()
	conf := []string{"yarn.resourcemanager.recovery.enabled=true", "loom.store.dir=" + t.TempDir()}
	r, err := New(testConfig(t, conf...), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	return r, conf
}

// amRun is an RM with recovery on (conf says where its store is), one NM
// of 8 GB and 8 vcores, and one app of ivy's in queue default whose AM
// (launched by start) has registered.
type amRun struct {
	r     *RM
	conf  []string
	nm    *testNM
	id    *pb.ApplicationIdProto
	start *pb.StartContainerRequestProto
	am    rpc.ApplicationMasterClient
}

func recoveringAM(t *testing.T) amRun {
	t.Helper()
	r, conf := recoveringRM(t)
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	id := submit(t, clientOf(t, r, "ivy"), "default", 1024)
	nm.beat()
	start := nm.waitStarts(1)[0]
	am := amClient(t, r, start)
	if _, err := am.RegisterApplicationMaster(context.Background(), &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	return amRun{r: r, conf: conf, nm: nm, id: id, start: start, am: am}
}

// TestRecoverySchedulingWaitKey: the recovery wait is YARN's key, 10 s
// by default (its effect is exercised by the HA and restart integration
// tests, where granting at once double-booked nodes).
func TestRecoverySchedulingWaitKey(t *testing.T) {
	c := hadoopconf.New(Defaults)
	if v, _ := c.Raw(keySchedulingWait); v != "10000" {
		t.Errorf("%s defaults to %q, want 10000", keySchedulingWait, v)
	}
	if cfg := testConfig(t, keySchedulingWait+"=2500"); cfg.RecoverySchedulingWait != 2500*time.Millisecond {
		t.Errorf("the wait is %v, want 2.5s", cfg.RecoverySchedulingWait)
	}
}

// TestFirstPromiseSurvivesARestart: a Loom AM's app is promised a fluid
// span (rm/promise.go) at the first share that counts its ask; the RM
// keeps the promise in the app's record, and an RM restarted on the same
// store restores it: the same span (to the millisecond kept), taken at
// the same wall-clock instant, so the time the app had already run counts
// against it rather than being forgiven by a fresh promise.
func TestFirstPromiseSurvivesARestart(t *testing.T) {
	run := recoveringAM(t)
	r1, conf, nm, id, am := run.r, run.conf, run.nm, run.id, run.am
	ctx := context.Background()
	ask := []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(20),
		LoomAskKind: pb.LoomAskKindProto_LOOM_DEFAULT.Enum(), LoomRemainingWork: proto.Float64(50)}}
	resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: ask})
	if err != nil {
		t.Fatal(err)
	}
	promise := func(r *RM) rm.PromiseState {
		r.mu.Lock()
		defer r.mu.Unlock()
		p, err := r.core.Promise(rm.AppID(id.GetId()))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var before rm.PromiseState
	for deadline := time.Now().Add(10 * time.Second); ; {
		nm.beat()
		if resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId())}); err != nil {
			t.Fatal(err)
		}
		if before = promise(r1); before.Kept {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no first promise in 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	r1.mu.Lock()
	a := r1.apps[rm.AppID(id.GetId())]
	takenAt, span := a.promisedAt, a.promised
	r1.mu.Unlock()
	if span != before.Span || takenAt.IsZero() || time.Since(takenAt) > 15*time.Second {
		t.Fatalf("the app's record keeps a promise of %v at %v; the core's is %+v", span, takenAt, before)
	}
	r2 := restart(t, r1, conf)
	after := promise(r2)
	r2.mu.Lock()
	restored := r2.apps[rm.AppID(id.GetId())]
	r2.mu.Unlock()
	if !after.Kept || after.Span != span.Truncate(time.Millisecond) || !restored.promisedAt.Equal(time.UnixMilli(takenAt.UnixMilli())) {
		t.Fatalf("after the restart: promise %+v taken at %v; want the span %v taken at %v", after, restored.promisedAt, span, takenAt)
	}
	// Its finish counts from when it was first promised, not from the
	// restart: at least the time since then plus the critical path (0).
	if min := time.Since(takenAt) - 50*time.Millisecond; after.Finish < min {
		t.Errorf("after the restart the fluid finish is %v from the promise, want at least %v", after.Finish, min)
	}
}
