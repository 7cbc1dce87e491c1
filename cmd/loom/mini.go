package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/tool/mini"
	"github.com/loomrm/loom/workload"
)

// miniAMMB is the memory of each DAG job's AM container.
const miniAMMB = 256

type miniFlags struct {
	json, compareSim, keep        bool
	seed                          uint64
	simAMStartup, simTaskOverhead time.Duration
}

func miniCommand() *cobra.Command {
	o := mini.Options{}
	var (
		jobs                     int
		catalogue, arrivals, dir string
		memScale                 float64
		mf                       miniFlags
		policy                   string
		pf                       policyFlags
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
			if o.PolicyConfig, err = pf.config(policy); err != nil {
				return err
			}
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
			rng := rand.New(rand.NewPCG(mf.seed, mf.seed))
			js, err := workload.Sample(pool, jobs, rng)
			if err != nil {
				return err
			}
			a.Assign(js, rng)
			node := fairness.New(float64(o.NodeMemoryMB), float64(o.NodeVCores))
			mini.Scale(js, memScale, node)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(os.Stderr, "starting an RM and %d NMs of %v on loopback; logs in %s\n", o.Nodes, node, o.Dir)
			c, err := mini.Start(ctx, o)
			if err != nil {
				return err
			}
			defer c.Stop()
			fmt.Fprintf(os.Stderr, "web UI: http://%s/\n", c.WebAddr)
			err = runMini(ctx, cmd, c, o, js, mf)
			if mf.keep && ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "the cluster stays up for the web UI at http://%s/ until Ctrl-C\n", c.WebAddr)
				<-ctx.Done()
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", 4, "NodeManagers to start")
	f.IntVar(&o.NodeMemoryMB, "node-memory-mb", 4096, "memory each NodeManager offers")
	f.IntVar(&o.NodeVCores, "node-vcores", 4, "vcores each NodeManager offers")
	f.StringVar(&policy, "policy", rm.DefaultPolicyConfig().Policy, "the RM's policy: "+strings.Join(rm.PolicyNames, ", "))
	pf.register(f)
	f.StringVar(&o.TaskKind, "task-kind", "sleep", "how tasks run: sleep (wait for their duration, using nothing), synthetic (hold their memory and burn their vcores) or noop")
	f.Float64Var(&o.TimeScale, "time-scale", 0.02, "multiply every task's duration by this")
	f.Float64Var(&memScale, "memory-scale", 1.0/32, "multiply every task's memory by this (at least 64 MB)")
	f.IntVar(&jobs, "jobs", 8, "jobs to draw from the catalogue")
	f.StringVar(&catalogue, "catalogue", "tpch:50g,100g", "the catalogue to draw from")
	f.StringVar(&arrivals, "arrivals", "poisson:2s", "batch, or poisson:<mean>")
	f.Uint64Var(&mf.seed, "seed", 1, "seed for drawing jobs and arrivals")
	f.BoolVar(&mf.json, "json", false, "print the summary as JSON")
	f.BoolVar(&mf.keep, "keep-running", false, "keep the cluster (and its web UI) up after the summary, until Ctrl-C")
	f.BoolVar(&mf.compareSim, "compare-sim", false, "also replay the same jobs through the simulator (same cluster shape, policy and seed) and print live against simulated average JCT and makespan")
	f.DurationVar(&mf.simAMStartup, "sim-am-startup", -1, "with --compare-sim: how long an AM takes to start once its container is granted (default: the quickest in the live run)")
	f.DurationVar(&mf.simTaskOverhead, "sim-task-overhead", -1, "with --compare-sim: what a task costs beyond its duration (default: the live run's mean)")
	f.StringVar(&dir, "dir", "", "where logs and histories go (default: a new dir under $TMPDIR)")
	return cmd
}

// miniSummary is what loom mini prints at the end (--json prints it as
// is).
type miniSummary struct {
	Policy      string             `json:"policy"`
	PAltruism   float64            `json:"p_altruism"`
	Jobs        []miniJob          `json:"jobs"`
	AvgJCTMs    int64              `json:"avg_jct_ms"`
	MakespanMs  int64              `json:"makespan_ms"`
	Jain        float64            `json:"jain"`
	Utilisation map[string]float64 `json:"utilisation"`
	Tasks       int                `json:"tasks"`
	Altruistic  int                `json:"altruistic_tasks"`
	// Asks are the containers the AMs asked for, by kind, as the RM
	// counted them (loom_asks_total).
	Asks map[string]float64 `json:"asks"`
	// TakenBack are the containers the RM's recall took back under
	// running tasks (loom_containers_preempted_total, its recall causes).
	TakenBack int `json:"containers_taken_back"`
	// Placements are the RM's containers by locality (/ws/v1/loom/scheduler).
	Placements dao.Placements `json:"placements"`
	WebUI      string         `json:"web_ui"`
	HistoryDir string         `json:"history_dir"`
	LogDir     string         `json:"log_dir"`
	Sim        *miniSim       `json:"sim,omitempty"`
}

type miniJob struct {
	App         string `json:"app"`
	Name        string `json:"name"`
	State       string `json:"state"`
	FinalStatus string `json:"final_status"`
	JCTMs       int64  `json:"jct_ms"`
	Diagnostics string `json:"diagnostics,omitempty"`
}

// miniSim is the same workload simulated, against the live run.
type miniSim struct {
	AvgJCTMs   int64 `json:"avg_jct_ms"`
	MakespanMs int64 `json:"makespan_ms"`
	// Diffs are (live - sim) / sim.
	AvgJCTDiff   float64 `json:"avg_jct_diff"`
	MakespanDiff float64 `json:"makespan_diff"`
	Within       bool    `json:"within_target"`
	// TakenBack are the containers the simulated RM's recall took back;
	// AltruisticShare the simulated tasks run on ALTRUISTIC grants.
	TakenBack       int     `json:"containers_taken_back"`
	AltruisticShare float64 `json:"altruistic_share"`
	// What the simulator was told of the live system's overheads.
	AMStartupMs    int64   `json:"am_startup_ms"`
	TaskOverheadMs float64 `json:"task_overhead_ms"`
}

// fidelityTarget is how far live and simulated figures may differ: 10%
// for each policy (issue 16), since the simulator and the RM drive the
// same cores through the same adapter.
const fidelityTarget = 0.10

func runMini(ctx context.Context, cmd *cobra.Command, c *mini.Cluster, o mini.Options, js []*workload.Job, mf miniFlags) error {
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
		id, err := mini.Submit(ctx, ac, j, "default", "", staging, o.Binary, o.TaskKind, o.TimeScale, miniAMMB)
		if err != nil {
			return fmt.Errorf("%s: %w", j.Name, err)
		}
		byApp[rpc.AppIDString(id)] = j
		subs = append(subs, submitted{job: j, id: id})
	}
	out := cmd.OutOrStdout()
	table := out
	if mf.json {
		table = io.Discard
	}
	watchErr := watch(ctx, table, ac, subs)
	if ctx.Err() != nil {
		return watchErr
	}
	// The summary, from the RM's reports and metrics and the AMs' histories.
	sum := miniSummary{Policy: o.Policy, PAltruism: o.PAltruism, WebUI: "http://" + c.WebAddr + "/",
		HistoryDir: c.HistoryDir, LogDir: o.Dir, Asks: map[string]float64{}}
	hs, herr := mini.Histories(c.HistoryDir)
	var first, last int64
	var total time.Duration
	starts := map[string]int64{}
	for i, s := range subs {
		r, err := ac.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: s.id})
		if err != nil {
			return err
		}
		rep := r.GetApplicationReport()
		starts[rpc.AppIDString(s.id)] = rep.GetStartTime()
		if i == 0 || rep.GetStartTime() < first {
			first = rep.GetStartTime()
		}
		last = max(last, rep.GetFinishTime())
		jct := time.Duration(rep.GetFinishTime()-rep.GetStartTime()) * time.Millisecond
		total += jct
		sum.Jobs = append(sum.Jobs, miniJob{App: rpc.AppIDString(s.id), Name: s.job.Name,
			State: strings.TrimPrefix(rep.GetYarnApplicationState().String(), ""), FinalStatus: strings.TrimPrefix(rep.GetFinalApplicationStatus().String(), "APP_"),
			JCTMs: jct.Milliseconds(), Diagnostics: rep.GetDiagnostics()})
	}
	capacity := fairness.New(float64(o.NodeMemoryMB*o.Nodes), float64(o.NodeVCores*o.Nodes))
	makespan := time.Duration(last-first) * time.Millisecond
	avg := total / time.Duration(max(len(subs), 1))
	sum.AvgJCTMs, sum.MakespanMs = avg.Milliseconds(), makespan.Milliseconds()
	util := mini.Utilisation(byApp, hs, capacity, makespan)
	sum.Utilisation = map[string]float64{"vcores": util[fairness.VCores], "memory-mb": util[fairness.Memory]}
	sum.Jain = mini.JainOverWindows(byApp, hs, capacity, time.Second)
	for _, h := range hs {
		for _, t := range h.Tasks {
			sum.Tasks++
			if t.Kind == "ALTRUISTIC" {
				sum.Altruistic++
			}
		}
	}
	for _, kind := range []string{"DEFAULT", "ALTRUISTIC"} {
		n, err := mini.Counter(ctx, c.WebAddr, "loom_asks_total", map[string]string{"kind": kind})
		if err != nil {
			return fmt.Errorf("reading the RM's metrics: %w", err)
		}
		sum.Asks[kind] = n
	}
	for _, cause := range []rm.PreemptCause{rm.RecallBelowShare, rm.RecallLate} {
		n, err := mini.Counter(ctx, c.WebAddr, "loom_containers_preempted_total", map[string]string{"cause": cause.String()})
		if err != nil {
			return fmt.Errorf("reading the RM's metrics: %w", err)
		}
		sum.TakenBack += int(n)
	}
	placements, err := mini.Placements(ctx, c.WebAddr)
	if err != nil {
		return fmt.Errorf("reading the RM's placements: %w", err)
	}
	sum.Placements = placements
	if mf.compareSim {
		so := mini.SimOptions{Seed: mf.seed, AM: fairness.New(miniAMMB, 1), AMStartup: mf.simAMStartup, TaskOverhead: mf.simTaskOverhead}
		// Unless told, the simulator takes the live run's own overheads.
		amStart, overhead := mini.Overheads(byApp, hs, starts, o.TimeScale)
		if mf.simAMStartup < 0 {
			so.AMStartup = amStart
		}
		if mf.simTaskOverhead < 0 {
			so.TaskOverhead = overhead
		}
		s, err := mini.Simulate(o, js, so)
		if err != nil {
			return fmt.Errorf("simulating the same workload: %w", err)
		}
		ms := &miniSim{AvgJCTMs: s.AvgJCT.Milliseconds(), MakespanMs: s.Makespan.Milliseconds(), TakenBack: s.TakenBack,
			AltruisticShare: s.AltruisticTasks,
			AMStartupMs:     so.AMStartup.Milliseconds(), TaskOverheadMs: float64(so.TaskOverhead) / float64(time.Millisecond)}
		ms.AvgJCTDiff = float64(avg-s.AvgJCT) / float64(max(s.AvgJCT, 1))
		ms.MakespanDiff = float64(makespan-s.Makespan) / float64(max(s.Makespan, 1))
		ms.Within = math.Abs(ms.AvgJCTDiff) <= fidelityTarget && math.Abs(ms.MakespanDiff) <= fidelityTarget
		sum.Sim = ms
	}
	if herr != nil {
		fmt.Fprintf(os.Stderr, "loom mini: some histories could not be read: %v\n", herr)
	}
	if mf.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			return err
		}
		return watchErr
	}
	if err := sum.write(out); err != nil {
		return err
	}
	return watchErr
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// write prints the summary as tables.
func (s miniSummary) write(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\npolicy\tjobs\tavg JCT\tmakespan\tJain avg\tvcores\tmemory\ttasks\taltruistic\tasks DEFAULT/ALTRUISTIC\n")
	name := s.Policy
	if rm.Altruistic(s.Policy) {
		name = fmt.Sprintf("%s (P=%g)", s.Policy, s.PAltruism)
	}
	fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%.3f\t%.0f%%\t%.0f%%\t%d\t%d (%.0f%%)\t%.0f / %.0f\n", name, len(s.Jobs),
		ms(s.AvgJCTMs), ms(s.MakespanMs), s.Jain, 100*s.Utilisation["vcores"], 100*s.Utilisation["memory-mb"],
		s.Tasks, s.Altruistic, 100*float64(s.Altruistic)/float64(max(s.Tasks, 1)), s.Asks["DEFAULT"], s.Asks["ALTRUISTIC"])
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := mini.WritePlacements(out, name, s.Placements); err != nil {
		return err
	}
	if s.Sim != nil {
		verdict := "within"
		if !s.Sim.Within {
			verdict = "NOT within"
		}
		fmt.Fprintf(tw, "\nfidelity\tlive\tsimulated\tdifference\n")
		fmt.Fprintf(tw, "avg JCT\t%v\t%v\t%+.1f%%\n", ms(s.AvgJCTMs), ms(s.Sim.AvgJCTMs), 100*s.Sim.AvgJCTDiff)
		fmt.Fprintf(tw, "makespan\t%v\t%v\t%+.1f%%\n", ms(s.MakespanMs), ms(s.Sim.MakespanMs), 100*s.Sim.MakespanDiff)
		live := float64(s.Altruistic) / float64(max(s.Tasks, 1))
		fmt.Fprintf(tw, "tasks run ALTRUISTIC\t%.0f%%\t%.0f%%\t%+.0f points\n", 100*live, 100*s.Sim.AltruisticShare, 100*(live-s.Sim.AltruisticShare))
		fmt.Fprintf(tw, "containers taken back by recall\t%d\t%d\t%+d\n", s.TakenBack, s.Sim.TakenBack, s.TakenBack-s.Sim.TakenBack)
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(out, "live and simulated are %s the %.0f%% target (simulated with the live AM startup of %v and %.1f ms per task beyond its duration)\n",
			verdict, 100*fidelityTarget, ms(s.Sim.AMStartupMs), s.Sim.TaskOverheadMs)
	}
	fmt.Fprintf(out, "\nweb UI: %s\nhistories: %s\nlogs: %s\n", s.WebUI, s.HistoryDir, s.LogDir)
	return nil
}
