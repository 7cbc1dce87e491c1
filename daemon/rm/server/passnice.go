package server

import (
	"github.com/loomrm/loom/internal/hadoopconf"
)

// keyPassNice is how much lower the OS priority of the threads running
// the RM's own scheduling passes is than the rest of the RM's
// (loom.scheduler.pass-nice: a nice value added, 0 to 19; Linux only).
//
// A pass (the asynchronous loop's, and the one at each instant preemption
// or recall falls due) is throughput work: it can take tens of
// milliseconds of CPU at 10,000 NMs. Node heartbeats and AM calls are
// latency work, answered on the connections' goroutines in microseconds
// once they have a core. On a machine whose cores are all busy the
// kernel shares them between the RM's threads by weight, so a pass at
// the same priority holds a core a heartbeat is waiting for; at a nice of
// 10 the kernel gives the core to the heartbeat's thread first, and the
// pass takes what is left. On an idle machine nothing changes. At 10,000
// NMs on 2 cores (loom bench load --rm-process, the generator on the same
// cores; docs/results/load.md) nice 10 against 0, alternated, three runs
// each: heartbeat p99 19.6-27.4 ms against 26.3-34.9 ms, p50 1.0-1.2 ms
// against 1.2-2.0 ms, allocations/s unchanged (11,467-11,856 against
// 10,493-11,814).
//
// The goroutine of each such loop keeps its thread to itself for its
// whole life (runtime.LockOSThread, never undone), so no other goroutine
// ever runs at the lower priority; the thread ends with the loop (Go
// ends a thread whose locked goroutine returns, or parks it for good if
// it is the process's first: never reused either way).
const keyPassNice = "loom.scheduler.pass-nice"

const defaultPassNice = 10

func loadPassNice(c *hadoopconf.Conf, cfg *Config) error {
	n, err := intBetween(c, keyPassNice, 0, 19, "the nice value added to the scheduling passes' threads; 0: none")
	if err != nil {
		return err
	}
	cfg.PassNice = int(n)
	return nil
}

// lowerPassPriority gives the calling loop's thread the configured lower
// priority, once, when the loop starts, and says so in the log; a failure
// is logged, and the loop runs at the RM's priority.
func (r *RM) lowerPassPriority(loop string) {
	if r.cfg.PassNice == 0 {
		return
	}
	if err := lowerThreadPriority(r.cfg.PassNice); err != nil {
		r.log.Warn().Err(err).Str("loop", loop).Int("nice", r.cfg.PassNice).
			Msg("could not lower the scheduling passes' priority (" + keyPassNice + "): they run at the RM's")
		return
	}
	r.log.Info().Str("loop", loop).Int("nice", r.cfg.PassNice).
		Msg("scheduling passes run on a thread of their own at a lower priority (" + keyPassNice + ")")
}
