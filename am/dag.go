// Package am is the application master's core: the DAG AM that runs one
// job. At every decision it plans the job within its share A_k
// (altruism), asks DEFAULT for the tasks that must start now and
// ALTRUISTIC for the other runnable ones, binds each granted container to
// a task late, and keeps a history of every task it ran.
//
// The core is pure: time is an argument and randomness a seeded source.
// The AM process (daemon/am/driver) feeds it from the RM's allocate responses;
// the simulator feeds it directly. Both run this code.
package am

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/workload"
)

// Ask is a group of identical asks: Count tasks at Priority with Demand.
type Ask struct {
	Priority int
	Demand   fairness.Vector
	Kind     altruism.AskKind
	Count    int
	// Hosts and Racks, with Config.Inputs, count the stage's pending
	// tasks whose input is on each host and rack: where its containers
	// would rather run (YARN's host and rack ResourceRequests).
	Hosts, Racks map[string]int
}

// Request is what the AM sends on an allocate call.
type Request struct {
	Asks []Ask
	// Demand is running plus pending, every stage: the RM's DRF input.
	Demand fairness.Vector
	// RemainingWork orders the leftover (altruism.Job.RemainingWork).
	RemainingWork float64
	// CriticalTime is the remaining critical path, for SJF.
	CriticalTime time.Duration
	// Wake, when HasWake, is when a planned start falls due: the AM must
	// decide again by then.
	Wake    time.Duration
	HasWake bool
	// Yielding says whether this decision was altruistic.
	Yielding bool
	// Finish is the plan's T_k: when the job expects to finish within
	// its share. Zero for a greedy AM, which does not plan.
	Finish time.Duration
}

// Grant is a container the RM gave the AM.
type Grant struct {
	ID   int64
	Node string
	// Host is the node's host, for locality ("" when unknown).
	Host     string
	Resource fairness.Vector
	Priority int
	Kind     altruism.AskKind
}

// TaskRecord is one task attempt in the job history.
type TaskRecord struct {
	Stage     string
	Task      int // index within the stage
	Attempt   int
	Container int64
	Node      string
	Start     time.Duration
	End       time.Duration
	Kind      altruism.AskKind
	Succeeded bool
	// Lost says the attempt was running when its AM died: its outcome is
	// unknown, and a later AM attempt ran the task again (history state
	// KILLED). A lost attempt does not count against MaxAttempts.
	Lost bool
	// AMAttempt is the AM attempt that ran it (Config.AMAttempt).
	AMAttempt int
	// Locality is how it ran against its input (Config.Inputs):
	// NODE_LOCAL, RACK_LOCAL or OFF_SWITCH; "" for a task with none.
	Locality string
}

// Config sets how the AM schedules inside its job.
type Config struct {
	// Altruistic plans with reverse packing and asks DEFAULT/ALTRUISTIC;
	// otherwise every runnable task is DEFAULT, in breadth-first order
	// (the baseline policies' intra-job scheduler).
	Altruistic bool
	// Seed seeds the P(Altruism) draws.
	Seed uint64
	// MaxAttempts bounds each task's failed attempts; 0 means 4, YARN
	// MapReduce's default. Attempts lost with their AM do not count.
	MaxAttempts int
	// AMAttempt is the number of the AM attempt running the job, recorded
	// on every task it starts (0 where there is none, as in the simulator).
	AMAttempt int
	// CriticalPathFirst plans critical-path first (altruism.Planner).
	CriticalPathFirst bool
	// PlanFollow is how long the AM follows a plan without planning
	// again while the job keeps to it (altruism.Planner.Follow; Loom's
	// AMs use altruism.DefaultFollow); 0 plans at every decision.
	PlanFollow time.Duration
	// PlanFollowPart stretches PlanFollow to this part of a plan's
	// horizon (altruism.Planner.FollowPart; Loom's AMs use
	// altruism.DefaultFollowPart).
	PlanFollowPart float64
	// PlanResolution is the planner's forward-pass resolution
	// (altruism.Planner.Resolution; Loom's AMs use
	// altruism.DefaultResolution); 0 packs at every finish.
	PlanResolution time.Duration
	// PlanFarResolution coarsens it with distance
	// (altruism.Planner.FarResolution; Loom's AMs use
	// altruism.DefaultFarResolution); 0 keeps PlanResolution throughout.
	PlanFarResolution time.Duration
	// Inputs, when set, names the hosts that hold each task's input (its
	// HDFS block replicas; none for a task that reads its parents'
	// output from everywhere). The AM then asks for those hosts and
	// their racks, and binds a container to a pending task whose input
	// is on its host, else on its rack, else the next one. RackOf places
	// a host on its rack.
	Inputs func(stage, task int) []string
	RackOf func(host string) string
	// NoHistory keeps no record of ended attempts (History and Snapshot
	// list none): the simulator reads none, and a 4,000-job run ends 3.3
	// million of them.
	NoHistory bool
}

// DAG is the AM core of one job.
type DAG struct {
	cfg     Config
	job     *workload.Job
	state   *altruism.Job
	planner altruism.Planner
	rng     *rand.Rand
	// rank is each stage's priority: breadth-first order (bfRank), or
	// the reverse-packing order once an altruistic plan exists.
	rank    []int
	bfRank  []int
	next    []int   // next task index to start, per stage
	retries [][]int // task indices waiting to be retried, per stage
	// attempt is the highest attempt number given, per stage and task
	// (a stage's slice made at its first start): a map of every task
	// ever started cost a hash per start and grew with the job.
	attempt [][]int32
	fails   map[taskKey]int // failed attempts, per task
	running runTable
	// left is each stage's tasks pending or running, kept as they
	// start and end: Demand's multipliers, without walking every
	// stage's running tasks at every decision.
	left    []int
	history []TaskRecord
	failed  error
	// With Config.Inputs: the pending tasks' input hosts, counted per
	// stage, and the tasks bound ahead of next (taken out of order for
	// their locality).
	hosts  []map[string]int
	racks  []map[string]int   // pending tasks with an input on each rack, each once
	byHost []map[string][]int // fresh tasks by input host, in order
	taken  [][]bool
}

type taskKey struct{ stage, task int }

// run is a running task, held compactly (under the 128 bytes a Go map
// keeps its values inline for, so filing one allocates nothing): its
// TaskRecord is rebuilt from it and the DAG when it ends.
type run struct {
	start         time.Duration
	node          string
	locality      string
	stage, task   int32
	attempt, kind int32
}

// record is the run's TaskRecord, still running.
func (d *DAG) record(container int64, r run) TaskRecord {
	return TaskRecord{Stage: d.job.Stages[r.stage].Name, Task: int(r.task), Attempt: int(r.attempt),
		Container: container, Node: r.node, Start: r.start, Kind: altruism.AskKind(r.kind), AMAttempt: d.cfg.AMAttempt,
		Locality: r.locality}
}

// NewDAG returns the AM core for a job, with every task pending.
func NewDAG(job *workload.Job, cfg Config) (*DAG, error) {
	state, err := altruism.NewJob(job)
	if err != nil {
		return nil, err
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 4
	}
	d := &DAG{
		cfg:     cfg,
		job:     job,
		state:   state,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x10a4)),
		next:    make([]int, len(job.Stages)),
		retries: make([][]int, len(job.Stages)),
		attempt: make([][]int32, len(job.Stages)),
		fails:   map[taskKey]int{},
	}
	d.planner.CriticalPathFirst = cfg.CriticalPathFirst
	d.planner.Follow, d.planner.Resolution = cfg.PlanFollow, cfg.PlanResolution
	d.planner.FollowPart, d.planner.FarResolution = cfg.PlanFollowPart, cfg.PlanFarResolution
	d.recount()
	d.bfRank = breadthFirst(state)
	d.rank = slices.Clone(d.bfRank)
	if cfg.Inputs != nil {
		d.taken = make([][]bool, len(job.Stages))
		for i, js := range job.Stages {
			d.taken[i] = make([]bool, js.Tasks)
		}
		d.countInputs()
	}
	return d, nil
}

// breadthFirst ranks stages by depth from the roots, then by index.
func breadthFirst(j *altruism.Job) []int {
	depth := make([]int, len(j.Stages))
	var visit func(i int) int
	visit = func(i int) int {
		if depth[i] > 0 {
			return depth[i]
		}
		d := 1
		for _, p := range j.Stages[i].Parents {
			d = max(d, visit(p)+1)
		}
		depth[i] = d
		return d
	}
	order := make([]int, len(j.Stages))
	for i := range order {
		order[i] = i
		visit(i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(depth[a], depth[b]) })
	rank := make([]int, len(order))
	for r, i := range order {
		rank[i] = r
	}
	return rank
}

// Job returns the job the AM runs.
func (d *DAG) Job() *workload.Job { return d.job }

// Decide computes the AM's request at now, given its share A_k from the
// RM, the cluster's capacity, P(Altruism) and how the RM projects the
// share to grow (nil: it does not; see rm.Core.ShareGrowth).
func (d *DAG) Decide(now time.Duration, share, capacity fairness.Vector, p float64, growth []altruism.ShareStep) Request {
	req := Request{
		Demand:        d.Demand(),
		RemainingWork: d.state.RemainingWork(capacity, now),
		CriticalTime:  d.criticalTime(now),
	}
	def := make([]int, len(d.state.Stages))
	alt := make([]int, len(d.state.Stages))
	// P(Altruism) 0 is DRF's AM, exactly: no plan, every runnable task
	// DEFAULT, breadth-first, whatever an earlier plan ranked.
	if d.cfg.Altruistic && p > 0 {
		d.planner.Growth = growth
		plan := d.planner.Plan(d.state, share, now)
		sp := plan.Split(d.state, altruism.Decide(p, d.rng))
		def, alt = sp.Default, sp.Altruistic
		req.Wake, req.HasWake, req.Yielding, req.Finish = sp.Wake, sp.HasWake, sp.Yielding, plan.Finish
		d.rankByPlan(plan)
	} else {
		copy(d.rank, d.bfRank)
		for i, s := range d.state.Stages {
			if d.state.Runnable(i) {
				def[i] = s.Pending
			}
		}
	}
	for i, s := range d.state.Stages {
		var hosts, racks map[string]int
		if def[i]+alt[i] > 0 {
			hosts, racks = d.locality(i)
		}
		if def[i] > 0 {
			req.Asks = append(req.Asks, Ask{Priority: d.rank[i], Demand: s.Demand, Kind: altruism.Default, Count: def[i], Hosts: hosts, Racks: racks})
		}
		if alt[i] > 0 {
			req.Asks = append(req.Asks, Ask{Priority: d.rank[i], Demand: s.Demand, Kind: altruism.Altruistic, Count: alt[i], Hosts: hosts, Racks: racks})
		}
	}
	return req
}

// rankByPlan orders stages by their first latest start, so that the task
// that must start soonest asks at the lowest priority value.
func (d *DAG) rankByPlan(p *altruism.Plan) {
	n := len(d.state.Stages)
	first := make([]time.Duration, n)
	seen := make([]bool, n)
	for _, s := range p.Slots {
		if !seen[s.Stage] {
			first[s.Stage], seen[s.Stage] = s.Start, true
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if seen[a] != seen[b] {
			if seen[a] {
				return -1
			}
			return 1
		}
		return cmp.Compare(first[a], first[b])
	})
	for r, i := range order {
		d.rank[i] = r
	}
}

// criticalTime is the remaining critical path with unlimited resources.
func (d *DAG) criticalTime(now time.Duration) time.Duration {
	st := d.state.Stages
	finish := make([]time.Duration, len(st))
	done := make([]bool, len(st))
	var visit func(i int) time.Duration
	visit = func(i int) time.Duration {
		if done[i] {
			return finish[i]
		}
		var f time.Duration
		for _, r := range st[i].Running {
			f = max(f, r.Finish-now)
		}
		if st[i].Pending > 0 {
			var ready time.Duration
			for _, p := range st[i].Parents {
				ready = max(ready, visit(p))
			}
			f = max(f, ready+st[i].Duration)
		}
		finish[i], done[i] = f, true
		return f
	}
	var cp time.Duration
	for i := range st {
		cp = max(cp, visit(i))
	}
	return cp
}

// Bind gives a granted container to the highest-priority runnable task
// that fits it, and starts that task. It reports false when no task
// wants the container: the driver should release it.
func (d *DAG) Bind(now time.Duration, g Grant) (TaskRecord, bool) {
	best := -1
	for i, s := range d.state.Stages {
		if !d.state.Runnable(i) || !s.Demand.FitsIn(g.Resource) {
			continue
		}
		// With locality, the stage whose ask the grant served comes
		// first: the RM placed it for that stage's inputs.
		served := d.cfg.Inputs != nil && d.rank[i] == g.Priority
		if best < 0 || served || d.rank[i] < d.rank[best] && !(d.cfg.Inputs != nil && d.rank[best] == g.Priority) {
			best = i
		}
	}
	if best < 0 {
		return TaskRecord{}, false
	}
	s := &d.state.Stages[best]
	task := d.nextTask(best, g.Host)
	if d.attempt[best] == nil {
		d.attempt[best] = make([]int32, d.job.Stages[best].Tasks)
	}
	d.attempt[best][task]++
	r := run{start: now, node: g.Node, locality: d.placement(best, task, g.Host),
		stage: int32(best), task: int32(task), attempt: d.attempt[best][task], kind: int32(g.Kind)}
	d.running.put(g.ID, r)
	s.Pending--
	s.Running = addRun(s.Running, now+s.Duration)
	return d.record(g.ID, r), true
}

func (d *DAG) nextTask(stage int, host string) int {
	if d.cfg.Inputs != nil {
		return d.nextLocal(stage, host)
	}
	if r := d.retries[stage]; len(r) > 0 {
		d.retries[stage] = r[1:]
		return r[0]
	}
	t := d.next[stage]
	d.next[stage]++
	return t
}

// addRun adds one task expected to finish at f, grouped by finish.
func addRun(runs []altruism.Run, f time.Duration) []altruism.Run {
	for i := range runs {
		if runs[i].Finish == f {
			runs[i].Count++
			return runs
		}
	}
	return append(runs, altruism.Run{Finish: f, Count: 1})
}

// Completed reports a container's task as ended: succeeded, or failed (it
// is then retried, up to MaxAttempts). It reports whether the AM should
// decide again: a stage finished, so new tasks may be runnable, or a task
// failed. A task ending within its stage changes nothing the plan did not
// expect. Unknown containers are an error.
func (d *DAG) Completed(now time.Duration, container int64, succeeded bool) (bool, error) {
	return d.ended(now, container, succeeded, !succeeded)
}

// Preempted reports that the RM took back a container under a running
// task: the task runs again, and, as YARN's engines count a preempted
// attempt as killed rather than failed, the kill does not count towards
// its attempts.
func (d *DAG) Preempted(now time.Duration, container int64) (bool, error) {
	return d.ended(now, container, false, false)
}

// ended records a task's end; failed counts it towards its attempts.
func (d *DAG) ended(now time.Duration, container int64, succeeded, failed bool) (bool, error) {
	r, ok := d.running.take(container)
	if !ok {
		return false, fmt.Errorf("container %d runs no task of job %q", container, d.job.Name)
	}
	stage, rec := int(r.stage), d.record(container, r)
	s := &d.state.Stages[stage]
	// A run is filed under its estimated finish, start + duration.
	s.Running = removeRun(s.Running, rec.Start+s.Duration)
	rec.End, rec.Succeeded = now, succeeded
	if !d.cfg.NoHistory {
		d.history = append(d.history, rec)
	}
	if succeeded {
		d.left[stage]--
		return d.state.Done(stage), nil
	}
	key := taskKey{stage, rec.Task}
	if failed {
		d.fails[key]++
		if d.fails[key] >= d.cfg.MaxAttempts {
			d.failed = d.tooManyFailures(key)
			return true, nil
		}
	}
	s.Pending++
	d.retries[stage] = append(d.retries[stage], rec.Task)
	d.inputsPending(stage, rec.Task, 1)
	d.planner.Reset() // the job is not where the plan left it
	return true, nil
}

func (d *DAG) tooManyFailures(k taskKey) error {
	return fmt.Errorf("job %q: task %d of stage %q failed %d times", d.job.Name, k.task, d.job.Stages[k.stage].Name, d.fails[k])
}

// Demand is the job's running plus pending demand, the RM's DRF input:
// altruism.Job.Demand, summed in the same order from the kept counts.
func (d *DAG) Demand() fairness.Vector {
	var v fairness.Vector
	for i, n := range d.left {
		// A stage with nothing left adds +0 in every kind: the sum is
		// the same without it (it never holds a −0 to flip).
		if n > 0 {
			v = v.Add(d.state.Stages[i].Demand.Scale(float64(n)))
		}
	}
	return v
}

// recount sets left from the job's state.
func (d *DAG) recount() {
	d.left = slices.Grow(d.left[:0], len(d.state.Stages))[:len(d.state.Stages)]
	for i, s := range d.state.Stages {
		d.left[i] = s.Pending
		for _, r := range s.Running {
			d.left[i] += r.Count
		}
	}
}

func removeRun(runs []altruism.Run, f time.Duration) []altruism.Run {
	for i := range runs {
		if runs[i].Finish == f {
			if runs[i].Count--; runs[i].Count == 0 {
				return slices.Delete(runs, i, i+1)
			}
			return runs
		}
	}
	return runs
}

// Finished reports whether every task has succeeded.
func (d *DAG) Finished() bool { return d.state.Finished() && d.running.len() == 0 }

// Failed returns why the job failed, nil while it has not.
func (d *DAG) Failed() error { return d.failed }

// History returns every task attempt that ended, in order of ending;
// after Recover, the earlier AM attempts' tasks come first, lost ones
// included.
func (d *DAG) History() []TaskRecord { return d.history }

// Running returns the number of tasks running.
func (d *DAG) Running() int { return d.running.len() }
