package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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

// TestRMFailover: two RMs of an HA pair share their state in ZooKeeper
// and are elected through it. The standby's web port says so and sends
// REST callers to the active; its RPC ports are closed. An app runs on a
// NodeManager; the active is killed with SIGKILL; the standby becomes
// active, the NodeManager and the client fail over to it, and the app
// ends SUCCEEDED with its one attempt: its AM container was not
// restarted because the RM changed.
func TestRMFailover(t *testing.T) {
	zk := testZK(t)
	dir := t.TempDir()
	root := fmt.Sprintf("/loom-ha-test-%d", time.Now().UnixNano())
	addrs := map[string]map[string]string{}
	var args []string
	for _, id := range []string{"rm1", "rm2"} {
		addrs[id] = map[string]string{}
		for _, k := range []string{"address", "scheduler.address", "resource-tracker.address", "webapp.address"} {
			a := fmt.Sprintf("127.0.0.1:%d", freePort(t))
			addrs[id][k] = a
			args = append(args, "-D", "yarn.resourcemanager."+k+"."+id+"="+a)
		}
	}
	args = append(args, "-D", "yarn.resourcemanager.ha.enabled=true", "-D", "yarn.resourcemanager.ha.rm-ids=rm1,rm2",
		"-D", "yarn.resourcemanager.cluster-id=loom-test", "-D", "yarn.resourcemanager.recovery.enabled=true",
		"-D", "loom.store.kind=zookeeper", "-D", "loom.store.zk-address="+zk, "-D", "loom.store.zk-root="+root+"/store",
		"-D", "yarn.resourcemanager.ha.automatic-failover.zk-base-path="+root+"/election")
	rmArgs := append([]string{"rm", "-D", "loom.history.dir=" + filepath.Join(dir, "history"), "-D", "loom.heartbeat.interval-ms=100",
		"-D", "yarn.nm.liveness-monitor.expiry-interval-ms=30000"}, args...)
	rm1 := start(t, "rm1", append(rmArgs, "--ha-id", "rm1")...)
	haState := func(id string) string {
		resp, err := http.Get("http://" + addrs[id]["webapp.address"] + "/ws/v1/cluster/info")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		var ci struct{ ClusterInfo struct{ HAState string } }
		json.NewDecoder(resp.Body).Decode(&ci)
		return ci.ClusterInfo.HAState
	}
	c := &cluster{dir: dir, client: addrs["rm1"]["address"]}
	c.waitWithin(t, 30*time.Second, "rm1 to be active", func() bool { return haState("rm1") == "ACTIVE" })
	rm2 := start(t, "rm2", append(rmArgs, "--ha-id", "rm2")...)
	c.waitFor(t, "rm2 to be standby", func() bool { return haState("rm2") == "STANDBY" })
	_ = rm2
	// The standby sends REST callers to the active.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get("http://" + addrs["rm2"]["webapp.address"] + "/ws/v1/cluster/apps?states=RUNNING")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusTemporaryRedirect ||
		loc != "http://"+addrs["rm1"]["webapp.address"]+"/ws/v1/cluster/apps?states=RUNNING" {
		t.Errorf("the standby answered %d, Location %q; want 307 to rm1", resp.StatusCode, loc)
	}

	nmDir := filepath.Join(dir, "nm")
	c.nms = append(c.nms, start(t, "nm", append([]string{"nm", "--address", "127.0.0.1:0", "--memory-mb", "4096", "--vcores", "4",
		"--local-dirs", filepath.Join(nmDir, "local"), "--log-dirs", filepath.Join(nmDir, "logs")}, args...)...))
	cl := rpc.NewClient(addrs["rm1"]["address"], rpc.ClientOptions{User: "tester", RetryBackoff: 100 * time.Millisecond,
		Failover: []string{addrs["rm2"]["address"]}})
	t.Cleanup(func() { cl.Close() })
	c.ac = rpc.ApplicationClient{C: cl}
	c.waitFor(t, "the NodeManager", func() bool {
		m, err := c.ac.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
		return err == nil && m.GetClusterMetrics().GetNumNodeManagers() == 1
	})
	marker := filepath.Join(dir, "ran")
	id := c.submit(t, "survives-failover", fmt.Sprintf("echo run >> %s; sleep 6", marker))
	c.waitFor(t, "the AM container to run", func() bool { _, err := os.Stat(marker); return err == nil })
	time.Sleep(500 * time.Millisecond)

	killed := time.Now()
	rm1.kill9()
	c.waitWithin(t, 30*time.Second, "rm2 to be active", func() bool { return haState("rm2") == "ACTIVE" })
	failover := time.Since(killed)
	t.Logf("failover: rm2 active %v after rm1 was killed", failover.Round(10*time.Millisecond))
	if failover > 15*time.Second {
		t.Errorf("failover took %v", failover)
	}
	rep := c.waitState(t, id, pb.YarnApplicationStateProto_FINISHED)
	if rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("the app ended %v: %s", rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	if n := rep.GetCurrentApplicationAttemptId().GetAttemptId(); n != 1 {
		t.Errorf("attempt %d: the AM was restarted because the RM changed", n)
	}
	if b, _ := os.ReadFile(marker); strings.Count(string(b), "run") != 1 {
		t.Errorf("the AM container ran %d times, want once", strings.Count(string(b), "run"))
	}
	if c.client = cl.Addr(); c.client != addrs["rm2"]["address"] {
		t.Errorf("the client speaks to %s, want rm2 %s", c.client, addrs["rm2"]["address"])
	}
}
