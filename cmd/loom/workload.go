package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/tool/sim"
	"github.com/loomrm/loom/workload"
)

// workloadFlags choose the jobs a command runs: a catalogue mix or a JSON
// DAG file, how many, and how they arrive.
type workloadFlags struct {
	catalogue string
	file      string
	jobs      int
	arrivals  string
	load      float64
	seed      uint64
	flags     *pflag.FlagSet
}

func (w *workloadFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	w.flags = fl
	fl.StringVar(&w.catalogue, "catalogue", "tpch:100g,250g", "catalogue mix: tpch[:scales], tpcds[:scales], joined by +; or heavytail (60% one-task, 30% one-stage jobs, 10% large queries)")
	fl.StringVar(&w.file, "workload", "", "a workload file instead of a catalogue: Loom's JSON DAGs (see the README), or a YARN SLS or Rumen trace")
	fl.IntVar(&w.jobs, "jobs", 250, "jobs to draw from the catalogue (or from the file, when given)")
	fl.StringVar(&w.arrivals, "arrivals", "", "batch, or poisson:<mean> (default: Poisson at --load for catalogues, the file's own times for files)")
	fl.Float64Var(&w.load, "load", 1, "offered load for Poisson arrivals: 1 brings as much work per second as the cluster's bottleneck does")
	fl.Uint64Var(&w.seed, "seed", 1, "seed for drawing jobs, arrivals and P(Altruism)")
}

// build draws the jobs and their arrivals, and describes them.
func (w *workloadFlags) build(cluster fairness.Vector) ([]*workload.Job, string, error) {
	rng := rand.New(rand.NewPCG(w.seed, w.seed))
	var jobs []*workload.Job
	var desc string
	if w.file != "" {
		// Loom's JSON, or a YARN trace (SLS or Rumen), told apart by
		// their contents.
		all, format, err := workload.LoadTrace(w.file, workload.Limits{})
		if err != nil {
			return nil, "", err
		}
		jobs, desc = all, fmt.Sprintf("%d jobs from %s (%s)", len(all), w.file, format)
		if w.flags.Changed("jobs") {
			if jobs, err = workload.Sample(all, w.jobs, rng); err != nil {
				return nil, "", err
			}
			desc = fmt.Sprintf("%d jobs drawn from %s", w.jobs, w.file)
		}
	} else if w.catalogue == "heavytail" {
		var err error
		if jobs, err = workload.HeavyTailed(w.jobs, rng); err != nil {
			return nil, "", err
		}
		desc = fmt.Sprintf("%d jobs of a heavy-tailed mix (%d tasks)", w.jobs, tasksOf(jobs))
	} else {
		pool, err := workload.Catalogue(w.catalogue)
		if err != nil {
			return nil, "", err
		}
		if jobs, err = workload.Sample(pool, w.jobs, rng); err != nil {
			return nil, "", err
		}
		desc = fmt.Sprintf("%d jobs drawn from %s", w.jobs, w.catalogue)
	}
	switch {
	case w.arrivals != "":
		a, err := workload.ParseArrivals(w.arrivals)
		if err != nil {
			return nil, "", err
		}
		a.Assign(jobs, rng)
		desc += ", arrivals " + a.String()
	case w.file != "":
		desc += ", arriving as in the file"
	default:
		a, err := sim.PoissonForLoad(jobs, cluster, w.load)
		if err != nil {
			return nil, "", err
		}
		a.Assign(jobs, rng)
		desc += fmt.Sprintf(", Poisson arrivals at load %g (mean %v)", w.load, a.Mean)
	}
	return jobs, desc, nil
}

func workloadCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "Inspect and export the workload catalogues",
	}
	stats := &cobra.Command{
		Use:   "stats [catalogue or file]...",
		Short: "Print DAG statistics: stages, barriers, critical path, tasks (median and p95)",
		Long: `Print the shape of each catalogue's DAGs, to compare with the Carbyne paper's
Table 1 (TPC-DS: median 8, p95 23 stages per DAG). Without arguments, every
TPC-H scale and TPC-DS at scale factor 100.`,
		Example: "  loom workload stats\n  loom workload stats tpcds:1,1000 my-dags.json",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"tpch:50g", "tpch:100g", "tpch:250g", "tpch:500g", "tpcds:100"}
			}
			var sums []workload.Summary
			for _, a := range args {
				jobs, err := loadSpec(a)
				if err != nil {
					return err
				}
				s, err := workload.Summarize(a, jobs)
				if err != nil {
					return err
				}
				sums = append(sums, s)
			}
			return workload.WriteSummaries(cmd.OutOrStdout(), sums)
		},
	}
	export := &cobra.Command{
		Use:     "export <catalogue>",
		Short:   "Write a catalogue's jobs in the generic JSON DAG format",
		Example: "  loom workload export tpch:100g > tpch-100g.json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			jobs, err := workload.Catalogue(args[0])
			if err != nil {
				return err
			}
			return workload.WriteJSON(cmd.OutOrStdout(), jobs)
		},
	}
	cmd.AddCommand(stats, export)
	return cmd
}

// loadSpec reads a catalogue spec, or a JSON file when the argument names
// one.
func loadSpec(arg string) ([]*workload.Job, error) {
	if strings.HasSuffix(arg, ".json") {
		return workload.LoadJSON(arg)
	}
	if _, err := os.Stat(arg); err == nil {
		return workload.LoadJSON(arg)
	}
	return workload.Catalogue(arg)
}

func tasksOf(jobs []*workload.Job) int {
	n := 0
	for _, j := range jobs {
		n += j.TotalTasks()
	}
	return n
}
