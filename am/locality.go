package am

import (
	"fmt"
	"maps"
	"slices"
)

// Locality with Config.Inputs: which hosts hold each task's input, what
// the AM asks for, and which pending task a container on a host gets.

// localScan bounds how many pending tasks Bind looks through for one
// whose input is on the container's host.
const localScan = 512

// UseInputs gives a DAG made without Config.Inputs its tasks' inputs and
// the hosts' racks (Config.Inputs and RackOf), for a driver that learns
// them once the DAG exists: daemon/am/driver reads the block locations
// from the NameNode when the AM starts. Tasks started before keep their
// placement; from now on the pending ones are asked for where their
// input is. A DAG that has its inputs already refuses new ones.
func (d *DAG) UseInputs(inputs func(stage, task int) []string, rackOf func(host string) string) error {
	if d.cfg.Inputs != nil {
		return fmt.Errorf("job %q: the tasks' inputs are set already", d.job.Name)
	}
	if inputs == nil {
		return nil
	}
	d.cfg.Inputs, d.cfg.RackOf = inputs, rackOf
	// Without inputs no task was taken out of order: every task from
	// next on, and every retry, is pending.
	d.taken = make([][]bool, len(d.job.Stages))
	for i, js := range d.job.Stages {
		d.taken[i] = make([]bool, js.Tasks)
	}
	d.countInputs()
	return nil
}

// countInputs counts the pending tasks' input hosts, per stage, and
// indexes the fresh ones by host.
func (d *DAG) countInputs() {
	d.hosts = make([]map[string]int, len(d.job.Stages))
	d.racks = make([]map[string]int, len(d.job.Stages))
	d.byHost = make([]map[string][]int, len(d.job.Stages))
	for i, js := range d.job.Stages {
		d.hosts[i], d.racks[i], d.byHost[i] = map[string]int{}, map[string]int{}, map[string][]int{}
		for t := d.next[i]; t < js.Tasks; t++ {
			for _, h := range d.cfg.Inputs(i, t) {
				d.byHost[i][h] = append(d.byHost[i][h], t)
			}
		}
		for _, t := range d.retries[i] {
			d.inputsPending(i, t, 1)
		}
		for t := d.next[i]; t < js.Tasks; t++ {
			if !d.taken[i][t] {
				d.inputsPending(i, t, 1)
			}
		}
	}
}

// inputsPending adds delta to the counts of task's input hosts and of
// their racks, each rack once: two replicas on one rack are one task
// there, as YARN's AMRMClient counts a request's racks.
func (d *DAG) inputsPending(stage, task, delta int) {
	if d.cfg.Inputs == nil {
		return
	}
	var seen []string
	for _, h := range d.cfg.Inputs(stage, task) {
		if d.hosts[stage][h] += delta; d.hosts[stage][h] <= 0 {
			delete(d.hosts[stage], h)
		}
		if d.cfg.RackOf == nil {
			continue
		}
		if r := d.cfg.RackOf(h); !slices.Contains(seen, r) {
			seen = append(seen, r)
			if d.racks[stage][r] += delta; d.racks[stage][r] <= 0 {
				delete(d.racks[stage], r)
			}
		}
	}
}

// locality is what stage's asks say of its pending tasks' inputs: copies
// of the host and rack counts (nil without Inputs or when no pending task
// names one).
func (d *DAG) locality(stage int) (hosts, racks map[string]int) {
	if d.cfg.Inputs == nil || len(d.hosts[stage]) == 0 {
		return nil, nil
	}
	return maps.Clone(d.hosts[stage]), maps.Clone(d.racks[stage])
}

// nextLocal takes the pending task of stage a container on host should
// run: one whose input is on host (a retry first, then among the next
// localScan fresh ones), else one whose input is on host's rack, else the
// first pending one.
func (d *DAG) nextLocal(stage int, host string) int {
	rack := ""
	if d.cfg.RackOf != nil && host != "" {
		rack = d.cfg.RackOf(host)
	}
	pick, pickRank := -1, 3 // rank 0 node-local, 1 rack-local, 2 any
	consider := func(t int) bool {
		r := 2
		if host != "" {
			for _, h := range d.cfg.Inputs(stage, t) {
				if h == host {
					r = 0
					break
				}
				if rack != "" && d.cfg.RackOf(h) == rack {
					r = min(r, 1)
				}
			}
		}
		if r < pickRank {
			pick, pickRank = t, r
		}
		return r == 0
	}
	retry := -1
	for i, t := range d.retries[stage] {
		if consider(t) {
			retry = i
			break
		}
		if pick == t {
			retry = i
		}
	}
	if pickRank > 0 && host != "" {
		// A fresh task with its input on host, from the index (tasks
		// taken or started since are dropped as met).
		q := d.byHost[stage][host]
		for len(q) > 0 && (q[0] < d.next[stage] || d.taken[stage][q[0]]) {
			q = q[1:]
		}
		d.byHost[stage][host] = q
		if len(q) > 0 {
			pick, pickRank = q[0], 0
		}
	}
	if pickRank > 0 {
		scanned := 0
		for t := d.next[stage]; t < len(d.taken[stage]) && scanned < localScan; t++ {
			if d.taken[stage][t] {
				continue
			}
			scanned++
			if consider(t) {
				break
			}
		}
	}
	if retry >= 0 && d.retries[stage][retry] == pick {
		d.retries[stage] = slices.Delete(d.retries[stage], retry, retry+1)
	} else {
		d.taken[stage][pick] = true
		for d.next[stage] < len(d.taken[stage]) && d.taken[stage][d.next[stage]] {
			d.next[stage]++
		}
	}
	d.inputsPending(stage, pick, -1)
	return pick
}

// placement says how task runs on host against its input.
func (d *DAG) placement(stage, task int, host string) string {
	if d.cfg.Inputs == nil {
		return ""
	}
	in := d.cfg.Inputs(stage, task)
	if len(in) == 0 {
		return ""
	}
	if slices.Contains(in, host) {
		return "NODE_LOCAL"
	}
	if d.cfg.RackOf != nil && host != "" {
		rack := d.cfg.RackOf(host)
		for _, h := range in {
			if d.cfg.RackOf(h) == rack {
				return "RACK_LOCAL"
			}
		}
	}
	return "OFF_SWITCH"
}
