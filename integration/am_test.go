package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

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
