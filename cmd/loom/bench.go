package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/tool/bench"
	"github.com/loomrm/loom/tool/plot"
	"github.com/loomrm/loom/tool/sim"
	"github.com/loomrm/loom/workload"
)

// target is one speed target from the issues, and how to measure it.
type target struct {
	name, what string
	limit      time.Duration
	runs       int
	// prepare builds the input outside the timing and returns the
	// operation to time.
	prepare func() (func() error, error)
}

var targets = []target{
	{
		name: "rpc-latency", what: "an empty allocate() round trip over loopback",
		limit: 50 * time.Microsecond, runs: 5001,
		prepare: func() (func() error, error) {
			r, err := bench.NewRPC(1)
			if err != nil {
				return nil, err
			}
			return func() error { return r.Allocate(0) }, nil
		},
	},
	rpcBatch("rpc-pipelined", "64 callers pipelined on one connection", 1),
	rpcBatch("rpc-conns", "64 callers on 64 connections", 64),
	{
		name: "reverse-pack", what: "reverse packing a 100-stage, 10,000-task DAG",
		limit: 5 * time.Millisecond, runs: 101,
		prepare: func() (func() error, error) {
			j := bench.SyntheticDAG(1)
			return func() error { altruism.ReversePack(j, bench.SyntheticAlloc, 0); return nil }, nil
		},
	},
	{
		name: "drf", what: "DRF for 1,000 apps over 3 resources",
		limit: time.Millisecond, runs: 501,
		prepare: func() (func() error, error) {
			capacity, claims := bench.DRFClaims(7)
			return func() error { fairness.DRF(capacity, claims); return nil }, nil
		},
	},
	{
		name: "sim", what: "250 jobs on 100 machines, all four policies",
		limit: 20 * time.Second, runs: 3,
		prepare: func() (func() error, error) {
			cfg := sim.DefaultConfig()
			jobs, err := benchJobs("tpch:100g,250g", 250, cfg.Machine.Scale(100))
			if err != nil {
				return nil, err
			}
			return func() error {
				_, err := sim.RunPolicies(cfg, sim.Policies, jobs, sim.RunOptions{})
				return err
			}, nil
		},
	},
	{
		name: "scale", what: "10,000 machines, 5,000 TPC-DS jobs, carbyne alone",
		limit: 5 * time.Minute, runs: 1,
		prepare: func() (func() error, error) {
			cfg := sim.DefaultConfig()
			cfg.Machines = 10000
			jobs, err := benchJobs("tpcds", 5000, cfg.Machine.Scale(10000))
			if err != nil {
				return nil, err
			}
			return func() error {
				_, err := sim.Run(cfg, jobs)
				return err
			}, nil
		},
	},
}

// benchJobs draws n jobs from a catalogue arriving at load 1.
// rpcBatch times 30,000 empty allocates from 64 callers: under a second is
// the 30,000 calls/s.
func rpcBatch(name, what string, conns int) target {
	return target{
		name: name, what: "30,000 allocates, " + what + " (>= 30,000 calls/s)",
		limit: time.Second, runs: 5,
		prepare: func() (func() error, error) {
			r, err := bench.NewRPC(conns)
			if err != nil {
				return nil, err
			}
			return func() error { return r.Batch(64, 30000) }, nil
		},
	}
}

func benchJobs(spec string, n int, cluster fairness.Vector) ([]*workload.Job, error) {
	pool, err := workload.Catalogue(spec)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(1, 1))
	jobs, err := workload.Sample(pool, n, rng)
	if err != nil {
		return nil, err
	}
	a, err := sim.PoissonForLoad(jobs, cluster, 1)
	if err != nil {
		return nil, err
	}
	a.Assign(jobs, rng)
	return jobs, nil
}

func benchCommand() *cobra.Command {
	var runs int
	cmd := &cobra.Command{
		Use:   "bench [target]...",
		Short: "Measure Loom's speed targets and print each median beside its target",
		Long: `Measure the speed targets the issues set. Each prints the median of several
runs beside its target. Without arguments, every target but "scale", which
takes minutes.

Targets: ` + targetNames() + `; "rpc" names the three rpc- targets.

"loom bench load" is the RM's load test over real RPC (its own flags).`,
		Example: "  loom bench\n  loom bench reverse-pack drf\n  loom bench rpc\n  loom bench scale\n  loom bench load",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				for _, t := range targets {
					if t.name != "scale" {
						args = append(args, t.name)
					}
				}
			}
			var chosen []target
			for _, a := range args {
				if a == "rpc" {
					// The group of RPC targets.
					for _, t := range targets {
						if strings.HasPrefix(t.name, "rpc-") {
							chosen = append(chosen, t)
						}
					}
					continue
				}
				i := slices.IndexFunc(targets, func(t target) bool { return t.name == a })
				if i < 0 {
					return fmt.Errorf("unknown bench target %q (known: %s)", a, targetNames())
				}
				chosen = append(chosen, targets[i])
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "target\tmeasures\truns\tmedian\ttarget\tverdict\tpeak RSS")
			for _, t := range chosen {
				n := t.runs
				if runs > 0 {
					n = runs
				}
				op, err := t.prepare()
				if err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				bar := newBar(false, 1, "measuring "+t.name)
				med, err := bench.Median(n, op)
				bar.finish()
				if err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				verdict := "met"
				if med > t.limit {
					verdict = fmt.Sprintf("MISSED by %.0f%%", 100*(float64(med)/float64(t.limit)-1))
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%v\t< %v\t%s\t%d MiB\n", t.name, t.what, n, roundBench(med),
					t.limit, verdict, bench.PeakRSS()>>20)
			}
			// One flush, so that the columns line up across rows.
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&runs, "runs", 0, "runs per target (default: each target's own)")
	cmd.AddCommand(loadCommand())
	return cmd
}

// loadCommand is `loom bench load`: a real RM in process driven over
// loopback RPC by simulated NodeManagers and AMs.
func loadCommand() *cobra.Command {
	o := bench.DefaultLoadOptions()
	var taskMS int
	var quiet bool
	var cpuLoad int
	var cpuProfile, mutexProfile, memProfile, seriesFile, plotDir string
	var rmProcess bool
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Load-test the RM over real RPC: 1,000 simulated NMs, 100 apps, 100,000 tasks",
		Long: `Start a real ResourceManager in this process (the default carbyne policy,
every address on 127.0.0.1) and drive it over real RPC on loopback:
simulated NodeManagers register and heartbeat over the resource tracker and
serve ContainerManagementProtocol, on which the RM launches each app's AM
container; the apps are submitted over the client protocol, and each AM,
authenticating with the AMRM token in its launch credentials (SASL
DIGEST-MD5), registers, asks for its tasks (a share of them
ALTRUISTIC), starts each granted container on its node (in process), sees
the completions in its allocate replies and finishes SUCCEEDED.

Prints allocations/s, heartbeat round trips (p50, p99 against the 10 ms
target, max), allocate round trips, scheduling latency (each task's wait
from its first ask to its grant, and each app's first task container)
and the checks: every task completed exactly once, every app
FINISHED SUCCEEDED, no container lost. Exits non-zero when a check fails.
A run of the defaults takes about 70 s.`,
		Example: "  loom bench load\n  loom bench load --nodes 200 --apps 20 --tasks 20000\n  loom bench load --cpuprofile rm.pprof\n  loom bench load --nodes 10000 --nm-conns 100 --apps 2000 --tasks 200000 --async 10ms --cpu-load 1",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.TaskTime = time.Duration(taskMS) * time.Millisecond
			bar := newBar(quiet, o.Tasks, "tasks done")
			o.Progress = bar.runDone
			if rmProcess {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("--rm-process: %w", err)
				}
				o.RMCommand = []string{exe, "rm"}
			}
			if mutexProfile != "" {
				runtime.SetMutexProfileFraction(5)
			}
			if memProfile != "" && o.RMCommand != nil {
				// The RM's own profile beside the generator's.
				o.RMCommand = append(o.RMCommand, "--memprofile", memProfile+".rm")
			}
			if cpuProfile != "" {
				if o.RMCommand != nil {
					// The RM's own profile beside the generator's.
					o.RMCommand = append(o.RMCommand, "--cpuprofile", cpuProfile+".rm")
				}
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
			defer stop()
			// A competing CPU load: busy processes beside the run, which
			// the report counts as other processes' CPU.
			for range cpuLoad {
				burn := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
				if err := burn.Start(); err != nil {
					return fmt.Errorf("--cpu-load: %w", err)
				}
				defer func() { burn.Process.Kill(); burn.Wait() }()
			}
			rep, err := bench.RunLoad(ctx, o)
			bar.finish()
			if err != nil {
				return err
			}
			if mutexProfile != "" {
				if err := writeProfile("mutex", mutexProfile); err != nil {
					return err
				}
			}
			if memProfile != "" {
				if err := writeProfile("allocs", memProfile); err != nil {
					return err
				}
			}
			if err := rep.WriteTable(cmd.OutOrStdout()); err != nil {
				return err
			}
			if seriesFile != "" {
				if err := writeSeries(rep, seriesFile); err != nil {
					return fmt.Errorf("--series: %w", err)
				}
			}
			if plotDir != "" {
				s := plot.LoadSeries{Title: fmt.Sprintf("loom bench load: %d NMs, %d apps, %d tasks", o.Nodes, o.Apps, o.Tasks),
					Target: bench.LoadHeartbeatP99Target}
				for _, sec := range rep.Series {
					s.P50, s.P99 = append(s.P50, sec.HeartbeatP50), append(s.P99, sec.HeartbeatP99)
				}
				paths, err := plot.WriteLoad(plotDir, fmt.Sprintf("load-%d", o.Nodes), s)
				if err != nil {
					return fmt.Errorf("--plot: %w", err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", strings.Join(paths, ", "))
			}
			if f := rep.Failures(); len(f) > 0 {
				return fmt.Errorf("load test failed: %s", strings.Join(f, "; "))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", o.Nodes, "simulated NodeManagers")
	f.IntVar(&o.Apps, "apps", o.Apps, "apps, submitted at once")
	f.IntVar(&o.Tasks, "tasks", o.Tasks, "tasks over all apps (spread 0.1x to 1.9x the mean per app)")
	f.IntVar(&taskMS, "task-ms", int(o.TaskTime/time.Millisecond), "a task's mean run time in ms (each draws 0.5x to 1.5x)")
	f.DurationVar(&o.Heartbeat, "heartbeat", o.Heartbeat, "the NMs' heartbeat interval (the RM's loom.heartbeat.interval-ms)")
	f.DurationVar(&o.AsyncInterval, "async", 0, "schedule asynchronously, a pass every this long (loom.scheduler.async.interval-ms; 0: in each heartbeat)")
	f.DurationVar(&o.AMInterval, "am-interval", o.AMInterval, "wait between an AM's allocate calls")
	f.IntVar(&o.NodeVCores, "node-vcores", o.NodeVCores, "each NM's vcores (a task takes 1)")
	f.IntVar(&o.NodeMB, "node-mb", o.NodeMB, "each NM's memory in MB (a task takes 1024)")
	f.Float64Var(&o.Altruistic, "altruistic", o.Altruistic, "fraction of each AM's asks sent ALTRUISTIC")
	f.IntVar(&o.NMConns, "nm-conns", o.NMConns, "tracker connections the NMs share (0: one per NM)")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up after this long; unfinished apps count as lost")
	f.Uint64Var(&o.Seed, "seed", o.Seed, "seed for task durations")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	f.IntVar(&cpuLoad, "cpu-load", 0, "run this many busy processes beside the run (a competing CPU load: issue 19's no missed heartbeat)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run (RM and simulation) to this file; with --rm-process the RM's own to FILE.rm")
	f.StringVar(&mutexProfile, "mutexprofile", "", "write a mutex contention profile of the run to this file")
	f.IntVar(&o.SimProcs, "sim-procs", o.SimProcs, "with --rm-process, GOMAXPROCS of this process, which simulates the NMs and AMs: more Ps than cores keep one polling the network, so that a reply is read as it arrives, not up to 10 ms later when every P is busy (0: Go's default)")
	f.IntVar(&o.SimGCPercent, "sim-gogc", o.SimGCPercent, "with --rm-process, GOGC of this process, which simulates the NMs and AMs, for the run: its collections stand for nothing in the simulated cluster but take the cores from the RM (0: Go's default or $GOGC)")
	f.BoolVar(&rmProcess, "rm-process", false, "run the RM as a process of its own (this binary's `loom rm`), to measure its CPU and memory apart from the simulated NMs' and AMs'")
	f.StringVar(&plotDir, "plot", "", "draw the heartbeats' p50 and p99 second by second as load-<nodes>.svg in this directory")
	f.StringVar(&seriesFile, "series", "", "write the run second by second (heartbeats, their p50 and p99, allocations, other processes' CPU) to this CSV file")
	f.StringVar(&memProfile, "memprofile", "", "write a memory profile (what the run allocated, and what is live at its end) to this file; with --rm-process the RM's own to FILE.rm")
	return cmd
}

func writeSeries(rep *bench.LoadReport, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.WriteSeries(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// startCPUProfile profiles this process's CPU into file until the
// returned stop is called.
func startCPUProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup(name).WriteTo(f, 0)
}

func targetNames() string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.name
	}
	return strings.Join(names, ", ")
}

func roundBench(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(10 * time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
