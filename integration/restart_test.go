package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/tool/mini"
)

// TestRMRestartLosesNothing: kill -9 the RM in the middle of a 10-job run
// and start it again on the same state store. Every job finishes, on its
// first AM attempt (the AMs register again and go on), and no task that
// had completed runs again: the histories show each task succeeding
// exactly once.
func TestRMRestartLosesNothing(t *testing.T) {
	store := t.TempDir()
	c := startCluster(t, 4, "-D", "yarn.resourcemanager.recovery.enabled=true", "-D", "loom.store.dir="+store,
		"-D", "yarn.scheduler.minimum-allocation-mb=64")
	dir := t.TempDir()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(c.dir, "nm*", "logs", "*", "*", "am.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			t.Logf("%s (last lines):\n%s", l, strings.Join(lines[max(0, len(lines)-6):], "\n"))
		}
	})
	apps := submitMix(t, c, dir, 10)
	// Mid-run: some tasks of some jobs have ended, no job has.
	c.waitWithin(t, 2*time.Minute, "tasks to complete before the crash", func() bool {
		done := 0
		for _, id := range apps {
			h := readHistory(t, c.history, rpc.AppIDString(id))
			for _, tk := range h.Tasks {
				if tk.State == "SUCCEEDED" {
					done++
				}
			}
		}
		return done >= 200
	})
	for _, id := range apps {
		if mini.Ended(c.report(t, id)) {
			t.Logf("%s ended before the crash", rpc.AppIDString(id))
		}
	}
	c.rm.kill9()
	time.Sleep(time.Second)
	c.rm = start(t, "rm", c.rmArgs...)

	c.waitWithin(t, 4*time.Minute, "every job to end after the restart", func() bool {
		for _, id := range apps {
			r, err := c.reportErr(id)
			if err != nil || !mini.Ended(r) {
				return false
			}
		}
		return true
	})
	for _, id := range apps {
		if n := c.report(t, id).GetCurrentApplicationAttemptId().GetAttemptId(); n != 1 {
			t.Errorf("%s is on attempt %d, want its first AM to have gone on", rpc.AppIDString(id), n)
		}
	}
	checkEveryTaskOnce(t, c, apps)
}

// submitMix submits n TPC-H 50g jobs at once, scaled to the test
// cluster's 4 GB nodes, and returns their ids.
func submitMix(t *testing.T, c *cluster, dir string, n int) []*pb.ApplicationIdProto {
	t.Helper()
	out, err := exec.Command(loomBin, "submit", "mix", "--catalogue", "tpch:50g", "--jobs", strconv.Itoa(n), "--arrivals", "batch",
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
	if len(apps) != n {
		t.Fatalf("submit printed %d app ids, want %d:\n%s", len(apps), n, out)
	}
	return apps
}

// checkEveryTaskOnce: every app SUCCEEDED, and its history shows each of
// its tasks succeeding exactly once.
func checkEveryTaskOnce(t *testing.T, c *cluster, apps []*pb.ApplicationIdProto) {
	t.Helper()
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
}

type history struct {
	Stages []struct {
		Name  string
		Tasks int
	}
	Tasks []struct {
		Stage string
		Task  int
		State string
	}
}

func readHistory(t *testing.T, dir, app string) history {
	t.Helper()
	var h history
	b, err := os.ReadFile(filepath.Join(dir, app+".json"))
	if err == nil {
		json.Unmarshal(b, &h)
	}
	return h
}
