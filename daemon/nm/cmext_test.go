package nm

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestContainerManagementExtras: the rest of ContainerManagementProtocol.
// A thread-dump signal reaches the container's process (its trap writes a
// file) and a forceful one ends it; an unknown container and a container
// of no such app get YARN's errors; resizing answers a failed request per
// token; re-localising, re-initialising and restarting say Loom does not;
// localization statuses list the resources as localised.
func TestContainerManagementExtras(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	ctx := context.Background()
	cid := containerID(31, 1)
	start(t, cm, token(t, n, cid, 128), launch(`trap 'touch dumped' QUIT; while true; do sleep 0.05; done`, nil, nil))
	waitRunning := func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := cm.GetContainerStatuses(ctx, &pb.GetContainerStatusesRequestProto{ContainerId: []*pb.ContainerIdProto{cid}})
			if err == nil && len(resp.GetStatus()) == 1 && resp.GetStatus()[0].GetState() == pb.ContainerStateProto_C_RUNNING {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the container did not run: %v %v", resp, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitRunning()
	time.Sleep(200 * time.Millisecond) // the trap is set
	if _, err := cm.SignalToContainer(ctx, &pb.SignalContainerRequestProto{ContainerId: cid, Command: pb.SignalContainerCommandProto_OUTPUT_THREAD_DUMP.Enum()}); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	dir := n.containers[ContainerIDString(cid)].workDir
	n.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for !fileExists(dir + "/dumped") {
		if time.Now().After(deadline) {
			t.Fatal("the QUIT signal did not reach the container's process")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The same signal from the RM, in a heartbeat (yarn container -signal).
	if err := os.Remove(dir + "/dumped"); err != nil {
		t.Fatal(err)
	}
	stub.mu.Lock()
	stub.signals = []*pb.SignalContainerRequestProto{{ContainerId: cid, Command: pb.SignalContainerCommandProto_OUTPUT_THREAD_DUMP.Enum()},
		{ContainerId: containerID(31, 99), Command: pb.SignalContainerCommandProto_OUTPUT_THREAD_DUMP.Enum()}}
	stub.mu.Unlock()
	deadline = time.Now().Add(5 * time.Second)
	for !fileExists(dir + "/dumped") {
		if time.Now().After(deadline) {
			t.Fatal("the RM's QUIT signal did not reach the container's process")
		}
		time.Sleep(20 * time.Millisecond)
	}

	wantErr := func(what string, err error, class, msg string) {
		t.Helper()
		var re *rpc.RemoteError
		if err == nil || !asRemote(err, &re) || re.Class != class || !strings.Contains(re.Message, msg) {
			t.Errorf("%s: %v, want %s saying %q", what, err, class, msg)
		}
	}
	absent := containerID(31, 99)
	_, err := cm.SignalToContainer(ctx, &pb.SignalContainerRequestProto{ContainerId: absent, Command: pb.SignalContainerCommandProto_GRACEFUL_SHUTDOWN.Enum()})
	wantErr("signal an absent container", err, rpc.ClassYarnException, "is not handled by this NodeManager")
	_, err = cm.Localize(ctx, &pb.ResourceLocalizationRequestProto{ContainerId: cid})
	wantErr("localize", err, rpc.ClassYarnException, "does not localize resources for a running container")
	_, err = cm.RestartContainer(ctx, absent)
	wantErr("restart an absent container", err, rpc.ClassYarnException, "is not handled by this NodeManager")
	_, err = cm.ReInitializeContainer(ctx, &pb.ReInitializeContainerRequestProto{ContainerId: cid})
	wantErr("re-initialize without a launch context", err, rpc.ClassYarnException, "needs a container launch context")
	up, err := cm.UpdateContainer(ctx, &pb.ContainerUpdateRequestProto{UpdateContainerToken: []*hadooppb.TokenProto{token(t, n, cid, 256)}})
	if err != nil || len(up.GetFailedRequests()) != 1 || !strings.Contains(up.GetFailedRequests()[0].GetException().GetMessage(), "does not change a running container's resource") {
		t.Errorf("update: %v, %v", up, err)
	}
	ls, err := cm.GetLocalizationStatuses(ctx, &pb.GetLocalizationStatusesRequestProto{ContainerId: []*pb.ContainerIdProto{cid, absent}})
	if err != nil || len(ls.GetCntnLocalizationStatuses()) != 1 || len(ls.GetFailedRequests()) != 1 {
		t.Errorf("localization statuses: %v, %v", ls, err)
	}

	// A forceful shutdown ends it.
	if _, err := cm.SignalToContainer(ctx, &pb.SignalContainerRequestProto{ContainerId: cid, Command: pb.SignalContainerCommandProto_FORCEFUL_SHUTDOWN.Enum()}); err != nil {
		t.Fatal(err)
	}
	if cs := stub.completed(t, cid, 10*time.Second); cs.GetExitStatus() != 137 {
		t.Errorf("after SIGKILL: exit %d, want 137", cs.GetExitStatus())
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func asRemote(err error, re **rpc.RemoteError) bool { return errors.As(err, re) }

// TestRestartAndReInitialize: a running container is relaunched in place
// by restartContainer (the same command), reInitializeContainer (a new
// one), and rolled back to the old one; commit ends the rollback; the
// container stays RUNNING throughout and completes once.
func TestRestartAndReInitialize(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	ctx := context.Background()
	cid := containerID(32, 1)
	cmd := func(tag string) *pb.ContainerLaunchContextProto {
		return launch(`echo `+tag+` >> runs; trap 'exit 0' TERM; while true; do sleep 0.05; done`, nil, nil)
	}
	start(t, cm, token(t, n, cid, 128), cmd("A"))
	var dir string
	runs := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			n.mu.Lock()
			dir = n.containers[ContainerIDString(cid)].workDir
			n.mu.Unlock()
			b, _ := os.ReadFile(dir + "/runs")
			if strings.Join(strings.Fields(string(b)), " ") == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("runs %q, want %q", b, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
		resp, err := cm.GetContainerStatuses(ctx, &pb.GetContainerStatusesRequestProto{ContainerId: []*pb.ContainerIdProto{cid}})
		if err != nil || len(resp.GetStatus()) != 1 || resp.GetStatus()[0].GetState() != pb.ContainerStateProto_C_RUNNING {
			t.Fatalf("after %q: %v %v, want RUNNING", want, resp, err)
		}
	}
	runs("A")
	if _, err := cm.RestartContainer(ctx, cid); err != nil {
		t.Fatal(err)
	}
	runs("A A")
	if _, err := cm.ReInitializeContainer(ctx, &pb.ReInitializeContainerRequestProto{ContainerId: cid, ContainerLaunchContext: cmd("B"),
		AutoCommit: proto.Bool(false)}); err != nil {
		t.Fatal(err)
	}
	runs("A A B")
	if _, err := cm.RollbackLastReInitialization(ctx, cid); err != nil {
		t.Fatal(err)
	}
	runs("A A B A")
	if _, err := cm.RollbackLastReInitialization(ctx, cid); err == nil || !strings.Contains(err.Error(), "not eligible for rollback") {
		t.Errorf("a second rollback: %v", err)
	}
	if _, err := cm.ReInitializeContainer(ctx, &pb.ReInitializeContainerRequestProto{ContainerId: cid, ContainerLaunchContext: cmd("C"),
		AutoCommit: proto.Bool(false)}); err != nil {
		t.Fatal(err)
	}
	runs("A A B A C")
	if _, err := cm.CommitLastReInitialization(ctx, cid); err != nil {
		t.Fatal(err)
	}
	if _, err := cm.CommitLastReInitialization(ctx, cid); err == nil || !strings.Contains(err.Error(), "not eligible for commit") {
		t.Errorf("a second commit: %v", err)
	}
	if _, err := cm.RollbackLastReInitialization(ctx, cid); err == nil {
		t.Error("rolled back a committed re-initialization")
	}
	// Stopped, it completes once, as killed.
	if _, err := cm.StopContainers(ctx, &pb.StopContainersRequestProto{ContainerId: []*pb.ContainerIdProto{cid}}); err != nil {
		t.Fatal(err)
	}
	if cs := stub.completed(t, cid, 10*time.Second); cs.GetExitStatus() != ExitKilledByAppMaster {
		t.Errorf("stopped: %v", cs)
	}
	if _, err := cm.RestartContainer(ctx, cid); err == nil || !strings.Contains(err.Error(), "not in RUNNING state") {
		t.Errorf("restart a completed container: %v", err)
	}
}
