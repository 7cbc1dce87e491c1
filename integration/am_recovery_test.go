package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/tool/mini"
)

// recoveryJob: scan and dim end in well under a second; join, which
// waits for both, runs for ten; agg waits for join.
const recoveryJob = `{"name": "recover-etl", "stages": [
  {"name": "scan", "tasks": 4, "duration_ms": 300, "demand": {"memory-mb": 64, "vcores": 1}},
  {"name": "dim", "tasks": 2, "duration_ms": 300, "demand": {"memory-mb": 64, "vcores": 1}},
  {"name": "join", "tasks": 3, "duration_ms": 10000, "demand": {"memory-mb": 64, "vcores": 1}, "parents": ["scan", "dim"]},
  {"name": "agg", "tasks": 1, "duration_ms": 300, "demand": {"memory-mb": 64, "vcores": 1}, "parents": ["join"]}
]}`

// recoveryPoll polls ok every 100 ms until it holds, for up to limit: the
// steps of this test take seconds on a quiet machine and may take many
// more on a loaded one.
func recoveryPoll(t *testing.T, what string, limit time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// recoveryHistory reads an app's job history; false while there is none
// (the AM writes it whole and renames it into place, so a file is never
// half written).
func recoveryHistory(t *testing.T, path string) (am.History, bool) {
	t.Helper()
	var h am.History
	b, err := os.ReadFile(path)
	if err != nil {
		return h, false
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("history %s: %v\n%s", path, err, b)
	}
	return h, true
}

// amProcess finds the loom am process of an AM attempt: a loom am whose
// CONTAINER_ID is a container of that attempt. Zero while there is none.
func amProcess(t *testing.T, attempt string) int {
	t.Helper()
	aid, err := rpc.ParseAttemptID(attempt)
	if err != nil {
		t.Fatal(err)
	}
	// container_[e<epoch>_]<ts>_<app>_<attempt>_<id>
	ofAttempt := fmt.Sprintf("%d_%04d_%02d_", aid.GetApplicationId().GetClusterTimestamp(), aid.GetApplicationId().GetId(), aid.GetAttemptId())
	out, _ := exec.Command("pgrep", "-f", loomBin+" am --job").Output()
	bin, err := filepath.EvalSymlinks(loomBin) // as /proc shows it
	if err != nil {
		bin = loomBin
	}
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		// Only the loom process itself, not a shell that runs it.
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe != bin {
			continue
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := strings.CutPrefix(string(kv), "CONTAINER_ID=container_"); ok && strings.Contains(v, ofAttempt) {
				return pid
			}
		}
	}
	return 0
}

// TestAMRecoversFromHistory: kill -9 a DAG job's AM while its long stage
// runs. The RM starts a second attempt; the new AM recovers from the job
// history, so the stages that had finished are not run again, and the job
// ends SUCCEEDED with every task succeeded exactly once.
func TestAMRecoversFromHistory(t *testing.T) {
	began := time.Now()
	c := startCluster(t, 2) // yarn.resourcemanager.am.max-attempts: 2
	dir := t.TempDir()
	jobFile := filepath.Join(dir, "job.json")
	if err := os.WriteFile(jobFile, []byte(recoveryJob), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(loomBin, "submit", "--workload", jobFile, "--task-kind", "sleep", "--time-scale", "1",
		"--detach", "--rm", c.client, "--staging-dir", filepath.Join(dir, "staging")).CombinedOutput()
	if err != nil {
		t.Fatalf("loom submit: %v\n%s", err, out)
	}
	app := strings.TrimSpace(string(out))
	id, err := rpc.ParseAppID(app)
	if err != nil {
		t.Fatalf("loom submit --detach printed %q: %v", out, err)
	}
	path := filepath.Join(c.history, app+".json")

	// Wait until attempt 1's history shows a stage done and a later one
	// running.
	var before am.History
	recoveryPoll(t, "a stage SUCCEEDED and join RUNNING in attempt 1's history", 2*time.Minute, func() bool {
		h, ok := recoveryHistory(t, path)
		if !ok || h.Attempt != 1 {
			return false
		}
		done, joinRuns := 0, false
		for _, s := range h.Stages {
			if s.State == am.StateSucceeded {
				done++
			}
			joinRuns = joinRuns || s.Name == "join" && s.State == am.StateRunning
		}
		before = h
		return done > 0 && joinRuns
	})
	seen := time.Now()
	doneBefore := map[string]bool{}
	for _, s := range before.Stages {
		if s.State == am.StateSucceeded {
			doneBefore[s.Name] = true
		}
	}
	if !doneBefore["scan"] || !doneBefore["dim"] {
		t.Fatalf("join runs, but its parents are not both SUCCEEDED: %+v", before.Stages)
	}

	attempt1 := rpc.AttemptIDString(c.report(t, id).GetCurrentApplicationAttemptId())
	var pid int
	recoveryPoll(t, "the loom am process of "+attempt1, time.Minute, func() bool {
		pid = amProcess(t, attempt1)
		return pid > 0
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	killed := time.Now()
	t.Logf("killed the AM (pid %d, %s) %v after start, with %v done", pid, attempt1, killed.Sub(began).Round(time.Millisecond), recoveryNames(doneBefore))

	// The second attempt recovers and writes the merged history at once;
	// then the job runs to its end.
	var recovered time.Time
	var rep *pb.ApplicationReportProto
	recoveryPoll(t, "the job to end", 3*time.Minute, func() bool {
		if recovered.IsZero() {
			if h, ok := recoveryHistory(t, path); ok && h.Attempt == 2 {
				recovered = time.Now()
			}
		}
		rep = c.report(t, id)
		return mini.Ended(rep)
	})
	ended := time.Now()
	if rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED || rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Fatalf("the job ended %v/%v: %s", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	if n := rep.GetCurrentApplicationAttemptId().GetAttemptId(); n != 2 {
		t.Errorf("the job ended on attempt %d, want 2", n)
	}
	atts, err := c.ac.GetApplicationAttempts(context.Background(), &pb.GetApplicationAttemptsRequestProto{ApplicationId: id})
	if err != nil {
		t.Fatal(err)
	}
	if a := atts.GetApplicationAttempts(); len(a) != 2 || a[0].GetYarnApplicationAttemptState() != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED {
		t.Errorf("attempts %v", a)
	} else {
		t.Logf("attempt 1: %s", a[0].GetDiagnostics())
	}

	h, ok := recoveryHistory(t, path)
	if !ok {
		t.Fatal("no history after the job ended")
	}
	if h.State != am.StateSucceeded || h.Attempt != 2 || h.RecoveredFrom != 1 || h.StartUnixMs != before.StartUnixMs || h.AttemptStartMs <= 0 {
		t.Errorf("history header: state %s, attempt %d, recovered from %d, start %d (attempt 1's %d), attempt start %d ms",
			h.State, h.Attempt, h.RecoveredFrom, h.StartUnixMs, before.StartUnixMs, h.AttemptStartMs)
	}
	type key struct {
		stage         string
		task, attempt int
	}
	tasks := map[string]int{}
	for _, s := range h.Stages {
		tasks[s.Name] = s.Tasks
		if s.State != am.StateSucceeded {
			t.Errorf("stage %s ended %s", s.Name, s.State)
		}
	}
	runs := map[string]int{}      // task executions, by stage
	succeeded := map[string]int{} // successes, by stage/task
	unique := map[key]bool{}
	byAM := map[int]int{}
	killedJoin := 0
	for _, tk := range h.Tasks {
		k := key{tk.Stage, tk.Task, tk.Attempt}
		if unique[k] {
			t.Errorf("attempt %d of task %d of %s is in the history twice", tk.Attempt, tk.Task, tk.Stage)
		}
		unique[k] = true
		runs[tk.Stage]++
		byAM[tk.AMAttempt]++
		if tk.State == am.StateSucceeded {
			succeeded[fmt.Sprintf("%s/%d", tk.Stage, tk.Task)]++
		}
		if tk.Stage == "join" && tk.State == am.StateKilled && tk.AMAttempt == 1 {
			killedJoin++
		}
		if doneBefore[tk.Stage] && (tk.AMAttempt != 1 || tk.State != am.StateSucceeded) {
			t.Errorf("stage %s had finished before the kill, yet: %+v", tk.Stage, tk)
		}
		if tk.AMAttempt == 2 && tk.StartMs < h.AttemptStartMs {
			t.Errorf("a task of AM attempt 2 started at %d ms, before the attempt did (%d ms): %+v", tk.StartMs, h.AttemptStartMs, tk)
		}
	}
	for stage := range doneBefore {
		if runs[stage] != tasks[stage] {
			t.Errorf("stage %s finished before the kill: %d task executions in all, want its %d tasks once each", stage, runs[stage], tasks[stage])
		}
	}
	for stage, n := range tasks {
		for i := range n {
			if got := succeeded[fmt.Sprintf("%s/%d", stage, i)]; got != 1 {
				t.Errorf("task %d of %s succeeded %d times, want once", i, stage, got)
			}
		}
	}
	if byAM[2] == 0 || killedJoin == 0 {
		t.Errorf("tasks by AM attempt %v and %d join attempts KILLED with AM 1: want the second AM to have run join again", byAM, killedJoin)
	}
	// The new AM said what it recovered.
	logs, _ := filepath.Glob(filepath.Join(c.dir, "nm*", "logs", app, "*", "am.log"))
	said := false
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		said = said || bytes.Contains(b, []byte("recovered from attempt 1's history"))
	}
	if !said {
		t.Errorf("no AM log among %v says what it recovered", logs)
	}
	t.Logf("history seen with %v done %v after start; killed %v later; attempt 2's history %v after the kill; the job ended %v after the kill (%v in all); %d task executions, by AM attempt %v, %d join attempts lost",
		recoveryNames(doneBefore), seen.Sub(began).Round(time.Millisecond), killed.Sub(seen).Round(time.Millisecond),
		recovered.Sub(killed).Round(time.Millisecond), ended.Sub(killed).Round(time.Millisecond), ended.Sub(began).Round(time.Millisecond),
		len(h.Tasks), byAM, killedJoin)
}

// recoveryNames is a set's names, sorted.
func recoveryNames(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
