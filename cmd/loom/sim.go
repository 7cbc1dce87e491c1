package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/daemon/rm/server"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/tool/plot"
	"github.com/loomrm/loom/tool/sim"
	"github.com/loomrm/loom/workload"
)

type simFlags struct {
	wl          workloadFlags
	machines    int
	policies    string
	policy      policyFlags
	misestimate float64
	jsonOut     bool
	plots       string
	sweeps      bool
	frontier    bool
	cpf         bool
	planFollow  time.Duration
	followPart  float64
	planRes     time.Duration
	planFar     time.Duration
	decisions   string
	quiet       bool
	locality    sim.LocalityModel
	withInputs  bool
	queues      string
	nodeLabels  string
	labelled    string
	preemption  time.Duration
}

func simCommand() *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate a workload under drf, tetris, sjf and carbyne, and compare them",
		Long: `Simulate a workload on a cluster with a virtual clock, under each policy, and
print Carbyne's factor of improvement over the others in the shape of the
Carbyne paper's Table 3, then each policy's JCTs, makespan, Jain's index over
60 s windows and utilisation.

The simulator drives the same ResourceManager and application-master code as
the real daemons. The default is the paper's cluster (100 machines of 20
cores, 128 GB, SSD and 10 Gbps) running 250 jobs drawn from TPC-H at 100g and
250g, arriving as a Poisson process at load 1.`,
		Example: `  loom sim
  loom sim --catalogue tpcds --load 1.5 --policies drf,carbyne
  loom sim --workload my-dags.json --arrivals batch --json
  loom sim --plots report/ --sweeps
  loom sim --catalogue tpcds --frontier --plots report/
  loom sim --locality --policies drf,carbyne
  loom sim --queues fair-scheduler.xml --policies drf,carbyne`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSim(cmd.OutOrStdout(), f) },
	}
	f.wl.register(cmd)
	fl := cmd.Flags()
	fl.IntVar(&f.machines, "machines", 100, "machines in the cluster; fewer machines is more load")
	fl.StringVar(&f.policies, "policies", strings.Join(sim.Policies, ","), "policies to run, comma-separated")
	f.policy.register(fl)
	fl.Float64Var(&f.misestimate, "misestimate", 0, "misestimate every demand and duration by this many percent, -50 to 50")
	fl.BoolVar(&f.jsonOut, "json", false, "print the results as JSON instead of tables")
	fl.StringVar(&f.plots, "plots", "", "write SVG plots into this directory")
	fl.BoolVar(&f.sweeps, "sweeps", false, "also sweep load, misestimation and P(Altruism) (slow; plotted with --plots)")
	fl.BoolVar(&f.frontier, "frontier", false, "instead, sweep every policy's knobs (Tetris f, Carbyne P(Altruism) and leftover cap) and print average JCT against Jain's index (plotted with --plots)")
	fl.DurationVar(&f.planFollow, "plan-follow", altruism.DefaultFollow, "how long Carbyne's AMs follow a plan without planning again while the job keeps to it (0: plan at every decision, slower)")
	fl.Float64Var(&f.followPart, "plan-follow-part", altruism.DefaultFollowPart, "Carbyne's AMs also follow a plan for this part of the time it has left (T_k - now), when longer than --plan-follow (0: --plan-follow alone)")
	fl.DurationVar(&f.planRes, "plan-resolution", altruism.DefaultResolution, "Carbyne's AMs' planning resolution: task ends closer than this (and than 1/20 of the shortest task) are one instant to the plan (0: exact, slower)")
	fl.DurationVar(&f.planFar, "plan-far-resolution", altruism.DefaultFarResolution, "Carbyne's AMs coarsen --plan-resolution with distance: task ends d ahead are one instant with those up to d/100 after them, up to this (0: --plan-resolution throughout)")
	fl.BoolVar(&f.cpf, "critical-path-first", false, "Carbyne's AMs plan critical-path first (DAG-aware, as DAGPS) instead of by Tetris alignment (measured slower on TPC-DS: see docs/results)")
	fl.StringVar(&f.decisions, "decisions", "", "write each policy's decision log into this directory")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar")
	fl.StringVar(&f.queues, "queues", "", "a queue tree: a Fair Scheduler allocation file or a capacity-scheduler.xml; jobs go to their queue, or to the leaves in turn, and the tables add each leaf's JCTs")
	fl.StringVar(&f.nodeLabels, "node-labels", "", "the cluster's node labels, as yarn rmadmin -addToClusterNodeLabels takes them: gpu(exclusive=true),shared(exclusive=false); with --queues, jobs run in their queue's default-node-label-expression")
	fl.StringVar(&f.labelled, "labelled-machines", "", "with --node-labels: how many machines each label has, taken from the end of the cluster: gpu=10,shared=5")
	fl.DurationVar(&f.preemption, "preemption", 0, "with --queues: preempt for starved queues (their timeouts from the file), killing after this grace (the Fair Scheduler's waitTimeBeforeKill, 15s); 0 is off")
	def := sim.DefaultLocality()
	fl.BoolVar(&f.withInputs, "locality", false, "model input locality: scan tasks read HDFS-placed blocks, AMs ask for their hosts, the core delay-schedules, remote reads are slower")
	fl.IntVar(&f.locality.Replicas, "replicas", def.Replicas, "with --locality: replicas of each input block")
	fl.IntVar(&f.locality.RackSize, "rack-size", def.RackSize, "with --locality: machines per rack")
	fl.Float64Var(&f.locality.RemoteReadPenalty, "remote-read-penalty", def.RemoteReadPenalty, "with --locality: how much longer a task runs off its block's hosts (half that on their rack)")
	fl.BoolVar(&f.locality.NoPreferences, "no-locality-preferences", false, "with --locality: the AMs ask for no hosts (the same inputs and penalty, without delay scheduling)")
	fl.IntVar(&f.locality.Delays.Node, "node-locality-delay", def.Delays.Node, "with --locality: missed scheduling opportunities before rack-local (yarn.scheduler.capacity.node-locality-delay; -1 ignores locality)")
	fl.IntVar(&f.locality.Delays.Rack, "rack-locality-delay", def.Delays.Rack, "with --locality: more missed opportunities before off-rack (yarn.scheduler.capacity.rack-locality-additional-delay; -1 YARN's wait)")
	fl.DurationVar(&f.locality.Delays.NodeTime, "locality-delay-node", 0, "with --locality: wait this long before rack-local instead of counting opportunities (yarn.scheduler.fair.locality-delay-node-ms)")
	fl.DurationVar(&f.locality.Delays.RackTime, "locality-delay-rack", 0, "with --locality and --locality-delay-node: wait this much longer before off-rack (yarn.scheduler.fair.locality-delay-rack-ms)")
	return cmd
}

func runSim(out io.Writer, f simFlags) error {
	policies := strings.Split(f.policies, ",")
	cfg := sim.DefaultConfig()
	// RunPolicies sets the policy of each run; the knobs are checked here.
	pc, err := f.policy.config(rm.PolicyCarbyne)
	if err != nil {
		return err
	}
	cfg.PolicyConfig = pc
	cfg.Machines, cfg.Misestimate, cfg.Seed = f.machines, f.misestimate, f.wl.seed
	cfg.CriticalPathFirst = f.cpf
	if f.planFollow < 0 || f.planRes < 0 || f.planFar < 0 {
		return fmt.Errorf("--plan-follow %v, --plan-resolution %v, --plan-far-resolution %v: must not be negative (0 plans at every decision, at every finish)", f.planFollow, f.planRes, f.planFar)
	}
	cfg.PlanFollow, cfg.PlanResolution, cfg.PlanFarResolution = f.planFollow, f.planRes, f.planFar
	if err := checkFollowPart(f.followPart); err != nil {
		return err
	}
	cfg.PlanFollowPart = f.followPart
	if f.withInputs {
		l := f.locality
		cfg.Locality = &l
	}
	if f.queues != "" {
		tree, err := server.ReadQueueFile(f.queues)
		if err != nil {
			return fmt.Errorf("--queues: %w", err)
		}
		set, err := server.CoreQueues(tree)
		if err != nil {
			return fmt.Errorf("--queues %s: %w", f.queues, err)
		}
		cfg.Queues = &set
	}
	if f.nodeLabels != "" || f.labelled != "" {
		lm, err := labelModel(f.nodeLabels, f.labelled, f.machines)
		if err != nil {
			return err
		}
		cfg.Labels = lm
	}
	if f.preemption > 0 {
		if f.queues == "" {
			return fmt.Errorf("--preemption needs --queues: preemption works for the queues of a tree")
		}
		cfg.Preemption = &rm.PreemptionConfig{Grace: f.preemption}
	}
	cluster := cfg.Machine.Scale(float64(cfg.Machines))
	jobs, desc, err := f.wl.build(cluster)
	if err != nil {
		return err
	}

	if f.frontier {
		return runFrontier(out, f, cfg, jobs, desc)
	}

	opts := sim.RunOptions{}
	if f.decisions != "" {
		if err := os.MkdirAll(f.decisions, 0o755); err != nil {
			return err
		}
		logs := map[string]io.Writer{}
		for _, p := range policies {
			l, err := os.Create(filepath.Join(f.decisions, "decisions-"+p+".log"))
			if err != nil {
				return err
			}
			defer l.Close()
			logs[p] = l
		}
		opts.Log = func(policy string) io.Writer { return logs[policy] }
	}
	bar := newBar(f.quiet, len(jobs)*len(policies), "simulating")
	opts.Progress = bar.jobDone
	outcome, err := sim.RunPolicies(cfg, policies, jobs, opts)
	bar.finish()
	if err != nil {
		return err
	}
	outcome.Machines, outcome.Jobs = cfg.Machines, len(jobs)

	var sweeps []sim.Sweep
	if f.sweeps {
		var baselines []string
		for _, p := range policies {
			if !rm.Altruistic(p) {
				baselines = append(baselines, p)
			}
		}
		sbar := newBar(f.quiet, 1, "sweeping")
		sweeps, err = sim.RunSweeps(cfg, baselines, jobs, sbar.runDone)
		sbar.finish()
		if err != nil {
			return err
		}
	}

	if f.jsonOut {
		if err := printJSON(out, sim.NewReport(desc, cfg, outcome, sweeps)); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%s on %d machines of %v, seed %d\n\n", desc, cfg.Machines, cfg.Machine, cfg.Seed)
		if err := outcome.WriteTables(out); err != nil {
			return err
		}
		for _, s := range sweeps {
			fmt.Fprintln(out)
			if err := s.WriteTable(out); err != nil {
				return err
			}
		}
	}
	if f.plots != "" {
		paths, err := plot.WriteOutcome(f.plots, outcome)
		if err != nil {
			return err
		}
		if len(sweeps) > 0 {
			more, err := plot.WriteSweeps(f.plots, sweeps)
			if err != nil {
				return err
			}
			paths = append(paths, more...)
		}
		if !f.jsonOut {
			fmt.Fprintf(out, "\nplots: %s\n", strings.Join(paths, ", "))
		}
	}
	return nil
}

// bar is a progress bar on stderr, silent when stderr is not a terminal
// or when asked to be.
type bar struct{ pb *progressbar.ProgressBar }

func newBar(quiet bool, total int, what string) *bar {
	if quiet || !term.IsTerminal(int(os.Stderr.Fd())) {
		return &bar{}
	}
	return &bar{pb: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)}
}

func (b *bar) jobDone(policy string, done, total int) {
	if b.pb != nil {
		b.pb.Describe(fmt.Sprintf("simulating %-8s", policy))
		_ = b.pb.Add(1)
	}
}

func (b *bar) runDone(done, total int) {
	if b.pb != nil {
		b.pb.ChangeMax(total)
		_ = b.pb.Set(done)
	}
}

func (b *bar) finish() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}

// runFrontier runs every configuration of every policy and prints the
// performance-fairness frontier.
func runFrontier(out io.Writer, f simFlags, cfg sim.Config, jobs []*workload.Job, desc string) error {
	bar := newBar(f.quiet, len(sim.FrontierConfigs(cfg)), "frontier")
	fr, err := sim.RunFrontier(cfg, jobs, bar.runDone)
	bar.finish()
	if err != nil {
		return err
	}
	if f.jsonOut {
		if err := printJSON(out, struct {
			Workload string `json:"workload"`
			Machines int    `json:"machines"`
			Seed     uint64 `json:"seed"`
			*sim.Frontier
		}{desc, cfg.Machines, cfg.Seed, fr}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%s on %d machines of %v, seed %d\n\n", desc, cfg.Machines, cfg.Machine, cfg.Seed)
		if err := fr.WriteTable(out); err != nil {
			return err
		}
	}
	if f.plots != "" {
		paths, err := plot.WriteFrontier(f.plots, fr)
		if err != nil {
			return err
		}
		if !f.jsonOut {
			fmt.Fprintf(out, "\nplots: %s\n", strings.Join(paths, ", "))
		}
	}
	return nil
}

// labelModel is --node-labels and --labelled-machines: the labels, and
// each label's count of machines, from the end of the cluster.
func labelModel(labels, machines string, n int) (*sim.LabelModel, error) {
	parts, err := server.ParsePartitions(labels)
	if err != nil {
		return nil, fmt.Errorf("--node-labels: %w", err)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("--labelled-machines needs --node-labels")
	}
	lm := &sim.LabelModel{Partitions: parts, Machines: make([]string, n)}
	next := n
	for _, item := range strings.Split(machines, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, count, ok := strings.Cut(item, "=")
		k, err := strconv.Atoi(count)
		switch {
		case !ok || err != nil || k < 0:
			return nil, fmt.Errorf("--labelled-machines: %q: write label=machines", item)
		case !slices.Contains(slices.Collect(maps.Keys(parts)), name):
			return nil, fmt.Errorf("--labelled-machines: %s is not in --node-labels", name)
		case k > next:
			return nil, fmt.Errorf("--labelled-machines: more labelled machines than the %d there are", n)
		}
		for range k {
			next--
			lm.Machines[next] = name
		}
	}
	return lm, nil
}
