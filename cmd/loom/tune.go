package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/tool/sim"
	"github.com/loomrm/loom/tool/tune"
	"github.com/loomrm/loom/workload"
)

type tuneFlags struct {
	wl         workloadFlags
	machines   int
	memoryMB   float64
	vcores     float64
	rmWeb      string
	ps, caps   string
	maxSlowed  float64
	slowdown   float64
	workers    int
	jsonOut    bool
	plot       string
	quiet      bool
	targetSecs float64
	history    string
	rmHistory  bool
	histJobs   int
	histSince  time.Duration
	export     string
	amMB       float64
	amStartup  time.Duration
	overhead   time.Duration
}

func tuneCommand() *cobra.Command {
	var f tuneFlags
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "What-if for P(Altruism): replay a workload at each setting and recommend one",
		Long: `Replay a workload through the simulator at each P(Altruism) (and leftover
cap) on the cluster's shape, and print per setting what the jobs would see
against P(Altruism) = 0 (DRF's schedule): average and 95th-percentile JCT,
Jain's index, the share of jobs slowed more than --slowdown percent and the
worst slowdown. It recommends the fastest setting that keeps the objective
(at most --max-slowed percent of jobs slowed more than --slowdown percent).

The workload is your cluster's own history (--history: the job histories
its DAG AMs wrote in loom.history.dir, each stage at its tasks' measured
median run time), a YARN trace (--workload: a Loom JSON DAG file, or a
Scheduler Load Simulator SLS or Rumen trace, told apart by its contents), or
a catalogue mix. The cluster's shape comes from a
running RM (--rm-web, its REST nodes list) or from --machines and the
machine's size.`,
		Example: `  loom tune --history /var/log/loom/history --rm-web http://rm:8088 --export history.json
  loom tune --workload sls-jobs.json --machines 40 --machine-memory-mb 65536 --machine-vcores 16
  loom tune --workload rumen-trace.json --rm-web http://rm:8088 --max-slowed 5 --slowdown 20
  loom tune --catalogue tpch:100g --jobs 500 --plot tune.svg --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTune(cmd.OutOrStdout(), f) },
	}
	f.wl.register(cmd)
	fl := cmd.Flags()
	fl.IntVar(&f.machines, "machines", 100, "machines in the cluster (ignored with --rm-web)")
	fl.Float64Var(&f.memoryMB, "machine-memory-mb", 0, "each machine's memory (default: the Carbyne paper's machine)")
	fl.Float64Var(&f.vcores, "machine-vcores", 0, "each machine's vcores (default: the Carbyne paper's machine)")
	fl.StringVar(&f.rmWeb, "rm-web", "", "a running RM's web address (http://host:8088): take the cluster's shape from its RUNNING nodes")
	fl.StringVar(&f.ps, "p-altruism", "0,0.25,0.5,0.75,1", "P(Altruism) values to try, comma-separated")
	fl.StringVar(&f.caps, "leftover-caps", strconv.FormatFloat(rm.DefaultLeftoverCap, 'g', -1, 64), "leftover caps to try, comma-separated (0: none)")
	fl.Float64Var(&f.maxSlowed, "max-slowed", 5, "objective: at most this percent of jobs may be slowed...")
	fl.Float64Var(&f.slowdown, "slowdown", 20, "...by more than this percent against P(Altruism)=0")
	fl.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "settings simulated side by side")
	fl.BoolVar(&f.jsonOut, "json", false, "print the what-if as JSON")
	fl.StringVar(&f.plot, "plot", "", "write the trade-off as SVG plots: FILE-jain.svg and FILE-slowed.svg")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar")
	fl.StringVar(&f.history, "history", "", "replay the cluster's own finished jobs: the job histories its DAG AMs wrote (loom.history.dir)")
	fl.BoolVar(&f.rmHistory, "rm-history", false, "replay the finished DAG jobs the RM at --rm-web recorded (its /ws/v1/loom/history/workload)")
	fl.IntVar(&f.histJobs, "history-jobs", 500, "with --history: the most recent this many jobs (0: all)")
	fl.DurationVar(&f.histSince, "history-since", 0, "with --history: only jobs that started within this long of the newest (e.g. 168h)")
	fl.Float64Var(&f.amMB, "am-memory-mb", 0, "model each job's AM container of this size (1 vcore), as on the real RM (0: no AM, the paper's model)")
	fl.DurationVar(&f.amStartup, "am-startup", 0, "with --am-memory-mb: how long an AM takes to start once granted")
	fl.DurationVar(&f.overhead, "task-overhead", 0, "what each task holds its container beyond its run time (allocation, launch)")
	fl.StringVar(&f.export, "export", "", "also write the workload replayed as a JSON DAG file, for loom sim --workload")
	fl.Float64Var(&f.targetSecs, "target", 20, "print the time taken beside this target (seconds per 500 jobs and 5 settings, issue 20)")
	return cmd
}

func parseFloats(what, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("--%s: %q is not a number", what, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// clusterShape reads a running RM's RUNNING nodes over REST: how many, and
// the size of the largest, which the simulator gives every machine.
func clusterShape(base string) (int, fairness.Vector, error) {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(strings.TrimSuffix(base, "/") + "/ws/v1/cluster/nodes?states=RUNNING")
	if err != nil {
		return 0, fairness.Vector{}, fmt.Errorf("--rm-web: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fairness.Vector{}, fmt.Errorf("--rm-web: GET /ws/v1/cluster/nodes answered %s", resp.Status)
	}
	var doc struct {
		Nodes *struct {
			Node []struct {
				State                       string
				UsedMemoryMB, AvailMemoryMB float64
				UsedVirtualCores            float64
				AvailableVirtualCores       float64
			}
		}
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&doc); err != nil {
		return 0, fairness.Vector{}, fmt.Errorf("--rm-web: the nodes list: %w", err)
	}
	n := 0
	var mem, vc float64
	if doc.Nodes != nil {
		for _, nd := range doc.Nodes.Node {
			if nd.State != "RUNNING" {
				continue
			}
			n++
			mem, vc = max(mem, nd.UsedMemoryMB+nd.AvailMemoryMB), max(vc, nd.UsedVirtualCores+nd.AvailableVirtualCores)
		}
	}
	if n == 0 || mem <= 0 || vc <= 0 {
		return 0, fairness.Vector{}, fmt.Errorf("--rm-web: the RM at %s has no RUNNING node to take the cluster's shape from", base)
	}
	return n, fairness.New(mem, vc), nil
}

func runTune(out io.Writer, f tuneFlags) error {
	ps, err := parseFloats("p-altruism", f.ps)
	if err != nil {
		return err
	}
	caps, err := parseFloats("leftover-caps", f.caps)
	if err != nil {
		return err
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = f.wl.seed
	switch {
	case f.rmWeb != "":
		if cfg.Machines, cfg.Machine, err = clusterShape(f.rmWeb); err != nil {
			return err
		}
	default:
		if f.machines < 1 {
			return fmt.Errorf("--machines %d: at least one machine", f.machines)
		}
		cfg.Machines = f.machines
		if f.memoryMB > 0 || f.vcores > 0 {
			if f.memoryMB <= 0 || f.vcores <= 0 {
				return fmt.Errorf("--machine-memory-mb and --machine-vcores go together, both positive")
			}
			cfg.Machine = fairness.New(f.memoryMB, f.vcores)
		}
	}
	if f.amMB < 0 || f.amStartup < 0 || f.overhead < 0 {
		return fmt.Errorf("--am-memory-mb, --am-startup and --task-overhead cannot be negative")
	}
	if f.amMB > 0 {
		cfg.AM, cfg.AMStartup = fairness.New(f.amMB, 1), f.amStartup
	}
	cfg.TaskOverhead = f.overhead
	var jobs []*workload.Job
	var desc string
	if f.rmHistory {
		if f.rmWeb == "" {
			return fmt.Errorf("--rm-history reads the RM's recorded jobs: name the RM with --rm-web")
		}
		jobs, err = recordedJobs(f.rmWeb, f.histJobs)
		desc = fmt.Sprintf("%d finished jobs the RM at %s recorded", len(jobs), f.rmWeb)
	} else if f.history != "" {
		var skipped []string
		jobs, skipped, err = tune.LoadHistory(f.history, tune.HistoryOptions{Jobs: f.histJobs, Since: f.histSince})
		for _, s := range skipped {
			fmt.Fprintf(os.Stderr, "loom tune: skipped %s\n", s)
		}
		desc = fmt.Sprintf("%d finished jobs from the history in %s", len(jobs), f.history)
	} else {
		jobs, desc, err = f.wl.build(cfg.Machine.Scale(float64(cfg.Machines)))
	}
	if err != nil {
		return err
	}
	if f.export != "" {
		w, err := os.Create(f.export)
		if err != nil {
			return err
		}
		err = workload.WriteJSON(w, jobs)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("--export: %w", err)
		}
	}
	if err := workload.DefaultLimits.Check(jobs...); err != nil {
		return err
	}
	settings := tune.Grid(ps, caps)
	obj := tune.Objective{MaxSlowed: f.maxSlowed / 100, SlowdownOver: f.slowdown / 100}
	b := newBar(f.quiet || f.jsonOut, len(settings), "what-if")
	res, err := tune.Run(cfg, jobs, settings, obj, tune.Options{Workers: f.workers, Progress: b.runDone})
	b.finish()
	if err != nil {
		return err
	}
	var plots []string
	if f.plot != "" {
		if plots, err = tune.WritePlots(f.plot, res); err != nil {
			return err
		}
	}
	if f.jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Workload string `json:"workload"`
			Machines int    `json:"machines"`
			*tune.Result
			Plots []string `json:"plots,omitempty"`
		}{desc, cfg.Machines, res, plots})
	}
	fmt.Fprintf(out, "what-if: %s on %d machines of %v, objective: %v\n\n", desc, cfg.Machines, cfg.Machine, obj)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "P(Altruism)\tleftover cap\tavg JCT\tp95 JCT\tJain\tvs P=0\tslowed\tworst\tobjective\t")
	for _, r := range res.Sorted() {
		mark := "met"
		if !r.Meets {
			mark = "missed"
		}
		if res.Recommended >= 0 && r.Setting == res.Rows[res.Recommended].Setting {
			mark = "met, recommended"
		}
		fmt.Fprintf(tw, "%g\t%g\t%v\t%v\t%.3f\t%.2fx\t%.1f%%\t%.2fx\t%s\t\n", r.PAltruism, r.LeftoverCap,
			r.AvgJCT.Round(time.Millisecond), r.P95JCT.Round(time.Millisecond), r.Jain, r.Speedup, 100*r.Slowed, r.Worst, mark)
	}
	tw.Flush()
	fmt.Fprintln(out)
	if i := res.Recommended; i >= 0 {
		r := res.Rows[i]
		fmt.Fprintf(out, "recommended: P(Altruism) %g, leftover cap %g: average JCT %.2fx P=0's, %.1f%% of jobs slowed more than %g%%, Jain %.3f\n",
			r.PAltruism, r.LeftoverCap, r.Speedup, 100*r.Slowed, f.slowdown, r.Jain)
		fmt.Fprintf(out, "apply it: loom.scheduler.p-altruism=%g and loom.scheduler.leftover-cap=%g, or the web UI's operations page\n", r.PAltruism, r.LeftoverCap)
	} else {
		fmt.Fprintf(out, "no setting keeps the objective (%v); loosen it or try more settings\n", obj)
	}
	// The speed target is for 500 jobs and five settings: scale it to
	// this run so that the figure and its target compare.
	target := time.Duration(f.targetSecs * float64(time.Second) * float64(len(jobs)) / 500 * float64(len(settings)) / 5)
	fmt.Fprintf(out, "took %v for %d jobs and %d settings on %d workers (target %v at 20 s per 500 jobs and 5 settings)\n",
		res.Took.Round(time.Millisecond), len(jobs), len(settings), f.workers, target.Round(time.Millisecond))
	for _, p := range plots {
		fmt.Fprintf(out, "plot: %s\n", p)
	}
	return nil
}

// recordedJobs fetches the finished DAG jobs an RM recorded, the most
// recent n (0: all), the first arriving at 0.
func recordedJobs(base string, n int) ([]*workload.Job, error) {
	cl := http.Client{Timeout: 30 * time.Second}
	resp, err := cl.Get(strings.TrimSuffix(base, "/") + "/ws/v1/loom/history/workload")
	if err != nil {
		return nil, fmt.Errorf("--rm-history: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("--rm-history: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("--rm-history: GET /ws/v1/loom/history/workload answered %s: %.200s", resp.Status, data)
	}
	jobs, err := workload.ParseJSON(data)
	if err != nil {
		return nil, fmt.Errorf("--rm-history: the RM's recorded jobs: %w", err)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("--rm-history: the RM at %s has recorded no finished DAG job yet", base)
	}
	if n > 0 && len(jobs) > n {
		jobs = jobs[len(jobs)-n:]
		first := jobs[0].Arrival
		for _, j := range jobs {
			j.Arrival -= first
		}
	}
	return jobs, nil
}
