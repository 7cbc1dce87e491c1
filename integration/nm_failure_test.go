package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loomrm/loom/internal/mini"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
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
	out, err := exec.Command(loomBin, "submit", "mix", "--catalogue", "tpch:50g", "--jobs", "6", "--arrivals", "batch",
		"--time-scale", "0.01", "--task-kind", "sleep", "--memory-scale", "0.03125", "--am-memory-mb", "256", "--detach",
		"--staging-dir", dir, "--rm", c.client).CombinedOutput()
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	var apps []*pb.ApplicationIdProto
	for _, f := range strings.Fields(string(out)) {
		if id, err := rpc.ParseAppID(f); err == nil {
			apps = append(apps, id)
		}
	}
	if len(apps) != 6 {
		t.Fatalf("submit printed %d app ids, want 6:\n%s", len(apps), out)
	}
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
	for _, id := range apps {
		r := c.report(t, id)
		name := rpc.AppIDString(id)
		if r.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
			t.Errorf("%s ended %v/%v: %s", name, r.GetYarnApplicationState(), r.GetFinalApplicationStatus(), r.GetDiagnostics())
			continue
		}
		h := readHistory(t, c.history, name)
		runs := map[string]int{}
		for _, tk := range h.Tasks {
			if tk.State == "SUCCEEDED" {
				runs[fmt.Sprintf("%s/%d", tk.Stage, tk.Task)]++
			}
		}
		total := 0
		for _, s := range h.Stages {
			total += s.Tasks
		}
		if len(runs) != total {
			t.Errorf("%s: %d tasks succeeded, want all %d", name, len(runs), total)
		}
		for key, n := range runs {
			if n != 1 {
				t.Errorf("%s: task %s succeeded %d times", name, key, n)
			}
		}
		t.Logf("%s: attempt %d, %d task executions for %d tasks", name, r.GetCurrentApplicationAttemptId().GetAttemptId(), len(h.Tasks), total)
	}
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
