package sim

import (
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

// TestBlockPlacement: the model places replicas as HDFS's default policy
// does: three machines, the second on another rack than the first, the
// third on the second's rack.
func TestBlockPlacement(t *testing.T) {
	l := DefaultLocality()
	if err := l.check(100); err != nil {
		t.Fatal(err)
	}
	for x := range uint64(2000) {
		b := l.place(splitmix(x), 100)
		if len(b) != 3 || b[0] == b[1] || b[1] == b[2] || b[0] == b[2] {
			t.Fatalf("replicas %v: want three machines", b)
		}
		if l.rackOf(b[0]) == l.rackOf(b[1]) || l.rackOf(b[1]) != l.rackOf(b[2]) {
			t.Fatalf("replicas %v on racks %s %s %s: want the second on another rack, the third beside it",
				b, l.rackOf(b[0]), l.rackOf(b[1]), l.rackOf(b[2]))
		}
	}
}

// TestLocalityRun: one scan job on four machines (two racks): every scan
// task is counted by where it ran, the job's later stage names no input,
// and a task off its block runs longer by the penalty.
func TestLocalityRun(t *testing.T) {
	job := &workload.Job{Name: "scan", Stages: []workload.Stage{
		{Name: "map", Tasks: 40, Demand: fairness.New(1024, 1), Duration: 10 * time.Second},
		{Name: "reduce", Tasks: 4, Demand: fairness.New(1024, 1), Duration: 5 * time.Second, Parents: []string{"map"}},
	}}
	cfg := DefaultConfig()
	cfg.Machines, cfg.Machine = 4, fairness.New(8192, 4)
	cfg.Locality = &LocalityModel{Replicas: 3, RackSize: 2, RemoteReadPenalty: 0.5, Delays: DefaultLocality().Delays}
	res, err := Run(cfg, []*workload.Job{job})
	if err != nil {
		t.Fatal(err)
	}
	j := res.Jobs[0]
	if n := j.NodeLocal + j.RackLocal + j.OffSwitch; n != 40 {
		t.Errorf("%d scan tasks counted by locality, want all 40 (and no reduce task)", n)
	}
	// 3 replicas on 4 machines: most tasks find a host of theirs.
	if j.NodeLocal < 30 {
		t.Errorf("%d of 40 scan tasks node-local, want most", j.NodeLocal)
	}
	s := res.Summarize()
	if s.NodeLocal+s.RackLocal+s.OffRack < 0.999 {
		t.Errorf("locality shares %v %v %v do not add up to 1", s.NodeLocal, s.RackLocal, s.OffRack)
	}
	l := cfg.Locality
	if l.runTime(10*time.Second, "OFF_SWITCH") != 15*time.Second || l.runTime(10*time.Second, "RACK_LOCAL") != 12500*time.Millisecond ||
		l.runTime(10*time.Second, "NODE_LOCAL") != 10*time.Second {
		t.Error("the remote read penalty is not applied as documented")
	}
}
