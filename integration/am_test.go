package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

const dagJob = `{"name": "mini-etl", "stages": [
  {"name": "scan", "tasks": 6, "duration_ms": 150, "demand": {"memory-mb": 64, "vcores": 1}},
  {"name": "dim", "tasks": 2, "duration_ms": 100, "demand": {"memory-mb": 64, "vcores": 1}, "children": ["join"]},
  {"name": "join", "tasks": 3, "duration_ms": 150, "demand": {"memory-mb": 64, "vcores": 1}, "parents": ["scan"]},
  {"name": "agg", "tasks": 1, "duration_ms": 100, "demand": {"memory-mb": 64, "vcores": 1}, "parents": ["join"]}
]}`

// TestDAGAMRunsAJob: loom am, launched by the RM as an app's AM, runs a
// DAG job through executors on real NodeManagers and writes its history.
func TestDAGAMRunsAJob(t *testing.T) {
	c := startCluster(t, 2)
	dir := t.TempDir()
	jobFile, history := filepath.Join(dir, "job.json"), filepath.Join(dir, "history.json")
	if err := os.WriteFile(jobFile, []byte(dagJob), 0o644); err != nil {
		t.Fatal(err)
	}
	id := c.submit(t, "mini-etl", loomBin+" am --job "+jobFile+" --history "+history)
	var rep *pb.ApplicationReportProto
	c.waitFor(t, "the job to end", func() bool {
		rep = c.report(t, id)
		switch rep.GetYarnApplicationState() {
		case pb.YarnApplicationStateProto_FINISHED, pb.YarnApplicationStateProto_FAILED, pb.YarnApplicationStateProto_KILLED:
			return true
		}
		return false
	})
	if rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FINISHED || rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Fatalf("job ended %v %v: %s", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	var h struct {
		Job   string `json:"job"`
		Tasks []struct {
			Stage     string `json:"stage"`
			Task      int    `json:"task"`
			StartMs   int64  `json:"start_ms"`
			EndMs     int64  `json:"end_ms"`
			Node      string `json:"node"`
			Succeeded bool   `json:"succeeded"`
		} `json:"tasks"`
	}
	b, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	end := map[string]int64{}
	start := map[string]int64{}
	for _, tk := range h.Tasks {
		if !tk.Succeeded || tk.Node == "" {
			t.Errorf("task %+v", tk)
			logs, _ := filepath.Glob(filepath.Join(c.dir, "nm*", "logs", "*", "*", "stderr"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, b)
			}
		}
		count[tk.Stage]++
		end[tk.Stage] = max(end[tk.Stage], tk.EndMs)
		if s, ok := start[tk.Stage]; !ok || tk.StartMs < s {
			start[tk.Stage] = tk.StartMs
		}
	}
	for stage, n := range map[string]int{"scan": 6, "dim": 2, "join": 3, "agg": 1} {
		if count[stage] != n {
			t.Errorf("stage %s ran %d tasks, want %d", stage, count[stage], n)
		}
	}
	// Every edge is a barrier.
	for _, e := range [][2]string{{"scan", "join"}, {"dim", "join"}, {"join", "agg"}} {
		if start[e[1]] < end[e[0]] {
			t.Errorf("%s started at %d ms, before %s ended at %d ms", e[1], start[e[1]], e[0], end[e[0]])
		}
	}
}

// TestUserCLI: loom submit, apps, nodes and kill against real daemons,
// as a user types them.
func TestUserCLI(t *testing.T) {
	c := startCluster(t, 2)
	dir := t.TempDir()
	jobFile := filepath.Join(dir, "job.json")
	os.WriteFile(jobFile, []byte(dagJob), 0o644)
	run := func(args ...string) (string, error) {
		out, err := exec.Command(loomBin, append(args, "--rm", c.client)...).CombinedOutput()
		return string(out), err
	}
	out, err := run("submit", "--workload", jobFile, "--task-kind", "noop", "--staging-dir", dir)
	if err != nil || !strings.Contains(out, "mini-etl") || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	out, err = run("apps", "--json")
	var apps []struct{ ID, Name, State, FinalStatus string }
	if err != nil || json.Unmarshal([]byte(out), &apps) != nil || len(apps) != 1 || apps[0].State != "FINISHED" || apps[0].FinalStatus != "SUCCEEDED" {
		t.Errorf("apps --json: %v\n%s", err, out)
	}
	if out, err = run("nodes"); err != nil || strings.Count(out, "RUNNING") != 2 {
		t.Errorf("nodes: %v\n%s", err, out)
	}
	// Detach, then kill.
	out, err = run("submit", "--workload", jobFile, "--task-kind", "synthetic", "--time-scale", "100", "--staging-dir", dir, "--detach")
	id := strings.TrimSpace(out)
	if err != nil || !strings.HasPrefix(id, "application_") {
		t.Fatalf("submit --detach: %v\n%s", err, out)
	}
	if out, err = run("kill", id); err != nil || !strings.Contains(out, "KILLED") {
		t.Errorf("kill: %v\n%s", err, out)
	}
	// Errors name what is wrong.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "tpch", "q99"}, `unknown query "q99"`},
		{[]string{"submit", "--workload", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"kill", "application_1_0001"}, "ApplicationNotFoundException"},
		{[]string{"kill", "app-7"}, "not an application id"},
	} {
		if out, err := run(tc.args...); err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("loom %v: %v\n%s", tc.args, err, out)
		}
	}
	raw, err := exec.Command(loomBin, "apps", "--rm", "127.0.0.1:1").CombinedOutput()
	if err == nil || !strings.Contains(string(raw), "the ResourceManager is unreachable at 127.0.0.1:1 (from --rm)") {
		t.Errorf("apps against nothing: %v\n%s", err, raw)
	}
}

// TestTuneReplaysTheRMsHistory: a DAG job run on a real cluster is
// recorded by the RM when it ends (its DAG and measured task times, from
// the history its AM wrote), served at /ws/v1/loom/history/workload, and
// `loom tune --rm-history` replays it on the cluster's shape read from the
// same RM.
func TestTuneReplaysTheRMsHistory(t *testing.T) {
	c := startCluster(t, 2)
	jobFile := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(jobFile, []byte(dagJob), 0o644); err != nil {
		t.Fatal(err)
	}
	id := c.submit(t, "mini-etl", loomBin+" am --job "+jobFile)
	c.waitFor(t, "the job to finish", func() bool {
		return c.report(t, id).GetYarnApplicationState() == pb.YarnApplicationStateProto_FINISHED
	})
	w := web{t, "http://" + c.web}
	var doc struct {
		Jobs []struct {
			Name   string
			Stages []struct {
				Name       string
				Tasks      int
				DurationMs int64 `json:"duration_ms"`
			}
		}
	}
	w.json("GET", "/ws/v1/loom/history/workload", "", 200, &doc)
	if len(doc.Jobs) != 1 || len(doc.Jobs[0].Stages) != 4 || !strings.Contains(doc.Jobs[0].Name, rpc.AppIDString(id)) {
		t.Fatalf("recorded %+v, want the one job of 4 stages", doc.Jobs)
	}
	for _, s := range doc.Jobs[0].Stages {
		if s.Tasks <= 0 || s.DurationMs <= 0 {
			t.Errorf("stage %+v: no tasks or no measured duration", s)
		}
	}
	out, err := exec.Command(loomBin, "tune", "--rm-web", "http://"+c.web, "--rm-history", "--quiet", "--p-altruism", "0,1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1 finished jobs the RM at http://"+c.web+" recorded on 2 machines") ||
		!strings.Contains(string(out), "recommended:") {
		t.Errorf("loom tune --rm-history: %v\n%s", err, out)
	}
}
