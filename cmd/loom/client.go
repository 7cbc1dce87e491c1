package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/loomrm/loom/daemon/rm/server"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/tool/mini"
	"github.com/loomrm/loom/workload"
)

// rmFlags find the RM the way a YARN client does: yarn.resourcemanager.address
// from the config dir, unless --rm says otherwise.
type rmFlags struct {
	confFlags
	addr string
	json bool
}

func (f *rmFlags) add(cmd *cobra.Command, withJSON bool) {
	f.confFlags.add(cmd)
	cmd.Flags().StringVar(&f.addr, "rm", "", "the RM's client address, host:port (default: yarn.resourcemanager.address)")
	if withJSON {
		cmd.Flags().BoolVar(&f.json, "json", false, "print JSON instead of a table")
	}
}

// client connects to the RM, and checks it answers, so that a wrong
// address is one clear error.
func (f *rmFlags) client(ctx context.Context) (rpc.ApplicationClient, func(), error) {
	addr, where := f.addr, "--rm"
	c, err := f.load(server.Defaults, server.ConfFiles)
	if err != nil {
		return rpc.ApplicationClient{}, nil, err
	}
	opts := rpc.ClientOptions{DialTimeout: 3 * time.Second, Retries: -1}
	if on, err := rpc.KerberosEnabled(c); err != nil {
		return rpc.ApplicationClient{}, nil, err
	} else if on {
		// As kinit left the user's tickets.
		if opts.Kerberos, err = rpc.KerberosLogin(); err != nil {
			return rpc.ApplicationClient{}, nil, fmt.Errorf("%s is kerberos: %w", rpc.KeyAuthentication, err)
		}
	}
	if addr == "" {
		addrs, err := c.RMAddrs("yarn.resourcemanager.address")
		if err != nil {
			return rpc.ApplicationClient{}, nil, err
		}
		for i := range addrs {
			addrs[i] = strings.Replace(addrs[i], "0.0.0.0:", "127.0.0.1:", 1)
		}
		// With RM HA, the other RMs are tried when one is standby or gone.
		addr, opts.Failover = addrs[0], addrs[1:]
		where = "yarn.resourcemanager.address (" + c.Source("yarn.resourcemanager.address") + ")"
		if len(addrs) > 1 {
			where = "the RMs of " + hadoopconf.KeyHAIDs + " " + strings.Join(addrs, ", ")
		}
	}
	cl := rpc.NewClient(addr, opts)
	ac := rpc.ApplicationClient{C: cl}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := ac.GetClusterMetrics(cctx, &pb.GetClusterMetricsRequestProto{}); err != nil {
		cl.Close()
		var ce *rpc.ConnError
		if errors.As(err, &ce) {
			return ac, nil, fmt.Errorf("the ResourceManager is unreachable at %s (from %s): %v", addr, where, ce.Err)
		}
		return ac, nil, err
	}
	return ac, func() { cl.Close() }, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// appRow is an app as `loom apps` shows it.
type appRow struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	User     string  `json:"user"`
	Queue    string  `json:"queue"`
	State    string  `json:"state"`
	Final    string  `json:"finalStatus"`
	Progress float32 `json:"progress"`
	Started  int64   `json:"startedTime"`
	Finished int64   `json:"finishedTime"`
	Diag     string  `json:"diagnostics,omitempty"`
}

func rowOf(r *pb.ApplicationReportProto) appRow {
	return appRow{ID: rpc.AppIDString(r.GetApplicationId()), Name: r.GetName(), User: r.GetUser(), Queue: r.GetQueue(),
		State: r.GetYarnApplicationState().String(), Final: strings.TrimPrefix(r.GetFinalApplicationStatus().String(), "APP_"),
		Progress: r.GetProgress(), Started: r.GetStartTime(), Finished: r.GetFinishTime(), Diag: r.GetDiagnostics()}
}

func appsCommand() *cobra.Command {
	var f rmFlags
	var states []string
	cmd := &cobra.Command{
		Use:     "apps",
		Short:   "List applications, as yarn application -list does",
		Example: "  loom apps\n  loom apps --state RUNNING,FINISHED --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ac, done, err := f.client(ctx)
			if err != nil {
				return err
			}
			defer done()
			req := &pb.GetApplicationsRequestProto{}
			for _, s := range states {
				v, ok := pb.YarnApplicationStateProto_value[strings.ToUpper(strings.TrimSpace(s))]
				if !ok {
					return fmt.Errorf("unknown state %q (NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED)", s)
				}
				req.ApplicationStates = append(req.ApplicationStates, pb.YarnApplicationStateProto(v))
			}
			resp, err := ac.GetApplications(ctx, req)
			if err != nil {
				return err
			}
			rows := make([]appRow, 0, len(resp.GetApplications()))
			for _, r := range resp.GetApplications() {
				rows = append(rows, rowOf(r))
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "application\tname\tuser\tqueue\tstate\tfinal status\tprogress")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%\n", r.ID, r.Name, r.User, r.Queue, r.State, r.Final, 100*r.Progress)
			}
			return tw.Flush()
		},
	}
	f.add(cmd, true)
	cmd.Flags().StringSliceVar(&states, "state", nil, "only apps in these states, comma-separated")
	return cmd
}

func killCommand() *cobra.Command {
	var f rmFlags
	cmd := &cobra.Command{
		Use:     "kill APP_ID...",
		Short:   "Kill applications, as yarn application -kill does",
		Example: "  loom kill application_1700000000000_0001",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ac, done, err := f.client(ctx)
			if err != nil {
				return err
			}
			defer done()
			var out []appRow
			for _, a := range args {
				id, err := rpc.ParseAppID(a)
				if err != nil {
					return err
				}
				if _, err := ac.ForceKillApplication(ctx, &pb.KillApplicationRequestProto{ApplicationId: id}); err != nil {
					return fmt.Errorf("%s: %w", a, err)
				}
				rep, err := ac.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: id})
				if err != nil {
					return err
				}
				out = append(out, rowOf(rep.GetApplicationReport()))
			}
			if f.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			for _, r := range out {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s)\n", r.ID, r.State, r.Final)
			}
			return nil
		},
	}
	f.add(cmd, true)
	return cmd
}

type nodeRow struct {
	ID         string          `json:"id"`
	State      string          `json:"state"`
	Label      string          `json:"node_label"`
	Containers int32           `json:"containers"`
	Used       fairness.Vector `json:"used"`
	Capacity   fairness.Vector `json:"capacity"`
}

func nodesCommand() *cobra.Command {
	var f rmFlags
	var all bool
	cmd := &cobra.Command{
		Use:     "nodes",
		Short:   "List NodeManagers, as yarn node -list does",
		Example: "  loom nodes\n  loom nodes --all --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ac, done, err := f.client(ctx)
			if err != nil {
				return err
			}
			defer done()
			req := &pb.GetClusterNodesRequestProto{}
			if all {
				for _, v := range pb.NodeStateProto_value {
					req.NodeStates = append(req.NodeStates, pb.NodeStateProto(v))
				}
			}
			resp, err := ac.GetClusterNodes(ctx, req)
			if err != nil {
				return err
			}
			var rows []nodeRow
			for _, n := range resp.GetNodeReports() {
				used, _ := rpc.VectorFromResource(n.GetUsed())
				capacity, _ := rpc.VectorFromResource(n.GetCapability())
				rows = append(rows, nodeRow{ID: fmt.Sprintf("%s:%d", n.GetNodeId().GetHost(), n.GetNodeId().GetPort()),
					State: strings.TrimPrefix(n.GetNodeState().String(), "NS_"), Label: strings.Join(n.GetNodeLabels(), ","),
					Containers: n.GetNumContainers(), Used: used, Capacity: capacity})
			}
			sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
			if f.json {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "node\tstate\tnode label\tcontainers\tused\tcapacity")
			for _, r := range rows {
				label := r.Label
				if label == "" {
					label = "default"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%v\t%v\n", r.ID, r.State, label, r.Containers, r.Used, r.Capacity)
			}
			return tw.Flush()
		},
	}
	f.add(cmd, true)
	cmd.Flags().BoolVar(&all, "all", false, "nodes in every state, not only RUNNING")
	return cmd
}

// submitted is one job the submit command sent.
type submitted struct {
	job *workload.Job
	id  *pb.ApplicationIdProto
}

func submitCommand() *cobra.Command {
	var (
		f                          rmFlags
		file, name, scale, queue   string
		nodeLabel                  string
		catalogue, arrivals        string
		taskKind, staging, binPath string
		jobs                       int
		timeScale, memScale        float64
		amMB                       int64
		detach                     bool
		seed                       uint64
	)
	cmd := &cobra.Command{
		Use:   "submit (tpch QUERY | tpcds QUERY | mix | --workload FILE)",
		Short: "Submit DAG jobs: a TPC-H or TPC-DS query, a JSON DAG file, or a mix",
		Long: `Submit DAG jobs to the RM, each run by a DAG AM (loom am). The job's DAG is
staged as a file the NodeManager localises into the AM's container. By default
it waits, with a progress bar per job, and prints each app's final state; with
--detach it prints the app ids and returns.`,
		Example: "  loom submit tpch q5 --scale 100g\n  loom submit tpcds q3\n  loom submit --workload my-dags.json\n" +
			"  loom submit mix --catalogue tpch:100g,250g --jobs 10 --arrivals poisson:5s --time-scale 0.01",
		RunE: func(cmd *cobra.Command, args []string) error {
			// The job limits are checked before anything is submitted, so
			// that a job too large for its AM is refused here, not by the
			// AM after it was accepted.
			limits, err := f.jobLimits()
			if err != nil {
				return err
			}
			all, err := submitJobs(args, file, name, scale, catalogue, arrivals, jobs, seed, limits)
			if err != nil {
				return err
			}
			if err := limits.Check(all...); err != nil {
				return err
			}
			if memScale != 1 {
				mini.Scale(all, memScale, fairness.Vector{})
			}
			ctx := cmd.Context()
			ac, done, err := f.client(ctx)
			if err != nil {
				return err
			}
			defer done()
			if binPath == "" {
				if binPath, err = os.Executable(); err != nil {
					return err
				}
			}
			if staging == "" {
				staging = filepath.Join(os.TempDir(), "loom-staging")
			}
			var subs []submitted
			start := time.Now()
			for _, j := range all {
				if wait := j.Arrival - time.Since(start); wait > 0 {
					time.Sleep(wait)
				}
				id, err := mini.Submit(ctx, ac, j, queue, nodeLabel, staging, binPath, taskKind, timeScale, amMB)
				if err != nil {
					return fmt.Errorf("%s: %w", j.Name, err)
				}
				subs = append(subs, submitted{job: j, id: id})
				if detach {
					fmt.Fprintln(cmd.OutOrStdout(), rpc.AppIDString(id))
				}
			}
			if detach {
				return nil
			}
			return watch(ctx, cmd.OutOrStdout(), ac, subs)
		},
	}
	f.add(cmd, false)
	fl := cmd.Flags()
	fl.StringVar(&file, "workload", "", "a JSON DAG file: submit its jobs (or --name)")
	fl.StringVar(&name, "name", "", "with --workload: the one job to submit")
	fl.StringVar(&scale, "scale", "", "TPC-H scale (50g, 100g, 250g, 500g) or TPC-DS scale factor (100)")
	fl.StringVar(&catalogue, "catalogue", "tpch:100g,250g", "for mix: catalogues to draw jobs from")
	fl.IntVar(&jobs, "jobs", 10, "for mix: how many jobs")
	fl.StringVar(&arrivals, "arrivals", "batch", "for mix: batch, or poisson:<mean>")
	fl.Uint64Var(&seed, "seed", 1, "for mix: the seed for drawing jobs and arrivals")
	fl.StringVar(&queue, "queue", "default", "the queue to submit to")
	fl.StringVar(&nodeLabel, "node-label", "", "the node label (partition) the jobs run in; default: the queue's default-node-label-expression")
	fl.StringVar(&taskKind, "task-kind", "synthetic", "how tasks run: synthetic (use their memory and vcores for their duration), sleep (wait for their duration, using nothing) or noop")
	fl.Float64Var(&timeScale, "time-scale", 1, "multiply every stage's duration by this")
	fl.Float64Var(&memScale, "memory-scale", 1, "multiply every task's memory by this (at least 64 MB), to fit a catalogue's jobs to small nodes")
	fl.Int64Var(&amMB, "am-memory-mb", 1024, "the AM container's memory")
	fl.StringVar(&staging, "staging-dir", "", "where job files are staged for the NodeManagers to localise (default: $TMPDIR/loom-staging)")
	fl.StringVar(&binPath, "loom-binary", "", "the loom binary the AM runs on the nodes (default: this one)")
	fl.BoolVar(&detach, "detach", false, "print the app ids and return without waiting")
	return cmd
}

// jobLimits reads the job limits from the config dir and -D:
// loom.job.max-tasks and loom.job.max-stages; unset, the defaults.
func (f *confFlags) jobLimits() (workload.Limits, error) {
	c, err := f.load(server.Defaults, server.ConfFiles)
	if err != nil {
		return workload.Limits{}, err
	}
	return jobLimits(c)
}

func jobLimits(c *hadoopconf.Conf) (workload.Limits, error) {
	l := workload.DefaultLimits
	for _, k := range []struct {
		key string
		to  *int
	}{{workload.MaxTasksKey, &l.MaxTasks}, {workload.MaxStagesKey, &l.MaxStages}} {
		if _, set := c.Raw(k.key); !set {
			continue
		}
		n, err := c.Int(k.key)
		if err != nil {
			return l, err
		}
		if n <= 0 || n > math.MaxInt32 {
			return l, c.Errorf(k.key, "%d must be between 1 and %d", n, math.MaxInt32)
		}
		*k.to = int(n)
	}
	return l, nil
}

// submitJobs turns the command line into jobs. A JSON file's jobs are
// held to limits before their DAGs are even built.
func submitJobs(args []string, file, name, scale, catalogue, arrivals string, n int, seed uint64, limits workload.Limits) ([]*workload.Job, error) {
	if file != "" {
		if len(args) > 0 {
			return nil, fmt.Errorf("give --workload or a query, not both")
		}
		js, err := workload.LoadJSONWithin(file, limits)
		if err != nil {
			return nil, err
		}
		if name == "" {
			return js, nil
		}
		for _, j := range js {
			if j.Name == name {
				return []*workload.Job{j}, nil
			}
		}
		return nil, fmt.Errorf("%s has no job named %q", file, name)
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("what to submit: tpch QUERY, tpcds QUERY, mix, or --workload FILE")
	}
	switch args[0] {
	case "tpch", "tpcds":
		if len(args) != 2 {
			return nil, fmt.Errorf("%s needs one query, e.g. loom submit %s q5", args[0], args[0])
		}
		if args[0] == "tpch" {
			if scale == "" {
				scale = "100g"
			}
			j, err := workload.TPCH(args[1], scale)
			return []*workload.Job{j}, err
		}
		sf := 100
		if scale != "" {
			if _, err := fmt.Sscan(strings.TrimPrefix(scale, "sf"), &sf); err != nil {
				return nil, fmt.Errorf("TPC-DS scale %q is not a number", scale)
			}
		}
		j, err := workload.TPCDS(args[1], sf)
		return []*workload.Job{j}, err
	case "mix":
		pool, err := workload.Catalogue(catalogue)
		if err != nil {
			return nil, err
		}
		a, err := workload.ParseArrivals(arrivals)
		if err != nil {
			return nil, err
		}
		rng := rand.New(rand.NewPCG(seed, seed))
		js, err := workload.Sample(pool, n, rng)
		if err != nil {
			return nil, err
		}
		a.Assign(js, rng)
		return js, nil
	}
	return nil, fmt.Errorf("unknown workload %q: want tpch, tpcds, mix or --workload FILE", args[0])
}

// watch polls the submitted apps until each ends, drawing a bar per job
// on a terminal and printing each end, then a summary.
func watch(ctx context.Context, out io.Writer, ac rpc.ApplicationClient, subs []submitted) error {
	tty := term.IsTerminal(int(os.Stderr.Fd()))
	ended := make([]*pb.ApplicationReportProto, len(subs))
	drawn := 0
	for {
		left := 0
		reps := make([]*pb.ApplicationReportProto, len(subs))
		for i, s := range subs {
			if ended[i] != nil {
				reps[i] = ended[i]
				continue
			}
			r, err := ac.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: s.id})
			if err != nil {
				return err
			}
			reps[i] = r.GetApplicationReport()
			switch {
			case mini.Ended(reps[i]):
				ended[i] = reps[i]
				if !tty {
					fmt.Fprintf(os.Stderr, "%s %s %s %s\n", rpc.AppIDString(s.id), s.job.Name, reps[i].GetYarnApplicationState(), reps[i].GetFinalApplicationStatus())
				}
			default:
				left++
			}
		}
		if tty {
			if drawn > 0 {
				fmt.Fprintf(os.Stderr, "\x1b[%dA", drawn)
			}
			for i, s := range subs {
				p := reps[i].GetProgress()
				n := int(p * 30)
				fmt.Fprintf(os.Stderr, "\x1b[2K%s %-22.22s [%s%s] %3.0f%% %s\n", rpc.AppIDString(s.id), s.job.Name,
					strings.Repeat("#", n), strings.Repeat(".", 30-n), 100*p, reps[i].GetYarnApplicationState())
			}
			drawn = len(subs)
		}
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "application\tjob\tstate\tfinal status\tJCT")
	failed := 0
	for i, s := range subs {
		r := ended[i]
		jct := time.Duration(r.GetFinishTime()-r.GetStartTime()) * time.Millisecond
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\n", rpc.AppIDString(s.id), s.job.Name, r.GetYarnApplicationState(),
			strings.TrimPrefix(r.GetFinalApplicationStatus().String(), "APP_"), jct)
		if r.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
			failed++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d jobs did not succeed (see loom apps and each AM's am.log)", failed, len(subs))
	}
	return nil
}
