package integration

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/nm"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/execproto"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestAMRunsTasksThroughAnExecutor plays an AM that uses executors: two
// containers on one NM, both started as leases (LOOM_EXECUTOR=1), one
// executor for both, a template installed once and 20 tasks started with
// tiny messages, their completions heard in batches.
func TestAMRunsTasksThroughAnExecutor(t *testing.T) {
	c := startCluster(t, 1)
	ctx := context.Background()
	id, attempt, am := c.stockAM(t, "executor")
	if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{Host: proto.String("127.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	respID := int32(0)
	allocate := func(asks ...*pb.ResourceRequestProto) *pb.AllocateResponseProto {
		t.Helper()
		resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(respID), Ask: asks})
		if err != nil {
			t.Fatal(err)
		}
		respID = resp.GetResponseId()
		return resp
	}
	allocate(&pb.ResourceRequestProto{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(512), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(2)})
	var got []*pb.ContainerProto
	nmTokens := map[string]*hadooppb.TokenProto{}
	c.waitFor(t, "2 containers", func() bool {
		resp := allocate()
		got = append(got, resp.GetAllocatedContainers()...)
		for _, nt := range resp.GetNmTokens() {
			nmTokens[net.JoinHostPort(nt.GetNodeId().GetHost(), fmt.Sprint(nt.GetNodeId().GetPort()))] = nt.GetToken()
		}
		return len(got) >= 2
	})

	env := []*pb.StringStringMapProto{{Key: proto.String(nm.LeaseEnv), Value: proto.String("1")}}
	var addrs []string
	for _, ct := range got {
		node := net.JoinHostPort(ct.GetNodeId().GetHost(), fmt.Sprint(ct.GetNodeId().GetPort()))
		nmc := rpc.NewClient(node, rpc.ClientOptions{User: attempt, Token: nmTokens[node]})
		defer nmc.Close()
		resp, err := rpc.ContainerManagementClient{C: nmc}.StartContainers(ctx, &pb.StartContainersRequestProto{
			StartContainerRequest: []*pb.StartContainerRequestProto{{ContainerToken: ct.GetContainerToken(),
				ContainerLaunchContext: &pb.ContainerLaunchContextProto{Environment: env}}}})
		if err != nil || len(resp.GetFailedRequests()) > 0 {
			t.Fatalf("start on %v: %v %v", ct.GetNodeId(), resp, err)
		}
		for _, kv := range resp.GetServicesMetaData() {
			if kv.GetKey() == nm.ExecutorMetaKey {
				addrs = append(addrs, string(kv.GetValue()))
			}
		}
	}
	if len(addrs) != 2 || addrs[0] != addrs[1] {
		t.Fatalf("executor addresses %v: want one executor for both leases", addrs)
	}

	exc := rpc.NewClient(addrs[0], rpc.ClientOptions{User: attempt})
	defer exc.Close()
	ec := execproto.Client{C: exc}
	if err := ec.Install(ctx, execproto.Template{ID: "stage-1", Kind: execproto.KindCommand, Demand: fairness.New(256, 1),
		Command: []string{"sh", "-c", "exit $(( {index} % 3 ))"}}); err != nil {
		t.Fatal(err)
	}
	if err := ec.Install(ctx, execproto.Template{ID: "stage-0", Kind: execproto.KindNoop, Demand: fairness.New(256, 1)}); err != nil {
		t.Fatal(err)
	}
	leases := []execproto.LeaseID{execproto.LeaseID(got[0].GetId().GetId()), execproto.LeaseID(got[1].GetId().GetId())}
	// A lease runs one task at a time: start the next task on a lease once
	// its last one has completed. Tasks 0-9 are no-ops, 10-19 commands.
	next := int32(0)
	exits := map[int32]int{}
	batches := 0
	startOn := func(l execproto.LeaseID) {
		if next >= 20 {
			return
		}
		tpl := "stage-0"
		if next >= 10 {
			tpl = "stage-1"
		}
		refused, err := ec.StartTasks(ctx, []execproto.TaskStart{{Lease: l, Task: execproto.TaskID{Template: tpl, Index: next}}})
		if err != nil || len(refused) > 0 {
			t.Fatalf("task %d: %v %v", next, refused, err)
		}
		next++
	}
	for _, l := range leases {
		startOn(l)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(exits) < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("%d completions of 20: %v", len(exits), exits)
		}
		cs, err := ec.WaitCompletions(ctx, time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) > 0 {
			batches++
		}
		for _, cp := range cs {
			exits[cp.Task.Index] = cp.Exit
			startOn(cp.Lease)
		}
	}
	for i := int32(0); i < 20; i++ {
		want := 0
		if i >= 10 {
			want = int(i % 3)
		}
		if exits[i] != want {
			t.Errorf("task %d exited %d, want %d", i, exits[i], want)
		}
	}
	t.Logf("20 completions in %d batches", batches)

	// Both leases are RUNNING containers as the RM sees them (once the
	// NM's heartbeat has said so).
	c.waitFor(t, "the AM's container and 2 leases RUNNING", func() bool {
		cs, err := c.ac.GetContainers(ctx, &pb.GetContainersRequestProto{ApplicationAttemptId: c.report(t, id).GetCurrentApplicationAttemptId()})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, ct := range cs.GetContainers() {
			if ct.GetContainerState() == pb.ContainerStateProto_C_RUNNING {
				running++
			}
		}
		return running == 3
	})
	if _, err := am.FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}); err != nil {
		t.Fatal(err)
	}
	// The app's clean-up stops its executor.
	c.waitFor(t, "the executor to stop", func() bool {
		conn, err := net.DialTimeout("tcp", addrs[0], 100*time.Millisecond)
		if err == nil {
			conn.Close()
		}
		return err != nil
	})
}
