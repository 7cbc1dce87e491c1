// Package mini runs Loom's main job on one machine: a ResourceManager and
// NodeManagers as real processes on loopback, a TPC-H mix submitted to
// them, and a summary of what happened, read from the jobs' histories.
package mini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/tool/sim"
	"github.com/loomrm/loom/workload"
)

// Options shape the mini cluster and its workload.
type Options struct {
	Binary       string // the loom binary to run the daemons and AMs with
	Dir          string // logs, NM dirs, staging and histories
	Nodes        int
	NodeMemoryMB int
	NodeVCores   int
	// PolicyConfig is the RM's policy and its knobs.
	rm.PolicyConfig
	TaskKind  string
	TimeScale float64
	// Log receives the daemons' output; nil discards it.
	Log *os.File
}

// Cluster is a running mini cluster.
type Cluster struct {
	opts       Options
	ClientAddr string
	// WebAddr serves the web UI and the REST API.
	WebAddr string
	// HistoryDir holds each DAG job's history, one file per app.
	HistoryDir string
	procs      []*exec.Cmd
	done       []chan struct{}
}

// FreeAddrs is n loopback addresses with distinct ports nobody listens on
// now: all are held open until the last is found, so that no two are the
// same (any may still be taken before the caller binds it).
func FreeAddrs(n int) ([]string, error) {
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// startAttempts is how many times Start picks ports for the RM: another
// process may bind one between the pick and the RM's start.
const startAttempts = 3

// pickAddrs picks the RM's four addresses (tests take one first).
var pickAddrs = FreeAddrs

// errPortTaken says the RM could not bind a port Start picked for it.
var errPortTaken = errors.New("a port picked for the RM was taken before it started")

// Start launches the RM and the NMs and waits until every NM registered.
// Should the RM find a port picked for it taken by then, Start picks
// others and starts it again.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	var err error
	for range startAttempts {
		var c *Cluster
		if c, err = start(ctx, o); !errors.Is(err, errPortTaken) {
			return c, err
		}
	}
	return nil, err
}

func start(ctx context.Context, o Options) (*Cluster, error) {
	c := &Cluster{opts: o}
	addrs, err := pickAddrs(4)
	if err != nil {
		return nil, err
	}
	c.ClientAddr, c.WebAddr, c.HistoryDir = addrs[0], addrs[3], filepath.Join(o.Dir, "history")
	rmArgs := []string{"rm", "-D", "yarn.resourcemanager.hostname=127.0.0.1",
		"-D", "yarn.resourcemanager.address=" + addrs[0], "-D", "yarn.resourcemanager.scheduler.address=" + addrs[1],
		"-D", "yarn.resourcemanager.resource-tracker.address=" + addrs[2], "-D", "yarn.resourcemanager.webapp.address=" + addrs[3],
		"-D", "loom.history.dir=" + c.HistoryDir, "-D", "loom.heartbeat.interval-ms=100",
		"-D", "yarn.nm.liveness-monitor.expiry-interval-ms=10000",
		"-D", "yarn.scheduler.minimum-allocation-mb=64", "-D", fmt.Sprintf("yarn.scheduler.maximum-allocation-mb=%d", o.NodeMemoryMB),
		"-D", fmt.Sprintf("yarn.scheduler.maximum-allocation-vcores=%d", o.NodeVCores),
		"-D", "loom.scheduler.policy=" + o.Policy, "-D", "loom.scheduler.p-altruism=" + strconv.FormatFloat(o.PAltruism, 'g', -1, 64),
		"-D", "loom.scheduler.leftover-order=" + o.LeftoverOrder.String(),
		"-D", "loom.scheduler.leftover-cap=" + strconv.FormatFloat(o.LeftoverCap, 'g', -1, 64),
		"-D", "loom.scheduler.recall=" + strconv.FormatFloat(o.Recall, 'g', -1, 64),
		"-D", "loom.scheduler.promise-slack=" + strconv.FormatFloat(o.PromiseSlack, 'g', -1, 64),
		"-D", "loom.scheduler.share-growth=" + strconv.FormatBool(o.ShareGrowth),
		"-D", "loom.scheduler.tetris-fairness=" + strconv.FormatFloat(o.TetrisFairness, 'g', -1, 64)}
	if err := c.spawn("rm", rmArgs...); err != nil {
		return nil, err
	}
	if err := c.rmUp(ctx, addrs[0]); err != nil {
		c.Stop()
		return nil, err
	}
	for i := range o.Nodes {
		d := filepath.Join(o.Dir, fmt.Sprintf("nm%d", i))
		if err := c.spawn(fmt.Sprintf("nm%d", i), "nm", "--rm", addrs[2], "--address", "127.0.0.1:0",
			"--memory-mb", strconv.Itoa(o.NodeMemoryMB), "--vcores", strconv.Itoa(o.NodeVCores),
			"--local-dirs", filepath.Join(d, "local"), "--log-dirs", filepath.Join(d, "logs")); err != nil {
			c.Stop()
			return nil, err
		}
	}
	cl := rpc.NewClient(c.ClientAddr, rpc.ClientOptions{Retries: 30, RetryBackoff: 100 * time.Millisecond})
	defer cl.Close()
	ac := rpc.ApplicationClient{C: cl}
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := ac.GetClusterMetrics(ctx, &pb.GetClusterMetricsRequestProto{})
		if err == nil && int(m.GetClusterMetrics().GetNumNodeManagers()) == o.Nodes {
			return c, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.Stop()
			return nil, fmt.Errorf("the mini cluster did not come up: %d of %d NodeManagers registered (%v); logs in %s",
				m.GetClusterMetrics().GetNumNodeManagers(), o.Nodes, err, o.Dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rmUp waits until the RM (the first process) answers a call on addr
// (whoever took a port may accept connections there too). If it ends
// first, its log says why: a port taken is errPortTaken.
func (c *Cluster) rmUp(ctx context.Context, addr string) error {
	cl := rpc.NewClient(addr, rpc.ClientOptions{})
	defer cl.Close()
	ac := rpc.ApplicationClient{C: cl}
	deadline := time.Now().Add(30 * time.Second)
	for {
		call, cancel := context.WithTimeout(ctx, time.Second)
		_, err := ac.GetClusterMetrics(call, &pb.GetClusterMetricsRequestProto{})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-c.done[0]:
			log, _ := os.ReadFile(filepath.Join(c.opts.Dir, "rm.log"))
			tail := lastLine(string(log))
			if strings.Contains(tail, "address already in use") {
				return fmt.Errorf("%w: %s", errPortTaken, tail)
			}
			return fmt.Errorf("the ResourceManager exited as it started: %s (log: %s)", tail, filepath.Join(c.opts.Dir, "rm.log"))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the ResourceManager did not answer on %s within 30 s; log in %s", addr, filepath.Join(c.opts.Dir, "rm.log"))
		}
	}
}

// lastLine is the last non-empty line of a log.
func lastLine(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	return lines[len(lines)-1]
}

func (c *Cluster) spawn(name string, args ...string) error {
	cmd := exec.Command(c.opts.Binary, args...)
	log, err := os.Create(filepath.Join(c.opts.Dir, name+".log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so that Stop reaches everything it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(done) }()
	c.procs = append(c.procs, cmd)
	c.done = append(c.done, done)
	return nil
}

// Stop stops every process the cluster started: SIGTERM, NMs first so
// they kill their containers, then SIGKILL to any group still there.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done[i]:
		case <-time.After(10 * time.Second):
		}
		syscall.Kill(-c.procs[i].Process.Pid, syscall.SIGKILL)
	}
}

// Scale fits jobs drawn from a catalogue measured on big machines to a
// small cluster of nodes like node: every task's memory is multiplied by
// memScale (at least 64 MB), its vcores are capped at the node's, and it
// asks for no disk or network bandwidth, which the NodeManagers do not
// offer.
func Scale(js []*workload.Job, memScale float64, node fairness.Vector) {
	for _, j := range js {
		for i := range j.Stages {
			d := &j.Stages[i].Demand
			d[fairness.Memory] = max(64, d[fairness.Memory]*memScale)
			if node[fairness.VCores] > 0 {
				d[fairness.VCores] = min(d[fairness.VCores], node[fairness.VCores])
			}
			for k := fairness.Disk; k < fairness.NumKinds; k++ {
				d[k] = 0
			}
		}
	}
}

// Submitted is one job and its app.
type Submitted struct {
	Job *workload.Job
	ID  *pb.ApplicationIdProto
}

// Submit stages a job's DAG and submits an app whose AM (loom am) runs it.
func Submit(ctx context.Context, ac rpc.ApplicationClient, j *workload.Job, queue, label, staging, bin, taskKind string, timeScale float64, amMB int64) (*pb.ApplicationIdProto, error) {
	na, err := ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if err != nil {
		return nil, err
	}
	id := na.GetApplicationId()
	dir := filepath.Join(staging, rpc.AppIDString(id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "job.json")
	w, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	err = workload.WriteJSON(w, []*workload.Job{j})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	// Tasks are short at demo time scales: the AM calls every 20 ms, so
	// that its own wait does not dominate them.
	cmd := fmt.Sprintf("%s am --job job.json --task-kind %s --time-scale %g --tick 20ms 2><LOG_DIR>/am.log",
		bin, taskKind, timeScale)
	_, err = ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
		ApplicationId: id, ApplicationName: proto.String(j.Name), Queue: proto.String(queue), NodeLabelExpression: optional(label),
		ApplicationType: proto.String("LOOM-DAG"), Resource: rpc.ResourceFromVector(fairness.New(float64(amMB), 1)),
		AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{cmd},
			LocalResources: []*pb.StringLocalResourceMapProto{{Key: proto.String("job.json"), Value: &pb.LocalResourceProto{
				Resource: &pb.URLProto{Scheme: proto.String("file"), File: proto.String(path)},
				Size:     proto.Int64(st.Size()), Timestamp: proto.Int64(st.ModTime().UnixMilli()),
				Type: pb.LocalResourceTypeProto_FILE.Enum(), Visibility: pb.LocalResourceVisibilityProto_APPLICATION.Enum()}}}}}})
	if err != nil {
		return nil, err
	}
	return id, nil
}

// Ended reports whether an app is in a final state.
func Ended(r *pb.ApplicationReportProto) bool {
	switch r.GetYarnApplicationState() {
	case pb.YarnApplicationStateProto_FINISHED, pb.YarnApplicationStateProto_FAILED, pb.YarnApplicationStateProto_KILLED:
		return true
	}
	return false
}

// History is one job's history file (am/driver writes it).
type History = am.History

// Histories reads every job history in dir (the RM's loom.history.dir),
// by app id.
func Histories(dir string) (map[string]History, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "application_*.json"))
	if err != nil {
		return nil, err
	}
	out := map[string]History{}
	var errs []error
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var h History
		if err := json.Unmarshal(b, &h); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		out[strings.TrimSuffix(filepath.Base(p), ".json")] = h
	}
	return out, errors.Join(errs...)
}

// Utilisation is the share of the cluster's vcores and memory the tasks
// of the histories held over [start, end], from the stage demands.
func Utilisation(jobs map[string]*workload.Job, hs map[string]History, capacity fairness.Vector, span time.Duration) fairness.Vector {
	var used fairness.Vector
	for app, h := range hs {
		j := jobs[app]
		if j == nil {
			continue
		}
		demand := stageDemands(j)
		for _, t := range h.Tasks {
			used = used.Add(demand[t.Stage].Scale(float64(t.EndMs-t.StartMs) / 1000))
		}
	}
	var u fairness.Vector
	for k := range u {
		if capacity[k] > 0 && span > 0 {
			u[k] = used[k] / (capacity[k] * span.Seconds())
		}
	}
	return u
}

// JainOverWindows is Jain's index of the running jobs' dominant shares,
// each normalised by its fair share of the cluster (capacity over the
// jobs running), averaged over the windows in which any job ran a task,
// as the simulator computes it.
func JainOverWindows(jobs map[string]*workload.Job, hs map[string]History, capacity fairness.Vector, window time.Duration) float64 {
	type span struct {
		start, end int64
		demand     fairness.Vector
	}
	spans := map[string][]span{}
	var begin, end int64
	for app, h := range hs {
		j := jobs[app]
		if j == nil {
			continue
		}
		demand := stageDemands(j)
		for _, t := range h.Tasks {
			s := span{h.StartUnixMs + t.StartMs, h.StartUnixMs + t.EndMs, demand[t.Stage]}
			spans[app] = append(spans[app], s)
			if begin == 0 || s.start < begin {
				begin = s.start
			}
			end = max(end, s.end)
		}
	}
	w := window.Milliseconds()
	var sum float64
	n := 0
	for t := begin; t <= end; t += w {
		var used, fair []fairness.Vector
		for _, ss := range spans {
			var u fairness.Vector
			for _, s := range ss {
				if lo, hi := max(s.start, t), min(s.end, t+w); hi > lo {
					u = u.Add(s.demand.Scale(float64(hi-lo) / float64(w)))
				}
			}
			if !u.IsZero() {
				used = append(used, u)
			}
		}
		if len(used) == 0 {
			continue
		}
		for range used {
			fair = append(fair, capacity.Scale(1/float64(len(used))))
		}
		sum += fairness.JainOfShares(capacity, used, fair)
		n++
	}
	if n == 0 {
		return 1
	}
	return sum / float64(n)
}

func stageDemands(j *workload.Job) map[string]fairness.Vector {
	demand := make(map[string]fairness.Vector, len(j.Stages))
	for _, s := range j.Stages {
		demand[s.Name] = s.Demand
	}
	return demand
}

// Counter reads a Prometheus counter or gauge from the RM's /metrics,
// summed over the series whose labels include the given ones.
func Counter(ctx context.Context, webAddr, name string, labels map[string]string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+webAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("GET /metrics: %w", err)
	}
	fam, ok := fams[name]
	if !ok {
		return 0, fmt.Errorf("/metrics has no %s", name)
	}
	var sum float64
	for _, m := range fam.GetMetric() {
		match := 0
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match < len(labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum, nil
}

// SimOptions are what the simulator needs beyond the cluster's options to
// replay a mini run.
type SimOptions struct {
	Seed uint64
	// AM is the AM container each job asks for first, and AMStartup how
	// long its process takes to start deciding once granted.
	AM        fairness.Vector
	AMStartup time.Duration
	// TaskOverhead is what a live task costs beyond its duration: the
	// container's allocation on a heartbeat, the AM's next allocate call,
	// and the start on the executor.
	TaskOverhead time.Duration
}

// Simulate replays the jobs of a mini run (already scaled to it) through
// the simulator, on the same cluster shape, policy and seed, with every
// stage's duration multiplied by the time scale as the AMs do.
func Simulate(o Options, js []*workload.Job, so SimOptions) (sim.Summary, error) {
	cfg := sim.DefaultConfig()
	cfg.Machines, cfg.Machine = o.Nodes, fairness.New(float64(o.NodeMemoryMB), float64(o.NodeVCores))
	cfg.PolicyConfig, cfg.Seed = o.PolicyConfig, so.Seed
	cfg.AM, cfg.AMStartup, cfg.TaskOverhead = so.AM, so.AMStartup, so.TaskOverhead
	cfg.Window = time.Second
	jobs := make([]*workload.Job, len(js))
	for i, j := range js {
		c := j.Clone()
		c.ScaleTime(o.TimeScale)
		jobs[i] = c
	}
	r, err := sim.Run(cfg, jobs)
	if err != nil {
		return sim.Summary{}, err
	}
	return r.Summarize(), nil
}

// Overheads measures what the live run cost beyond the workload itself,
// for the simulator to replay: the quickest start of an AM after its app
// was submitted (appStartMs, by app), and the mean time a task held its
// container beyond its scaled duration.
func Overheads(jobs map[string]*workload.Job, hs map[string]History, appStartMs map[string]int64, timeScale float64) (amStartup, perTask time.Duration) {
	amStartup = -1
	var extra time.Duration
	n := 0
	for app, h := range hs {
		j := jobs[app]
		if j == nil {
			continue
		}
		if s, ok := appStartMs[app]; ok && h.StartUnixMs >= s {
			if d := time.Duration(h.StartUnixMs-s) * time.Millisecond; amStartup < 0 || d < amStartup {
				amStartup = d
			}
		}
		dur := map[string]time.Duration{}
		for _, s := range j.Stages {
			dur[s.Name] = time.Duration(float64(s.Duration) * timeScale)
		}
		for _, t := range h.Tasks {
			if t.State == am.StateRunning {
				continue
			}
			extra += max(time.Duration(t.EndMs-t.StartMs)*time.Millisecond-dur[t.Stage], 0)
			n++
		}
	}
	if n > 0 {
		perTask = extra / time.Duration(n)
	}
	return max(amStartup, 0), perTask
}

// optional is s, or nil (unset) when it is empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
