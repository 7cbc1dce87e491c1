package nm

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/loomrm/loom/daemon/nm/executor"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/execproto"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestMain lets the test binary stand in for the loom binary: the NM runs
// os.Executable() as `<bin> executor ...` for an app's executor.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "executor" {
		fs := flag.NewFlagSet("executor", flag.ExitOnError)
		listen := fs.String("listen", "127.0.0.1:0", "")
		addrFile := fs.String("addr-file", "", "")
		fs.Parse(os.Args[2:])
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		err := executor.RunProcess(ctx, executor.ProcessOptions{Listen: *listen, AddrFile: *addrFile,
			Log: zerolog.New(os.Stderr)})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var leaseEnv = map[string]string{LeaseEnv: "1"}

// startLease starts a lease container and returns the executor address
// the response carries.
func startLease(t *testing.T, n *NodeManager, cm rpc.ContainerManagementClient, cid *pb.ContainerIdProto, memMB int64) string {
	t.Helper()
	resp, err := cm.StartContainers(context.Background(), &pb.StartContainersRequestProto{
		StartContainerRequest: []*pb.StartContainerRequestProto{{ContainerLaunchContext: launch("", leaseEnv, nil),
			ContainerToken: token(t, n, cid, memMB)}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetFailedRequests()) > 0 || len(resp.GetSucceededRequests()) != 1 {
		t.Fatalf("start: %v", resp)
	}
	for _, kv := range resp.GetServicesMetaData() {
		if kv.GetKey() == ExecutorMetaKey {
			return string(kv.GetValue())
		}
	}
	t.Fatalf("no %s in services_meta_data: %v", ExecutorMetaKey, resp)
	return ""
}

func execClient(t *testing.T, addr string) execproto.Client {
	c := rpc.NewClient(addr, rpc.ClientOptions{User: "am"})
	t.Cleanup(func() { c.Close() })
	return execproto.Client{C: c}
}

// executorPids are the executor processes this test binary started.
func executorPids(t *testing.T) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		p, err := parseStat(b)
		if err != nil || p.ppid != os.Getpid() {
			continue
		}
		cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if args := strings.Split(string(cl), "\x00"); len(args) > 1 && args[1] == "executor" {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

func waitRunning(t *testing.T, stub *rmStub, cids ...*pb.ContainerIdProto) {
	t.Helper()
	stub.waitFor(t, "the leases RUNNING", 10*time.Second, func() bool {
		running := map[string]bool{}
		for _, cs := range stub.last().GetContainersStatuses() {
			if cs.GetState() == pb.ContainerStateProto_C_RUNNING {
				running[ContainerIDString(cs.GetContainerId())] = true
			}
		}
		for _, c := range cids {
			if !running[ContainerIDString(c)] {
				return false
			}
		}
		return true
	})
}

// waitTasks waits for n task completions from the executor.
func waitTasks(t *testing.T, ec execproto.Client, n int) map[int32]execproto.Completion {
	t.Helper()
	got := map[int32]execproto.Completion{}
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d task completions, want %d: %v", len(got), n, got)
		}
		cs, err := ec.WaitCompletions(context.Background(), time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			got[c.Task.Index] = c
		}
	}
	return got
}

func TestLeasesShareOneExecutorThatRunsTasks(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	c1, c2 := containerID(20, 1), containerID(20, 2)
	addr := startLease(t, n, cm, c1, 256)
	if got := executorPids(t); len(got) != 1 {
		t.Fatalf("executor processes %v after the first lease, want one", got)
	}
	if addr2 := startLease(t, n, cm, c2, 256); addr2 != addr {
		t.Errorf("the second lease's executor is at %s, the first's at %s", addr2, addr)
	}
	if got := executorPids(t); len(got) != 1 {
		t.Errorf("executor processes %v after the second lease, want still one", got)
	}
	waitRunning(t, stub, c1, c2)
	// Its logs are in the first lease's log dir.
	if _, err := os.Stat(filepath.Join(logDir(n, c1), "stderr")); err != nil {
		t.Errorf("the executor's stderr: %v", err)
	}

	// The AM installs templates once and starts tasks on the leases.
	ctx := context.Background()
	ec := execClient(t, addr)
	out := t.TempDir()
	for _, tpl := range []execproto.Template{
		{ID: "cmd", Kind: execproto.KindCommand, Demand: fairness.New(128, 1),
			Command: []string{"sh", "-c", "echo ran-{index} > " + out + "/{index}; exit {index}"}},
		{ID: "syn", Kind: execproto.KindSynthetic, Demand: fairness.New(16, 1), Duration: 50 * time.Millisecond},
		{ID: "huge", Kind: execproto.KindNoop, Demand: fairness.New(1024, 1)},
	} {
		if err := ec.Install(ctx, tpl); err != nil {
			t.Fatal(err)
		}
	}
	l1, l2 := execproto.LeaseID(c1.GetId()), execproto.LeaseID(c2.GetId())
	refused, err := ec.StartTasks(ctx, []execproto.TaskStart{
		{Lease: l1, Task: execproto.TaskID{Template: "cmd", Index: 3}},
		{Lease: l2, Task: execproto.TaskID{Template: "syn", Index: 1}},
	})
	if err != nil || len(refused) > 0 {
		t.Fatalf("start: %v %v", refused, err)
	}
	got := waitTasks(t, ec, 2)
	if got[3].Exit != 3 || got[3].Lease != l1 || got[1].Exit != 0 || got[1].Lease != l2 {
		t.Errorf("completions %+v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "3")); string(b) != "ran-3\n" {
		t.Errorf("the command task wrote %q", b)
	}
	// Leases are enforced: a task whose demand exceeds its lease is refused.
	refused, err = ec.StartTasks(ctx, []execproto.TaskStart{{Lease: l1, Task: execproto.TaskID{Template: "huge", Index: 9}}})
	if err != nil || len(refused) != 1 || !strings.Contains(refused[0].Reason, "does not fit lease") {
		t.Errorf("a task over its lease: %v %v", refused, err)
	}
	// A finished task leaves its lease RUNNING, ready for the next.
	waitRunning(t, stub, c1, c2)

	// Shutdown stops the executor and completes its leases.
	pids := executorPids(t)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if len(pids) != 1 || alive(pids[0]) {
		t.Errorf("executors %v after shutdown", pids)
	}
	n.mu.Lock()
	for _, c := range []*pb.ContainerIdProto{c1, c2} {
		if ct := n.containers[ContainerIDString(c)]; ct.state != stateDone || ct.exitStatus != ExitKilledAfterAppCompletion {
			t.Errorf("lease %s after shutdown: state %v, exit %d", ct.idStr, ct.state, ct.exitStatus)
		}
	}
	n.mu.Unlock()
}

func TestStopRevokesALeaseAndAppCleanupKillsTheExecutor(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	c1, c2 := containerID(21, 1), containerID(21, 2)
	addr := startLease(t, n, cm, c1, 256)
	startLease(t, n, cm, c2, 256)
	waitRunning(t, stub, c1, c2)
	pids := executorPids(t)
	if len(pids) != 1 {
		t.Fatalf("executor processes %v", pids)
	}
	ctx := context.Background()
	ec := execClient(t, addr)
	ec.Install(ctx, execproto.Template{ID: "sleep", Kind: execproto.KindCommand, Demand: fairness.New(64, 1),
		Command: []string{"sleep", "30"}})
	if refused, err := ec.StartTasks(ctx, []execproto.TaskStart{
		{Lease: execproto.LeaseID(c1.GetId()), Task: execproto.TaskID{Template: "sleep", Index: 1}},
		{Lease: execproto.LeaseID(c2.GetId()), Task: execproto.TaskID{Template: "sleep", Index: 2}},
	}); err != nil || len(refused) > 0 {
		t.Fatal(refused, err)
	}

	// stopContainers revokes the lease: its task is stopped, the executor
	// stays.
	if _, err := cm.StopContainers(ctx, &pb.StopContainersRequestProto{ContainerId: []*pb.ContainerIdProto{c1}}); err != nil {
		t.Fatal(err)
	}
	if cs := stub.completed(t, c1, 10*time.Second); cs.GetExitStatus() != ExitKilledByAppMaster {
		t.Errorf("the stopped lease: %v", cs)
	}
	if got := waitTasks(t, ec, 1); got[1].Exit != -1 || !strings.Contains(got[1].Err, "revoked") {
		t.Errorf("the revoked lease's task: %+v", got)
	}
	if !alive(pids[0]) {
		t.Fatal("stopping one lease killed the executor")
	}

	// applications_to_cleanup kills the executor; its leases complete.
	stub.mu.Lock()
	stub.appsCleanup = []*pb.ApplicationIdProto{rpc.AppIDOf(c2)}
	stub.mu.Unlock()
	if cs := stub.completed(t, c2, 10*time.Second); cs.GetExitStatus() != ExitKilledAfterAppCompletion ||
		!strings.Contains(cs.GetDiagnostics(), "application-finish") {
		t.Errorf("the app's lease after clean-up: %v", cs)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pids[0]) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(pids[0]) {
		t.Errorf("the executor %d survived its app's clean-up", pids[0])
	}
}

func TestExecutorDeathCompletesItsLeases(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	c1, c2 := containerID(22, 1), containerID(22, 2)
	startLease(t, n, cm, c1, 256)
	startLease(t, n, cm, c2, 256)
	waitRunning(t, stub, c1, c2)
	pids := executorPids(t)
	if len(pids) != 1 {
		t.Fatalf("executor processes %v", pids)
	}
	syscall.Kill(pids[0], syscall.SIGKILL)
	for _, c := range []*pb.ContainerIdProto{c1, c2} {
		cs := stub.completed(t, c, 10*time.Second)
		want := fmt.Sprintf("executor (pid %d) exited with code 137", pids[0])
		if cs.GetExitStatus() != 137 || !strings.Contains(cs.GetDiagnostics(), want) {
			t.Errorf("lease %s: status %d, diagnostics %q; want 137 and %q", ContainerIDString(c), cs.GetExitStatus(), cs.GetDiagnostics(), want)
		}
	}
	// The app's next lease starts a new executor.
	c3 := containerID(22, 3)
	startLease(t, n, cm, c3, 256)
	waitRunning(t, stub, c3)
	if got := executorPids(t); len(got) != 1 || got[0] == pids[0] {
		t.Errorf("executors %v after the first (%d) died", got, pids[0])
	}
}

func TestExecutorOverItsLeasesMemoryIsKilled(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	c1 := containerID(23, 1)
	addr := startLease(t, n, cm, c1, 128)
	waitRunning(t, stub, c1)
	ctx := context.Background()
	ec := execClient(t, addr)
	// The task asks for 64 MB but holds about 300.
	ec.Install(ctx, execproto.Template{ID: "hog", Kind: execproto.KindCommand, Demand: fairness.New(64, 1),
		Command: []string{"python3", "-c", "import time; b = b'x' * (300 * 1024 * 1024); time.sleep(60)"}})
	if refused, err := ec.StartTasks(ctx, []execproto.TaskStart{{Lease: execproto.LeaseID(c1.GetId()),
		Task: execproto.TaskID{Template: "hog"}}}); err != nil || len(refused) > 0 {
		t.Fatal(refused, err)
	}
	cs := stub.completed(t, c1, 20*time.Second)
	if cs.GetExitStatus() != ExitKilledExceededPmem {
		t.Fatalf("exit status %d, want %d: %s", cs.GetExitStatus(), ExitKilledExceededPmem, cs.GetDiagnostics())
	}
	for _, want := range []string{"is running beyond physical memory limits", "of 192 MB physical memory used", "python3", // 128 MB of leases + 64 MB for the executor
		"The app's executor (pid "} {
		if !strings.Contains(cs.GetDiagnostics(), want) {
			t.Errorf("diagnostics lack %q:\n%s", want, cs.GetDiagnostics())
		}
	}
}
