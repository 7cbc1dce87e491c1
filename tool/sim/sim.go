// Package sim is Loom's trace-driven discrete-event simulator. It feeds
// the same rm and am cores the real daemons run, from a workload with a
// virtual clock, so that one trace and one seed give the same decisions,
// byte for byte.
//
// The package is pure: the clock is virtual, randomness comes from the
// seed, and the only output is the optional decision log writer.
package sim

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rm/adapter"
	"github.com/loomrm/loom/workload"
)

// Config describes one simulated run.
type Config struct {
	// Machines is the cluster size; Machine each one's capacity. The
	// default is the Carbyne paper's cluster: 100 machines of 20 cores
	// and 128 GB, with disk and network bandwidth.
	Machines int
	Machine  fairness.Vector
	// PolicyConfig is the policy and its knobs, as the RM takes them.
	rm.PolicyConfig
	// Misestimate is X in [-50, 50]: the schedulers see every demand and
	// duration scaled by 1 + X/100, while tasks really run with the true
	// ones (the Carbyne paper's Figure 10).
	Misestimate float64
	Seed        uint64
	// Window is the interval for utilisation and Jain's index; 60 s by
	// default, as in the paper.
	Window time.Duration
	// Log receives one line per decision; nil for none.
	Log io.Writer
	// Progress, when set, is called as jobs finish.
	Progress func(done, total int)
	// AM, when set, is each job's application-master container, as on
	// the real RM: the job asks for it on arrival, ahead of its tasks,
	// holds it until it finishes, and its DAG starts AMStartup after the
	// grant (the AM process starting and registering). Zero, a job starts
	// at its arrival with no AM (the paper's model, and the default).
	AM        fairness.Vector
	AMStartup time.Duration
	// QueuePAltruism overrides P(Altruism) for the jobs of a queue (a
	// job's Queue, "default" when it names none), as the RM's
	// loom.queue.<name>.p-altruism does.
	QueuePAltruism map[string]float64
	// Queues, when set, is a queue tree (a fair-scheduler.xml's or a
	// Capacity Scheduler's, as the RM reads it): DRF runs down it, as on
	// the RM. A job goes to its Queue (a leaf's full path, or its path
	// under root), or, naming none or "default" (as the catalogues'
	// jobs do), to the leaves other than root.default in turn by arrival.
	Queues *rm.QueuesSet
	// Preemption, with Queues, takes containers back for starved queues
	// as the RM does (rm.PreemptionConfig); the simulated AMs do not give
	// them back early, so each is taken at the end of its grace, and its
	// task runs again.
	Preemption *rm.PreemptionConfig
	// CriticalPathFirst makes Carbyne's AMs plan critical-path first
	// (am.Config.CriticalPathFirst).
	CriticalPathFirst bool
	// PlanFollow is how long Carbyne's AMs follow a plan without planning
	// again (am.Config.PlanFollow); DefaultConfig's is
	// altruism.DefaultFollow, as the daemons' AMs.
	PlanFollow time.Duration
	// PlanFollowPart stretches it for long plans (am.Config.PlanFollowPart;
	// DefaultConfig's is altruism.DefaultFollowPart).
	PlanFollowPart float64
	// PlanResolution is their planner's resolution
	// (am.Config.PlanResolution; DefaultConfig's is
	// altruism.DefaultResolution).
	PlanResolution time.Duration
	// PlanFarResolution coarsens it with distance
	// (am.Config.PlanFarResolution; DefaultConfig's is
	// altruism.DefaultFarResolution).
	PlanFarResolution time.Duration
	// TaskOverhead holds each task's container this much longer than the
	// task runs: what a live task costs beyond its duration (its
	// allocation on a heartbeat, the AM's next call, the launch). Zero by
	// default.
	TaskOverhead time.Duration
	// Locality, when set, models where tasks' input lives and what it
	// costs to read it from elsewhere (locality.go): machines are hosts on
	// racks, each task of a job's first stages reads an input with
	// replicas on some machines, the AMs ask for them, the core places
	// with delay scheduling, and a task that runs off its input takes
	// longer. Nil, there is no locality (the paper's model).
	Locality *LocalityModel
	// Labels, when set, are the cluster's node labels (partitions) and
	// which machines are in each; a job runs in its queue's default label
	// (the Capacity Scheduler's default-node-label-expression), as the
	// RM places an app that names none.
	Labels *LabelModel
}

// DefaultConfig is the paper's cluster running the RM's default policy
// (Carbyne, P(Altruism) 1).
func DefaultConfig() Config {
	return Config{Machines: 100, Machine: workload.PaperMachine(), PolicyConfig: rm.DefaultPolicyConfig(), Window: time.Minute,
		PlanFollow: altruism.DefaultFollow, PlanFollowPart: altruism.DefaultFollowPart,
		PlanResolution: altruism.DefaultResolution, PlanFarResolution: altruism.DefaultFarResolution}
}

// JobResult is one job's outcome.
type JobResult struct {
	Name    string
	Arrival time.Duration
	Finish  time.Duration
	Tasks   int
	// Altruistic counts the tasks that ran on containers granted for
	// ALTRUISTIC asks.
	Altruistic int
	Failed     string `json:",omitempty"`
	// NodeLocal, RackLocal and OffSwitch count its tasks that read an
	// input (Config.Locality) by where they ran against it.
	NodeLocal int `json:",omitempty"`
	RackLocal int `json:",omitempty"`
	OffSwitch int `json:",omitempty"`
	// Queue is the leaf it ran in, with a queue tree.
	Queue string `json:",omitempty"`
}

func (j *JobResult) countPlacement(p string) {
	switch p {
	case "NODE_LOCAL":
		j.NodeLocal++
	case "RACK_LOCAL":
		j.RackLocal++
	case "OFF_SWITCH":
		j.OffSwitch++
	}
}

// JCT is the job's completion time.
func (j JobResult) JCT() time.Duration { return j.Finish - j.Arrival }

// Window is one interval of the run.
type Window struct {
	Start time.Duration
	// Utilisation of each resource kind: allocated over capacity,
	// averaged over the window.
	Utilisation fairness.Vector
	// Jain is Jain's index over the jobs active in the window, of each
	// one's dominant share of what it held divided by its DRF share,
	// both averaged over the time it was active in the window.
	Jain float64
	Jobs int
}

// Result is a run's outcome.
type Result struct {
	Policy    string
	Jobs      []JobResult
	Makespan  time.Duration
	Windows   []Window
	Decisions int
	// Preemptions counts the containers taken back under running tasks.
	Preemptions int `json:",omitempty"`
}

// Run simulates the jobs on the configured cluster.
func Run(cfg Config, jobs []*workload.Job) (*Result, error) {
	if err := cfg.check(jobs); err != nil {
		return nil, err
	}
	pol, err := cfg.NodePolicy()
	if err != nil {
		return nil, err
	}
	rc := rm.Config{Policy: pol, PAltruism: cfg.PAltruism, QueuePAltruism: cfg.QueuePAltruism, Preemption: cfg.Preemption,
		Recall: cfg.Recall, PromiseSlack: cfg.PromiseSlack, ShareGrowth: cfg.ShareGrowth}
	if cfg.Locality != nil {
		rc.Locality = &cfg.Locality.Delays
	}
	s := &sim{cfg: cfg, core: rm.New(rc)}
	if cfg.Labels != nil {
		if _, err := s.core.Step(0, rm.PartitionsSet{Partitions: cfg.Labels.Partitions}); err != nil {
			return nil, err
		}
	}
	for i := 0; i < cfg.Machines; i++ {
		s.nodeNames = append(s.nodeNames, fmt.Sprint(i))
		up := rm.NodeUp{Node: rm.NodeID(i), Capacity: cfg.Machine}
		if cfg.Labels != nil && i < len(cfg.Labels.Machines) {
			up.Partition = cfg.Labels.Machines[i]
		}
		if cfg.Locality != nil {
			up.Host, up.Rack = cfg.Locality.host(i), cfg.Locality.rack(i)
		}
		if _, err := s.core.Step(0, up); err != nil {
			return nil, err
		}
	}
	if cfg.Queues != nil && len(cfg.Queues.Queues) > 0 {
		if _, err := s.core.Step(0, *cfg.Queues); err != nil {
			return nil, err
		}
		s.leaves = leafQueues(s.core.Queues())
	}
	if err := s.admitAll(jobs); err != nil {
		return nil, err
	}
	if err := s.loop(); err != nil {
		return nil, err
	}
	return s.result(), nil
}

func (cfg *Config) check(jobs []*workload.Job) error {
	switch {
	case cfg.Machines <= 0:
		return fmt.Errorf("machines %d: the cluster needs at least one", cfg.Machines)
	case cfg.Machine.IsZero() || cfg.Machine.HasNegative():
		return fmt.Errorf("machine capacity %v must be positive", cfg.Machine)
	case cfg.PolicyConfig.Validate() != nil:
		return cfg.PolicyConfig.Validate()
	case !(cfg.Misestimate >= -50 && cfg.Misestimate <= 50):
		return fmt.Errorf("misestimation %v%% must be between -50 and 50", cfg.Misestimate)
	case len(jobs) == 0:
		return errors.New("the workload has no jobs")
	case cfg.AM.HasNegative() || !cfg.AM.FitsIn(cfg.Machine):
		return fmt.Errorf("the AM container %v does not fit a machine of %v", cfg.AM, cfg.Machine)
	case cfg.AMStartup < 0 || cfg.TaskOverhead < 0:
		return fmt.Errorf("AM startup %v or task overhead %v is negative", cfg.AMStartup, cfg.TaskOverhead)
	case cfg.Locality != nil && cfg.Locality.check(cfg.Machines) != nil:
		return cfg.Locality.check(cfg.Machines)
	}
	for q, p := range cfg.QueuePAltruism {
		if err := rm.CheckPAltruism(p); err != nil {
			return fmt.Errorf("queue %q: %w", q, err)
		}
	}
	if cfg.Window <= 0 {
		cfg.Window = time.Minute
	}
	names := map[string]bool{}
	for _, j := range jobs {
		if err := j.Validate(); err != nil {
			return err
		}
		if names[j.Name] {
			return fmt.Errorf("job name %q appears twice in the workload", j.Name)
		}
		names[j.Name] = true
		if err := j.CheckFits([]fairness.Vector{cfg.Machine}); err != nil {
			return err
		}
	}
	return nil
}

// job is one simulated job: its AM core, the true durations of its
// stages, and its outcome.
type job struct {
	idx    int
	app    rm.AppID
	label  string // its node label (Config.Labels)
	dag    *am.DAG
	actual []time.Duration
	stage  map[string]int
	res    JobResult
	// share is the allocation the AM last decided with.
	share fairness.Vector
	// greedy is set when the AM's last decision did not yield (the
	// P(Altruism) draw failed): it decides again at its next task end,
	// as Carbyne draws at every scheduling event, rather than leave every
	// runnable task DEFAULT until its stage ends.
	greedy bool
	dirty  bool
	active bool
	waking time.Duration
	// waitingAM is set from arrival until the AM container is granted;
	// amHeld is the AM container's resource from then on.
	waitingAM bool
	amHeld    fairness.Vector
	usageDS   float64 // ∫ dominant share of usage, this window
	shareDS   float64 // ∫ dominant share of A_k, this window
	alive     time.Duration
	// The integrals are kept lazily: since is when they were last
	// brought up to date; from then on the app is in the core (inCore)
	// with these dominant shares of usage and A_k, until the next
	// change (see rates).
	since        time.Duration
	inCore       bool
	rateU, rateS float64
	touched      bool // in the sim's touched list
}

type task struct {
	job *job
	cid rm.ContainerID
	end time.Duration
}

type sim struct {
	cfg  Config
	core *rm.Core
	now  time.Duration

	jobs     []*job // in arrival order
	arrived  int
	active   []*job
	finished int

	ends  endQueue
	wakes wakeHeap
	// nodeNames are the machines' names for the AMs' grants (formatting
	// one per task started was 3% of a run).
	nodeNames []string

	// metrics
	// touched are the jobs whose usage or presence in the core may have
	// changed since the metrics last read them; epoch and capacity what
	// the core's shares were computed at then (any change, and every
	// job's share may have moved).
	touched  []*job
	epoch    uint64
	capacity fairness.Vector
	rateErr  error // checkRates' finding
	// movedEpoch is the core's share epoch when the AMs last looked for
	// moved shares (movedChecked: they have looked).
	movedEpoch   uint64
	movedChecked bool
	lastT        time.Duration
	winStart     time.Duration
	winUsed      fairness.Vector // ∫ used dt
	windows      []Window
	decisions    int
	preemptions  int
	firstStart   time.Duration

	// leaves are the queue tree's leaves, for jobs that name no queue;
	// nextLeaf the one the next such job goes to.
	leaves   []string
	nextLeaf int
	// taken are the containers preempted under running tasks: their ends
	// are void.
	taken map[rm.ContainerID]bool
	// unbound are containers granted in a pass that the AM could not use
	// and the same pass took back (recall takes the youngest
	// leftover-paid container first): no task ran on them, so there is
	// nothing to release or run again.
	unbound map[rm.ContainerID]bool
}

func (s *sim) admitAll(jobs []*workload.Job) error {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(jobs[a].Arrival, jobs[b].Arrival) })
	scale := 1 + s.cfg.Misestimate/100
	for n, i := range order {
		w := jobs[i]
		est := w.Clone()
		actual := make([]time.Duration, len(w.Stages))
		stage := make(map[string]int, len(w.Stages))
		for k := range est.Stages {
			actual[k] = w.Stages[k].Duration
			stage[w.Stages[k].Name] = k
			est.Stages[k].Duration = max(time.Duration(float64(w.Stages[k].Duration)*scale), time.Millisecond)
			est.Stages[k].Demand = w.Stages[k].Demand.Scale(scale)
		}
		if err := est.CheckFits([]fairness.Vector{s.cfg.Machine}); err != nil {
			return fmt.Errorf("with demands misestimated by %+g%%: %w", s.cfg.Misestimate, err)
		}
		ac := am.Config{Altruistic: s.cfg.Altruistic(), CriticalPathFirst: s.cfg.CriticalPathFirst,
			PlanFollow: s.cfg.PlanFollow, PlanFollowPart: s.cfg.PlanFollowPart, PlanResolution: s.cfg.PlanResolution,
			PlanFarResolution: s.cfg.PlanFarResolution, Seed: s.cfg.Seed ^ uint64(n+1)*0x9e3779b97f4a7c15, NoHistory: true}
		if l := s.cfg.Locality; l != nil {
			ac.Inputs, ac.RackOf = l.inputs(est, s.cfg.Seed, n, s.cfg.Machines), l.rackOf
		}
		dag, err := am.NewDAG(est, ac)
		if err != nil {
			return err
		}
		s.jobs = append(s.jobs, &job{idx: n, app: rm.AppID(n + 1), dag: dag, actual: actual, stage: stage,
			res: JobResult{Name: w.Name, Arrival: w.Arrival, Tasks: w.TotalTasks()}})
	}
	s.firstStart = s.jobs[0].res.Arrival
	s.now, s.lastT, s.winStart = s.firstStart, s.firstStart, s.firstStart
	return nil
}

// next returns the next instant anything happens.
func (s *sim) next() (time.Duration, bool) {
	t, ok := time.Duration(math.MaxInt64), false
	if s.arrived < len(s.jobs) {
		t, ok = s.jobs[s.arrived].res.Arrival, true
	}
	if e, running := s.ends.peek(); running && e.end < t {
		t, ok = e.end, true
	}
	if len(s.wakes) > 0 && s.wakes[0].at < t {
		t, ok = s.wakes[0].at, true
	}
	// A starvation timeout or a grace ending is an instant too: the RM
	// schedules at every heartbeat, the simulator when something is due.
	if due, ok2 := s.core.PreemptionDue(); ok2 && due > s.now && due < t {
		t, ok = due, true
	}
	return t, ok
}

func (s *sim) loop() error {
	for s.finished < len(s.jobs) {
		t, ok := s.next()
		if !ok {
			return fmt.Errorf("at %v no task runs and nothing is due, but %d jobs have not finished",
				s.now, len(s.jobs)-s.finished)
		}
		s.advance(t)
		if s.rateErr != nil {
			return s.rateErr
		}
		if err := s.instant(); err != nil {
			return err
		}
	}
	s.advance(s.now) // close the last window
	s.closeWindow(s.now)
	return nil
}

// instant handles everything that happens at s.now: task ends, arrivals,
// planned starts falling due; then the AMs decide and the RM schedules.
func (s *sim) instant() error {
	for e, running := s.ends.peek(); running && e.end == s.now; e, running = s.ends.peek() {
		t := s.ends.pop()
		if s.taken[t.cid] {
			delete(s.taken, t.cid)
			continue
		}
		if _, err := s.core.Step(s.now, rm.ContainerDone{Container: t.cid}); err != nil {
			return err
		}
		j := t.job
		s.touch(j)
		decide, err := j.dag.Completed(s.now, int64(t.cid), true)
		if err != nil {
			return err
		}
		if decide || j.greedy {
			j.dirty = true
		} else if ev, err := adapter.DemandChanged(s.appOf(j), j.dag.Demand()); err != nil {
			return err
		} else if _, err := s.core.Step(s.now, ev); err != nil {
			return err
		}
		if j.dag.Finished() {
			if err := s.finish(j); err != nil {
				return err
			}
		}
	}
	for s.arrived < len(s.jobs) && s.jobs[s.arrived].res.Arrival == s.now {
		j := s.jobs[s.arrived]
		s.arrived++
		queue := s.queueOf(j.dag.Job())
		if len(s.leaves) > 0 {
			j.res.Queue = queue
		}
		if s.cfg.Labels != nil {
			j.label = s.core.QueueDefaultLabel(queue)
		}
		if _, err := s.core.Step(s.now, rm.AppAdded{App: j.app, Queue: queue, Weight: j.dag.Job().EffectiveWeight(), Label: j.label}); err != nil {
			return err
		}
		s.touch(j)
		if s.cfg.AM.IsZero() {
			s.activate(j)
			continue
		}
		j.waitingAM = true
		// The AM container's ask, as the RM makes it for a new attempt.
		ev, err := adapter.Request(s.appOf(j), adapter.Message{Asks: []rm.Ask{{Priority: 0, Demand: s.cfg.AM, Kind: altruism.Default, Count: 1, Label: j.label}}})
		if err != nil {
			return err
		}
		if _, err := s.core.Step(s.now, ev); err != nil {
			return err
		}
	}
	for len(s.wakes) > 0 && s.wakes[0].at == s.now {
		w := heap.Pop(&s.wakes).(wake)
		switch {
		case w.amUp:
			s.activate(w.job)
		case w.job.active && w.job.waking == w.at:
			w.job.dirty = true
		}
	}

	// AMs whose state changed decide and report their demand; then any AM
	// whose share moved enough decides again with the new share.
	capacity := s.core.Capacity()
	for _, j := range s.active {
		if j.dirty {
			if err := s.decide(j, capacity); err != nil {
				return err
			}
		}
	}
	// Shares move only when the core recomputes them: while its epoch
	// stays what it was when this loop last began, every AM has seen its
	// share (here or in its own decision since), and none would replan.
	if s.cfg.Altruistic() && s.sharesMoved() {
		for _, j := range s.active {
			share, err := s.core.Share(j.app)
			if err != nil {
				return err
			}
			if altruism.Moved(j.share, share) {
				if err := s.decide(j, capacity); err != nil {
					return err
				}
			}
		}
	}

	acts, err := s.core.Step(s.now, rm.Schedule{})
	if err != nil {
		return err
	}
	for _, a := range acts {
		switch a := a.(type) {
		case *rm.Allocated:
			if err := s.start(a.Container); err != nil {
				return err
			}
		case rm.Preempted:
			if err := s.preempted(a.Container); err != nil {
				return err
			}
		}
	}
	return nil
}

// sharesMoved says whether the core recomputed its shares since the AMs
// last looked for moved shares, and notes that they look now.
func (s *sim) sharesMoved() bool {
	epoch := s.core.SharesEpoch()
	moved := epoch != s.movedEpoch || !s.movedChecked
	s.movedEpoch, s.movedChecked = epoch, true
	return moved
}

// preempted ends the task on a container the core took back: it runs
// again.
func (s *sim) preempted(c rm.Container) error {
	if s.unbound[c.ID] {
		delete(s.unbound, c.ID)
		return nil
	}
	j := s.jobs[c.App-1]
	s.touch(j)
	if s.taken == nil {
		s.taken = map[rm.ContainerID]bool{}
	}
	s.taken[c.ID] = true
	s.preemptions++
	if _, err := j.dag.Preempted(s.now, int64(c.ID)); err != nil {
		return err
	}
	j.dirty = true
	return nil
}

// activate starts a job's AM deciding.
func (s *sim) activate(j *job) {
	j.active, j.dirty = true, true
	s.active = append(s.active, j)
}

func (s *sim) decide(j *job, capacity fairness.Vector) error {
	share, err := s.core.Share(j.app)
	if err != nil {
		return err
	}
	p, err := s.core.PAltruismOf(j.app)
	if err != nil {
		return err
	}
	req := j.dag.Decide(s.now, share, capacity, p, s.core.ShareGrowth(j.app))
	j.share, j.dirty = share, false
	j.greedy = s.cfg.Altruistic() && !req.Yielding
	asks := make([]rm.Ask, len(req.Asks))
	for i, a := range req.Asks {
		asks[i] = rm.Ask{Priority: a.Priority, Demand: a.Demand, Kind: a.Kind, Count: a.Count, Label: j.label}
		if a.Hosts != nil && !s.cfg.Locality.NoPreferences {
			asks[i].Locality = &rm.Locality{Hosts: a.Hosts, Racks: a.Racks, Relax: true}
		}
	}
	ev, err := adapter.Request(s.appOf(j), adapter.Message{Asks: asks, Demand: &req.Demand,
		RemainingWork: req.RemainingWork, CriticalTime: req.CriticalTime})
	if err != nil {
		return err
	}
	if _, err := s.core.Step(s.now, ev); err != nil {
		return err
	}
	if req.HasWake && req.Wake > s.now && req.Wake != j.waking {
		j.waking = req.Wake
		heap.Push(&s.wakes, wake{at: req.Wake, job: j})
	}
	return nil
}

// appOf is what the simulator knows of a job's app, for the adapter:
// what it holds and its AM container.
func (s *sim) appOf(j *job) adapter.App {
	usage, _ := s.core.Usage(j.app)
	return adapter.App{ID: j.app, Usage: usage, AMContainer: j.amHeld}
}

// start binds a granted container to a task, or releases it.
func (s *sim) start(c rm.Container) error {
	j := s.jobs[c.App-1]
	s.touch(j)
	if j.waitingAM {
		j.waitingAM, j.amHeld = false, c.Resource
		if _, err := s.core.Step(s.now, rm.AMContainer{Container: c.ID}); err != nil {
			return err
		}
		heap.Push(&s.wakes, wake{at: s.now + s.cfg.AMStartup, job: j, amUp: true})
		return nil
	}
	var node string
	if int(c.Node) < len(s.nodeNames) {
		node = s.nodeNames[c.Node]
	} else {
		node = fmt.Sprint(c.Node)
	}
	g := am.Grant{ID: int64(c.ID), Node: node, Resource: c.Resource, Priority: c.Priority, Kind: c.Kind}
	if s.cfg.Locality != nil {
		g.Host = s.cfg.Locality.host(int(c.Node))
	}
	rec, ok := j.dag.Bind(s.now, g)
	if !ok {
		if _, live := s.core.Container(c.ID); !live {
			if s.unbound == nil {
				s.unbound = map[rm.ContainerID]bool{}
			}
			s.unbound[c.ID] = true
			return nil
		}
		_, err := s.core.Step(s.now, rm.ContainerDone{Container: c.ID})
		return err
	}
	s.decisions++
	if s.cfg.Locality != nil && !s.cfg.Locality.NoPreferences {
		// The core counted the grant down on its node and rack only; the
		// task's other replicas' hosts still count it until the AM asks
		// again, which the RM's AMs do at their next allocate call after
		// a grant (daemon/am/driver decides on every one): so does this
		// AM, at the next instant.
		j.dirty = true
	}
	if rec.Kind == altruism.Altruistic {
		j.res.Altruistic++
	}
	run := j.actual[j.stage[rec.Stage]]
	if s.cfg.Locality != nil {
		run = s.cfg.Locality.runTime(run, rec.Locality)
		j.res.countPlacement(rec.Locality)
	}
	end := s.now + s.cfg.TaskOverhead + run
	s.ends.push(task{job: j, cid: c.ID, end: end}, s.now)
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, "%d %s stage=%s task=%d node=%d kind=%s phase=%s prio=%d\n",
			s.now.Milliseconds(), j.res.Name, rec.Stage, rec.Task, c.Node, c.Kind, c.Phase, c.Priority)
	}
	return nil
}

func (s *sim) finish(j *job) error {
	if _, err := s.core.Step(s.now, rm.AppRemoved{App: j.app}); err != nil {
		return err
	}
	s.touch(j)
	j.active = false
	j.res.Finish = s.now
	s.active = slices.DeleteFunc(s.active, func(x *job) bool { return x == j })
	s.finished++
	if s.cfg.Progress != nil {
		s.cfg.Progress(s.finished, len(s.jobs))
	}
	return nil
}

// advance integrates the metrics from the last instant up to t, closing
// windows on the way.
func (s *sim) advance(t time.Duration) {
	s.rates()
	for s.lastT < t {
		end := min(t, s.winStart+s.cfg.Window)
		s.winUsed = s.winUsed.Add(s.core.Used().Scale((end - s.lastT).Seconds()))
		s.lastT = end
		if end == s.winStart+s.cfg.Window {
			s.closeWindow(end)
		}
	}
	s.now = t
}

// touch notes that a job's usage, or whether its app is in the core, may
// have changed at this instant.
func (s *sim) touch(j *job) {
	if !j.touched {
		j.touched = true
		s.touched = append(s.touched, j)
	}
}

// rates brings the jobs' dominant shares up to date as of lastT, after
// integrating the old ones up to it: those of the touched jobs, or of
// every app when the core recomputed its shares. Reading every app at
// every instant cost a 4,000-job simulation an eighth of its time; shares
// move at most every share interval and at arrivals and departures.
func (s *sim) rates() {
	epoch, capacity := s.core.SharesEpoch(), s.core.Capacity()
	all := epoch != s.epoch || capacity != s.capacity
	s.epoch, s.capacity = epoch, capacity
	for _, j := range s.touched {
		j.touched = false
		if all {
			j.setRate(s.lastT, false, 0, 0) // in the core, EachApp below sets it again
			continue
		}
		u, err := s.core.Usage(j.app)
		if err != nil { // not (or no longer) in the core
			j.setRate(s.lastT, false, 0, 0)
			continue
		}
		a, _ := s.core.Share(j.app)
		j.setRate(s.lastT, true, u.DominantShare(capacity), a.DominantShare(capacity))
	}
	s.touched = s.touched[:0]
	if all {
		s.core.EachApp(func(id rm.AppID, u, a fairness.Vector) {
			j := s.jobs[id-1] // app ids are the jobs' arrival positions, from 1
			j.setRate(s.lastT, true, u.DominantShare(capacity), a.DominantShare(capacity))
		})
	}
	if checkRates && s.rateErr == nil {
		s.rateErr = s.checkRates(capacity)
	}
}

// checkRates makes the simulator check, at every instant, that the rates
// it keeps lazily are what the core says: the tests' guard against a
// change of usage that does not touch its job.
var checkRates bool

func (s *sim) checkRates(capacity fairness.Vector) error {
	in := 0
	var err error
	s.core.EachApp(func(id rm.AppID, u, a fairness.Vector) {
		j := s.jobs[id-1]
		in++
		if err == nil && (!j.inCore || j.rateU != u.DominantShare(capacity) || j.rateS != a.DominantShare(capacity)) {
			err = fmt.Errorf("at %v app %d: metrics kept in core %v, usage %v, share %v; the core says usage %v, share %v",
				s.lastT, id, j.inCore, j.rateU, j.rateS, u.DominantShare(capacity), a.DominantShare(capacity))
		}
	})
	for _, j := range s.jobs {
		if j.inCore {
			in--
		}
	}
	if err == nil && in != 0 {
		err = fmt.Errorf("at %v the metrics count %d apps more in the core than it has", s.lastT, -in)
	}
	return err
}

// flush integrates the job's rates up to t.
func (j *job) flush(t time.Duration) {
	if j.inCore && t > j.since {
		d := t - j.since
		j.usageDS += j.rateU * d.Seconds()
		j.shareDS += j.rateS * d.Seconds()
		j.alive += d
	}
	j.since = t
}

// setRate integrates the old rates up to t and takes new ones from t.
func (j *job) setRate(t time.Duration, inCore bool, usage, share float64) {
	j.flush(t)
	j.inCore, j.rateU, j.rateS = inCore, usage, share
}

func (s *sim) closeWindow(end time.Duration) {
	span := (end - s.winStart).Seconds()
	if span <= 0 {
		return
	}
	w := Window{Start: s.winStart}
	capacity := s.core.Capacity()
	for k := range capacity {
		if capacity[k] > 0 {
			w.Utilisation[k] = s.winUsed[k] / (capacity[k] * span)
		}
	}
	var xs []float64
	for _, j := range s.jobs {
		j.flush(end)
		if j.alive > 0 && j.shareDS > 0 {
			xs = append(xs, j.usageDS/j.shareDS)
		}
		j.usageDS, j.shareDS, j.alive = 0, 0, 0
	}
	w.Jain, w.Jobs = fairness.Jain(xs), len(xs)
	s.windows = append(s.windows, w)
	s.winStart, s.winUsed = end, fairness.Vector{}
}

func (s *sim) result() *Result {
	r := &Result{Policy: s.cfg.Policy, Windows: s.windows, Decisions: s.decisions, Preemptions: s.preemptions}
	var last time.Duration
	for _, j := range s.jobs {
		if err := j.dag.Failed(); err != nil {
			j.res.Failed = err.Error()
		}
		r.Jobs = append(r.Jobs, j.res)
		last = max(last, j.res.Finish)
	}
	r.Makespan = last - s.firstStart
	return r
}

// wake is a planned start falling due for a job.
type wake struct {
	at  time.Duration
	job *job
	// amUp: the job's AM has started and decides from now on.
	amUp bool
}

type wakeHeap []wake

func (h wakeHeap) Len() int { return len(h) }
func (h wakeHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].job.idx < h[j].job.idx
}
func (h wakeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)   { *h = append(*h, x.(wake)) }
func (h *wakeHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}

// queueOf is the queue a job runs in: its own, "default" without one;
// with a tree, its leaf (a path under root gets root. before it), or the
// next leaf in turn.
func (s *sim) queueOf(j *workload.Job) string {
	q := j.Queue
	switch {
	case len(s.leaves) == 0 && q == "":
		return "default"
	case len(s.leaves) == 0:
		return q
	case q == "" || q == "default":
		// The catalogues' jobs all name "default": under a tree they
		// are spread over its leaves.
		q = s.leaves[s.nextLeaf%len(s.leaves)]
		s.nextLeaf++
		return q
	case !strings.HasPrefix(q, "root."):
		return "root." + q
	}
	return q
}

// leafQueues lists a tree's leaves in its order, as the core holds them,
// root.default left out unless it is the only one (the Fair Scheduler adds
// it to any tree).
func leafQueues(qs []rm.QueueView) []string {
	var out []string
	for _, q := range qs {
		if q.Leaf && q.Name != "root.default" {
			out = append(out, q.Name)
		}
	}
	if len(out) == 0 {
		out = []string{"root.default"}
	}
	return out
}

// LabelModel is the cluster's node labels in a simulation: each label
// and whether it is exclusive, and the label of each machine by index
// ("" or past the end: the default partition).
type LabelModel struct {
	Partitions map[string]bool
	Machines   []string
}
