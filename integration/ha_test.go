package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// testZK is the ZooKeeper the test command started ($LOOM_TEST_ZK).
func testZK(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("LOOM_TEST_ZK")
	if addr == "" {
		addr = "127.0.0.1:2181"
	}
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("no ZooKeeper at %s (%v): run the tests with `make test`, which starts one, or point LOOM_TEST_ZK at one", addr, err)
	}
	c.Close()
	return addr
}

// haCluster is RMs of an HA group sharing a ZooKeeper, and NMs.
type haCluster struct {
	*cluster
	ids    []string
	rms    map[string]*proc
	all    []*proc                      // every RM process started, killed ones too
	addrs  map[string]map[string]string // by rm-id, then address key
	args   []string                     // the HA keys every daemon takes
	rmArgs []string
}

// startHA starts n RMs (rm1 first, so that it is the first active) and
// m NMs, and a client that fails over across the RMs.
func startHA(t *testing.T, n, m int, extra ...string) *haCluster {
	t.Helper()
	zk := testZK(t)
	dir := t.TempDir()
	root := fmt.Sprintf("/loom-ha-test-%d", time.Now().UnixNano())
	h := &haCluster{cluster: &cluster{dir: dir, history: filepath.Join(dir, "history")}, rms: map[string]*proc{},
		addrs: map[string]map[string]string{}}
	for i := range n {
		id := fmt.Sprintf("rm%d", i+1)
		h.ids = append(h.ids, id)
		h.addrs[id] = map[string]string{}
		for _, k := range []string{"address", "scheduler.address", "resource-tracker.address", "webapp.address"} {
			a := fmt.Sprintf("127.0.0.1:%d", freePort(t))
			h.addrs[id][k] = a
			h.args = append(h.args, "-D", "yarn.resourcemanager."+k+"."+id+"="+a)
		}
	}
	h.args = append(h.args, "-D", "yarn.resourcemanager.ha.enabled=true", "-D", "yarn.resourcemanager.ha.rm-ids="+strings.Join(h.ids, ","),
		"-D", "yarn.resourcemanager.cluster-id=loom-test", "-D", "yarn.resourcemanager.recovery.enabled=true",
		"-D", "loom.store.kind=zookeeper", "-D", "loom.store.zk-address="+zk, "-D", "loom.store.zk-root="+root+"/store",
		"-D", "yarn.resourcemanager.ha.automatic-failover.zk-base-path="+root+"/election")
	h.args = append(h.args, extra...)
	manual := slices.Contains(extra, "yarn.resourcemanager.ha.automatic-failover.enabled=false")
	h.rmArgs = append([]string{"rm", "-D", "loom.history.dir=" + h.history, "-D", "loom.heartbeat.interval-ms=100",
		"-D", "yarn.nm.liveness-monitor.expiry-interval-ms=30000", "-D", "yarn.scheduler.minimum-allocation-mb=64"}, h.args...)
	h.startRM(t, "rm1")
	if manual {
		// Every RM starts standby; the test makes one active.
		for _, id := range h.ids[1:] {
			h.startRM(t, id)
		}
		for _, id := range h.ids {
			h.waitFor(t, id+" to be standby", func() bool { return h.haState(id) == "STANDBY" })
		}
		return h
	}
	h.waitWithin(t, 30*time.Second, "rm1 to be active", func() bool { return h.haState("rm1") == "ACTIVE" })
	for _, id := range h.ids[1:] {
		h.startRM(t, id)
		h.waitFor(t, id+" to be standby", func() bool { return h.haState(id) == "STANDBY" })
	}
	// On failure, the tail of every AM's log: what the jobs were waiting
	// for (runs before the NMs stop; the logs outlive them).
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "nm*", "logs", "application_*", "container_*", "am.log"))
		for _, f := range logs {
			b, _ := os.ReadFile(f)
			// The AM's own lines, then the start of its goroutine dump
			// (SIGQUIT, on a timeout): the whole dump would crowd them out.
			own, dump, _ := strings.Cut(string(b), "SIGQUIT: quit")
			lines := strings.Split(strings.TrimRight(own, "\n"), "\n")
			stack := strings.Split(dump, "\n")
			t.Logf("--- %s (last %d lines, then the first of its goroutines):\n%s\n%s", strings.TrimPrefix(f, dir), min(len(lines), 200),
				strings.Join(lines[max(0, len(lines)-200):], "\n"), strings.Join(stack[:min(len(stack), 60)], "\n"))
		}
	})
	for i := range m {
		d := filepath.Join(dir, fmt.Sprintf("nm%d", i))
		h.nms = append(h.nms, start(t, fmt.Sprintf("nm%d", i), append([]string{"nm", "--address", "127.0.0.1:0", "--memory-mb", "4096",
			"--vcores", "4", "--local-dirs", filepath.Join(d, "local"), "--log-dirs", filepath.Join(d, "logs")}, h.args...)...))
	}
	var others []string
	for _, id := range h.ids[1:] {
		others = append(others, h.addrs[id]["address"])
	}
	h.client = h.addrs["rm1"]["address"]
	cl := rpc.NewClient(h.client, rpc.ClientOptions{User: "tester", RetryBackoff: 100 * time.Millisecond, Failover: others})
	t.Cleanup(func() { cl.Close() })
	h.ac = rpc.ApplicationClient{C: cl}
	h.waitFor(t, "the NodeManagers", func() bool {
		r, err := h.ac.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
		return err == nil && int(r.GetClusterMetrics().GetNumNodeManagers()) == m
	})
	return h
}

func (h *haCluster) startRM(t *testing.T, id string) {
	h.rms[id] = start(t, id, append(h.rmArgs, "--ha-id", id)...)
	h.all = append(h.all, h.rms[id])
}

// haState is what an RM's web port says it is: ACTIVE, STANDBY, or ""
// when it does not answer.
func (h *haCluster) haState(id string) string { return h.infoField(id, "haState") }

// infoField is one string field of an RM's /ws/v1/cluster/info (Go's
// field name; JSON matches it case-insensitively), "" when it does not
// answer.
func (h *haCluster) infoField(id, field string) string {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + h.addrs[id]["webapp.address"] + "/ws/v1/cluster/info")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var ci struct{ ClusterInfo map[string]any }
	json.NewDecoder(resp.Body).Decode(&ci)
	for k, v := range ci.ClusterInfo {
		if strings.EqualFold(k, field) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}

// active is the id of the RM that says it is active, or "".
func (h *haCluster) active() string {
	for _, id := range h.ids {
		if h.haState(id) == "ACTIVE" {
			return id
		}
	}
	return ""
}

// TestRMFailover: two RMs of an HA pair share their state in ZooKeeper
// and are elected through it. The standby's web port says so and sends
// REST callers to the active. An app runs on a NodeManager; the active is
// killed with SIGKILL; the standby becomes active, the NodeManager and the
// client fail over to it, and the app ends SUCCEEDED with its one attempt:
// its AM container was not restarted because the RM changed.
func TestRMFailover(t *testing.T) {
	h := startHA(t, 2, 1)
	// The standby sends REST callers to the active.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get("http://" + h.addrs["rm2"]["webapp.address"] + "/ws/v1/cluster/apps?states=RUNNING")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusTemporaryRedirect ||
		loc != "http://"+h.addrs["rm1"]["webapp.address"]+"/ws/v1/cluster/apps?states=RUNNING" {
		t.Errorf("the standby answered %d, Location %q; want 307 to rm1", resp.StatusCode, loc)
	}

	// Both say their elector's ZooKeeper session is up, as YARN's
	// clusterInfo does under RM HA.
	for _, id := range []string{"rm1", "rm2"} {
		if got := h.infoField(id, "HAZooKeeperConnectionState"); got != "CONNECTED" {
			t.Errorf("%s's haZooKeeperConnectionState is %q, want CONNECTED", id, got)
		}
	}

	// Its RPC ports answer StandbyException, on which Hadoop's failover
	// proxies move on.
	plain := rpc.NewClient(h.addrs["rm2"]["address"], rpc.ClientOptions{User: "tester", Retries: -1})
	defer plain.Close()
	_, err = rpc.ApplicationClient{C: plain}.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
	if !rpc.IsClass(err, rpc.ClassStandby) {
		t.Errorf("the standby's client port answered %v, want StandbyException", err)
	}

	haadmin := func(args ...string) (string, error) {
		out, err := exec.Command(loomBin, append(append([]string{"haadmin"}, h.args...), args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := haadmin("-getAllServiceState"); err != nil || !strings.Contains(out, "rm1  active") || !strings.Contains(out, "rm2  standby") {
		t.Errorf("haadmin -getAllServiceState: %v\n%s", err, out)
	}
	if out, err := haadmin("-transitionToStandby", "rm1"); err == nil || !strings.Contains(out, "Refusing to manually manage HA state") {
		t.Errorf("haadmin -transitionToStandby: %v\n%s", err, out)
	}

	marker := filepath.Join(h.dir, "ran")
	id := h.submit(t, "survives-failover", fmt.Sprintf("echo run >> %s; sleep 6", marker))
	h.waitFor(t, "the AM container to run", func() bool { _, err := os.Stat(marker); return err == nil })
	time.Sleep(500 * time.Millisecond)

	killed := time.Now()
	h.rms["rm1"].kill9()
	h.waitWithin(t, 30*time.Second, "rm2 to be active", func() bool { return h.haState("rm2") == "ACTIVE" })
	failover := time.Since(killed)
	t.Logf("failover: rm2 active %v after rm1 was killed", failover.Round(10*time.Millisecond))
	if failover > 10*time.Second {
		t.Errorf("failover took %v, want within 10 s", failover)
	}
	if out, err := haadmin("-getServiceState", "rm2"); err != nil || out != "active" {
		t.Errorf("haadmin -getServiceState rm2 after the failover: %v %q", err, out)
	}
	rep := h.waitState(t, id, pb.YarnApplicationStateProto_FINISHED)
	if rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("the app ended %v: %s", rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	if n := rep.GetCurrentApplicationAttemptId().GetAttemptId(); n != 1 {
		t.Errorf("attempt %d: the AM was restarted because the RM changed", n)
	}
	if b, _ := os.ReadFile(marker); strings.Count(string(b), "run") != 1 {
		t.Errorf("the AM container ran %d times, want once", strings.Count(string(b), "run"))
	}
}

// TestRMFailoverUnderLoad: three RMs, four NMs, ten TPC-H jobs running
// under Loom's DAG AM; the active RM is killed with SIGKILL five times at
// random moments (and started again as a standby). Every job ends
// SUCCEEDED on its first attempt with every task run exactly once, and
// each time a new RM is active within 10 s.
func TestRMFailoverUnderLoad(t *testing.T) {
	h := startHA(t, 3, 4)
	apps := submitMix(t, h.cluster, t.TempDir(), 10)
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	var times []time.Duration
	for k := range 5 {
		time.Sleep(time.Duration(1000+rng.IntN(3000)) * time.Millisecond)
		was := h.active()
		if was == "" {
			t.Fatalf("kill %d: no RM is active", k+1)
		}
		killed := time.Now()
		h.rms[was].kill9()
		h.waitWithin(t, 30*time.Second, "another RM to be active", func() bool { a := h.active(); return a != "" && a != was })
		times = append(times, time.Since(killed))
		t.Logf("kill %d: %s killed, %s active after %v", k+1, was, h.active(), times[k].Round(10*time.Millisecond))
		h.startRM(t, was)
	}
	for i, d := range times {
		if d > 10*time.Second {
			t.Errorf("failover %d took %v, want within 10 s", i+1, d)
		}
	}
	ended := func() bool {
		for _, id := range apps {
			r, err := h.reportErr(id)
			if err != nil || !strings.Contains("FINISHED FAILED KILLED", r.GetYarnApplicationState().String()) {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(4 * time.Minute); !ended(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			// Where each running RM waits (SIGQUIT dumps its goroutines
			// into its output, printed below) and what each app says.
			for _, id := range apps {
				if r, err := h.reportErr(id); err == nil {
					t.Logf("%s: %v, progress %.2f: %s", rpc.AppIDString(id), r.GetYarnApplicationState(), r.GetProgress(), r.GetDiagnostics())
				}
			}
			// And what the active RM's scheduler holds: each app's asks,
			// usage and share, the leftover.
			if a := h.active(); a != "" {
				if resp, err := http.Get("http://" + h.addrs[a]["webapp.address"] + "/ws/v1/loom/scheduler"); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					t.Logf("%s's /ws/v1/loom/scheduler:\n%s", a, b)
				}
			}
			quitAMs(h.dir)
			for _, p := range h.rms {
				if p.cmd.Process.Signal(syscall.SIGQUIT) == nil {
					select {
					case <-p.done:
					case <-time.After(5 * time.Second):
					}
				}
			}
			t.Fatal("timed out waiting for every job to end")
		}
	}
	for _, id := range apps {
		if n := h.report(t, id).GetCurrentApplicationAttemptId().GetAttemptId(); n != 1 {
			t.Errorf("%s is on attempt %d, want its first AM to have gone on", rpc.AppIDString(id), n)
		}
	}
	checkEveryTaskOnce(t, h.cluster, apps)
	// No RM took a node or a container for lost, and no attempt failed
	// (read once they have stopped writing).
	for _, p := range h.all {
		p.stop()
	}
	for _, p := range h.all {
		for _, bad := range []string{"node LOST", "Container lost", "attempt failed"} {
			if strings.Contains(p.out.String(), bad) {
				t.Errorf("%s logged %q", p.name, bad)
			}
		}
	}
}

// TestRMManualFailover: with automatic failover off, both RMs start
// standby; `loom haadmin -transitionToActive` makes one active, a second
// one is refused while the first is, -transitionToStandby steps the first
// down, and then the second can be made active. Without the admin
// credential nothing changes.
func TestRMManualFailover(t *testing.T) {
	h := startHA(t, 2, 0, "-D", "yarn.resourcemanager.ha.automatic-failover.enabled=false", "-D", "loom.admin.secret=s3cret")
	haadmin := func(args ...string) (string, error) {
		out, err := exec.Command(loomBin, append(append([]string{"haadmin"}, h.args...), args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	wrongKey := append(slices.Clone(h.args), "-D", "loom.admin.secret=guess")
	if out, err := exec.Command(loomBin, append(append([]string{"haadmin"}, wrongKey...), "-transitionToActive", "rm1")...).CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "admin credential") {
		t.Errorf("a wrong credential: %v\n%s", err, out)
	}
	if out, err := haadmin("-transitionToActive", "rm1"); err != nil {
		t.Fatalf("rm1 to active: %v\n%s", err, out)
	}
	h.waitFor(t, "rm1 to be active", func() bool { return h.haState("rm1") == "ACTIVE" })
	if out, err := haadmin("-transitionToActive", "rm2"); err == nil || !strings.Contains(out, "rm1 is active") {
		t.Errorf("rm2 to active while rm1 is: %v\n%s", err, out)
	}
	if out, err := haadmin("-transitionToStandby", "rm1"); err != nil {
		t.Fatalf("rm1 to standby: %v\n%s", err, out)
	}
	h.waitFor(t, "rm1 to be standby", func() bool { return h.haState("rm1") == "STANDBY" })
	if out, err := haadmin("-transitionToActive", "rm2"); err != nil {
		t.Fatalf("rm2 to active: %v\n%s", err, out)
	}
	h.waitFor(t, "rm2 to be active", func() bool { return h.haState("rm2") == "ACTIVE" })
	if out, err := haadmin("-getAllServiceState"); err != nil || !strings.Contains(out, "rm1  standby") || !strings.Contains(out, "rm2  active") {
		t.Errorf("after the manual failover: %v\n%s", err, out)
	}
}

// quitAMs sends SIGQUIT to the AM processes running under dir (their
// working dirs are in the NMs' local dirs there): each writes its
// goroutines to its am.log.
func quitAMs(dir string) {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !strings.HasPrefix(cwd, dir) || !strings.Contains(string(cmdline), "\x00am\x00") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			syscall.Kill(pid, syscall.SIGQUIT)
		}
	}
	time.Sleep(time.Second)
}
