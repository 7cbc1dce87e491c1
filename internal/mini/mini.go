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
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/am/driver"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/workload"
)

// Options shape the mini cluster and its workload.
type Options struct {
	Binary       string // the loom binary to run the daemons and AMs with
	Dir          string // logs, NM dirs, staging and histories
	Nodes        int
	NodeMemoryMB int
	NodeVCores   int
	Policy       string
	PAltruism    float64
	TaskKind     string
	TimeScale    float64
	// Log receives the daemons' output; nil discards it.
	Log *os.File
}

// Cluster is a running mini cluster.
type Cluster struct {
	opts       Options
	ClientAddr string
	procs      []*exec.Cmd
	done       []chan struct{}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Start launches the RM and the NMs and waits until every NM registered.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	c := &Cluster{opts: o}
	addrs := make([]string, 3)
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	c.ClientAddr = addrs[0]
	rmArgs := []string{"rm", "-D", "yarn.resourcemanager.hostname=127.0.0.1",
		"-D", "yarn.resourcemanager.address=" + addrs[0], "-D", "yarn.resourcemanager.scheduler.address=" + addrs[1],
		"-D", "yarn.resourcemanager.resource-tracker.address=" + addrs[2], "-D", "loom.heartbeat.interval-ms=100",
		"-D", "yarn.nm.liveness-monitor.expiry-interval-ms=10000",
		"-D", "yarn.scheduler.minimum-allocation-mb=64", "-D", fmt.Sprintf("yarn.scheduler.maximum-allocation-mb=%d", o.NodeMemoryMB),
		"-D", fmt.Sprintf("yarn.scheduler.maximum-allocation-vcores=%d", o.NodeVCores),
		"-D", "loom.scheduler.policy=" + o.Policy, "-D", "loom.scheduler.p-altruism=" + strconv.FormatFloat(o.PAltruism, 'g', -1, 64)}
	if err := c.spawn("rm", rmArgs...); err != nil {
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

// Submitted is one job and its app.
type Submitted struct {
	Job *workload.Job
	ID  *pb.ApplicationIdProto
}

// Submit stages a job's DAG and submits an app whose AM (loom am) runs it.
func Submit(ctx context.Context, ac rpc.ApplicationClient, j *workload.Job, queue, staging, bin, taskKind string, timeScale float64, amMB int64) (*pb.ApplicationIdProto, error) {
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
	cmd := fmt.Sprintf("%s am --job job.json --task-kind %s --time-scale %g --history <LOG_DIR>/history.json 2><LOG_DIR>/am.log",
		bin, taskKind, timeScale)
	_, err = ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
		ApplicationId: id, ApplicationName: proto.String(j.Name), Queue: proto.String(queue),
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
type History = driver.History

// Histories reads every AM's history under the NMs' log dirs, by app id.
func Histories(dir string) (map[string]History, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "nm*", "logs", "application_*", "container_*", "history.json"))
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
		app := filepath.Base(filepath.Dir(filepath.Dir(p)))
		// A later attempt's history replaces an earlier one's.
		if old, ok := out[app]; !ok || len(h.Tasks) >= len(old.Tasks) {
			out[app] = h
		}
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

// SortedIDs returns the map's app ids in order.
func SortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
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
