// Package executor is the core of Loom's Canary-style executors: the
// long-lived per-app process on a node that runs the app's tasks. The
// NodeManager hands it leases (the app's containers on the node); the AM
// installs each stage's task template once (execution templates), then
// starts every task with a tiny message naming the template, the task
// index and the lease. The executor keeps a local run queue, runs
// built-in task kinds as goroutines and command tasks as processes, and
// reports completions in batches.
//
// A lease runs one task at a time, and only a task whose template's
// demand fits the lease: that is how leases are enforced.
//
// This package is the serving side; the protocol itself (its types and
// the Client that the AM and the NodeManager call) is rpc/execproto.
package executor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc/execproto"
)

// Options configure an executor. Zero values take the defaults.
type Options struct {
	// Report receives completions in batches; it must not block long.
	Report func([]execproto.Completion)
	// BatchSize flushes a batch when it is this full (256); BatchDelay
	// flushes one this old (2 ms).
	BatchSize  int
	BatchDelay time.Duration
	// LimitMemory holds the Go runtime to the sum of the leases' memory
	// plus MemoryOverhead (debug.SetMemoryLimit), so that memory freed by
	// finished tasks goes back to the system before the NodeManager, which
	// measures the process, counts it against the leases still held. Only
	// for an executor that is a process of its own.
	LimitMemory    bool
	MemoryOverhead int64
}

// Executor runs one app's tasks on one node.
type Executor struct {
	opts Options

	mu        sync.Mutex
	templates map[string]*execproto.Template
	leases    map[execproto.LeaseID]*lease
	batch     []execproto.Completion
	timer     *time.Timer
	closed    bool
	running   sync.WaitGroup

	// The run queue: Start appends, one worker drains it. No-op tasks
	// run inline in the worker; others get a goroutine (or a process).
	queue []queued
	spare []queued

	lastFree atomic.Int64 // when returnMemory last ran, UnixNano
	waiting  bool
	wake     *sync.Cond
}

type queued struct {
	id   execproto.LeaseID
	l    *lease
	t    *execproto.Template
	task execproto.TaskID
}

type lease struct {
	resource fairness.Vector
	busy     bool
	task     execproto.TaskID
	cmd      *exec.Cmd
	stop     chan struct{}
}

// New makes an executor.
func New(opts Options) *Executor {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 256
	}
	if opts.BatchDelay <= 0 {
		opts.BatchDelay = 2 * time.Millisecond
	}
	if opts.MemoryOverhead <= 0 {
		opts.MemoryOverhead = 32 << 20
	}
	if opts.Report == nil {
		opts.Report = func([]execproto.Completion) {}
	}
	e := &Executor{opts: opts, templates: map[string]*execproto.Template{}, leases: map[execproto.LeaseID]*lease{}}
	e.wake = sync.NewCond(&e.mu)
	go e.worker()
	return e
}

// worker drains the run queue.
func (e *Executor) worker() {
	var done []execproto.Completion
	for {
		e.mu.Lock()
		for len(e.queue) == 0 && !e.closed {
			e.waiting = true
			e.wake.Wait()
		}
		e.waiting = false
		if len(e.queue) == 0 {
			e.mu.Unlock()
			return
		}
		q := e.queue
		e.queue, e.spare = e.spare[:0], nil
		e.mu.Unlock()
		done = done[:0]
		for _, it := range q {
			if it.t.Kind == execproto.KindNoop {
				now := time.Now()
				done = append(done, execproto.Completion{Task: it.task, Lease: it.id, Started: now, Ended: now})
				continue
			}
			go e.run(it.id, it.l, it.t, it.task)
		}
		e.mu.Lock()
		for i := range done {
			e.finishLocked(done[i].Lease, nil, done[i], false)
		}
		e.spare = q[:0] // the queue's buffer, for reuse
		out := e.takeBatchLocked()
		e.mu.Unlock()
		for range done {
			e.running.Done()
		}
		e.report(out)
	}
}

// Install adds a template. Installing the same template again is a no-op;
// another template under a used id is an error.
func (e *Executor) Install(t execproto.Template) error {
	if t.ID == "" {
		return errors.New("template has no id")
	}
	switch t.Kind {
	case execproto.KindNoop, execproto.KindSynthetic, execproto.KindSleep:
	case execproto.KindCommand:
		if len(t.Command) == 0 {
			return fmt.Errorf("template %s: a command task needs a command", t.ID)
		}
	default:
		return fmt.Errorf("template %s: unknown task kind %q (want noop, synthetic, sleep or command)", t.ID, t.Kind)
	}
	if t.Demand.HasNegative() || t.Duration < 0 {
		return fmt.Errorf("template %s: negative demand %v or duration %v", t.ID, t.Demand, t.Duration)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if old, ok := e.templates[t.ID]; ok {
		if !sameTemplate(old, &t) {
			return fmt.Errorf("template %s is already installed with other contents", t.ID)
		}
		return nil
	}
	t.Command = append([]string(nil), t.Command...)
	e.templates[t.ID] = &t
	return nil
}

func sameTemplate(a, b *execproto.Template) bool {
	if a.Kind != b.Kind || a.Demand != b.Demand || a.Duration != b.Duration || len(a.Command) != len(b.Command) {
		return false
	}
	for i := range a.Command {
		if a.Command[i] != b.Command[i] {
			return false
		}
	}
	return true
}

// Grant hands the executor a lease.
func (e *Executor) Grant(id execproto.LeaseID, resource fairness.Vector) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("executor is closed")
	}
	if _, ok := e.leases[id]; ok {
		return fmt.Errorf("lease %d is already granted", id)
	}
	e.leases[id] = &lease{resource: resource}
	e.limitMemoryLocked()
	return nil
}

// returnMemory gives a finished task's memory back to the system at once
// (at most every 20 ms), for an executor held to its leases' memory: the
// NodeManager measures the process, and memory the runtime merely keeps
// would count against the leases still held.
func (e *Executor) returnMemory(demand fairness.Vector) {
	if !e.opts.LimitMemory || demand[fairness.Memory] < 1 {
		return
	}
	now := time.Now().UnixNano()
	last := e.lastFree.Load()
	if now-last < int64(20*time.Millisecond) || !e.lastFree.CompareAndSwap(last, now) {
		return
	}
	debug.FreeOSMemory()
}

// limitMemoryLocked sets the runtime's soft memory limit to the leases'
// sum plus the overhead. Callers hold mu.
func (e *Executor) limitMemoryLocked() {
	if !e.opts.LimitMemory {
		return
	}
	var mb float64
	for _, l := range e.leases {
		mb += l.resource[fairness.Memory]
	}
	debug.SetMemoryLimit(int64(mb)<<20 + e.opts.MemoryOverhead)
}

// Revoke takes a lease back; a task running on it is stopped and reported
// with exit -1.
func (e *Executor) Revoke(id execproto.LeaseID) error {
	e.mu.Lock()
	l, ok := e.leases[id]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("lease %d is not granted", id)
	}
	delete(e.leases, id)
	e.limitMemoryLocked()
	if l.busy {
		close(l.stop)
		if l.cmd != nil && l.cmd.Process != nil {
			syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	e.mu.Unlock()
	return nil
}

// Start runs task on lease: the tiny message of execution templates.
func (e *Executor) Start(id execproto.LeaseID, task execproto.TaskID) error {
	e.mu.Lock()
	l, ok := e.leases[id]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("task %s/%d: lease %d is not granted", task.Template, task.Index, id)
	}
	if l.busy {
		e.mu.Unlock()
		return fmt.Errorf("task %s/%d: lease %d is running %s/%d", task.Template, task.Index, id, l.task.Template, l.task.Index)
	}
	t, ok := e.templates[task.Template]
	if !ok {
		e.mu.Unlock()
		return fmt.Errorf("task %s/%d: template %s is not installed", task.Template, task.Index, task.Template)
	}
	if !t.Demand.FitsIn(l.resource) {
		e.mu.Unlock()
		return fmt.Errorf("task %s/%d: its demand %v does not fit lease %d of %v", task.Template, task.Index, t.Demand, id, l.resource)
	}
	l.busy, l.task = true, task
	if t.Kind != execproto.KindNoop {
		l.stop = make(chan struct{})
	}
	e.running.Add(1)
	e.queue = append(e.queue, queued{id: id, l: l, t: t, task: task})
	if e.waiting {
		e.waiting = false
		e.wake.Signal()
	}
	long := len(e.queue) >= 1024
	e.mu.Unlock()
	if long {
		// Let the worker drain a long queue while it is cache-hot: on a
		// single core it would otherwise wait for the next preemption.
		runtime.Gosched()
	}
	return nil
}

func (e *Executor) run(id execproto.LeaseID, l *lease, t *execproto.Template, task execproto.TaskID) {
	defer e.running.Done()
	c := execproto.Completion{Task: task, Lease: id, Started: time.Now()}
	switch t.Kind {
	case execproto.KindSynthetic:
		c.Exit, c.Err = synthetic(t.Demand, t.Duration, l.stop)
		e.returnMemory(t.Demand)
	case execproto.KindSleep:
		c.Exit, c.Err = sleep(t.Duration, l.stop)
	case execproto.KindCommand:
		c.Exit, c.Err = e.command(l, t, task)
	}
	c.Ended = time.Now()
	e.mu.Lock()
	e.finishLocked(id, l, c, true)
	out := e.takeBatchLocked()
	e.mu.Unlock()
	e.report(out)
}

// finishLocked frees the task's lease and queues its completion. With
// exact, the lease must be l (a lease revoked and granted again under the
// same id is not freed by the old task); otherwise the id decides.
func (e *Executor) finishLocked(id execproto.LeaseID, l *lease, c execproto.Completion, exact bool) {
	if cur, ok := e.leases[id]; ok && (!exact || cur == l) {
		cur.busy, cur.cmd = false, nil
	}
	e.batch = append(e.batch, c)
}

// takeBatchLocked returns the full batches to report, and arms the timer
// that will report what is left.
func (e *Executor) takeBatchLocked() [][]execproto.Completion {
	var out [][]execproto.Completion
	for len(e.batch) >= e.opts.BatchSize {
		out = append(out, e.batch[:e.opts.BatchSize:e.opts.BatchSize])
		e.batch = e.batch[e.opts.BatchSize:]
	}
	if len(e.batch) == 0 {
		e.batch = nil
	} else if e.timer == nil {
		e.timer = time.AfterFunc(e.opts.BatchDelay, e.flush)
	}
	return out
}

func (e *Executor) report(batches [][]execproto.Completion) {
	for _, b := range batches {
		e.opts.Report(b)
	}
}

// flush reports the pending batch now.
func (e *Executor) flush() {
	e.mu.Lock()
	out := e.batch
	e.batch, e.timer = nil, nil
	e.mu.Unlock()
	if len(out) > 0 {
		e.opts.Report(out)
	}
}

// Close revokes every lease, waits for the tasks to end and reports the
// last batch.
func (e *Executor) Close() {
	e.mu.Lock()
	e.closed = true
	e.wake.Broadcast()
	ids := make([]execproto.LeaseID, 0, len(e.leases))
	for id := range e.leases {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	for _, id := range ids {
		e.Revoke(id)
	}
	e.running.Wait()
	e.mu.Lock()
	if e.timer != nil {
		e.timer.Stop()
	}
	e.mu.Unlock()
	e.flush()
}

// synthetic holds demand's memory, touched, and keeps its vcores busy for
// d, or until stopped.
func sleep(d time.Duration, stop chan struct{}) (int, string) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return 0, ""
	case <-stop:
		return -1, "stopped: its lease was revoked"
	}
}

func synthetic(demand fairness.Vector, d time.Duration, stop chan struct{}) (int, string) {
	mem := make([]byte, int(demand[fairness.Memory])<<20)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	deadline := time.Now().Add(d)
	cores := max(1, int(demand[fairness.VCores]))
	var wg sync.WaitGroup
	stopped := false
	var smu sync.Mutex
	for range cores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for i := 0; ; i++ {
				x += i * i
				if i%4096 == 0 {
					select {
					case <-stop:
						smu.Lock()
						stopped = true
						smu.Unlock()
						return
					default:
					}
					if !time.Now().Before(deadline) {
						mem[0] = byte(x)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if stopped {
		return -1, "stopped: its lease was revoked"
	}
	return 0, ""
}

func (e *Executor) command(l *lease, t *execproto.Template, task execproto.TaskID) (int, string) {
	argv := make([]string, len(t.Command))
	for i, a := range t.Command {
		argv[i] = strings.ReplaceAll(a, "{index}", strconv.Itoa(int(task.Index)))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Its output goes to the executor's own (the container's logs); the
	// end of its stderr also goes into a failure's diagnostics, as YARN
	// puts a failed container's stderr tail in its diagnostics.
	tail := &tailWriter{max: 512}
	cmd.Stdout, cmd.Stderr = os.Stdout, io.MultiWriter(os.Stderr, tail)
	e.mu.Lock()
	select {
	case <-l.stop:
		e.mu.Unlock()
		return -1, "stopped: its lease was revoked"
	default:
	}
	if err := cmd.Start(); err != nil {
		e.mu.Unlock()
		return -1, err.Error()
	}
	l.cmd = cmd
	e.mu.Unlock()
	err := cmd.Wait()
	if err == nil {
		return 0, ""
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		select {
		case <-l.stop:
			return -1, "stopped: its lease was revoked"
		default:
		}
		why := ee.Error()
		if t := strings.TrimSpace(string(tail.buf)); t != "" {
			why += "; stderr: " + t
		}
		return ee.ExitCode(), why
	}
	return -1, err.Error()
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}
