package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/mini"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/workload"
)

func miniCommand() *cobra.Command {
	o := mini.Options{}
	var (
		jobs                     int
		catalogue, arrivals, dir string
		memScale                 float64
		seed                     uint64
	)
	cmd := &cobra.Command{
		Use:   "mini",
		Short: "Run Loom's main job: a local mini cluster running a TPC-H mix",
		Long: `Start a ResourceManager and NodeManagers as real processes on loopback, submit
a TPC-H mix to them (task durations and memory scaled to this machine), wait
for every job, and print a summary: each job's JCT, the average, the makespan,
Jain's index over 1 s windows, utilisation, and how many tasks ran
altruistically. Every process it started is stopped on exit or Ctrl-C; the
logs and each job's history stay in --dir.`,
		Example: "  loom mini\n  loom mini --policy drf\n  loom mini --nodes 2 --jobs 4 --p-altruism 0.5",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Binary, err = os.Executable(); err != nil {
				return err
			}
			if dir == "" {
				dir = filepath.Join(os.TempDir(), "loom-mini-"+time.Now().Format("20060102-150405"))
			}
			if o.Dir, err = filepath.Abs(dir); err != nil {
				return err
			}
			if err := os.MkdirAll(o.Dir, 0o755); err != nil {
				return err
			}
			pool, err := workload.Catalogue(catalogue)
			if err != nil {
				return err
			}
			a, err := workload.ParseArrivals(arrivals)
			if err != nil {
				return err
			}
			rng := rand.New(rand.NewPCG(seed, seed))
			js, err := workload.Sample(pool, jobs, rng)
			if err != nil {
				return err
			}
			a.Assign(js, rng)
			node := fairness.New(float64(o.NodeMemoryMB), float64(o.NodeVCores))
			for _, j := range js {
				for i := range j.Stages {
					d := &j.Stages[i].Demand
					d[fairness.Memory] = max(64, d[fairness.Memory]*memScale)
					d[fairness.VCores] = min(d[fairness.VCores], node[fairness.VCores])
					// The mini NodeManagers offer no disk or network
					// bandwidth, so the jobs do not ask for them.
					for k := fairness.Disk; k < fairness.NumKinds; k++ {
						d[k] = 0
					}
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(os.Stderr, "starting an RM and %d NMs of %v on loopback; logs in %s\n", o.Nodes, node, o.Dir)
			c, err := mini.Start(ctx, o)
			if err != nil {
				return err
			}
			defer c.Stop()
			return runMini(ctx, cmd, c, o, js)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", 4, "NodeManagers to start")
	f.IntVar(&o.NodeMemoryMB, "node-memory-mb", 4096, "memory each NodeManager offers")
	f.IntVar(&o.NodeVCores, "node-vcores", 4, "vcores each NodeManager offers")
	f.StringVar(&o.Policy, "policy", "carbyne", "the RM's policy: carbyne, drf, tetris or sjf")
	f.Float64Var(&o.PAltruism, "p-altruism", 1, "P(Altruism)")
	f.StringVar(&o.TaskKind, "task-kind", "sleep", "how tasks run: sleep (hold their memory), synthetic (also burn their vcores) or noop")
	f.Float64Var(&o.TimeScale, "time-scale", 0.02, "multiply every task's duration by this")
	f.Float64Var(&memScale, "memory-scale", 1.0/32, "multiply every task's memory by this (at least 64 MB)")
	f.IntVar(&jobs, "jobs", 8, "jobs to draw from the catalogue")
	f.StringVar(&catalogue, "catalogue", "tpch:50g,100g", "the catalogue to draw from")
	f.StringVar(&arrivals, "arrivals", "poisson:2s", "batch, or poisson:<mean>")
	f.Uint64Var(&seed, "seed", 1, "seed for drawing jobs and arrivals")
	f.StringVar(&dir, "dir", "", "where logs and histories go (default: a new dir under $TMPDIR)")
	return cmd
}

func runMini(ctx context.Context, cmd *cobra.Command, c *mini.Cluster, o mini.Options, js []*workload.Job) error {
	cl := rpc.NewClient(c.ClientAddr, rpc.ClientOptions{})
	defer cl.Close()
	ac := rpc.ApplicationClient{C: cl}
	staging := filepath.Join(o.Dir, "staging")
	byApp := map[string]*workload.Job{}
	var subs []submitted
	start := time.Now()
	for _, j := range js {
		if wait := j.Arrival - time.Since(start); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		id, err := mini.Submit(ctx, ac, j, "default", staging, o.Binary, o.TaskKind, o.TimeScale, 256)
		if err != nil {
			return fmt.Errorf("%s: %w", j.Name, err)
		}
		byApp[rpc.AppIDString(id)] = j
		subs = append(subs, submitted{job: j, id: id})
	}
	out := cmd.OutOrStdout()
	watchErr := watch(ctx, out, ac, subs)
	// The summary, from the RM's reports and the AMs' histories.
	hs, herr := mini.Histories(o.Dir)
	var first, last int64
	var sum time.Duration
	for i, s := range subs {
		r, err := ac.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: s.id})
		if err != nil {
			return err
		}
		rep := r.GetApplicationReport()
		if i == 0 || rep.GetStartTime() < first {
			first = rep.GetStartTime()
		}
		last = max(last, rep.GetFinishTime())
		sum += time.Duration(rep.GetFinishTime()-rep.GetStartTime()) * time.Millisecond
	}
	capacity := fairness.New(float64(o.NodeMemoryMB*o.Nodes), float64(o.NodeVCores*o.Nodes))
	makespan := time.Duration(last-first) * time.Millisecond
	util := mini.Utilisation(byApp, hs, capacity, makespan)
	tasks, altruistic := 0, 0
	for _, h := range hs {
		for _, t := range h.Tasks {
			tasks++
			if t.Kind == "ALTRUISTIC" {
				altruistic++
			}
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\npolicy\tjobs\tavg JCT\tmakespan\tJain avg\tvcores\tmemory\ttasks\taltruistic\n")
	fmt.Fprintf(tw, "%s (P=%g)\t%d\t%v\t%v\t%.3f\t%.0f%%\t%.0f%%\t%d\t%d (%.0f%%)\n", o.Policy, o.PAltruism, len(subs),
		(sum / time.Duration(max(len(subs), 1))).Round(time.Millisecond), makespan.Round(time.Millisecond),
		mini.JainOverWindows(byApp, hs, capacity, time.Second), 100*util[fairness.VCores], 100*util[fairness.Memory],
		tasks, altruistic, 100*float64(altruistic)/float64(max(tasks, 1)))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "histories and logs: %s\n", o.Dir)
	if herr != nil {
		fmt.Fprintf(os.Stderr, "loom mini: some histories could not be read: %v\n", herr)
	}
	return watchErr
}
