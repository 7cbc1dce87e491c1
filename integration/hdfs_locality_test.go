package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/rpc/namenodetest"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// localityCluster is an RM and three NodeManagers on three loopback
// addresses, so that their hosts differ (127.0.0.1, .2, .3), and a
// NameNode (rpc/namenodetest) whose table's blocks are all on 127.0.0.2.
// The RM delays off-node placement by time, as the Fair Scheduler's
// locality-delay-node-ms does, long enough for every task to run on the
// inputs' host.
func localityCluster(t *testing.T) (*cluster, *namenodetest.NameNode) {
	t.Helper()
	nn, err := namenodetest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nn.Close() })
	for i := range 8 {
		nn.AddFile(fmt.Sprintf("/warehouse/lineitem/part-%05d", i), namenodetest.Block{Length: 64 << 20, Hosts: []string{"127.0.0.2"}})
	}
	nn.AddFile("/warehouse/lineitem/_SUCCESS")
	c := startCluster(t, 0, "-D", "yarn.scheduler.fair.locality-delay-node-ms=5000", "-D", "yarn.scheduler.fair.locality-delay-rack-ms=5000")
	for i, host := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
		dir := filepath.Join(c.dir, fmt.Sprintf("nm%d", i))
		c.nms = append(c.nms, start(t, fmt.Sprintf("nm%d", i), "nm", "--rm", c.tracker, "--address", host+":0",
			"--memory-mb", "4096", "--vcores", "4", "--local-dirs", filepath.Join(dir, "local"), "--log-dirs", filepath.Join(dir, "logs")))
	}
	c.waitFor(t, "3 NodeManagers registered", func() bool {
		m, err := c.ac.GetClusterMetrics(t.Context(), &pb.GetClusterMetricsRequestProto{})
		return err == nil && m.GetClusterMetrics().GetNumNodeManagers() == 3
	})
	return c, nn
}

// placements reads loom_container_placements_total from the RM's
// /metrics, by locality.
func placements(t *testing.T, c *cluster) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + c.web + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, `loom_container_placements_total{locality="`)
		if !ok {
			continue
		}
		loc, val, ok := strings.Cut(rest, `"} `)
		if !ok {
			t.Fatalf("unparsable metric line %q", line)
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[loc] = v
	}
	return out
}

// TestDAGJobRunsWhereItsHDFSInputsAre: loom am, launched by the RM, reads
// the block locations of its scan stage's input directory from the
// NameNode (as the app's user), asks for the blocks' host beside the "*"
// ask, and every scan task runs there: the RM counts each as node-local.
// The stage after it names no input and is counted as placed anywhere.
func TestDAGJobRunsWhereItsHDFSInputsAre(t *testing.T) {
	c, nn := localityCluster(t)
	dir := t.TempDir()
	jobFile, history := filepath.Join(dir, "job.json"), filepath.Join(dir, "history.json")
	job := fmt.Sprintf(`{"name": "scan-agg", "stages": [
	  {"name": "scan", "tasks": 8, "duration_ms": 300, "demand": {"memory-mb": 256, "vcores": 1},
	   "inputs": ["hdfs://%s/warehouse/lineitem"]},
	  {"name": "agg", "tasks": 1, "duration_ms": 100, "demand": {"memory-mb": 256, "vcores": 1}, "parents": ["scan"]}]}`, nn.Addr)
	if err := os.WriteFile(jobFile, []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	before := placements(t, c)
	id := c.submit(t, "scan-agg", loomBin+" am --job "+jobFile+" --history "+history)
	rep := c.waitEnded(t, id, 90*time.Second, func() string { return "" })
	if rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Fatalf("job ended %v %v: %s", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	var h struct {
		Tasks []struct {
			Stage     string `json:"stage"`
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
	onInputs := 0
	for _, tk := range h.Tasks {
		if tk.Stage == "scan" && tk.Succeeded && strings.HasPrefix(tk.Node, "127.0.0.2:") {
			onInputs++
		}
	}
	if onInputs != 8 {
		t.Errorf("%d of scan's 8 tasks ran on 127.0.0.2, where their blocks are; history: %s", onInputs, b)
	}
	after := placements(t, c)
	if got := after["NODE_LOCAL"] - before["NODE_LOCAL"]; got != 8 {
		t.Errorf("the RM counted %v node-local containers, want scan's 8 (placements %v)", got, after)
	}
	if got := after["RACK_LOCAL"] + after["OFF_SWITCH"] - before["RACK_LOCAL"] - before["OFF_SWITCH"]; got != 0 {
		t.Errorf("the RM counted %v containers off their inputs' node (placements %v)", got, after)
	}
	if after["ANY"]-before["ANY"] < 1 {
		t.Errorf("agg's container, which asked for no host, was not counted as ANY (placements %v)", after)
	}
	if u := nn.Users(); !slices.Equal(u, []string{"tester"}) {
		t.Errorf("the NameNode was asked by %v, want the app's user, tester", u)
	}
	if nn.Calls("getBlockLocations") != 8 {
		t.Errorf("%d getBlockLocations calls, want one per file (8)", nn.Calls("getBlockLocations"))
	}
}

// TestDAGJobWithAMissingInputFails: an input path that does not exist
// fails the job at once, with the stage, input and NameNode in its
// diagnostics, and no AM attempt after the first (it unregistered).
func TestDAGJobWithAMissingInputFails(t *testing.T) {
	c, nn := localityCluster(t)
	jobFile := filepath.Join(t.TempDir(), "job.json")
	input := "hdfs://" + nn.Addr + "/warehouse/orders"
	job := fmt.Sprintf(`{"name": "scan", "stages": [{"name": "scan", "tasks": 2, "duration_ms": 100,
	  "demand": {"memory-mb": 256, "vcores": 1}, "inputs": [%q]}]}`, input)
	if err := os.WriteFile(jobFile, []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	id := c.submit(t, "scan", loomBin+" am --job "+jobFile)
	rep := c.waitEnded(t, id, 60*time.Second, func() string { return "" })
	want := fmt.Sprintf(`stage "scan": input %q: the path does not exist on the NameNode at %s`, input, nn.Addr)
	if rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_FAILED || !strings.Contains(rep.GetDiagnostics(), want) {
		t.Errorf("job ended %v %v: %q; want FAILED saying %q", rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(), rep.GetDiagnostics(), want)
	}
	if a := rpcAttempt(rep); a != 1 {
		t.Errorf("the job ran %d AM attempts, want 1", a)
	}
}

func rpcAttempt(rep *pb.ApplicationReportProto) int32 {
	return rep.GetCurrentApplicationAttemptId().GetAttemptId()
}
