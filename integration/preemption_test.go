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

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// preemptionFile guarantees prod 4 GB and 4 vcores, starved after 1 s;
// batch has no guarantee.
const preemptionFile = `<?xml version="1.0"?>
<allocations>
  <queue name="prod">
    <minResources>4096 mb, 4 vcores</minResources>
    <minSharePreemptionTimeout>1</minSharePreemptionTimeout>
  </queue>
  <queue name="batch"/>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="reject"/>
  </queuePlacementPolicy>
</allocations>
`

// TestPreemptionGivesAQueueItsGuarantee: a stock AM in batch fills two
// real NodeManagers; an app then submitted to prod cannot start its AM.
// After prod's 1 s timeout the RM names one of batch's containers (never
// its AM's) in a PreemptionMessage, kills it after the 1 s grace with
// exit status PREEMPTED (-102), and prod's AM starts in its room.
func TestPreemptionGivesAQueueItsGuarantee(t *testing.T) {
	c := preemptionCluster(t)
	submit := func(queue string) *pb.ApplicationIdProto { return c.mustSubmitTo(t, queue, handOverCredentials(c.dir)) }
	batch := submit("root.batch")
	am := stockAMAttempt(t, c, batch, 1)
	am.register()
	// Its AM holds 1 of the 8 GB: it takes the other 7.
	held := map[int64]bool{}
	resp := am.allocate(ask(7, 1024))
	for {
		for _, ct := range resp.GetAllocatedContainers() {
			held[ct.GetId().GetId()] = true
		}
		if len(held) == 7 {
			break
		}
		time.Sleep(100 * time.Millisecond)
		resp = am.allocate()
	}
	prod := submit("root.prod")

	// The RM asks batch's AM for one container back, then takes it.
	var named []int64
	var ended *pb.ContainerStatusProto
	c.waitFor(t, "a container of batch to be preempted", func() bool {
		resp := am.allocate()
		for _, ct := range resp.GetPreempt().GetStrictContract().GetContainer() {
			if len(named) == 0 || named[len(named)-1] != ct.GetId().GetId() {
				named = append(named, ct.GetId().GetId())
			}
		}
		for _, cs := range resp.GetCompletedContainerStatuses() {
			if cs.GetExitStatus() == -102 {
				ended = cs
			}
		}
		return ended != nil
	})
	if len(named) == 0 {
		t.Fatal("the container was taken without a PreemptionMessage first")
	}
	for _, id := range named {
		if !held[id] {
			t.Errorf("the PreemptionMessage named container %d, not one of the AM's task containers", id)
		}
	}
	if !held[ended.GetContainerId().GetId()] || !strings.Contains(ended.GetDiagnostics(), "Container preempted by scheduler") {
		t.Errorf("preempted: %d (%s)", ended.GetContainerId().GetId(), ended.GetDiagnostics())
	}
	c.waitFor(t, "prod's AM to start", func() bool { return c.report(t, prod).GetLaunchTime() != 0 })
	if rep := c.report(t, batch); rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_RUNNING {
		t.Errorf("batch after losing a container: %v (%s)", rep.GetYarnApplicationState(), rep.GetDiagnostics())
	}
	resp2, err := http.Get("http://" + c.web + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if !strings.Contains(string(body), `loom_containers_preempted_total{cause="queue_starved"} 1`) {
		t.Errorf("/metrics does not count one preemption")
	}
}

// TestPreemptedTasksRunAgain: Loom's own DAG AM in batch fills the
// cluster with 6-second tasks; an app in prod starves, one of the AM's
// task containers is taken, and the AM runs that task again: the job
// succeeds, and its history shows the preempted run and the rerun.
func TestPreemptedTasksRunAgain(t *testing.T) {
	c := preemptionCluster(t)
	dir := t.TempDir()
	jobFile, history := filepath.Join(dir, "job.json"), filepath.Join(dir, "history.json")
	job := `{"name": "long-scan", "stages": [{"name": "scan", "tasks": 10, "duration_ms": 6000, "demand": {"memory-mb": 64, "vcores": 1}}]}`
	if err := os.WriteFile(jobFile, []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	submit := func(queue, command string) *pb.ApplicationIdProto { return c.mustSubmitTo(t, queue, command) }
	batch := submit("root.batch", loomBin+" am --task-kind sleep --job "+jobFile+" --history "+history)
	// Its AM and 7 tasks fill the 8 vcores.
	c.waitFor(t, "batch to fill the cluster", func() bool {
		n := int32(0)
		for _, nr := range c.nodes(t) {
			n += nr.GetNumContainers()
		}
		return n >= 8
	})
	prod := submit("root.prod", "exec sleep 1000")
	c.waitWithin(t, 20*time.Second, "prod's AM to start", func() bool { return c.report(t, prod).GetLaunchTime() != 0 })
	var rep *pb.ApplicationReportProto
	c.waitWithin(t, 60*time.Second, "the batch job to end", func() bool {
		rep = c.report(t, batch)
		switch rep.GetYarnApplicationState() {
		case pb.YarnApplicationStateProto_FINISHED, pb.YarnApplicationStateProto_FAILED, pb.YarnApplicationStateProto_KILLED:
			return true
		}
		return false
	})
	if rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Fatalf("the batch job: %v (%s)", rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	ok, preempted := taskRuns(t, history)
	if len(ok) != 10 || preempted == 0 {
		t.Errorf("history: %d tasks succeeded (want 10), %d runs ended unsuccessfully (want at least the preempted one)", len(ok), preempted)
	}
}

// taskRuns reads a DAG AM's history: the tasks that succeeded, and how
// many runs did not (a preempted or recalled container's, say).
func taskRuns(t *testing.T, history string) (succeeded map[int]bool, unsuccessful int) {
	t.Helper()
	var h struct {
		Tasks []struct {
			Task      int  `json:"task"`
			Succeeded bool `json:"succeeded"`
		} `json:"tasks"`
	}
	b, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	succeeded = map[int]bool{}
	for _, r := range h.Tasks {
		if r.Succeeded {
			succeeded[r.Task] = true
		} else {
			unsuccessful++
		}
	}
	return succeeded, unsuccessful
}

// preemptionCluster is two NodeManagers under an RM configured as a Fair
// Scheduler cluster with preemptionFile, preemption on and a 1 s grace.
func preemptionCluster(t *testing.T) *cluster {
	file := filepath.Join(t.TempDir(), "fair-scheduler.xml")
	if err := os.WriteFile(file, []byte(preemptionFile), 0o644); err != nil {
		t.Fatal(err)
	}
	return startCluster(t, 2,
		"-D", "yarn.resourcemanager.scheduler.class=org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler",
		"-D", "yarn.scheduler.fair.allocation.file="+file,
		"-D", "yarn.scheduler.fair.preemption=true", "-D", "yarn.scheduler.fair.waitTimeBeforeKill=1000")
}

// mustSubmitTo is submitTo as the test's user, failing the test on an
// error.
func (c *cluster) mustSubmitTo(t *testing.T, queue, command string) *pb.ApplicationIdProto {
	t.Helper()
	id, err := c.submitTo("tester", queue, command)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
