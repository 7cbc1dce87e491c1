package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rpc"
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
	// The first promise, end to end: the DAG AM's remaining work reached
	// the core, which keeps the job's first fluid span (14 tasks of 8 s
	// on the 7 of 8 vcores beside the second app's AM: 16 s, taken once the
	// shares count what it asked for, not its AM alone) and serves it
	// in /ws/v1/loom/scheduler; the stock AM sent no work and has none.
	promises := func() map[string]*dao.Promise {
		var sched dao.Scheduler
		resp, err := http.Get("http://" + c.web + "/ws/v1/loom/scheduler")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&sched); err != nil {
			t.Fatal(err)
		}
		out := map[string]*dao.Promise{}
		for _, a := range sched.Apps {
			out[a.ID] = a.Promise
		}
		return out
	}
	var promised map[string]*dao.Promise
	c.waitWithin(t, 5*time.Second, "the DAG job's first promise", func() bool {
		promised = promises()
		return promised[rpc.AppIDString(first)] != nil
	})
	if p := promised[rpc.AppIDString(first)]; p == nil || p.SpanMs < 8000 || p.SpanMs > 30000 || p.LimitMs <= p.SpanMs {
		t.Errorf("the DAG job's first promise %+v: want a span of 8-30 s (16 s) and a line beyond it", p)
	}
	if p := promised[rpc.AppIDString(second)]; p != nil {
		t.Errorf("the stock AM's app has a first promise %+v", *p)
	}
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
	if !strings.Contains(string(body), `loom_containers_preempted_total{cause="recall_below_share"}`) ||
		strings.Contains(string(body), `loom_containers_preempted_total{cause="recall_below_share"} 0`) ||
		!strings.Contains(string(body), `loom_containers_preempted_total{cause="queue_starved"} 0`) {
		t.Errorf("/metrics counts no container recalled (or counts one taken for a queue)")
	}
	if !strings.Contains(c.rm.out.String(), "recalled from the leftover for app") {
		t.Errorf("the RM's log names no recall")
	}
}
