package mini

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/workload"
)

// TestWritePlacements: the summary's placement lines, worked by hand.
func TestWritePlacements(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		in     dao.Placements
		want   string
	}{
		{"nothing granted", "drf", dao.Placements{}, "placement (drf): no container was granted\n"},
		// The DAG AM on a cluster without HDFS names no hosts: no 0%
		// node-local, a plain word.
		{"no locality asked", "carbyne (P=0.8)", dao.Placements{Any: 42},
			"placement (carbyne (P=0.8)): no ask named a host or rack, so locality did not apply: all 42 containers went anywhere (any)\n"},
		// 30, 8 and 2 of 40; 10 more any.
		{"mixed", "carbyne (P=0.8)", dao.Placements{NodeLocal: 30, RackLocal: 8, OffSwitch: 2, Any: 10, WithLocality: 40,
			NodeLocalShare: 0.75, RackLocalShare: 0.2, OffSwitchShare: 0.05},
			"placement        node-local  rack-local  off-switch  with locality  any\n" +
				"carbyne (P=0.8)  75.0% (30)  20.0% (8)   5.0% (2)    40             10\n" +
				"(shares of the 40 containers whose asks named hosts or racks; the 10 any asked for none, AMs' included)\n"},
		// 2 of 3 on their hosts, 1 off them; no any.
		{"all with locality", "tetris", dao.Placements{NodeLocal: 2, OffSwitch: 1, WithLocality: 3,
			NodeLocalShare: 2.0 / 3, OffSwitchShare: 1.0 / 3},
			"placement  node-local  rack-local  off-switch  with locality  any\n" +
				"tetris     66.7% (2)   0.0% (0)    33.3% (1)   3              0\n" +
				"(shares of the 3 containers whose asks named hosts or racks; the 0 any asked for none, AMs' included)\n"},
	} {
		var b strings.Builder
		if err := WritePlacements(&b, tc.policy, tc.in); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tc.want, b.String()); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// TestPlacementsOfAMiniRun runs a mini cluster (the RM and an NM as real
// processes) and one two-stage DAG job, and reads the placements back
// from the RM: the DAG AM names no hosts on a cluster without HDFS, so
// its AM container and its tasks' containers all went anywhere, as many
// as the RM's loom_container_placements_total counted, and the summary
// says locality did not apply.
func TestPlacementsOfAMiniRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an RM and a NodeManager")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "loom")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/loom")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building loom: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := Options{Binary: bin, Dir: dir, Nodes: 1, NodeMemoryMB: 4096, NodeVCores: 4, PolicyConfig: rm.DefaultPolicyConfig(),
		TaskKind: "noop", TimeScale: 1}
	c, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	before, err := Placements(ctx, c.WebAddr)
	if err != nil {
		t.Fatal(err)
	}
	if before != (dao.Placements{}) {
		t.Errorf("placements before any app: %+v", before)
	}

	job := &workload.Job{Name: "two-stages", Stages: []workload.Stage{
		{Name: "map", Tasks: 3, Demand: fairness.New(128, 1), Duration: 50 * time.Millisecond},
		{Name: "reduce", Tasks: 1, Demand: fairness.New(128, 1), Duration: 50 * time.Millisecond, Parents: []string{"map"}}}}
	cl := rpc.NewClient(c.ClientAddr, rpc.ClientOptions{})
	defer cl.Close()
	ac := rpc.ApplicationClient{C: cl}
	id, err := Submit(ctx, ac, job, "default", "", filepath.Join(dir, "staging"), bin, o.TaskKind, o.TimeScale, 256)
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := ac.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: id})
		if err != nil {
			t.Fatal(err)
		}
		if rep := r.GetApplicationReport(); Ended(rep) {
			if rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
				t.Fatalf("the job ended %v: %s", rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the job did not end: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}

	got, err := Placements(ctx, c.WebAddr)
	if err != nil {
		t.Fatal(err)
	}
	counted, err := Counter(ctx, c.WebAddr, "loom_container_placements_total", map[string]string{"locality": "ANY"})
	if err != nil {
		t.Fatal(err)
	}
	// At least the AM and one container for the four tasks; the AM may
	// lease more, never with locality.
	if got.WithLocality != 0 || got.NodeLocal+got.RackLocal+got.OffSwitch != 0 || got.Any < 2 || float64(got.Any) != counted {
		t.Errorf("placements %+v, want only any, as many as the metric's %v", got, counted)
	}
	var b strings.Builder
	if err := WritePlacements(&b, "carbyne", got); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("placement (carbyne): no ask named a host or rack, so locality did not apply: all %d containers went anywhere (any)\n", got.Any); b.String() != want {
		t.Errorf("summary %q, want %q", b.String(), want)
	}
	t.Logf("%s", b.String())
}
