package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/workload"
)

// LocalityModel is where the simulated tasks' input lives and what reading
// it from elsewhere costs.
//
// Machine i is host m<i> on rack /rack<i/RackSize>. Every task of a stage
// with no parents (a scan) reads one block with Replicas replicas, placed
// as HDFS's default block placement places them: the first on a machine
// chosen at random (seeded by the run's seed, the job, the stage and the
// task), the second on a machine of another rack, the third on another
// machine of the second's rack, and any more at random. Later stages read
// their parents' output from everywhere and name no input. A task that
// runs on a host holding its block takes its measured time; on the rack
// of one, RemoteReadPenalty/2 longer; elsewhere, RemoteReadPenalty longer.
// The penalty is an assumption of the model, not a measurement.
type LocalityModel struct {
	Replicas          int
	RackSize          int
	RemoteReadPenalty float64
	// NoPreferences keeps the inputs and the penalty but has the AMs ask
	// for no hosts or racks: the same workload without delay scheduling,
	// to compare against.
	NoPreferences bool
	// Delays are the core's delay scheduling, as the RM's
	// yarn.scheduler.capacity.node-locality-delay and
	// rack-locality-additional-delay set it (YARN's 40 and -1 by default).
	Delays rm.LocalityDelays
}

// DefaultLocality: HDFS's 3 replicas, racks of 20 machines, reading off
// the block's host 20% slower (10% within its rack).
func DefaultLocality() *LocalityModel {
	return &LocalityModel{Replicas: 3, RackSize: 20, RemoteReadPenalty: 0.2, Delays: rm.DefaultLocalityDelays}
}

func (l *LocalityModel) check(machines int) error {
	switch {
	case l.Replicas < 1 || l.Replicas > machines:
		return fmt.Errorf("locality: %d replicas on %d machines", l.Replicas, machines)
	case l.RackSize < 1:
		return fmt.Errorf("locality: racks of %d machines", l.RackSize)
	case !(l.RemoteReadPenalty >= 0):
		return fmt.Errorf("locality: remote read penalty %v must not be negative", l.RemoteReadPenalty)
	}
	return nil
}

// The model holds no state, so that runs in parallel may share it.
func (l *LocalityModel) host(i int) string { return "m" + strconv.Itoa(i) }
func (l *LocalityModel) rack(i int) string { return "/rack" + strconv.Itoa(i/l.RackSize) }
func (l *LocalityModel) rackOf(host string) string {
	i, err := strconv.Atoi(strings.TrimPrefix(host, "m"))
	if err != nil {
		return ""
	}
	return l.rack(i)
}

// runTime is a task's time where it ran against its input.
func (l *LocalityModel) runTime(d time.Duration, placement string) time.Duration {
	switch placement {
	case "RACK_LOCAL":
		return time.Duration(float64(d) * (1 + l.RemoteReadPenalty/2))
	case "OFF_SWITCH":
		return time.Duration(float64(d) * (1 + l.RemoteReadPenalty))
	}
	return d
}

// inputs places the blocks of job n's scan tasks (see LocalityModel).
func (l *LocalityModel) inputs(j *workload.Job, seed uint64, n, machines int) func(stage, task int) []string {
	blocks := make([][][]string, len(j.Stages))
	for k, st := range j.Stages {
		if len(st.Parents) > 0 {
			continue
		}
		blocks[k] = make([][]string, st.Tasks)
		for t := range st.Tasks {
			blocks[k][t] = l.place(splitmix(seed^uint64(n+1)*0x9e3779b97f4a7c15^uint64(k)<<32^uint64(t)), machines)
		}
	}
	return func(stage, task int) []string {
		if b := blocks[stage]; b != nil && task < len(b) {
			return b[task]
		}
		return nil
	}
}

// place chooses a block's replicas' machines from the random state x.
func (l *LocalityModel) place(x uint64, machines int) []string {
	pick := func(ok func(int) bool) int {
		for {
			x = splitmix(x)
			if m := int(x % uint64(machines)); ok(m) {
				return m
			}
		}
	}
	var got []int
	fresh := func(m int) bool {
		for _, g := range got {
			if g == m {
				return false
			}
		}
		return true
	}
	racks := (machines + l.RackSize - 1) / l.RackSize
	for r := range l.Replicas {
		var m int
		switch {
		case r == 1 && racks > 1:
			m = pick(func(m int) bool { return fresh(m) && m/l.RackSize != got[0]/l.RackSize })
		case r == 2 && machines > 2 && l.RackSize > 1 && racks > 1:
			second := got[1] / l.RackSize
			if (second+1)*l.RackSize <= machines || machines-second*l.RackSize > 1 {
				m = pick(func(m int) bool { return fresh(m) && m/l.RackSize == second })
				break
			}
			fallthrough
		default:
			m = pick(fresh)
		}
		got = append(got, m)
	}
	out := make([]string, len(got))
	for i, m := range got {
		out[i] = l.host(m)
	}
	return out
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
