package bench

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/rm/server"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// LoadHeartbeatP99Target is the load test's latency target, from the
// reliability issue: heartbeats handled with a p99 under 10 ms. Its
// correctness targets (every task completed exactly once, every app
// SUCCEEDED, nothing lost) are LoadReport.Failures.
const LoadHeartbeatP99Target = 10 * time.Millisecond

// Issue 19's scale targets: at LoadScaleNodes NMs or more, at least
// LoadAllocationsTarget containers allocated a second over the whole
// run, and the RM's memory under LoadRMMemoryTarget.
const (
	LoadScaleNodes        = 10000
	LoadAllocationsTarget = 10000
	LoadRMMemoryTarget    = 2 << 30
)

// envApp names, in an AM container's launch environment, which of the
// load test's apps the AM drives; the submitter sets it, as a real
// client puts its job's description in the AM's environment.
const envApp = "LOOM_BENCH_APP"

// Every task and every AM container asks for one vcore and 1 GB.
const (
	loadTaskMB     = 1024
	loadTaskVCores = 1
)

// LoadOptions shape a load test: a real RM in process, simulated
// NodeManagers and AMs driving it over real RPC on loopback.
type LoadOptions struct {
	// Nodes is how many simulated NodeManagers register and heartbeat.
	Nodes int
	// Apps are submitted at once over ApplicationClientProtocol; Tasks
	// is their total, spread from 0.1x to 1.9x the mean per app.
	Apps, Tasks int
	// TaskTime is a task's mean run time; each draws 0.5x to 1.5x of it.
	TaskTime time.Duration
	// Heartbeat is the NMs' heartbeat interval, set as the RM's
	// (loom.heartbeat.interval-ms).
	Heartbeat time.Duration
	// AsyncInterval, when positive, has the RM schedule asynchronously
	// (loom.scheduler.async.interval-ms).
	AsyncInterval time.Duration
	// AMInterval is the wait between an AM's allocate calls (Loom's DAG
	// AM ticks at 100 ms).
	AMInterval time.Duration
	// NodeVCores and NodeMB are each NodeManager's capacity.
	NodeVCores, NodeMB int
	// Altruistic is the fraction of each AM's outstanding asks it sends
	// as ALTRUISTIC (the rest DEFAULT), so the leftover path runs too.
	Altruistic float64
	// NMConns is how many connections the NMs share to the RM's
	// resource tracker; 0 gives each NM its own, as real NMs have.
	NMConns int
	// Timeout bounds the run; apps not finished by then count as lost.
	Timeout time.Duration
	// Seed draws the task durations.
	Seed uint64
	// RMCommand, when set, runs the RM as a process of its own started
	// with this command (the loom binary and "rm"), configured with -D
	// keys, so that its CPU and memory are measured apart from the
	// simulated NMs' and AMs'. Empty: the RM runs in this process.
	RMCommand []string
	// SimProcs, when positive and the RM runs apart (RMCommand), is this
	// process's GOMAXPROCS for the run: the simulation stands in for
	// thousands of machines, and a reply must not wait in it for its
	// own scheduler. With as many Ps as cores, once every P is busy Go
	// polls the network only from sysmon, every 10 ms, so each reply
	// can wait up to that long before its simulated NM reads it: the
	// generator's delay, measured as the RM's. More Ps than cores leave
	// one idle in epoll to take a reply as it arrives.
	SimProcs int
	// SimGCPercent, when positive and the RM runs apart, is this
	// process's GOGC for the run (debug.SetGCPercent). The simulation's
	// collections stand for nothing in the cluster it simulates (10,000
	// NMs share no heap), but at SimProcs Ps a collection's mark workers
	// (a quarter of the Ps) take both of a small machine's cores from the
	// RM while they run.
	SimGCPercent int
	// Progress, when set, is called about five times a second with the
	// tasks completed so far, from one goroutine.
	Progress func(done, total int)
}

// DefaultSimProcs is LoadOptions.SimProcs' default: on a 2-core machine
// at 10,000 NMs, 8 Ps for the simulation halved the heartbeat p99 against
// 2 (65-87 ms against 134-187 ms, 3 runs each, alternated), 4 in
// between (83-136 ms).
const DefaultSimProcs = 8

// DefaultSimGCPercent is LoadOptions.SimGCPercent's default: at 10,000
// NMs, 2 cores, 8 Ps, it left the simulation 1-2 collections in a run
// instead of 8-9 (peak RSS about 1 GB against 0.43 GB) and gave heartbeat
// p99 26-38 ms against 38-57 ms (3 runs each, alternated; GOGC 400: 28-48
// ms).
const DefaultSimGCPercent = 1000

// DefaultLoadOptions are the issue's: 1,000 NMs, 100 apps, 100,000
// tasks, YARN's 1 s heartbeat. Nodes of 4 vcores (3,900 task slots
// beside the AMs) and tasks of 2 s on average keep the cluster full and
// make the run last some 70 s: a slot turns over every 2.5 s or so (the
// task, then up to a heartbeat until its NM reports it and the RM
// grants the room again, then up to an AM tick until it is started),
// some 1,500 allocations a second.
func DefaultLoadOptions() LoadOptions {
	return LoadOptions{Nodes: 1000, Apps: 100, Tasks: 100000, TaskTime: 2 * time.Second, Heartbeat: time.Second,
		AMInterval: 100 * time.Millisecond, NodeVCores: 4, NodeMB: 4096, Altruistic: 0.25, Timeout: 10 * time.Minute, Seed: 1,
		SimProcs: DefaultSimProcs, SimGCPercent: DefaultSimGCPercent}
}

func (o LoadOptions) check() error {
	switch {
	case o.Nodes <= 0 || o.Apps <= 0:
		return fmt.Errorf("need at least one node and one app (nodes %d, apps %d)", o.Nodes, o.Apps)
	case o.Nodes > maxSimNodes:
		return fmt.Errorf("%d simulated NMs: at most %d, each at a loopback address of its own", o.Nodes, maxSimNodes)
	case o.Tasks < o.Apps:
		return fmt.Errorf("%d tasks cannot give each of %d apps one", o.Tasks, o.Apps)
	case o.TaskTime <= 0 || o.Heartbeat <= 0 || o.AMInterval <= 0 || o.Timeout <= 0:
		return fmt.Errorf("task time, heartbeat, AM interval and timeout must be positive")
	case o.Heartbeat%time.Millisecond != 0:
		return fmt.Errorf("heartbeat %v is not a whole number of milliseconds", o.Heartbeat)
	case o.NodeVCores < loadTaskVCores || o.NodeMB < loadTaskMB:
		return fmt.Errorf("a node of %d vcores and %d MB cannot hold a task of %d vcore and %d MB",
			o.NodeVCores, o.NodeMB, loadTaskVCores, loadTaskMB)
	case !(o.Altruistic >= 0 && o.Altruistic <= 1):
		return fmt.Errorf("altruistic fraction %v is not between 0 and 1", o.Altruistic)
	case o.NMConns < 0:
		return fmt.Errorf("nm connections %d is negative", o.NMConns)
	}
	return nil
}

// AppTasks spreads total tasks over apps linearly from 0.1x to 1.9x the
// mean (1,000 tasks each on average: 10 to 1,900 for the defaults), so
// that apps finish one after another rather than all at the end.
func AppTasks(apps, total int) []int {
	w := make([]float64, apps)
	var sum float64
	for k := range w {
		w[k] = 1
		if apps > 1 {
			w[k] = 0.1 + 1.8*float64(k)/float64(apps-1)
		}
		sum += w[k]
	}
	n := make([]int, apps)
	given := 0
	for k := range n {
		n[k] = max(1, int(float64(total)*w[k]/sum))
		given += n[k]
	}
	// Rounding: the largest apps take or give back the difference.
	for k := apps - 1; given != total; k = (k - 1 + apps) % apps {
		switch {
		case given < total:
			n[k]++
			given++
		case n[k] > 1:
			n[k]--
			given--
		}
	}
	return n
}

// LoadSecond is one second of a load test's run.
type LoadSecond struct {
	// Second counts from the first submission.
	Second int
	// Heartbeats sent in that second, and their round trips' p50 and p99.
	Heartbeats                 int
	HeartbeatP50, HeartbeatP99 time.Duration
	// Allocations are task containers AMs received in that second.
	Allocations int64
	// OtherCPU is other processes' CPU in that second, in clock ticks
	// (-1 unknown).
	OtherCPU int64
}

// LoadReport is what a load test measured, and its checks.
type LoadReport struct {
	Options LoadOptions
	// Submitted is how long the apps took to submit, from the run's start.
	Submitted time.Duration
	// Setup is the time to start the RM and register the NMs; Wall is
	// from the first submission to the last app's finish.
	Setup, Wall time.Duration
	// AppTasksMin and AppTasksMax are the smallest and largest app.
	AppTasksMin, AppTasksMax int
	// SimProcs is the simulation's GOMAXPROCS during the run.
	SimProcs int
	// RMCollections and SimCollections are the garbage collections the
	// RM's process (go_gc_duration_seconds_count) and this one ran
	// during the run.
	RMCollections, SimCollections int

	// Heartbeats is how many node heartbeats ran during the run; their
	// round trips are measured by the NM around nodeHeartbeat.
	Heartbeats                        int
	HeartbeatP50, HeartbeatP99, HBMax time.Duration
	// HeartbeatOverTarget counts heartbeats slower than the target;
	// HeartbeatsMissed those answered later than the heartbeat interval,
	// by when the node should have sent its next one (issue 19: none,
	// even under a competing CPU load).
	HeartbeatOverTarget, HeartbeatsMissed int
	// QuietP99 is the p99 over the seconds in which other processes used
	// under a tenth of a core (QuietSeconds of Seconds; QuietHeartbeats
	// heartbeats): the RM's own tail, apart from a busy machine's.
	QuietP99              time.Duration
	QuietHeartbeats       int
	QuietSeconds, Seconds int
	// DecisionP50 and DecisionP99 are the RM's own scheduling pass per
	// heartbeat (loom_heartbeat_decision_seconds, interpolated within its
	// buckets), over DecisionCount passes.
	DecisionP50, DecisionP99 time.Duration
	DecisionCount            int
	// RMHeartbeatQueueP99 and RMHeartbeatP50/P99 are the RM's own view
	// of the heartbeats (loom_rpc_queue_seconds and
	// loom_rpc_processing_seconds of nodeHeartbeat, interpolated within
	// their buckets), over RMHeartbeats calls: from the call read whole
	// to its handler starting, and the handler's time. What the round
	// trip adds to them is the network, the time a call waits in the
	// socket for the RM to read it and the generator's own delays.
	RMHeartbeatQueueP99, RMHeartbeatP50, RMHeartbeatP99 time.Duration
	RMHeartbeats                                        int
	// Allocates are the AMs' allocate calls, with their round trips.
	Allocates                int
	AllocateP50, AllocateP99 time.Duration
	// AskToGrant tasks' scheduling latency, ask to grant: from the
	// allocate call that first asked for a task's container (again for a
	// task run again) to the reply that brought it, at p50 and p99; on a
	// cluster the offered load fills this is mostly the wait for room.
	// FirstGrant apps' first task container, from the app's first ask
	// (YARN's AppAttemptFirstContainerAllocationDelay, for the tasks).
	AskToGrant, FirstGrant       int
	AskToGrantP50, AskToGrantP99 time.Duration
	FirstGrantP50, FirstGrantP99 time.Duration

	// Allocations are task containers the AMs received; RMAllocations
	// every container the RM allocated (AM containers too), from
	// loom_allocations_total.
	Allocations, RMAllocations int
	// AllocationsPerSecond is over the run; AllocationsMedian the median
	// of the per-second counts from the first allocation to the last.
	AllocationsPerSecond, AllocationsMedian, AllocationsPeak float64
	// Altruistic are task containers granted for ALTRUISTIC asks.
	Altruistic int

	// TasksOnce are tasks whose one successful completion the AM saw;
	// TasksTwice those seen completing more than once, TasksNever those
	// never seen completing.
	TasksOnce, TasksTwice, TasksNever int
	// Retried are tasks run again after a container ended unsuccessfully.
	Retried int
	// Series is the run second by second, to see where a tail came from
	// (a burst of starting AMs, a garbage collection, a busy machine).
	Series []LoadSecond
	// AppsSucceeded are apps the RM reports FINISHED with SUCCEEDED.
	AppsSucceeded int
	// Released are containers the AMs gave back unused.
	Released int
	// Unaccounted are containers an AM received and never saw end
	// (completed or released); Undelivered those the RM allocated that no
	// AM received; RMLive those the RM still runs after every app ended;
	// RMTaskSuccesses the task containers the RM ended with exit 0.
	Unaccounted, Undelivered, RMLive, RMTaskSuccesses int
	// DuplicateGrants and DuplicateCompletions are containers an AM was
	// given, or told had ended, twice; UnknownCompletions ended ones it
	// was never given.
	DuplicateGrants, DuplicateCompletions, UnknownCompletions int
	// Errors are failed calls and refused heartbeats (the first few).
	Errors     []string
	ErrorCount int
	// PeakRSS is the process's, RM and simulation together (the
	// simulation's alone when the RM runs apart).
	PeakRSS uint64
	// RMCPU and RMPeakRSS are the RM's own, when it runs as a process of
	// its own (LoadOptions.RMCommand); zero otherwise.
	RMCPU     time.Duration
	RMPeakRSS uint64
	// CPU is the CPU time this process used over the run, and OtherCPU
	// what the rest of the machine used meanwhile (from /proc; zero where
	// it is missing): on a shared 2-core machine, other work is the first
	// suspect for a latency tail.
	CPU, OtherCPU time.Duration
}

// Failures lists the correctness targets the run missed: none when every
// task completed exactly once and nothing was lost.
func (r *LoadReport) Failures() []string {
	var f []string
	o := r.Options
	if r.TasksOnce != o.Tasks {
		f = append(f, fmt.Sprintf("%d of %d tasks completed exactly once (%d more than once, %d never)",
			r.TasksOnce, o.Tasks, r.TasksTwice, r.TasksNever))
	}
	if r.AppsSucceeded != o.Apps {
		f = append(f, fmt.Sprintf("%d of %d apps FINISHED SUCCEEDED", r.AppsSucceeded, o.Apps))
	}
	if r.RMTaskSuccesses != o.Tasks {
		f = append(f, fmt.Sprintf("the RM ended %d task containers with exit 0, want %d", r.RMTaskSuccesses, o.Tasks))
	}
	for _, c := range []struct {
		n    int
		what string
	}{
		{r.Unaccounted, "containers granted to an AM never completed or released"},
		{r.Undelivered, "containers allocated by the RM never reached an AM"},
		{r.RMLive, "containers still live at the RM after every app ended"},
		{r.DuplicateGrants, "containers granted twice"},
		{r.DuplicateCompletions, "container completions reported twice"},
		{r.UnknownCompletions, "completions of containers never granted"},
		{r.ErrorCount, "errors"},
	} {
		if c.n != 0 {
			f = append(f, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return f
}

// WriteTable prints the figures beside their targets.
func (r *LoadReport) WriteTable(w io.Writer) error {
	o := r.Options
	conns := "one per NM"
	if o.NMConns > 0 {
		conns = fmt.Sprintf("%d shared", o.NMConns)
	}
	fmt.Fprintf(w, "%d simulated NMs (%d vcores, %d MB; heartbeat %v; tracker connections: %s), %d apps, %d tasks (%d-%d per app, %v mean, %.0f%% asked ALTRUISTIC), AMs allocate every %v\n",
		o.Nodes, o.NodeVCores, o.NodeMB, o.Heartbeat, conns, o.Apps, o.Tasks, r.AppTasksMin, r.AppTasksMax, o.TaskTime,
		100*o.Altruistic, o.AMInterval)
	fmt.Fprintf(w, "ran %v after %v of setup (apps submitted in the first %v); ", r.Wall.Round(10*time.Millisecond), r.Setup.Round(10*time.Millisecond),
		r.Submitted.Round(10*time.Millisecond))
	if len(o.RMCommand) > 0 {
		// The RM ran apart: its figures, then the simulation's.
		gogc := ""
		if o.SimGCPercent > 0 {
			gogc = fmt.Sprintf(", GOGC %d", o.SimGCPercent)
		}
		fmt.Fprintf(w, "the RM's process: peak RSS %d MiB, CPU %.1f s (%.2f cores); the simulation's (GOMAXPROCS %d%s): peak RSS %d MiB",
			r.RMPeakRSS>>20, r.RMCPU.Seconds(), r.RMCPU.Seconds()/max(r.Wall.Seconds(), 1e-9), r.SimProcs, gogc, r.PeakRSS>>20)
	} else {
		fmt.Fprintf(w, "peak RSS %d MiB (RM and simulation)", r.PeakRSS>>20)
	}
	if r.CPU > 0 {
		fmt.Fprintf(w, "; CPU %.1f s, other processes %.1f s (%s)", r.CPU.Seconds(), r.OtherCPU.Seconds(), busyness(r.OtherCPU, r.Wall))
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tmeasured\ttarget\tverdict")
	row := func(name, measured, target, verdict string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, measured, target, verdict)
	}
	p99 := "met"
	if r.HeartbeatP99 >= LoadHeartbeatP99Target {
		p99 = fmt.Sprintf("MISSED by %.0f%%", 100*(float64(r.HeartbeatP99)/float64(LoadHeartbeatP99Target)-1))
		if r.CPU > 0 && busyness(r.OtherCPU, r.Wall) != "quiet" {
			p99 += " (machine busy)"
		}
	}
	row("heartbeat round trip p50", fmtDur(r.HeartbeatP50), "", "")
	row("heartbeat round trip p99", fmtDur(r.HeartbeatP99), "< "+LoadHeartbeatP99Target.String(), p99)
	if r.Seconds > 0 {
		q := "none quiet"
		if r.QuietHeartbeats > 0 {
			q = fmtDur(r.QuietP99)
		}
		row("heartbeat round trip p99, quiet seconds", q, "", fmt.Sprintf("(%d of %d seconds, %d heartbeats)", r.QuietSeconds, r.Seconds, r.QuietHeartbeats))
	}
	row("heartbeat round trip max", fmtDur(r.HBMax), "", "")
	row("heartbeats (over 10ms)", fmt.Sprintf("%d (%d)", r.Heartbeats, r.HeartbeatOverTarget), "", "")
	missed := "met"
	if r.HeartbeatsMissed > 0 {
		missed = "MISSED"
	}
	row("heartbeats answered after the interval ("+o.Heartbeat.String()+")", strconv.Itoa(r.HeartbeatsMissed), "0", missed)
	row("RM decision per pass p50 / p99", fmtDur(r.DecisionP50)+" / "+fmtDur(r.DecisionP99), "", fmt.Sprintf("(%d passes)", r.DecisionCount))
	if r.RMHeartbeats > 0 {
		row("RM's heartbeat handling p50 / p99 (queued p99)", fmtDur(r.RMHeartbeatP50)+" / "+fmtDur(r.RMHeartbeatP99)+" ("+fmtDur(r.RMHeartbeatQueueP99)+")",
			"", fmt.Sprintf("(%d calls, the RM's metrics)", r.RMHeartbeats))
	}
	if len(o.RMCommand) > 0 {
		// Each process's marking takes CPU from the other's on a small
		// machine: the seconds over the target line up with them.
		row("garbage collections during the run, the RM's / the simulation's", fmt.Sprintf("%d / %d", r.RMCollections, r.SimCollections), "", "")
	}
	row("allocate round trip p50 / p99", fmtDur(r.AllocateP50)+" / "+fmtDur(r.AllocateP99), "", fmt.Sprintf("(%d calls)", r.Allocates))
	row("scheduling latency, ask to grant p50 / p99", fmtDur(r.AskToGrantP50)+" / "+fmtDur(r.AskToGrantP99), "",
		fmt.Sprintf("(%d task containers: the wait for room included)", r.AskToGrant))
	row("an app's first task container, from its first ask p50 / p99", fmtDur(r.FirstGrantP50)+" / "+fmtDur(r.FirstGrantP99), "",
		fmt.Sprintf("(%d apps)", r.FirstGrant))
	row("allocations/s, median of seconds", fmt.Sprintf("%.0f", r.AllocationsMedian), "", fmt.Sprintf("(peak %.0f)", r.AllocationsPeak))
	// Issue 19's targets at 10,000 NMs: allocations per second over the
	// whole run, and the RM's memory (measurable apart when it runs in a
	// process of its own).
	allocTarget, allocVerdict := "", fmt.Sprintf("(%d task containers, %d ALTRUISTIC)", r.Allocations, r.Altruistic)
	// A run that cannot fill the cluster once (a heartbeats-only run:
	// --apps 10 --tasks 20) offers too little to allocate for the target.
	switch slots := o.Nodes * o.NodeVCores; {
	case o.Nodes < LoadScaleNodes:
	case o.Tasks < slots:
		allocVerdict = fmt.Sprintf("(no target: %d tasks cannot fill the %d slots once) ", o.Tasks, slots) + allocVerdict
	default:
		allocTarget = fmt.Sprintf(">= %d", LoadAllocationsTarget)
		v := "met"
		if r.AllocationsPerSecond < LoadAllocationsTarget {
			v = "MISSED"
		}
		allocVerdict = v + " " + allocVerdict
	}
	row("allocations/s, over the run", fmt.Sprintf("%.0f", r.AllocationsPerSecond), allocTarget, allocVerdict)
	if r.RMPeakRSS > 0 {
		v := "met"
		if r.RMPeakRSS >= LoadRMMemoryTarget {
			v = "MISSED"
		}
		row("the RM's peak RSS", fmt.Sprintf("%d MiB", r.RMPeakRSS>>20), fmt.Sprintf("< %d MiB", LoadRMMemoryTarget>>20), v)
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "FAILED"
	}
	row("tasks completed exactly once", fmt.Sprintf("%d/%d", r.TasksOnce, o.Tasks), fmt.Sprintf("%d/%d", o.Tasks, o.Tasks), verdict(r.TasksOnce == o.Tasks))
	row("tasks completed more than once", strconv.Itoa(r.TasksTwice), "0", verdict(r.TasksTwice == 0))
	row("apps FINISHED SUCCEEDED", fmt.Sprintf("%d/%d", r.AppsSucceeded, o.Apps), fmt.Sprintf("%d/%d", o.Apps, o.Apps), verdict(r.AppsSucceeded == o.Apps))
	lost := r.Unaccounted + r.Undelivered + r.RMLive + r.DuplicateGrants + r.DuplicateCompletions + r.UnknownCompletions
	row("containers lost (never ended, undelivered, doubled)", strconv.Itoa(lost), "0", verdict(lost == 0))
	row("task containers the RM ended with exit 0", strconv.Itoa(r.RMTaskSuccesses), strconv.Itoa(o.Tasks), verdict(r.RMTaskSuccesses == o.Tasks))
	row("errors", strconv.Itoa(r.ErrorCount), "0", verdict(r.ErrorCount == 0))
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Released > 0 || r.Retried > 0 {
		fmt.Fprintf(w, "\n%d containers released unused, %d tasks retried\n", r.Released, r.Retried)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	return nil
}

// busyness calls a run quiet when other processes used under a tenth of
// one core on average.
func busyness(other, wall time.Duration) string {
	if wall <= 0 || other.Seconds() < 0.1*wall.Seconds() {
		return "quiet"
	}
	return fmt.Sprintf("busy: %.0f%% of a core", 100*other.Seconds()/wall.Seconds())
}

// cpuTimes reads the machine's busy CPU time and this process's, in
// clock ticks (USER_HZ, 100 a second on Linux); ok is false without /proc.
func cpuTimes() (machine, self int64, ok bool) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is already in user
			break
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		machine += n
	}
	self, ok = procTicks(os.Getpid())
	if !ok {
		return 0, 0, false
	}
	return machine, self, true
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// loadRun is one load test in progress.
type loadRun struct {
	o LoadOptions
	// rmAddr gives the RM's address for a role (client, scheduler,
	// tracker, web); rmPID is the RM's process when it runs apart.
	rmAddr  func(role string) string
	rmPID   int
	nodes   []*simNM
	nmSrv   *rpc.Server // every simulated NM's container manager
	byKey   map[string]*simNM
	clients []*rpc.Client
	apps    []*simAM
	start   time.Time // first submission

	measuring atomic.Bool
	tasksDone atomic.Int64
	appsDone  atomic.Int64
	allDone   chan struct{}
	perSecond []atomic.Int64 // task containers received, by second of the run
	// otherCPU is the CPU time, in clock ticks, other processes used in
	// each second of the run; nil without /proc.
	otherCPU []int64
	// ctx ends the AMs: at the timeout, or once the run is over.
	ctx context.Context
	ams sync.WaitGroup

	mu       sync.Mutex
	errs     []string
	errCount int
	// closed refuses AM launches once the run is over, so that none
	// starts while the AMs are being waited for.
	closed bool
}

func (l *loadRun) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errCount++
	if len(l.errs) < 10 {
		l.errs = append(l.errs, fmt.Sprintf(format, args...))
	}
}

// RunLoad runs a load test: a real RM on loopback, opts.Nodes simulated
// NodeManagers registering and heartbeating over its resource tracker
// and serving ContainerManagementProtocol for the AM containers it
// launches, and opts.Apps apps submitted over ApplicationClientProtocol,
// each driven by a simulated AM over ApplicationMasterProtocol under its
// attempt id. Errors are for a run that could not start; what a run
// found, failures included, is in the report.
func RunLoad(ctx context.Context, opts LoadOptions) (*LoadReport, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	setup := time.Now()
	hist, err := os.MkdirTemp("", "loom-load-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(hist)
	keys := map[string]string{
		"yarn.resourcemanager.hostname":                 "127.0.0.1",
		"yarn.resourcemanager.address":                  "127.0.0.1:0",
		"yarn.resourcemanager.scheduler.address":        "127.0.0.1:0",
		"yarn.resourcemanager.resource-tracker.address": "127.0.0.1:0",
		"yarn.resourcemanager.webapp.address":           "127.0.0.1:0",
		"loom.heartbeat.interval-ms":                    strconv.FormatInt(opts.Heartbeat.Milliseconds(), 10),
		"loom.history.dir":                              hist,
		// The checks read every app's report at the end: the RM must not
		// forget finished ones first (YARN's default keeps 1,000).
		"yarn.resourcemanager.max-completed-applications": strconv.Itoa(max(1000, opts.Apps)),
		"loom.scheduler.async.interval-ms":                strconv.FormatInt(opts.AsyncInterval.Milliseconds(), 10),
		// YARN's NM expiry (10 minutes) is far beyond any stall the load
		// can cause; keep it unless the heartbeat is unusually slow.
		"yarn.nm.liveness-monitor.expiry-interval-ms": strconv.FormatInt(max(600000, 20*opts.Heartbeat.Milliseconds()), 10),
	}
	l := &loadRun{o: opts, byKey: map[string]*simNM{}, allDone: make(chan struct{}),
		perSecond: make([]atomic.Int64, int(opts.Timeout/time.Second)+2)}
	var stopRM func()
	if len(opts.RMCommand) > 0 {
		if opts.SimProcs > 0 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(opts.SimProcs))
		}
		if opts.SimGCPercent > 0 {
			defer debug.SetGCPercent(debug.SetGCPercent(opts.SimGCPercent))
		}
		child, err := startRMProcess(ctx, opts.RMCommand, keys)
		if err != nil {
			return nil, err
		}
		l.rmAddr, l.rmPID, stopRM = child.addr, child.cmd.Process.Pid, child.stop
	} else {
		c := hadoopconf.New(server.Defaults)
		for k, v := range keys {
			c.Set(k, v)
		}
		cfg, err := server.LoadConfig(c)
		if err != nil {
			return nil, err
		}
		r, err := server.New(cfg, zerolog.Nop())
		if err != nil {
			return nil, err
		}
		if err := r.Start(); err != nil {
			return nil, err
		}
		l.rmAddr = r.Addr
		stopRM = func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r.Stop(sctx)
		}
	}
	stop := make(chan struct{})
	var beats sync.WaitGroup
	var stopOnce sync.Once
	stopBeats := func() {
		stopOnce.Do(func() { close(stop) })
		beats.Wait()
	}
	defer func() {
		stopBeats()
		stopRM()
		for _, cl := range l.clients {
			cl.Close()
		}
		if l.nmSrv != nil {
			l.nmSrv.Close()
		}
	}()
	if err := l.startNodes(ctx); err != nil {
		return nil, err
	}
	beats.Add(1)
	go l.heartbeats(stop, &beats)
	rep := &LoadReport{Options: opts, Setup: time.Since(setup), SimProcs: runtime.GOMAXPROCS(0)}

	web := "http://" + l.rmAddr("web") + "/metrics"
	before, err := scrape(ctx, web)
	if err != nil {
		return nil, err
	}
	gcBefore := numGC()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	l.ctx = ctx
	counts := AppTasks(opts.Apps, opts.Tasks)
	rep.AppTasksMin, rep.AppTasksMax = slices.Min(counts), slices.Max(counts)
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed))
	for k, n := range counts {
		a := &simAM{l: l, k: k, tasks: make([]time.Duration, n), done: make([]int32, n)}
		for i := range a.tasks {
			a.tasks[i] = time.Duration(float64(opts.TaskTime) * (0.5 + rng.Float64()))
		}
		l.apps = append(l.apps, a)
	}
	ac := rpc.NewClient(l.rmAddr("client"), rpc.ClientOptions{User: "loom-bench"})
	l.clients = append(l.clients, ac)
	client := rpc.ApplicationClient{C: ac}

	m0, s0, cpuOK := cpuTimes()
	r0, _ := procTicks(l.rmPID)
	l.measuring.Store(true)
	l.start = time.Now()
	progressDone, samplerDone := make(chan struct{}), make(chan struct{})
	go l.progress(ctx, progressDone)
	go l.sampleCPU(ctx, samplerDone)
	// The apps go in at once, as from many clients: submitted one after
	// another, two round trips each, 2,000 apps took most of a 10,000-NM
	// run to arrive, and the cluster ran a third full.
	var submitters sync.WaitGroup
	var nextApp atomic.Int64
	for range min(loadSubmitters, len(l.apps)) {
		submitters.Add(1)
		go func() {
			defer submitters.Done()
			for i := nextApp.Add(1) - 1; i < int64(len(l.apps)); i = nextApp.Add(1) - 1 {
				if err := l.submit(ctx, client, l.apps[i]); err != nil {
					l.fail("submitting app %d: %v", l.apps[i].k, err)
				}
			}
		}()
	}
	submitters.Wait()
	rep.Submitted = time.Since(l.start)
	select {
	case <-l.allDone:
	case <-ctx.Done():
		why := fmt.Sprintf("timed out after %v", opts.Timeout)
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "interrupted"
		}
		l.fail("%s with %d of %d apps finished and %d of %d tasks done", why,
			l.appsDone.Load(), opts.Apps, l.tasksDone.Load(), opts.Tasks)
	}
	end := time.Now()
	l.measuring.Store(false)
	if m1, s1, ok := cpuTimes(); ok && cpuOK {
		const tick = 10 * time.Millisecond
		r1, _ := procTicks(l.rmPID)
		rep.CPU, rep.OtherCPU = time.Duration(s1-s0)*tick, time.Duration(max(0, (m1-m0)-(s1-s0)-(r1-r0)))*tick
		rep.RMCPU = time.Duration(r1-r0) * tick
	}
	cancel()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.ams.Wait()
	<-progressDone
	<-samplerDone
	rep.Wall = end.Sub(l.start)

	// Let the NMs report the AM containers' ends and take their cleanups
	// before looking for anything left running.
	time.Sleep(2*opts.Heartbeat + 100*time.Millisecond)
	stopBeats()
	after, err := scrape(context.Background(), web)
	if err != nil {
		l.fail("reading the RM's metrics: %v", err)
	}
	rep.SimCollections = int(numGC() - gcBefore)
	l.measure(rep, before, after)
	l.checkRM(client, rep)
	// The RM keeps no record of a finished app's task containers (as
	// YARN's): how they ended is its counter's.
	const successes = `loom_containers_completed_total{container="TASK",exit_status="SUCCESS"}`
	rep.RMTaskSuccesses = int(after[successes] - before[successes])
	rep.Errors, rep.ErrorCount = l.errs, l.errCount
	rep.PeakRSS = PeakRSS()
	if l.rmPID > 0 {
		rep.RMPeakRSS = peakRSSOf(l.rmPID)
	}
	return rep, nil
}

// progress reports tasks done until the run ends.
func (l *loadRun) progress(ctx context.Context, done chan struct{}) {
	defer close(done)
	if l.o.Progress == nil {
		return
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		l.o.Progress(int(l.tasksDone.Load()), l.o.Tasks)
		select {
		case <-ctx.Done():
			l.o.Progress(int(l.tasksDone.Load()), l.o.Tasks)
			return
		case <-t.C:
		}
	}
}

// sampleCPU records, each second of the run, how much CPU other
// processes used.
func (l *loadRun) sampleCPU(ctx context.Context, done chan struct{}) {
	defer close(done)
	m0, s0, ok := cpuTimes()
	if !ok {
		return
	}
	r0, _ := procTicks(l.rmPID)
	for s := 1; ; s++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(l.start.Add(time.Duration(s) * time.Second))):
		}
		m1, s1, ok := cpuTimes()
		if !ok {
			return
		}
		r1, _ := procTicks(l.rmPID)
		l.otherCPU = append(l.otherCPU, max(0, (m1-m0)-(s1-s0)-(r1-r0)))
		m0, s0, r0 = m1, s1, r1
	}
}

// submit asks for an app id and submits the app, its AM container's
// environment naming the simulated app it is.
func (l *loadRun) submit(ctx context.Context, c rpc.ApplicationClient, a *simAM) error {
	na, err := c.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if err != nil {
		return err
	}
	a.id = na.GetApplicationId()
	_, err = c.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
		ApplicationId: a.id, ApplicationName: proto.String(fmt.Sprintf("load-%d", a.k)), Queue: proto.String("default"),
		ApplicationType: proto.String("LOOM-BENCH"),
		Resource:        &pb.ResourceProto{Memory: proto.Int64(loadTaskMB), VirtualCores: proto.Int32(loadTaskVCores)},
		AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{"loom-bench-am"},
			Environment: []*pb.StringStringMapProto{{Key: proto.String(envApp), Value: proto.String(strconv.Itoa(a.k))}}}}})
	return err
}

// startNodes starts the simulated NMs' container manager and registers
// each NM. The NMs share one server on one port: NM i's NodeId is
// nmHost(i) on that port, a loopback address of its own, which the RM
// dials to launch AMs, and the server tells the NMs apart by the address
// each connection reached. One listener per NM took a descriptor each,
// which with one tracker connection per NM put 10,000 NMs past this
// machine's 20,000 descriptors.
func (l *loadRun) startNodes(ctx context.Context) error {
	o := l.o
	tracker := l.rmAddr("tracker")
	if o.NMConns > 0 {
		for range o.NMConns {
			l.clients = append(l.clients, rpc.NewClient(tracker, rpc.ClientOptions{User: "loom-nm"}))
		}
	}
	port, err := l.serveNMs()
	if err != nil {
		return err
	}
	for i := range o.Nodes {
		n := l.newNode(i, port)
		var cl *rpc.Client
		if o.NMConns > 0 {
			cl = l.clients[i%o.NMConns]
		} else {
			cl = rpc.NewClient(tracker, rpc.ClientOptions{User: "loom-nm"})
			l.clients = append(l.clients, cl)
		}
		n.rt = rpc.ResourceTrackerClient{C: cl}
		resp, err := n.rt.RegisterNodeManager(ctx, &pb.RegisterNodeManagerRequestProto{NodeId: n.id, HttpPort: proto.Int32(8042),
			Resource: &pb.ResourceProto{Memory: proto.Int64(int64(o.NodeMB)), VirtualCores: proto.Int32(int32(o.NodeVCores))}})
		if err != nil {
			return fmt.Errorf("registering simulated NM %d: %w", i, err)
		}
		if resp.GetNodeAction() != pb.NodeActionProto_NORMAL {
			return fmt.Errorf("registering simulated NM %d: %v: %s", i, resp.GetNodeAction(), resp.GetDiagnosticsMessage())
		}
		n.tokenKey, n.nmKey = resp.GetContainerTokenMasterKey(), resp.GetNmTokenMasterKey()
	}
	return nil
}

// serveNMs starts the simulated NMs' shared container manager on every
// address (loopback connections only) and returns its port.
func (l *loadRun) serveNMs() (int, error) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		return 0, fmt.Errorf("the simulated NMs' container manager: %w", err)
	}
	l.nmSrv = rpc.NewServer(rpc.ServerOptions{})
	l.nmSrv.Register(rpc.ContainerManagementService(nmRouter{l}))
	go l.nmSrv.Serve(loopbackOnly{ln})
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// newNode adds simulated NM i, at nmHost(i) on port.
func (l *loadRun) newNode(i, port int) *simNM {
	n := &simNM{l: l, i: i, conts: map[string]*simCont{}}
	host := nmHost(i)
	n.id = &pb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(int32(port))}
	n.key = net.JoinHostPort(host, strconv.Itoa(port))
	l.nodes = append(l.nodes, n)
	l.byKey[n.key] = n
	return n
}

// maxSimNodes is how many simulated NMs nmHost can name.
const maxSimNodes = 1 << 16

// nmHost is simulated NM i's own loopback address, in 127.1.0.0/16
// (Linux routes all of 127.0.0.0/8 to the loopback interface).
func nmHost(i int) string {
	return fmt.Sprintf("127.1.%d.%d", i>>8, i&0xff)
}

// loopbackOnly accepts only connections between loopback addresses: the
// simulated NMs' server listens on every address, to be reached at each
// NM's own, and has no business with anything but the RM on this host.
type loopbackOnly struct{ net.Listener }

func (l loopbackOnly) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if isLoopback(c.LocalAddr()) && isLoopback(c.RemoteAddr()) {
			return c, nil
		}
		c.Close()
	}
}

func isLoopback(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

// nmRouter serves ContainerManagementProtocol for every simulated NM,
// each call to the NM whose address its connection reached.
type nmRouter struct{ l *loadRun }

func (r nmRouter) node(ctx context.Context) (*simNM, error) {
	var at string
	if ci, ok := rpc.CallFromContext(ctx); ok && ci.Local != nil {
		at = ci.Local.String()
	}
	if n := r.l.byKey[at]; n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("no simulated NodeManager at %q", at)
}

func (r nmRouter) StartContainers(ctx context.Context, req *pb.StartContainersRequestProto) (*pb.StartContainersResponseProto, error) {
	n, err := r.node(ctx)
	if err != nil {
		return nil, err
	}
	return n.StartContainers(ctx, req)
}

func (r nmRouter) StopContainers(ctx context.Context, req *pb.StopContainersRequestProto) (*pb.StopContainersResponseProto, error) {
	n, err := r.node(ctx)
	if err != nil {
		return nil, err
	}
	return n.StopContainers(ctx, req)
}

func (r nmRouter) GetContainerStatuses(ctx context.Context, req *pb.GetContainerStatusesRequestProto) (*pb.GetContainerStatusesResponseProto, error) {
	n, err := r.node(ctx)
	if err != nil {
		return nil, err
	}
	return n.GetContainerStatuses(ctx, req)
}

// simNM is a simulated NodeManager: no processes, only the protocol. A
// task "runs" from the AM's start until its duration has passed, and is
// reported COMPLETE with exit 0 in the next heartbeat.
type simNM struct {
	l   *loadRun
	i   int
	id  *pb.NodeIdProto
	key string
	rt  rpc.ResourceTrackerClient

	// busy: a heartbeat is in flight; again: another fell due meanwhile.
	busy, again atomic.Bool

	mu     sync.Mutex
	conts  map[string]*simCont
	ended  []*pb.ContainerStatusProto // reported COMPLETE, not yet acknowledged
	respID int32
	// keys are the master keys the node last heard of, sent back in each
	// heartbeat as a NodeManager does, so that the RM sends a key only
	// when it changes (it sent both in every reply while the simulated NMs
	// named none).
	tokenKey, nmKey *pb.MasterKeyProto
	// rtts are the heartbeats' round trips and secs the second of the
	// run each started in: the heartbeat goroutine's own.
	rtts []time.Duration
	secs []int32
	// The heartbeat's messages, reused from beat to beat (one is in
	// flight at a time): the generator's allocations are its collections,
	// which its round trips would measure as the RM's.
	req       pb.NodeHeartbeatRequestProto
	st        pb.NodeStatusProto
	health    pb.NodeHealthStatusProto
	sentID    int32
	reportsAt int64
}

type simCont struct {
	id *pb.ContainerIdProto
	// running is its RUNNING status, made at its first heartbeat and sent
	// in each one after.
	running *pb.ContainerStatusProto
	end     time.Time // zero for an AM container, which ends with its AM
	// amDone: the AM unregistered, so its container has exited 0.
	amDone bool
}

// StartContainers is the RM launching an AM container: the AM starts
// as a goroutine with the environment the RM gave it.
func (n *simNM) StartContainers(ctx context.Context, req *pb.StartContainersRequestProto) (*pb.StartContainersResponseProto, error) {
	resp := &pb.StartContainersResponseProto{}
	for _, s := range req.GetStartContainerRequest() {
		var tok pb.ContainerTokenIdentifierProto
		if err := proto.Unmarshal(s.GetContainerToken().GetIdentifier(), &tok); err != nil {
			return nil, rpc.Errorf(rpc.ClassInvalidContainerRequest, "container token: %v", err)
		}
		cid := tok.GetContainerId()
		if tok.GetContainerType() != pb.ContainerTypeProto_APPLICATION_MASTER {
			resp.FailedRequests = append(resp.FailedRequests, &pb.ContainerExceptionMapProto{ContainerId: cid,
				Exception: &pb.SerializedExceptionProto{Message: proto.String("simulated NMs start only AM containers over RPC")}})
			continue
		}
		env := map[string]string{}
		for _, kv := range s.GetContainerLaunchContext().GetEnvironment() {
			env[kv.GetKey()] = kv.GetValue()
		}
		k, err := strconv.Atoi(env[envApp])
		if err != nil || k < 0 || k >= len(n.l.apps) {
			resp.FailedRequests = append(resp.FailedRequests, &pb.ContainerExceptionMapProto{ContainerId: cid,
				Exception: &pb.SerializedExceptionProto{Message: proto.String(fmt.Sprintf("%s=%q names no app of this run", envApp, env[envApp]))}})
			continue
		}
		l := n.l
		l.mu.Lock()
		closed := l.closed
		if !closed {
			l.ams.Add(1)
		}
		l.mu.Unlock()
		if closed {
			resp.FailedRequests = append(resp.FailedRequests, &pb.ContainerExceptionMapProto{ContainerId: cid,
				Exception: &pb.SerializedExceptionProto{Message: proto.String("the load test is over")}})
			continue
		}
		n.mu.Lock()
		n.conts[rpc.ContainerIDString(cid)] = &simCont{id: cid}
		n.mu.Unlock()
		go l.apps[k].run(env, s.GetContainerLaunchContext().GetTokens(), n, cid)
		resp.SucceededRequests = append(resp.SucceededRequests, cid)
	}
	return resp, nil
}

func (n *simNM) StopContainers(ctx context.Context, req *pb.StopContainersRequestProto) (*pb.StopContainersResponseProto, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, id := range req.GetContainerId() {
		delete(n.conts, rpc.ContainerIDString(id))
	}
	return &pb.StopContainersResponseProto{SucceededRequests: req.GetContainerId()}, nil
}

func (n *simNM) GetContainerStatuses(ctx context.Context, req *pb.GetContainerStatusesRequestProto) (*pb.GetContainerStatusesResponseProto, error) {
	return &pb.GetContainerStatusesResponseProto{}, nil
}

// startTask runs a task container for d: what an AM's startContainers
// call would do, made in process.
func (n *simNM) startTask(id *pb.ContainerIdProto, d time.Duration) {
	n.mu.Lock()
	n.conts[rpc.ContainerIDString(id)] = &simCont{id: id, end: time.Now().Add(d)}
	n.mu.Unlock()
}

func (n *simNM) amFinished(id *pb.ContainerIdProto) {
	n.mu.Lock()
	if c, ok := n.conts[rpc.ContainerIDString(id)]; ok {
		c.amDone = true
	}
	n.mu.Unlock()
}

// heartbeats drives every simulated NM's heartbeat at the interval, the
// NMs' first beats spread over one interval as real NMs' drift apart.
// One goroutine keeps the schedule and each heartbeat runs on a goroutine
// of its own while it is in flight, rather than each NM keeping a
// goroutine and a ticker for the whole run: real NMs are processes on
// other machines, and 10,000 idle goroutines (stacks the collector scans,
// timers the runtime keeps) would load the RM's process with a cost the
// RM never has. A node whose heartbeat is still in flight when the next
// is due sends it as soon as the first returns, as a NodeManager's
// heartbeat thread does.
func (l *loadRun) heartbeats(stop chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	hb, n := l.o.Heartbeat, len(l.nodes)
	start := time.Now()
	due := func(i, round int) time.Time {
		return start.Add(time.Duration(round)*hb + time.Duration(int64(hb)*int64(i)/int64(n)))
	}
	// next is the next node to beat and round its round: nodes beat in
	// order of their phase, so the schedule is a cursor, not a heap.
	next, round := 0, 0
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	// Heartbeats in flight run on workers that stay for the run: a
	// goroutine per heartbeat spent an eighth of the generator's CPU
	// growing fresh stacks. A beat goes to an idle worker, or to a new
	// one when all are busy, so no heartbeat waits for a worker.
	work := make(chan *simNM)
	var workers sync.WaitGroup
	defer func() {
		close(work)
		workers.Wait()
	}()
	worker := func(nm *simNM) {
		defer workers.Done()
		for ; nm != nil; nm = <-work {
			nm.beatWhileDue()
		}
	}
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			for !due(next, round).After(now) {
				nm := l.nodes[next]
				if nm.busy.Swap(true) {
					nm.again.Store(true)
				} else {
					select {
					case work <- nm:
					default:
						workers.Add(1)
						go worker(nm)
					}
				}
				if next++; next == n {
					next, round = 0, round+1
				}
			}
		}
	}
}

// beatWhileDue heartbeats, and again at once if the next heartbeat fell
// due meanwhile. Its caller set busy.
func (n *simNM) beatWhileDue() {
	for {
		n.beat()
		if !n.again.Swap(false) {
			n.busy.Store(false)
			// A beat that fell due between the swap and the store would
			// be lost: take it here.
			if !n.again.Swap(false) || n.busy.Swap(true) {
				return
			}
		}
	}
}

// healthy is every simulated NM's health, pointed to by each heartbeat.
var healthy = true

// beat sends one heartbeat with every container's status: running ones
// as RUNNING, those whose run is over as COMPLETE with exit 0 (until a
// heartbeat carrying them succeeds).
func (n *simNM) beat() {
	now := time.Now()
	n.mu.Lock()
	n.sentID, n.reportsAt = n.respID, now.UnixMilli()
	n.health = pb.NodeHealthStatusProto{IsNodeHealthy: &healthy, LastHealthReportTime: &n.reportsAt}
	st := &n.st
	*st = pb.NodeStatusProto{NodeId: n.id, ResponseId: &n.sentID, NodeHealthStatus: &n.health,
		ContainersStatuses: n.st.ContainersStatuses[:0]}
	for id, c := range n.conts {
		if c.amDone || !c.end.IsZero() && !now.Before(c.end) {
			n.ended = append(n.ended, &pb.ContainerStatusProto{ContainerId: c.id, State: pb.ContainerStateProto_C_COMPLETE.Enum(),
				ExitStatus: proto.Int32(0), Diagnostics: proto.String("")})
			delete(n.conts, id)
			continue
		}
		if c.running == nil {
			c.running = &pb.ContainerStatusProto{ContainerId: c.id, State: pb.ContainerStateProto_C_RUNNING.Enum(),
				ExitStatus: proto.Int32(server.ExitInvalid)}
		}
		st.ContainersStatuses = append(st.ContainersStatuses, c.running)
	}
	ended := len(n.ended)
	st.ContainersStatuses = append(st.ContainersStatuses, n.ended...)
	n.mu.Unlock()
	measuring := n.l.measuring.Load()
	t0 := time.Now()
	tokenKey, nmKey := n.tokenKey, n.nmKey
	n.req = pb.NodeHeartbeatRequestProto{NodeStatus: st, LastKnownContainerTokenMasterKey: tokenKey, LastKnownNmTokenMasterKey: nmKey}
	resp, err := n.rt.NodeHeartbeat(context.Background(), &n.req)
	rtt := time.Since(t0)
	if err != nil {
		n.l.fail("heartbeat of %s: %v", n.key, err)
		return
	}
	if measuring {
		n.rtts = append(n.rtts, rtt)
		n.secs = append(n.secs, int32(t0.Sub(n.l.start)/time.Second))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ended = slices.Delete(n.ended, 0, ended)
	n.respID = resp.GetResponseId()
	if k := resp.GetContainerTokenMasterKey(); k != nil {
		n.tokenKey = k
	}
	if k := resp.GetNmTokenMasterKey(); k != nil {
		n.nmKey = k
	}
	if a := resp.GetNodeAction(); a != pb.NodeActionProto_NORMAL {
		n.l.fail("heartbeat of %s: told %v: %s", n.key, a, resp.GetDiagnosticsMessage())
	}
	for _, id := range resp.GetContainersToCleanup() {
		delete(n.conts, rpc.ContainerIDString(id))
	}
}

// simAM is a simulated application master: it registers as its attempt,
// asks for one container per task not yet running, starts each task on
// the node it was granted, and unregisters SUCCEEDED once every task has
// completed and every container it was given has ended.
type simAM struct {
	l     *loadRun
	k     int
	id    *pb.ApplicationIdProto
	tasks []time.Duration
	// done counts each task's successful completions, as the AM saw them.
	done []int32
	// Filled in by run, read once the AMs have stopped.
	amContainer                           *pb.ContainerIdProto
	granted, released, retried, altruists int
	unaccounted, dupGrants, dupDone, unk  int
	allocRTTs                             []time.Duration
	// askWaits are the measured tasks' waits, in the order they were
	// granted, from the allocate call that first asked for them to the
	// reply that granted their container: the first is the app's first.
	askWaits []time.Duration
	finished bool
}

type grant struct {
	task  int // -1: released unused
	ended bool
}

func (a *simAM) run(env map[string]string, credentials []byte, nm *simNM, amContainer *pb.ContainerIdProto) {
	l := a.l
	defer l.ams.Done()
	a.amContainer = amContainer
	addr := env[server.EnvSchedulerAddress]
	// The AMRM token the RM gave this AM, as a real AM reads it from its
	// credentials file.
	creds, err := rpc.ParseCredentials(credentials)
	var tok *hadooppb.TokenProto
	if err == nil {
		if tok = creds.Find(rpc.AMRMTokenKind); tok == nil {
			err = fmt.Errorf("no %s in the AM's credentials", rpc.AMRMTokenKind)
		}
	}
	if err != nil {
		l.fail("AM of app %d: %v", a.k, err)
		return
	}
	attempt := "the attempt of app " + strconv.Itoa(a.k)
	if id, err := rpc.ParseAMRMIdentifier(tok.GetIdentifier()); err == nil {
		attempt = rpc.AttemptIDString(id.GetAppAttemptId())
	}
	cl := rpc.NewClient(addr, rpc.ClientOptions{Token: tok})
	defer cl.Close()
	c := rpc.ApplicationMasterClient{C: cl}
	ctx := l.ctx
	if _, err := c.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{Host: proto.String(nm.id.GetHost()),
		RpcPort: proto.Int32(0), TrackingUrl: proto.String("")}); err != nil {
		l.fail("AM of app %d registering as %s: %v", a.k, attempt, err)
		return
	}
	pending := make([]int, len(a.tasks))
	for i := range pending {
		pending[i] = len(pending) - 1 - i // task 0 first
	}
	// asked is when each pending task was first asked for; fresh are the
	// pending tasks the next call asks for the first time.
	asked := make([]time.Time, len(a.tasks))
	fresh := slices.Clone(pending)
	conts := map[int64]*grant{}
	open, doneTasks := 0, 0
	var mean time.Duration
	for _, d := range a.tasks {
		mean += d / time.Duration(len(a.tasks))
	}
	demand := &pb.ResourceProto{Memory: proto.Int64(loadTaskMB), VirtualCores: proto.Int32(loadTaskVCores)}
	ask := func(n int, kind pb.LoomAskKindProto, work float64) *pb.ResourceRequestProto {
		return &pb.ResourceRequestProto{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
			Capability: demand, NumContainers: proto.Int32(int32(n)), RelaxLocality: proto.Bool(true),
			LoomAskKind: kind.Enum(), LoomRemainingWork: proto.Float64(work), LoomCriticalPathMs: proto.Int64(mean.Milliseconds())}
	}
	var release []*pb.ContainerIdProto
	var respID int32
	var share float64 = 1 // a task's dominant share of the cluster, once known
	tick := time.NewTicker(l.o.AMInterval)
	defer tick.Stop()
	for {
		alt := int(math.Round(float64(len(pending)) * l.o.Altruistic))
		work := float64(len(a.tasks)-doneTasks) * mean.Seconds() * share
		req := &pb.AllocateRequestProto{ResponseId: proto.Int32(respID), Release: release,
			Progress: proto.Float32(float32(doneTasks) / float32(len(a.tasks))),
			Ask: []*pb.ResourceRequestProto{ask(len(pending)-alt, pb.LoomAskKindProto_LOOM_DEFAULT, work),
				ask(alt, pb.LoomAskKindProto_LOOM_ALTRUISTIC, work)}}
		var resp *pb.AllocateResponseProto
		var err error
		sent := time.Now()
		for _, t := range fresh {
			asked[t] = sent
		}
		fresh = fresh[:0]
		// A reply lost with its connection is asked for again under the
		// same response id: the RM sends it again.
		for try := 0; ; try++ {
			t0 := time.Now()
			resp, err = c.Allocate(ctx, req)
			if err == nil && l.measuring.Load() {
				a.allocRTTs = append(a.allocRTTs, time.Since(t0))
			}
			var ce *rpc.ConnError
			if err == nil || !errors.As(err, &ce) || try >= 3 || ctx.Err() != nil {
				break
			}
			l.fail("AM of app %d: allocate: %v (retrying)", a.k, err)
		}
		if err != nil {
			if ctx.Err() == nil {
				l.fail("AM of app %d: allocate: %v", a.k, err)
			}
			a.settle(conts)
			return
		}
		respID, release = resp.GetResponseId(), nil
		if capacity := resp.GetLoomClusterCapacity(); capacity != nil {
			share = max(loadTaskMB/float64(max(capacity.GetMemory(), 1)), loadTaskVCores/float64(max(capacity.GetVirtualCores(), 1)))
		}
		now := time.Now()
		for _, ct := range resp.GetAllocatedContainers() {
			id := ct.GetId().GetId()
			if _, dup := conts[id]; dup {
				a.dupGrants++
				continue
			}
			a.granted++
			open++
			if ct.GetLoomAskKind() == pb.LoomAskKindProto_LOOM_ALTRUISTIC {
				a.altruists++
			}
			if s := int(now.Sub(l.start) / time.Second); s >= 0 && s < len(l.perSecond) {
				l.perSecond[s].Add(1)
			}
			node := l.byKey[net.JoinHostPort(ct.GetNodeId().GetHost(), strconv.Itoa(int(ct.GetNodeId().GetPort())))]
			if node == nil || len(pending) == 0 {
				if node == nil {
					l.fail("AM of app %d: container %d on unknown node %v", a.k, id, ct.GetNodeId())
				}
				conts[id] = &grant{task: -1}
				release = append(release, ct.GetId())
				a.released++
				continue
			}
			t := pending[len(pending)-1]
			pending = pending[:len(pending)-1]
			if l.measuring.Load() {
				a.askWaits = append(a.askWaits, now.Sub(asked[t]))
			}
			conts[id] = &grant{task: t}
			node.startTask(ct.GetId(), a.tasks[t])
		}
		for _, cs := range resp.GetCompletedContainerStatuses() {
			id := cs.GetContainerId().GetId()
			g, ok := conts[id]
			switch {
			case !ok:
				a.unk++
				continue
			case g.ended:
				a.dupDone++
				continue
			}
			g.ended = true
			open--
			if g.task < 0 {
				continue
			}
			if cs.GetState() == pb.ContainerStateProto_C_COMPLETE && cs.GetExitStatus() == 0 {
				a.done[g.task]++
				if a.done[g.task] == 1 {
					doneTasks++
					l.tasksDone.Add(1)
				}
				continue
			}
			// Ended under the task (a lost node, a kill): run it again.
			a.retried++
			if a.done[g.task] == 0 {
				pending = append(pending, g.task)
				fresh = append(fresh, g.task)
			}
		}
		if doneTasks == len(a.tasks) && open == 0 && len(release) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			a.settle(conts)
			return
		case <-tick.C:
		}
	}
	if _, err := c.FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum(),
		Diagnostics:            proto.String(fmt.Sprintf("%d tasks", len(a.tasks)))}); err != nil {
		l.fail("AM of app %d: finishing: %v", a.k, err)
		a.settle(conts)
		return
	}
	a.finished = true
	nm.amFinished(amContainer)
	if l.appsDone.Add(1) == int64(len(l.apps)) {
		close(l.allDone)
	}
}

// loadSubmitters is how many clients submit the apps together.
const loadSubmitters = 32

// series is the run second by second, from the NMs' round trips and the
// AMs' allocations.
func (l *loadRun) series() []LoadSecond {
	var bySec [][]time.Duration
	for _, n := range l.nodes {
		for i, s := range n.secs {
			if s < 0 {
				continue
			}
			for int(s) >= len(bySec) {
				bySec = append(bySec, nil)
			}
			bySec[s] = append(bySec[s], n.rtts[i])
		}
	}
	out := make([]LoadSecond, len(bySec))
	for s, rtts := range bySec {
		slices.Sort(rtts)
		out[s] = LoadSecond{Second: s, Heartbeats: len(rtts), HeartbeatP50: quantile(rtts, 0.5),
			HeartbeatP99: quantile(rtts, 0.99), OtherCPU: -1}
		if s < len(l.perSecond) {
			out[s].Allocations = l.perSecond[s].Load()
		}
		if s < len(l.otherCPU) {
			out[s].OtherCPU = l.otherCPU[s]
		}
	}
	return out
}

// WriteSeries writes the run's seconds as CSV, a row each.
func (r *LoadReport) WriteSeries(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "second,heartbeats,heartbeat_p50_ms,heartbeat_p99_ms,allocations,other_cpu_ticks")
	for _, s := range r.Series {
		fmt.Fprintf(bw, "%d,%d,%.3f,%.3f,%d,%d\n", s.Second, s.Heartbeats, ms(s.HeartbeatP50), ms(s.HeartbeatP99), s.Allocations, s.OtherCPU)
	}
	return bw.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// settle counts the containers an AM stopped without seeing end.
func (a *simAM) settle(conts map[int64]*grant) {
	for _, g := range conts {
		if !g.ended {
			a.unaccounted++
		}
	}
}

// measure fills in the figures from what the NMs, the AMs and the RM's
// metrics recorded.
func (l *loadRun) measure(rep *LoadReport, before, after map[string]float64) {
	var rtts, quiet []time.Duration
	// A quiet second: other processes used under a tenth of a core (10
	// clock ticks).
	isQuiet := func(s int32) bool { return int(s) < len(l.otherCPU) && l.otherCPU[s] < 10 }
	for _, n := range l.nodes {
		rtts = append(rtts, n.rtts...)
		for i, s := range n.secs {
			if isQuiet(s) {
				quiet = append(quiet, n.rtts[i])
			}
		}
	}
	rep.Seconds = len(l.otherCPU)
	for s := range l.otherCPU {
		if isQuiet(int32(s)) {
			rep.QuietSeconds++
		}
	}
	slices.Sort(quiet)
	rep.QuietHeartbeats, rep.QuietP99 = len(quiet), quantile(quiet, 0.99)
	rep.Series = l.series()
	slices.Sort(rtts)
	rep.Heartbeats = len(rtts)
	rep.HeartbeatP50, rep.HeartbeatP99 = quantile(rtts, 0.5), quantile(rtts, 0.99)
	if len(rtts) > 0 {
		rep.HBMax = rtts[len(rtts)-1]
	}
	i, _ := slices.BinarySearch(rtts, LoadHeartbeatP99Target)
	rep.HeartbeatOverTarget = len(rtts) - i
	i, _ = slices.BinarySearch(rtts, rep.Options.Heartbeat+1)
	rep.HeartbeatsMissed = len(rtts) - i

	var allocs []time.Duration
	for _, a := range l.apps {
		allocs = append(allocs, a.allocRTTs...)
		rep.Allocations += a.granted
		rep.Altruistic += a.altruists
		rep.Released += a.released
		rep.Retried += a.retried
		rep.Unaccounted += a.unaccounted
		rep.DuplicateGrants += a.dupGrants
		rep.DuplicateCompletions += a.dupDone
		rep.UnknownCompletions += a.unk
		for _, d := range a.done {
			switch {
			case d == 1:
				rep.TasksOnce++
			case d > 1:
				rep.TasksTwice++
			default:
				rep.TasksNever++
			}
		}
	}
	var waits, firsts []time.Duration
	for _, a := range l.apps {
		waits = append(waits, a.askWaits...)
		if len(a.askWaits) > 0 {
			firsts = append(firsts, a.askWaits[0])
		}
	}
	slices.Sort(waits)
	slices.Sort(firsts)
	rep.AskToGrant, rep.AskToGrantP50, rep.AskToGrantP99 = len(waits), quantile(waits, 0.5), quantile(waits, 0.99)
	rep.FirstGrant, rep.FirstGrantP50, rep.FirstGrantP99 = len(firsts), quantile(firsts, 0.5), quantile(firsts, 0.99)
	slices.Sort(allocs)
	rep.Allocates = len(allocs)
	rep.AllocateP50, rep.AllocateP99 = quantile(allocs, 0.5), quantile(allocs, 0.99)
	if rep.Wall > 0 {
		rep.AllocationsPerSecond = float64(rep.Allocations) / rep.Wall.Seconds()
	}
	first, last := -1, -1
	for s := range l.perSecond {
		if l.perSecond[s].Load() > 0 {
			if first < 0 {
				first = s
			}
			last = s
		}
	}
	if first >= 0 {
		var rates []float64
		for s := first; s <= last; s++ {
			rates = append(rates, float64(l.perSecond[s].Load()))
		}
		slices.Sort(rates)
		rep.AllocationsMedian, rep.AllocationsPeak = rates[len(rates)/2], rates[len(rates)-1]
	}

	if after != nil {
		rm := after["loom_allocations_total"] - before["loom_allocations_total"]
		rep.RMAllocations = int(rm)
		// Every container the RM allocated went to an AM, the AM
		// containers to the NMs that launched them.
		launched := 0
		for _, a := range l.apps {
			if a.amContainer != nil {
				launched++
			}
		}
		rep.Undelivered = max(0, rep.RMAllocations-rep.Allocations-launched)
		h := histDelta(before, after, "loom_heartbeat_decision_seconds", "")
		rep.DecisionCount = int(h.count)
		rep.DecisionP50, rep.DecisionP99 = h.quantile(0.5), h.quantile(0.99)
		const hb = `method="nodeHeartbeat",protocol="ResourceTracker"`
		h = histDelta(before, after, "loom_rpc_processing_seconds", hb)
		rep.RMHeartbeats = int(h.count)
		rep.RMHeartbeatP50, rep.RMHeartbeatP99 = h.quantile(0.5), h.quantile(0.99)
		rep.RMHeartbeatQueueP99 = histDelta(before, after, "loom_rpc_queue_seconds", hb).quantile(0.99)
		const gcs = "go_gc_duration_seconds_count"
		rep.RMCollections = int(after[gcs] - before[gcs])
	}
}

// numGC is how many collections this process has run.
func numGC() uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.NumGC
}

// checkRM asks the RM, over the client protocol, how every app ended and
// whether any container is still live (a finished app's task containers
// it no longer lists: only a live one can be).
func (l *loadRun) checkRM(c rpc.ApplicationClient, rep *LoadReport) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := c.GetApplications(ctx, &pb.GetApplicationsRequestProto{ApplicationTypes: []string{"LOOM-BENCH"}})
	if err != nil {
		l.fail("getApplications: %v", err)
		return
	}
	for _, r := range resp.GetApplications() {
		if r.GetYarnApplicationState() == pb.YarnApplicationStateProto_FINISHED &&
			r.GetFinalApplicationStatus() == pb.FinalApplicationStatusProto_APP_SUCCEEDED {
			rep.AppsSucceeded++
		} else {
			l.fail("%s is %v, final status %v, after the run: %s", rpc.AppIDString(r.GetApplicationId()), r.GetYarnApplicationState(),
				r.GetFinalApplicationStatus(), r.GetDiagnostics())
		}
		for _, rc := range l.containers(ctx, c, r) {
			if rc.GetContainerState() != pb.ContainerStateProto_C_COMPLETE {
				rep.RMLive++
			}
		}
	}
}

func (l *loadRun) containers(ctx context.Context, c rpc.ApplicationClient, r *pb.ApplicationReportProto) []*pb.ContainerReportProto {
	var out []*pb.ContainerReportProto
	n := r.GetCurrentApplicationAttemptId().GetAttemptId()
	for i := int32(1); i <= n; i++ {
		resp, err := c.GetContainers(ctx, &pb.GetContainersRequestProto{ApplicationAttemptId: &pb.ApplicationAttemptIdProto{
			ApplicationId: r.GetApplicationId(), AttemptId: proto.Int32(i)}})
		if err != nil {
			l.fail("getContainers of %s: %v", rpc.AppIDString(r.GetApplicationId()), err)
			continue
		}
		out = append(out, resp.GetContainers()...)
	}
	return out
}

// quantile is the q-quantile of sorted samples (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// scrape reads the RM's /metrics: every sample, keyed by its name and
// labels as written ("loom_allocations_total" sums over labels too).
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		key := line[:i]
		out[key] = v
		if name, _, labelled := strings.Cut(key, "{"); labelled {
			out[name] += v
		}
	}
	return out, sc.Err()
}

// hist is a Prometheus histogram's cumulative buckets.
type hist struct {
	bounds []float64 // upper bounds, +Inf last
	counts []float64 // cumulative
	count  float64
}

// histDelta is the histogram name's observations between two scrapes, of
// the series with exactly labels (as written, sorted by name: a="x",b="y";
// "" for an unlabelled histogram).
func histDelta(before, after map[string]float64, name, labels string) hist {
	var h hist
	prefix, count := name+`_bucket{le="`, name+"_count"
	if labels != "" {
		prefix, count = name+`_bucket{`+labels+`,le="`, name+"_count{"+labels+"}"
	}
	type b struct{ le, n float64 }
	var bs []b
	for k, v := range after {
		le, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64)
		if err != nil {
			continue
		}
		bs = append(bs, b{bound, v - before[k]})
	}
	slices.SortFunc(bs, func(x, y b) int { return cmp.Compare(x.le, y.le) })
	for _, x := range bs {
		h.bounds = append(h.bounds, x.le)
		h.counts = append(h.counts, x.n)
	}
	h.count = after[count] - before[count]
	return h
}

// quantile interpolates linearly within the bucket the quantile falls
// in, as Prometheus's histogram_quantile does.
func (h hist) quantile(q float64) time.Duration {
	if h.count <= 0 || len(h.bounds) == 0 {
		return 0
	}
	rank := q * h.count
	lo, below := 0.0, 0.0
	for i, le := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(le, 1) {
				return time.Duration(lo * float64(time.Second))
			}
			in := h.counts[i] - below
			frac := 1.0
			if in > 0 {
				frac = (rank - below) / in
			}
			return time.Duration((lo + (le-lo)*frac) * float64(time.Second))
		}
		lo, below = le, h.counts[i]
	}
	return time.Duration(lo * float64(time.Second))
}
