package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/daemon/am/driver"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/workload"
)

func amCommand() *cobra.Command {
	var (
		jobFile, catalogue, name, taskKind, history string
		timeScale, planFollowPart                   float64
		tick                                        time.Duration
		greedy, criticalPathFirst                   bool
		planFollow, planRes, planFar                time.Duration
		seed                                        uint64
	)
	cmd := &cobra.Command{
		Use:   "am",
		Short: "Run a DAG job's application master (launched by the RM)",
		Long: `Run one DAG job as its application master. The RM launches it in the AM
container, with the scheduler's address in its environment
(LOOM_SCHEDULER_ADDRESS) and its AMRM token, which names its attempt, in its
credentials (HADOOP_TOKEN_FILE_LOCATION). It plans the job within its
share, asks DEFAULT for the tasks that must start now and ALTRUISTIC for the
rest, and runs each task on the app's executor on the node of the container
it was granted. It unregisters with SUCCEEDED when every task is done.

An attempt after the first (the last AM died) recovers from the job
history an earlier attempt of its app left: tasks that succeeded are not
run again. A history it cannot read fails the attempt, naming the file.`,
		Example: "  loom am --job q5.json --history history.json\n  loom am --catalogue tpch:100g --name q5 --time-scale 0.01",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFollowPart(planFollowPart); err != nil {
				return err
			}
			if !(timeScale > 0) || math.IsInf(timeScale, 1) {
				return fmt.Errorf("--time-scale %v: must be a positive number (1 runs the tasks as long as the job says)", timeScale)
			}
			job, err := amJob(jobFile, catalogue, name)
			if err != nil {
				return err
			}
			launch, err := driver.FromEnv()
			if err != nil {
				return err
			}
			addr := launch.Addr
			if history == "" {
				history = driver.HistoryPathFromEnv(launch.Attempt)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			cl := driver.Dial(launch)
			defer cl.Close()
			host, _ := os.Hostname()
			if err := cl.Register(ctx, host, 0, ""); err != nil {
				return fmt.Errorf("registering with the scheduler at %s: %w", addr, err)
			}
			// A job whose stages demand a resource type this cluster does
			// not offer (disk or network bandwidth on nodes that do not
			// advertise them) runs without that dimension.
			first, err := cl.Allocate(ctx, am.Request{}, nil, 0)
			if err != nil {
				return err
			}
			for k := fairness.Disk; k < fairness.NumKinds; k++ {
				if first.Capacity[k] > 0 {
					continue
				}
				for i := range job.Stages {
					job.Stages[i].Demand[k] = 0
				}
			}
			// The AM plans with the durations its tasks will take, as
			// the simulator's replay of a scaled run does: with the
			// catalogue's, a demo's AM planned a job 50 times longer than
			// it ran (yielding nearly everything) and told the RM a
			// critical path as long, which put off recall.
			if timeScale != 1 {
				job.ScaleTime(timeScale)
			}
			// Under the baseline policies the AM asks as the simulator's
			// baseline AM does: every runnable task DEFAULT, breadth-first.
			altruistic := !greedy && (first.Policy == "" || rm.Altruistic(first.Policy))
			dag, err := am.NewDAG(job, am.Config{Altruistic: altruistic, Seed: seed, AMAttempt: driver.AttemptNumber(launch.Attempt),
				CriticalPathFirst: criticalPathFirst, PlanFollow: planFollow, PlanFollowPart: planFollowPart, PlanResolution: planRes,
				PlanFarResolution: planFar})
			if err != nil {
				return err
			}
			r := &driver.Runner{Client: cl, DAG: dag, TaskKind: taskKind, Log: daemonLogger(),
				HistoryPath: history, Tick: tick}
			return r.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&jobFile, "job", "", "a JSON DAG file (the first job in it, or --name)")
	f.StringVar(&catalogue, "catalogue", "", "a catalogue, e.g. tpch:100g, to take --name from")
	f.StringVar(&name, "name", "", "the job's name in the file or catalogue")
	f.StringVar(&taskKind, "task-kind", "synthetic", "how tasks run on the executor: synthetic (use their memory and vcores for their duration), sleep (wait for their duration, using nothing) or noop")
	f.Float64Var(&timeScale, "time-scale", 1, "multiply every stage's duration by this")
	f.StringVar(&history, "history", "", "write the job's history here as JSON (default: <app id>.json in $LOOM_HISTORY_DIR, which the RM sets)")
	f.DurationVar(&tick, "tick", 100*time.Millisecond, "the longest the AM waits between allocate calls when no task ends (YARN AMs: 1s)")
	f.BoolVar(&greedy, "greedy", false, "ask for every runnable task as DEFAULT, breadth-first (the baselines' AM)")
	f.Uint64Var(&seed, "seed", 1, "seed for the P(Altruism) draws")
	f.DurationVar(&planFollow, "plan-follow", altruism.DefaultFollow, "follow a plan this long without planning again while the job keeps to it (0: plan at every decision); as loom sim --plan-follow")
	f.Float64Var(&planFollowPart, "plan-follow-part", altruism.DefaultFollowPart, "follow a plan for this part of the time it has left, when longer than --plan-follow (0: --plan-follow alone); as loom sim --plan-follow-part")
	f.DurationVar(&planRes, "plan-resolution", altruism.DefaultResolution, "plan task ends closer than this (and than 1/20 of the shortest task) as one instant (0: exact); as loom sim --plan-resolution")
	f.DurationVar(&planFar, "plan-far-resolution", altruism.DefaultFarResolution, "coarsen --plan-resolution with distance: task ends d ahead are one instant with those up to d/100 after them, up to this (0: --plan-resolution throughout); as loom sim --plan-far-resolution")
	f.BoolVar(&criticalPathFirst, "critical-path-first", false, "plan the job critical-path first (stages on the longest remaining chain start first) instead of by Tetris alignment; as loom sim --critical-path-first")
	return cmd
}

// amJob loads the AM's job and holds it to the job limits of the config
// dir the NodeManager gives the container ($HADOOP_CONF_DIR; the defaults
// without one), so that a job too large to run fails its attempt at once,
// saying which limit, before the AM builds it.
func amJob(file, catalogue, name string) (*workload.Job, error) {
	limits, err := (&confFlags{}).jobLimits()
	if err != nil {
		return nil, err
	}
	j, err := loadAMJob(file, catalogue, name, limits)
	if err != nil {
		return nil, err
	}
	if err := limits.Check(j); err != nil {
		return nil, err
	}
	return j, nil
}

func loadAMJob(file, catalogue, name string, limits workload.Limits) (*workload.Job, error) {
	var jobs []*workload.Job
	var err error
	switch {
	case file != "" && catalogue != "":
		return nil, fmt.Errorf("give --job or --catalogue, not both")
	case file != "":
		jobs, err = workload.LoadJSONWithin(file, limits)
	case catalogue != "":
		jobs, err = workload.Catalogue(catalogue)
	default:
		return nil, fmt.Errorf("no job: give --job FILE or --catalogue SPEC --name NAME")
	}
	if err != nil {
		return nil, err
	}
	if name == "" {
		if len(jobs) == 0 {
			return nil, fmt.Errorf("no jobs in %s%s", file, catalogue)
		}
		return jobs[0], nil
	}
	for _, j := range jobs {
		if j.Name == name {
			return j, nil
		}
	}
	return nil, fmt.Errorf("no job named %q in %s%s", name, file, catalogue)
}

// checkFollowPart checks --plan-follow-part, as loom am and loom sim take
// it: a part of a plan's horizon, 0 to 1.
func checkFollowPart(p float64) error {
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("--plan-follow-part %v: must be 0 to 1, a part of the plan's horizon (0: --plan-follow alone)", p)
	}
	return nil
}
