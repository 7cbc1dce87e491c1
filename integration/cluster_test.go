// Package integration runs Loom's real daemons as processes on loopback
// and drives them the way users do: over YARN's wire protocol, with
// stock YARN calls only.
package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/am/driver"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/tool/mini"
)

var loomBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "loom-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	loomBin = filepath.Join(dir, "loom")
	build := exec.Command("go", "build", "-o", loomBin, "../cmd/loom")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building loom:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// handedOut are the ports freePort gave in this test process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
	next  int
}{ports: map[int]bool{}}

// freePort finds a port nobody listens on now, that it has not given
// before, and that the kernel never hands out by itself. Ports the kernel
// picks (a daemon's "127.0.0.1:0", every outgoing connection) come from
// the ephemeral range, so a port taken from that range and bound a moment
// later by an RM may meanwhile have become a NodeManager's (CI saw the
// RM's tracker fail "address already in use" on its own NM's port). So
// the ports come from below that range, from a point that differs
// between test processes.
func freePort(t *testing.T) int {
	t.Helper()
	low, high := portsBelowEphemeral()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.next == 0 {
		handedOut.next = low + (os.Getpid()*97)%(high-low)
	}
	for range high - low {
		port := handedOut.next
		handedOut.next++
		if handedOut.next >= high {
			handedOut.next = low
		}
		if handedOut.ports[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		handedOut.ports[port] = true
		return port
	}
	t.Fatal("no free port below the ephemeral range that was not handed out before")
	return 0
}

// portsBelowEphemeral is [10000, the ephemeral range's first port), from
// /proc/sys/net/ipv4/ip_local_port_range (Linux's default first is 32768).
func portsBelowEphemeral() (int, int) {
	low, high := 10000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var first, last int
		if _, err := fmt.Sscan(string(b), &first, &last); err == nil && first > low+1000 {
			high = first
		}
	}
	return low, high
}

// proc is a daemon process; its output is kept for failure messages.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan error
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(loomBin, args...), out: &bytes.Buffer{}, done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// Killed with the test binary too, should it time out before its cleanups.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- %s output:\n%s", p.name, p.out.String())
		}
	})
	return p
}

// stop asks the daemon to stop, as Ctrl-C would, then makes sure.
func (p *proc) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// kill9 kills the daemon the hard way.
func (p *proc) kill9() {
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

type cluster struct {
	rm                         *proc
	nms                        []*proc
	client, scheduler, tracker string
	web                        string // the web port: REST, UI, /metrics
	history                    string // loom.history.dir
	rmArgs                     []string
	ac                         rpc.ApplicationClient
	dir                        string
}

// startCluster starts an RM and n NMs.
func startCluster(t *testing.T, n int, rmArgs ...string) *cluster {
	t.Helper()
	c := &cluster{dir: t.TempDir()}
	c.client = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c.scheduler = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c.tracker = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c.web = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c.history = filepath.Join(c.dir, "history")
	args := []string{"rm", "-D", "yarn.resourcemanager.hostname=127.0.0.1",
		"-D", "yarn.resourcemanager.address=" + c.client, "-D", "yarn.resourcemanager.scheduler.address=" + c.scheduler,
		"-D", "yarn.resourcemanager.resource-tracker.address=" + c.tracker, "-D", "yarn.resourcemanager.webapp.address=" + c.web,
		"-D", "loom.history.dir=" + c.history, "-D", "loom.heartbeat.interval-ms=100"}
	c.rmArgs = append(args, rmArgs...)
	c.rm = start(t, "rm", c.rmArgs...)
	for i := range n {
		c.nms = append(c.nms, c.startNM(t, i))
	}
	cl := rpc.NewClient(c.client, rpc.ClientOptions{User: "tester", Retries: 20, RetryBackoff: 50 * time.Millisecond})
	t.Cleanup(func() { cl.Close() })
	c.ac = rpc.ApplicationClient{C: cl}
	c.waitFor(t, fmt.Sprintf("%d NodeManagers registered", n), func() bool {
		m, err := c.ac.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
		return err == nil && int(m.GetClusterMetrics().GetNumNodeManagers()) == n
	})
	return c
}

func (c *cluster) startNM(t *testing.T, i int) *proc {
	dir := filepath.Join(c.dir, fmt.Sprintf("nm%d", i))
	return start(t, fmt.Sprintf("nm%d", i), "nm", "--rm", c.tracker, "--address", "127.0.0.1:0",
		"--memory-mb", "4096", "--vcores", "4", "--local-dirs", filepath.Join(dir, "local"), "--log-dirs", filepath.Join(dir, "logs"))
}

func (c *cluster) waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	c.waitWithin(t, 30*time.Second, what, ok)
}

func (c *cluster) waitWithin(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// submit submits an app whose AM is a shell command, with stock fields only.
func (c *cluster) submit(t *testing.T, name, command string) *pb.ApplicationIdProto {
	t.Helper()
	ctx := context.Background()
	na, err := c.ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), ApplicationName: proto.String(name), Queue: proto.String("default"),
		Resource:        &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{command}}}})
	if err != nil {
		t.Fatal(err)
	}
	return na.GetApplicationId()
}

// stockAM plays a stock YARN AM: an app whose AM container hands its
// credentials file (HADOOP_TOKEN_FILE_LOCATION, written by the NM) to the
// test and waits, and a scheduler client that authenticates with the
// AMRM token it finds there, as a Java AM's UserGroupInformation does.
func (c *cluster) stockAM(t *testing.T, name string) (*pb.ApplicationIdProto, string, rpc.ApplicationMasterClient) {
	t.Helper()
	file := filepath.Join(c.dir, name+".tokens")
	id := c.submit(t, name, fmt.Sprintf(`cp "$HADOOP_TOKEN_FILE_LOCATION" %[1]s.part && mv %[1]s.part %[1]s && exec sleep 1000`, file))
	var creds *rpc.Credentials
	c.waitFor(t, "the AM container to hand over its credentials", func() bool {
		var err error
		creds, err = rpc.ReadCredentialsFile(file)
		return err == nil
	})
	tok := creds.Find(rpc.AMRMTokenKind)
	if tok == nil {
		t.Fatalf("the AM's credentials hold no AMRM token: %+v", creds)
	}
	launch, err := driver.LaunchWith(c.scheduler, tok)
	if err != nil {
		t.Fatal(err)
	}
	if want := rpc.AttemptIDString(c.report(t, id).GetCurrentApplicationAttemptId()); launch.Attempt != want {
		t.Fatalf("the AMRM token names %s, want %s", launch.Attempt, want)
	}
	cl := rpc.NewClient(c.scheduler, rpc.ClientOptions{Token: tok})
	t.Cleanup(func() { cl.Close() })
	return id, launch.Attempt, rpc.ApplicationMasterClient{C: cl}
}

func (c *cluster) report(t *testing.T, id *pb.ApplicationIdProto) *pb.ApplicationReportProto {
	t.Helper()
	r, err := c.reportErr(id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// reportErr is report for a caller that expects the RM may be away.
func (c *cluster) reportErr(id *pb.ApplicationIdProto) (*pb.ApplicationReportProto, error) {
	r, err := c.ac.GetApplicationReport(context.Background(), &pb.GetApplicationReportRequestProto{ApplicationId: id})
	return r.GetApplicationReport(), err
}

func (c *cluster) waitState(t *testing.T, id *pb.ApplicationIdProto, want pb.YarnApplicationStateProto) *pb.ApplicationReportProto {
	t.Helper()
	var rep *pb.ApplicationReportProto
	c.waitFor(t, "state "+want.String(), func() bool {
		rep = c.report(t, id)
		return rep.GetYarnApplicationState() == want
	})
	return rep
}

func TestShellAMRunsToSucceeded(t *testing.T) {
	c := startCluster(t, 2)
	id := c.submit(t, "hello", "echo hello-from-$CONTAINER_ID; exit 0")
	rep := c.waitState(t, id, pb.YarnApplicationStateProto_FINISHED)
	if rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("final status %v (%s)", rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	// The AM's stdout is in its container's log dir on one of the NMs.
	matches, _ := filepath.Glob(filepath.Join(c.dir, "nm*", "logs", "*", "*", "stdout"))
	found := false
	for _, m := range matches {
		b, _ := os.ReadFile(m)
		found = found || strings.Contains(string(b), "hello-from-container_")
	}
	if !found {
		t.Errorf("no AM stdout with the greeting among %v", matches)
	}
	// A failing command fails its attempts, then the app.
	bad := c.submit(t, "fails", "exit 7")
	rep = c.waitState(t, bad, pb.YarnApplicationStateProto_FAILED)
	if !strings.Contains(rep.GetDiagnostics(), "exitCode: 7") || !strings.Contains(rep.GetDiagnostics(), "failed 2 times") {
		t.Errorf("diagnostics %q", rep.GetDiagnostics())
	}
}

func TestKill(t *testing.T) {
	c := startCluster(t, 1)
	id := c.submit(t, "sleeper", "echo $$ > pid; exec sleep 1000")
	var pid int
	c.waitFor(t, "the AM process", func() bool {
		matches, _ := filepath.Glob(filepath.Join(c.dir, "nm0", "local", "*", "*", "*", "*", "*", "pid"))
		for _, m := range matches {
			if b, err := os.ReadFile(m); err == nil {
				fmt.Sscan(string(b), &pid)
			}
		}
		return pid > 0
	})
	if _, err := c.ac.ForceKillApplication(context.Background(), &pb.KillApplicationRequestProto{ApplicationId: id}); err != nil {
		t.Fatal(err)
	}
	rep := c.report(t, id)
	if rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_KILLED || rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_KILLED {
		t.Errorf("after kill: %v %v", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus())
	}
	c.waitFor(t, "the AM process to die", func() bool { return syscall.Kill(pid, 0) != nil })
}

func TestKilledNMBecomesLost(t *testing.T) {
	c := startCluster(t, 2, "-D", "yarn.nm.liveness-monitor.expiry-interval-ms=1500")
	id := c.submit(t, "sleeper", "exec sleep 1000")
	// Find the NM running the AM, and kill it.
	var victim int = -1
	c.waitFor(t, "the AM to start", func() bool {
		cs, err := c.ac.GetContainers(context.Background(), &pb.GetContainersRequestProto{ApplicationAttemptId: c.report(t, id).GetCurrentApplicationAttemptId()})
		if err != nil || len(cs.GetContainers()) == 0 || cs.GetContainers()[0].GetContainerState() != pb.ContainerStateProto_C_RUNNING {
			return false
		}
		port := int(cs.GetContainers()[0].GetNodeId().GetPort())
		for i, nm := range c.nms {
			if strings.Contains(nm.out.String(), fmt.Sprintf(":%d", port)) {
				victim = i
			}
		}
		return victim >= 0
	})
	c.nms[victim].kill9()
	c.waitFor(t, "the node to be LOST", func() bool {
		m, err := c.ac.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
		return err == nil && m.GetClusterMetrics().GetNumLostNms() == 1
	})
	atts, err := c.ac.GetApplicationAttempts(context.Background(), &pb.GetApplicationAttemptsRequestProto{ApplicationId: id})
	if err != nil {
		t.Fatal(err)
	}
	first := atts.GetApplicationAttempts()[0]
	if first.GetYarnApplicationAttemptState() != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED || !strings.Contains(first.GetDiagnostics(), "lost") {
		t.Errorf("first attempt after its node was lost: %v %q", first.GetYarnApplicationAttemptState(), first.GetDiagnostics())
	}
	cs, err := c.ac.GetContainers(context.Background(), &pb.GetContainersRequestProto{ApplicationAttemptId: first.GetApplicationAttemptId()})
	if err != nil || len(cs.GetContainers()) != 1 || cs.GetContainers()[0].GetContainerExitStatus() != -100 {
		t.Errorf("the lost AM container: %v %v", cs, err)
	}
	// The second attempt runs on the surviving node.
	c.waitFor(t, "a second attempt", func() bool {
		a, err := c.ac.GetApplicationAttempts(context.Background(), &pb.GetApplicationAttemptsRequestProto{ApplicationId: id})
		return err == nil && len(a.GetApplicationAttempts()) == 2
	})
}

func TestBadConfigIsRefused(t *testing.T) {
	dir := t.TempDir()
	site := `<configuration>
  <property><name>yarn.scheduler.minimum-allocation-mb</name><value>9000</value></property>
</configuration>`
	os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(site), 0o644)
	broken := t.TempDir()
	os.WriteFile(filepath.Join(broken, "yarn-site.xml"), []byte("<configuration><property>"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"rm", "--conf-dir", dir}, "yarn.scheduler.minimum-allocation-mb: 9000 is above yarn.scheduler.maximum-allocation-mb"},
		{[]string{"rm", "--conf-dir", broken}, "yarn-site.xml:1: malformed XML"},
		{[]string{"rm", "-D", "loom.scheduler.p-altruism=2"}, "loom.scheduler.p-altruism: 2 is not between 0 and 1"},
		{[]string{"nm", "--conf-dir", broken}, "malformed XML"},
	}
	for _, tc := range tests {
		out, err := exec.Command(loomBin, tc.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("loom %v: err %v, output %q; want a refusal naming %q", tc.args, err, out, tc.want)
		}
	}
}

// TestAMRunsTasksOnRealNMs plays a stock YARN AM: it registers as its
// attempt, asks for containers, starts them on the NodeManagers the RM
// chose with the tokens the RM gave, hears them complete and finishes.
func TestAMRunsTasksOnRealNMs(t *testing.T) {
	c := startCluster(t, 2)
	ctx := context.Background()
	// A DAG job runs beside it all along: stock AMs and Loom's share the
	// cluster.
	jobFile := filepath.Join(c.dir, "job.json")
	os.WriteFile(jobFile, []byte(dagJob), 0o644)
	out, err := exec.Command(loomBin, "submit", "--workload", jobFile, "--task-kind", "sleep", "--time-scale", "5",
		"--staging-dir", c.dir, "--detach", "--rm", c.client).CombinedOutput()
	if err != nil {
		t.Fatalf("submit the DAG job: %v\n%s", err, out)
	}
	dagApp, err := rpc.ParseAppID(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	id, attempt, am := c.stockAM(t, "stock")
	// Without the token, posing as the attempt under SIMPLE auth, as
	// Loom allowed before AMRM tokens: refused, and the app goes on.
	spoof := rpc.NewClient(c.scheduler, rpc.ClientOptions{User: attempt})
	defer spoof.Close()
	if _, err := (rpc.ApplicationMasterClient{C: spoof}).FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_FAILED.Enum()}); !rpc.IsClass(err, rpc.ClassAccessControl) ||
		!strings.Contains(err.Error(), "No AMRMToken found") {
		t.Fatalf("finish without the AMRM token: %v, want AccessControlException", err)
	}
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
		Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(3)})
	var got []*pb.ContainerProto
	nmTokens := map[string]*hadooppb.TokenProto{}
	c.waitFor(t, "3 containers", func() bool {
		resp := allocate()
		got = append(got, resp.GetAllocatedContainers()...)
		for _, nt := range resp.GetNmTokens() {
			nmTokens[fmt.Sprintf("%s:%d", nt.GetNodeId().GetHost(), nt.GetNodeId().GetPort())] = nt.GetToken()
		}
		return len(got) >= 3
	})
	for i, ct := range got {
		// A stock AM's asks carry no kind: they are DEFAULT.
		if k := ct.GetLoomAskKind(); k != pb.LoomAskKindProto_LOOM_DEFAULT {
			t.Errorf("a stock AM's container %d came as %v, want DEFAULT", i, k)
		}
		node := net.JoinHostPort(ct.GetNodeId().GetHost(), fmt.Sprint(ct.GetNodeId().GetPort()))
		if nmTokens[node] == nil {
			t.Fatalf("no NMToken came for %s, where container %d is", node, i)
		}
		nm := rpc.NewClient(node, rpc.ClientOptions{User: attempt, Token: nmTokens[node]})
		defer nm.Close()
		cmd := fmt.Sprintf("echo task-%d-of-$CONTAINER_ID; exit %d", i, i)
		resp, err := rpc.ContainerManagementClient{C: nm}.StartContainers(ctx, &pb.StartContainersRequestProto{
			StartContainerRequest: []*pb.StartContainerRequestProto{{ContainerToken: ct.GetContainerToken(),
				ContainerLaunchContext: &pb.ContainerLaunchContextProto{Command: []string{cmd}}}}})
		if err != nil || len(resp.GetFailedRequests()) > 0 {
			t.Fatalf("start on %v: %v %v", ct.GetNodeId(), resp, err)
		}
	}
	exits := map[int64]int32{}
	c.waitFor(t, "3 completions", func() bool {
		for _, cs := range allocate().GetCompletedContainerStatuses() {
			exits[cs.GetContainerId().GetId()] = cs.GetExitStatus()
		}
		return len(exits) == 3
	})
	for i, ct := range got {
		if exits[ct.GetId().GetId()] != int32(i) {
			t.Errorf("container %d exited %d, want %d", i, exits[ct.GetId().GetId()], i)
		}
	}
	if _, err := am.FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}); err != nil {
		t.Fatal(err)
	}
	rep := c.report(t, id)
	if rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED || rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("after finish: %v %v", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus())
	}
	// On a busy machine the stock AM can be done before the DAG job's AM
	// has even registered: the DAG job must only not have failed.
	switch st := c.report(t, dagApp).GetYarnApplicationState(); st {
	case pb.YarnApplicationStateProto_FAILED, pb.YarnApplicationStateProto_KILLED:
		t.Errorf("the DAG job beside it is %v", st)
	}
	c.waitFor(t, "the DAG job beside it to end", func() bool { return mini.Ended(c.report(t, dagApp)) })
	if r := c.report(t, dagApp); r.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("the DAG job beside the stock AM ended %v: %s", r.GetFinalApplicationStatus(), r.GetDiagnostics())
	}
}
