package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/tool/mini"
)

// killMachine kills -9 an NM and every process it started (its
// containers: AMs, executors), as if its machine died: each of those runs
// in a directory under the NM's own.
func killMachine(t *testing.T, nm *proc, dir string) int {
	t.Helper()
	nm.kill9()
	killed := 0
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || !strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	return killed
}

// TestNMFailureLosesNoJob: kill -9 a NodeManager and everything it runs
// in the middle of a run. After the liveness expiry the RM marks it LOST;
// the AMs elsewhere run its lost tasks again, and the jobs whose AM it
// ran go on in a second attempt that recovers from their histories. Every
// job finishes, and every task succeeds exactly once.
func TestNMFailureLosesNoJob(t *testing.T) {
	c := startCluster(t, 4, "-D", "yarn.nm.liveness-monitor.expiry-interval-ms=3000",
		"-D", "yarn.scheduler.minimum-allocation-mb=64")
	dir := t.TempDir()
	apps := submitMix(t, c, dir, 6)
	c.waitWithin(t, 2*time.Minute, "tasks to complete before the failure", func() bool {
		done := 0
		for _, id := range apps {
			for _, tk := range readHistory(t, c.history, rpc.AppIDString(id)).Tasks {
				if tk.State == "SUCCEEDED" {
					done++
				}
			}
		}
		return done >= 150
	})
	// The machine that runs the first job's AM dies: its tasks elsewhere
	// and its AM both have to come back.
	victim := amNode(t, c, apps[0])
	killed := killMachine(t, c.nms[victim], filepath.Join(c.dir, fmt.Sprintf("nm%d", victim)))
	t.Logf("killed nm%d, which ran %s's AM, and %d of its processes", victim, rpc.AppIDString(apps[0]), killed)

	c.waitWithin(t, 20*time.Second, "the node to be LOST", func() bool {
		nodes, err := c.ac.GetClusterNodes(t.Context(), &pb.GetClusterNodesRequestProto{NodeStates: []pb.NodeStateProto{pb.NodeStateProto_NS_LOST}})
		return err == nil && len(nodes.GetNodeReports()) == 1
	})
	c.waitWithin(t, 4*time.Minute, "every job to end", func() bool {
		for _, id := range apps {
			if r, err := c.reportErr(id); err != nil || !mini.Ended(r) {
				return false
			}
		}
		return true
	})
	checkEveryTaskOnce(t, c, apps)
	if n := c.report(t, apps[0]).GetCurrentApplicationAttemptId().GetAttemptId(); n != 2 {
		t.Errorf("the job whose AM died with its node is on attempt %d, want 2", n)
	}
}

// amNode is the index of the NM that runs an app's AM: the one whose
// directory holds the AM process's working directory.
func amNode(t *testing.T, c *cluster, app *pb.ApplicationIdProto) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || !strings.Contains(string(cmd), " am ") && !strings.Contains(string(cmd), "\x00am\x00") ||
			!strings.Contains(cwd, rpc.AppIDString(app)) {
			continue
		}
		for i := range c.nms {
			if strings.HasPrefix(cwd, filepath.Join(c.dir, fmt.Sprintf("nm%d", i))+string(filepath.Separator)) {
				return i
			}
		}
	}
	t.Fatalf("found no AM process of %s", rpc.AppIDString(app))
	return -1
}
