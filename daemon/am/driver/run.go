package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/execproto"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// ExecutorMetaKey is where a NodeManager's startContainers reply names
// the app's executor (nm.ExecutorMetaKey).
const ExecutorMetaKey = "loom.executor"

// Runner runs one DAG job: the am core decides, the RM grants, and each
// task runs on the app's executor on the granted container's node, one
// task per container.
type Runner struct {
	Client *Client
	DAG    *am.DAG
	// TaskKind is the executor task kind stages run as: synthetic (they
	// really use their demand for their duration) or noop.
	TaskKind string
	// Tick bounds how long the AM waits between allocate calls (YARN's
	// AMs heartbeat every second; 100 ms by default).
	Tick time.Duration
	Log  zerolog.Logger
	// HistoryPath, when set, is where the job's history (am.History) is
	// written: every HistoryEvery while it runs, at once when a stage
	// finishes or a task fails, and before the AM unregisters, so that
	// whoever sees the app end can read it all. An
	// AM attempt after the first recovers from the history an earlier
	// attempt of its app left there (see Run).
	HistoryPath  string
	HistoryEvery time.Duration
	// HadoopConf is where the AM finds the NameNodes of its stages'
	// inputs (fs.defaultFS, HA nameservices) and the racks of their
	// hosts (net.topology.*); nil reads core-site.xml and hdfs-site.xml
	// from $HADOOP_CONF_DIR, which the NodeManager sets. InputTimeout
	// bounds learning where the inputs are (DefaultInputTimeout).
	HadoopConf   *hadoopconf.Conf
	InputTimeout time.Duration

	// start is the job's time base: when its first AM attempt started
	// (r.now() counts from it, as the history's times do); attemptStart
	// is when this attempt did.
	start, attemptStart time.Time
	// recovered is what this attempt took over from an earlier one.
	recovered *am.Recovery
	succeeded int // tasks done, recovered ones too: the progress
	// changed says a stage finished or a task failed since the history
	// was last written: it is written at once, so that a later attempt
	// need not rerun a stage whose end the history missed.
	changed bool
	nodes   map[string]*nodeConn
	execs   map[string]*execConn
	running map[int64]*task
	done    chan taskDone
	// lost names executors whose completions could not be read for
	// executorLostAfter: their tasks are failed and run again.
	lost      chan string
	wg        sync.WaitGroup
	cancel    context.CancelFunc
	templates map[string]execproto.Template
	lastWrite time.Time
	// lastWhy is why each task's last attempt failed; failure is the
	// job's diagnostics once it failed.
	lastWhy map[taskKey]string
	failure string
}

type taskKey struct {
	stage string
	task  int
}

type execConn struct {
	client    execproto.Client
	rpc       *rpc.Client
	installed map[string]bool
}

type task struct {
	rec  am.TaskRecord
	node string
	exec string // the executor it was started on ("" until then)
}

type taskDone struct {
	container int64
	ok        bool
	why       string
	// preempted: the RM took the container back for a starved queue
	// (exit status PREEMPTED): the task runs again, not counted as a
	// failure, as YARN's engines count it killed.
	preempted bool
}

// exitPreempted is YARN's ContainerExitStatus.PREEMPTED.
const exitPreempted = -102

func (r *Runner) now() time.Duration { return time.Since(r.start) }

// Run drives the job to its end and unregisters with its final status.
//
// When the history file already holds the history of an earlier attempt
// of this app, its AM died: Run first recovers from it (am.DAG.Recover),
// so tasks that succeeded are not run again, and writes the merged
// history at once. A history it cannot read or trust fails this attempt
// with an error naming the file, rather than running the job again from
// scratch over it (see recoverHistory).
func (r *Runner) Run(ctx context.Context) error {
	if r.Tick <= 0 {
		r.Tick = 100 * time.Millisecond
	}
	if r.TaskKind == "" {
		r.TaskKind = execproto.KindSynthetic
	}
	if r.HistoryEvery <= 0 {
		r.HistoryEvery = time.Second
	}
	r.lastWhy = map[taskKey]string{}
	r.Client.InUse = func(id int64) bool { _, ok := r.running[id]; return ok }
	ctx, r.cancel = context.WithCancel(ctx)
	defer r.close()
	r.start = time.Now()
	r.attemptStart = r.start
	if err := r.recoverHistory(); err != nil {
		r.Log.Error().Err(err).Str("path", r.HistoryPath).Msg("cannot recover from the job history; failing this attempt")
		return err
	}
	if err := r.useInputs(ctx); err != nil {
		// The job cannot run as written (locateInputs says why): it
		// fails, and the message is its diagnostics.
		r.failure = "locating the job's inputs: " + err.Error()
		r.Log.Error().Err(err).Msg("cannot locate the job's inputs; failing the job")
		return errors.Join(err, r.writeHistory(), r.Client.Finish(ctx, false, r.failure))
	}
	r.nodes, r.execs, r.running = map[string]*nodeConn{}, map[string]*execConn{}, map[int64]*task{}
	r.done = make(chan taskDone, 1024)
	r.lost = make(chan string, 16)
	r.templates = map[string]execproto.Template{}
	for _, s := range r.DAG.Job().Stages {
		t := execproto.Template{ID: s.Name, Kind: r.TaskKind, Demand: s.Demand,
			Duration: s.Duration}
		if len(s.Command) > 0 {
			t.Kind, t.Command = execproto.KindCommand, s.Command
		}
		r.templates[s.Name] = t
	}
	// The history so far (after a recovery: merged with the earlier
	// attempts'), before the first decision.
	if err := r.writeHistory(); err != nil {
		r.Log.Warn().Err(err).Str("path", r.HistoryPath).Msg("could not write the job history")
	}
	resp, err := r.Client.Allocate(ctx, am.Request{}, nil, 0)
	respAt := r.now()
	if err != nil {
		return err
	}
	var release []int64
	total := r.DAG.Job().TotalTasks()
	for {
		// Checked before deciding: a recovered job may have ended already
		// (its last AM died before it unregistered).
		if err := r.DAG.Failed(); err != nil {
			r.Client.Allocate(ctx, am.Request{}, release, 1)
			r.failure = err.Error()
			if why := r.lastWhy[r.failedTask()]; why != "" {
				r.failure += "; its last attempt: " + why
			}
			return errors.Join(err, r.writeHistory(), r.Client.Finish(ctx, false, r.failure))
		}
		if r.DAG.Finished() {
			r.Client.Allocate(ctx, am.Request{}, release, 1)
			if err := r.writeHistory(); err != nil {
				return errors.Join(err, r.Client.Finish(ctx, false, "writing the history: "+err.Error()))
			}
			diag := fmt.Sprintf("%d tasks in %v", len(r.DAG.History()), r.now().Round(time.Millisecond))
			if r.recovered != nil {
				diag += fmt.Sprintf(" (recovered from attempt %d: %d tasks done before)", r.recovered.From, r.recovered.Tasks)
			}
			return r.Client.Finish(ctx, true, diag)
		}
		now := r.now()
		req := r.DAG.Decide(now, resp.Share, resp.Capacity, resp.PAltruism, altruism.StepsSince(resp.Growth, now-respAt))
		progress := float32(r.succeeded) / float32(max(total, 1))
		if resp, err = r.Client.Allocate(ctx, req, release, min(progress, 1)); err != nil {
			return err
		}
		respAt = r.now()
		release = nil
		release = append(release, r.launch(ctx, resp)...)
		for _, cs := range resp.Completed {
			// A container the RM ended under a running task: its node
			// was lost, or it was killed.
			if _, ok := r.running[cs.GetContainerId().GetId()]; ok {
				r.finished(taskDone{container: cs.GetContainerId().GetId(), preempted: cs.GetExitStatus() == exitPreempted,
					why: fmt.Sprintf("container ended by the RM (exit %d): %s", cs.GetExitStatus(), cs.GetDiagnostics())})
			}
		}
		// Wait for a completion, a due wake, or the tick.
		wait := r.Tick
		if req.HasWake {
			wait = min(wait, max(req.Wake-r.now(), time.Millisecond))
		}
		timer := time.NewTimer(wait)
		select {
		case d := <-r.done:
			release = append(release, r.finished(d)...)
		case addr := <-r.lost:
			release = append(release, r.lostExecutor(addr)...)
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
		timer.Stop()
		release = r.drainDone(release)
		if r.changed || time.Since(r.lastWrite) >= r.HistoryEvery {
			if err := r.writeHistory(); err != nil {
				r.Log.Warn().Err(err).Str("path", r.HistoryPath).Msg("could not write the job history")
			}
		}
	}
}

// useInputs gives the AM core where each task's input is, when stages
// name HDFS inputs: their blocks' hosts, read from the NameNode, and
// those hosts' racks. Stages a recovered attempt found done are not
// looked up.
func (r *Runner) useInputs(ctx context.Context) error {
	var done []string
	if r.recovered != nil {
		done = r.recovered.Stages
	}
	il, err := locateInputs(ctx, r.DAG.Job(), done, r.HadoopConf, r.InputTimeout, r.Log)
	if err != nil || il == nil {
		return err
	}
	return r.DAG.UseInputs(il.inputs, il.rack)
}

// failedTask is the task whose attempts ran out: the last one that failed.
func (r *Runner) failedTask() taskKey {
	h := r.DAG.History()
	for i := len(h) - 1; i >= 0; i-- {
		if !h[i].Succeeded && !h[i].Lost {
			return taskKey{h[i].Stage, h[i].Task}
		}
	}
	return taskKey{}
}

// finished reports a task's end to the core and releases its container.
func (r *Runner) finished(d taskDone) []int64 {
	t, ok := r.running[d.container]
	if !ok {
		return nil
	}
	delete(r.running, d.container)
	var changed bool
	var err error
	if d.preempted {
		changed, err = r.DAG.Preempted(r.now(), d.container)
	} else {
		changed, err = r.DAG.Completed(r.now(), d.container, d.ok)
	}
	if err != nil {
		r.Log.Error().Err(err).Msg("completion the core does not know")
	} else if d.ok {
		r.succeeded++
	}
	r.changed = r.changed || changed
	switch {
	case d.preempted:
		r.Log.Info().Str("stage", t.rec.Stage).Int("task", t.rec.Task).Str("why", d.why).Msg("task preempted: it runs again")
	case !d.ok:
		r.lastWhy[taskKey{t.rec.Stage, t.rec.Task}] = d.why
		r.Log.Warn().Str("stage", t.rec.Stage).Int("task", t.rec.Task).Str("why", d.why).Msg("task failed")
	}
	return []int64{d.container}
}

// launch binds each granted container to a task, starts the containers
// on their nodes as executor leases, and starts the tasks; it returns the
// containers no task wanted.
func (r *Runner) launch(ctx context.Context, resp *Response) []int64 {
	var release []int64
	byNode := map[string][]am.TaskRecord{}
	for _, g := range resp.Granted {
		rec, ok := r.DAG.Bind(r.now(), g)
		if !ok {
			release = append(release, g.ID)
			continue
		}
		r.running[g.ID] = &task{rec: rec, node: g.Node}
		byNode[g.Node] = append(byNode[g.Node], rec)
	}
	for node, recs := range byNode {
		if err := r.startOn(ctx, node, recs, resp); err != nil {
			r.Log.Warn().Err(err).Str("node", node).Msg("could not start tasks")
			for _, rec := range recs {
				r.done <- taskDone{container: rec.Container, why: err.Error()}
			}
		}
	}
	return release
}

func (r *Runner) startOn(ctx context.Context, node string, recs []am.TaskRecord, resp *Response) error {
	// The node's container manager takes the NMToken the RM sent for
	// it, as a YARN NodeManager does; a new token (after the RM rolled
	// its key) means a new connection.
	tok := r.Client.NMToken(node)
	if tok == nil {
		return rpc.Errorf(rpc.ClassInvalidToken, "No NMToken sent for %s", node)
	}
	nc, ok := r.nodes[node]
	if !ok || nc.token != tok {
		if ok {
			nc.Close()
		}
		nc = &nodeConn{Client: rpc.NewClient(node, rpc.ClientOptions{User: r.Client.attempt, Token: tok}), token: tok}
		r.nodes[node] = nc
	}
	cm := nc.Client
	req := &pb.StartContainersRequestProto{}
	for _, rec := range recs {
		req.StartContainerRequest = append(req.StartContainerRequest, &pb.StartContainerRequestProto{
			ContainerToken: resp.Tokens[rec.Container].GetContainerToken(),
			ContainerLaunchContext: &pb.ContainerLaunchContextProto{Environment: []*pb.StringStringMapProto{
				{Key: proto.String("LOOM_EXECUTOR"), Value: proto.String("1")}}}})
	}
	sr, err := rpc.ContainerManagementClient{C: cm}.StartContainers(ctx, req)
	if err != nil {
		return err
	}
	if f := sr.GetFailedRequests(); len(f) > 0 {
		return fmt.Errorf("%s: %s", f[0].GetException().GetClassName(), f[0].GetException().GetMessage())
	}
	addr := ""
	for _, kv := range sr.GetServicesMetaData() {
		if kv.GetKey() == ExecutorMetaKey {
			addr = string(kv.GetValue())
		}
	}
	if addr == "" {
		return fmt.Errorf("node %s named no executor in its startContainers reply", node)
	}
	x, err := r.executor(ctx, addr)
	if err != nil {
		return err
	}
	starts := make([]execproto.TaskStart, 0, len(recs))
	for _, rec := range recs {
		if t := r.running[rec.Container]; t != nil {
			t.exec = addr
		}
		if !x.installed[rec.Stage] {
			if err := x.client.Install(ctx, r.templates[rec.Stage]); err != nil {
				return err
			}
			x.installed[rec.Stage] = true
		}
		starts = append(starts, execproto.TaskStart{Lease: execproto.LeaseID(rec.Container),
			Task: execproto.TaskID{Template: rec.Stage, Index: int32(rec.Task), Attempt: int32(rec.Attempt)}})
	}
	refused, err := x.client.StartTasks(ctx, starts)
	if err != nil {
		return err
	}
	for _, f := range refused {
		r.done <- taskDone{container: int64(f.Task.Lease), why: "refused by the executor: " + f.Reason}
	}
	return nil
}

// nodeConn is a connection to a node's container manager and the NMToken
// it authenticated with.
type nodeConn struct {
	*rpc.Client
	token *hadooppb.TokenProto
}

// executorLostAfter is how long an executor's completions may go unread
// (every call failing) before its tasks are given up for lost.
var executorLostAfter = 15 * time.Second

// executor connects to an executor and starts collecting its completions.
// A call that fails is tried again, backing off, so that a dropped
// connection loses no completion the executor still holds; only an
// executor unreachable for executorLostAfter is reported lost (to the
// main loop, which fails its tasks so that they run again and forgets
// it, so that a later start connects afresh).
func (r *Runner) executor(ctx context.Context, addr string) (*execConn, error) {
	if x, ok := r.execs[addr]; ok {
		return x, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("executor address %q: %w", addr, err)
	}
	cl := rpc.NewClient(addr, rpc.ClientOptions{User: r.Client.attempt})
	x := &execConn{client: execproto.Client{C: cl}, rpc: cl, installed: map[string]bool{}}
	r.execs[addr] = x
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		var failing time.Time
		wait := 100 * time.Millisecond
		for ctx.Err() == nil {
			cs, err := x.client.WaitCompletions(ctx, time.Second, 0)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if failing.IsZero() {
					failing = time.Now()
					r.Log.Warn().Err(err).Str("executor", addr).Msg("reading the executor's completions failed; trying again")
				}
				if time.Since(failing) >= executorLostAfter {
					r.Log.Warn().Err(err).Str("executor", addr).Dur("failing_for", time.Since(failing).Round(time.Millisecond)).
						Msg("lost the executor: its tasks run again")
					select {
					case r.lost <- addr:
					case <-ctx.Done():
					}
					return
				}
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return
				}
				wait = min(2*wait, 2*time.Second)
				continue
			}
			if !failing.IsZero() {
				r.Log.Info().Str("executor", addr).Dur("failed_for", time.Since(failing).Round(time.Millisecond)).Msg("reading the executor's completions again")
				failing, wait = time.Time{}, 100*time.Millisecond
			}
			for _, c := range cs {
				why := c.Err
				if c.Exit != 0 && why == "" {
					why = "exit " + strconv.Itoa(c.Exit)
				}
				select {
				case r.done <- taskDone{container: int64(c.Lease), ok: c.Exit == 0, why: why}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return x, nil
}

// drainDone takes in every completion already read, adding their
// containers to release.
func (r *Runner) drainDone(release []int64) []int64 {
	for {
		select {
		case d := <-r.done:
			release = append(release, r.finished(d)...)
		default:
			return release
		}
	}
}

// lostExecutor forgets an executor whose completions cannot be read and
// fails the tasks started on it; their containers are released.
func (r *Runner) lostExecutor(addr string) []int64 {
	if x, ok := r.execs[addr]; ok {
		x.rpc.Close()
		delete(r.execs, addr)
	}
	// Any completion already read comes first.
	release := r.drainDone(nil)
	for id, t := range r.running {
		if t.exec == addr {
			release = append(release, r.finished(taskDone{container: id, why: "lost its executor " + addr + ": its completions could not be read"})...)
		}
	}
	return release
}

func (r *Runner) close() {
	r.cancel()
	r.wg.Wait()
	for _, x := range r.execs {
		x.rpc.Close()
	}
	for _, c := range r.nodes {
		c.Close()
	}
}

// writeHistory writes the job's history file, if it has one, by
// renaming a complete file over the old one, so that a reader never sees
// half a history.
func (r *Runner) writeHistory() error {
	r.lastWrite, r.changed = time.Now(), false
	if r.HistoryPath == "" {
		return nil
	}
	h := r.DAG.Snapshot(r.now())
	h.StartUnixMs, h.UpdatedUnixMs = r.start.UnixMilli(), r.lastWrite.UnixMilli()
	h.AttemptStartMs = r.attemptStart.Sub(r.start).Milliseconds()
	if r.recovered != nil {
		h.RecoveredFrom = r.recovered.From
	}
	if id, err := rpc.ParseAttemptID(r.Client.attempt); err == nil {
		h.App, h.Attempt = rpc.AppIDString(id.GetApplicationId()), int(id.GetAttemptId())
	}
	if r.failure != "" {
		h.Diagnostics = r.failure
	}
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	tmp := r.HistoryPath + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, r.HistoryPath)
}

// AttemptNumber is the attempt number in an attempt id
// (appattempt_<cluster>_<app>_<attempt>), 0 when it is not one.
func AttemptNumber(attempt string) int {
	id, err := rpc.ParseAttemptID(attempt)
	if err != nil {
		return 0
	}
	return int(id.GetAttemptId())
}

// recoverHistory takes over the job from the history an earlier attempt
// of this app left at HistoryPath, like MapReduce's AM recovering from
// its .jhist: what it finished is not run again, and this attempt keeps
// the history's time base. No file, or one of another app (a path given
// by hand and reused), starts the job afresh.
//
// A file it cannot read, parse or match to the job is an error: the
// attempt fails with it (its AM exits non-zero, and the message is in its
// log and the container's diagnostics). Running everything again instead
// would rerun tasks with side effects and then overwrite the only record
// of what the earlier attempts did; since the history is written whole
// and renamed into place, a bad file is not a crash's leftover but
// something to look at.
func (r *Runner) recoverHistory() error {
	if r.HistoryPath == "" {
		return nil
	}
	b, err := os.ReadFile(r.HistoryPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the job history to recover from: %w", err)
	}
	id, err := rpc.ParseAttemptID(r.Client.attempt)
	if err != nil {
		return nil // no attempt of an app: nothing to recover for
	}
	app, attempt := rpc.AppIDString(id.GetApplicationId()), int(id.GetAttemptId())
	var h am.History
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("the job history %s is corrupt (%v); attempt %d of %s will not run the job again over it: move it aside to start from scratch",
			r.HistoryPath, err, attempt, app)
	}
	switch {
	case h.App != app:
		r.Log.Warn().Str("path", r.HistoryPath).Str("its_app", h.App).Str("app", app).
			Msg("the history file there is another app's: starting afresh and replacing it")
		return nil
	case h.Attempt >= attempt:
		return fmt.Errorf("the job history %s was written by attempt %d of %s, not an earlier one than this attempt %d",
			r.HistoryPath, h.Attempt, app, attempt)
	case h.StartUnixMs <= 0:
		return fmt.Errorf("the job history %s has no start_unix_ms: its task times cannot be placed", r.HistoryPath)
	}
	rc, err := r.DAG.Recover(h)
	if err != nil {
		return fmt.Errorf("recovering from the job history %s: %w", r.HistoryPath, err)
	}
	r.recovered = &rc
	r.succeeded = rc.Tasks
	// Keep the history's time base, the job's first AM start, with the
	// monotonic clock of this one.
	r.start = r.attemptStart.Add(-time.Duration(r.attemptStart.UnixMilli()-h.StartUnixMs) * time.Millisecond)
	total := r.DAG.Job().TotalTasks()
	r.Log.Info().Str("path", r.HistoryPath).Int("from_attempt", rc.From).Strs("stages_done", rc.Stages).
		Int("tasks_done", rc.Tasks).Int("tasks_left", total-rc.Tasks).Int("lost_attempts", rc.Lost).
		Int("failed_attempts", rc.Failed).Dur("job_age", r.now().Round(time.Millisecond)).
		Msgf("recovered from attempt %d's history: %d of %d stages and %d of %d tasks done; the rest run now",
			rc.From, len(rc.Stages), len(r.DAG.Job().Stages), rc.Tasks, total)
	return nil // Run writes the merged history next, before its first decision
}
