package integration

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestRecallStartsAWaitingApp runs Carbyne's recall (the default,
// loom.scheduler.recall 0.25) on real processes: Loom's DAG AM fills two
// NodeManagers (8 vcores) with one stage of 8-second tasks, most of them
// ALTRUISTIC and paid by the leftover (it is alone: its plan lets them
// wait, and the leftover is everything). A second app then needs a
// container for its AM. It is below its share, and the cluster is full of
// borrowed containers: the RM takes one back at its next round (500 ms
// apart) instead of leaving it to wait for an 8 s task to end, so its AM
// starts within a few seconds; the first job loses one task run, runs it
// again and succeeds.
func TestRecallStartsAWaitingApp(t *testing.T) {
	c := startCluster(t, 2)
	dir := t.TempDir()
	jobFile, history := filepath.Join(dir, "job.json"), filepath.Join(dir, "history.json")
	job := `{"name": "long-scan", "stages": [{"name": "scan", "tasks": 14, "duration_ms": 8000, "demand": {"memory-mb": 64, "vcores": 1}}]}`
	if err := os.WriteFile(jobFile, []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	first := c.mustSubmitTo(t, "default", loomBin+" am --task-kind sleep --job "+jobFile+" --history "+history)
	c.waitFor(t, "the first job to fill the cluster", func() bool {
		n := int32(0)
		for _, nr := range c.nodes(t) {
			n += nr.GetNumContainers()
		}
		return n >= 8
	})
	filled := time.Now()
	second := c.mustSubmitTo(t, "default", "exec sleep 1000")
	c.waitWithin(t, 20*time.Second, "the second app's AM to start", func() bool { return c.report(t, second).GetLaunchTime() != 0 })
	if waited := time.Since(filled); waited > 6*time.Second {
		t.Errorf("the second app's AM started %v after the cluster filled: no sooner than an 8 s task's end", waited)
	}
	rep := c.waitEnded(t, first, 90*time.Second, func() string { return "" })
	if rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Fatalf("the first job: %v (%s)", rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	ok, lost := taskRuns(t, history)
	if len(ok) != 14 || lost == 0 {
		t.Errorf("history: %d tasks succeeded (want 14), %d runs taken back (want at least one)", len(ok), lost)
	}
	resp, err := http.Get("http://" + c.web + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "loom_containers_preempted_total") || strings.Contains(string(body), "loom_containers_preempted_total 0") {
		t.Errorf("/metrics counts no container taken back")
	}
	if !strings.Contains(c.rm.out.String(), "recalled from the leftover for app") {
		t.Errorf("the RM's log names no recall")
	}
}
