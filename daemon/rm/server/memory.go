package server

import (
	"os"
	"runtime"
	"runtime/debug"

	"github.com/rs/zerolog"

	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/internal/hostmem"
)

// The RM's memory keys. YARN's RM is a JVM sized by -Xmx (yarn-env.sh);
// Loom's is a Go process, whose collector runs when the heap has grown by
// gc-percent over what the last collection left live, and harder as the
// heap nears memory-limit-mb.
//
// Go's default (100%) collects often on an RM whose live heap is small
// and whose allocation rate is high (every heartbeat and allocate call
// allocates its messages): at 2,000 NMs a collection started every 3 s
// and, on 2 cores, its marking delayed heartbeats by tens of ms (heartbeat
// p99 45 ms at Go's default, 21 ms at 400%, 8 ms with no collection in
// the same run). So the RM collects at 400% by default, bounded by a
// memory limit: a quarter of the machine's memory unless set, as the
// JVM's default maximum heap is. GOGC and GOMEMLIMIT in the environment
// win over both keys, as they do for any Go program.
const (
	keyGCPercent   = "loom.resourcemanager.gc-percent"
	keyMemoryLimit = "loom.resourcemanager.memory-limit-mb"
	keyMinProcs    = "loom.resourcemanager.min-procs"
)

// The RM runs with at least loom.resourcemanager.min-procs Ps (Go's
// GOMAXPROCS), more than the cores of a small machine. Go polls the
// network from a P with nothing else to run, and otherwise only from
// sysmon, every 10 ms: with as many Ps as cores, a scheduling pass on
// one and a collection or an allocate call on the other leave a node's
// heartbeat unread for up to 10 ms, and a 2-core RM is in that state for
// much of a busy run. A P beyond the cores stays idle in epoll and reads
// the heartbeat as it arrives; the kernel then shares the cores between
// the threads. At 10,000 NMs on 2 cores (loom bench load --rm-process,
// the simulation at 8 Ps) 4 Ps against 2 gave heartbeat p50 1.7-1.9 ms
// against 4.7-5.9 ms and p99 38-66 ms against 59-74 ms (3 runs each,
// alternated). On 4 cores or more the default changes nothing.
// GOMAXPROCS in the environment wins.
const defaultMinProcs = 4

// intBetween reads an integer key that must lie in [lo, hi]; meaning says
// what the value is, in a refusal.
func intBetween(c *hadoopconf.Conf, key string, lo, hi int64, meaning string) (int64, error) {
	n, err := c.Int(key)
	if err == nil && (n < lo || n > hi) {
		err = c.Errorf(key, "%d is not between %d and %d (%s)", n, lo, hi, meaning)
	}
	return n, err
}

func loadMemory(c *hadoopconf.Conf, cfg *Config) error {
	p, err := intBetween(c, keyGCPercent, 10, 10000, "percent of the live heap the heap may grow by before a collection")
	if err != nil {
		return err
	}
	limit, err := c.Int(keyMemoryLimit)
	if err != nil {
		return err
	}
	if limit < 0 {
		return c.Errorf(keyMemoryLimit, "%d must not be negative (0: a quarter of the machine's memory)", limit)
	}
	cfg.GCPercent, cfg.MemoryLimitMB = int(p), limit
	return nil
}

func loadProcs(c *hadoopconf.Conf, cfg *Config) error {
	procs, err := intBetween(c, keyMinProcs, 0, 1024, "the fewest Ps, GOMAXPROCS, the RM runs with; 0: Go's default")
	if err != nil {
		return err
	}
	cfg.MinProcs = int(procs)
	return nil
}

// applyProcs raises GOMAXPROCS to cfg.MinProcs, unless the environment
// set it. It never lowers it.
func applyProcs(cfg Config, log zerolog.Logger) {
	if v, ok := os.LookupEnv("GOMAXPROCS"); ok {
		log.Info().Str("procs", "GOMAXPROCS="+v).Msg("Go's Ps as the environment says (" + keyMinProcs + " not applied)")
		return
	}
	if n := runtime.GOMAXPROCS(0); n < cfg.MinProcs {
		runtime.GOMAXPROCS(cfg.MinProcs)
		log.Info().Int("procs", cfg.MinProcs).Int("cores", runtime.NumCPU()).Int("was", n).
			Msg("Go's Ps raised to " + keyMinProcs + ", so that one stays free to read the network")
	}
}

// applyMemory sets the collector as the config says, unless the
// environment already did.
func applyMemory(cfg Config, log zerolog.Logger) {
	ev := log.Info()
	if v, ok := os.LookupEnv("GOGC"); ok {
		ev = ev.Str("gc_percent", "GOGC="+v)
	} else {
		debug.SetGCPercent(cfg.GCPercent)
		ev = ev.Int("gc_percent", cfg.GCPercent)
	}
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		ev = ev.Str("memory_limit", "GOMEMLIMIT="+v)
	} else {
		mb := cfg.MemoryLimitMB
		if total, err := hostmem.TotalMB(); mb == 0 && err == nil {
			mb = total / 4
		}
		if mb > 0 {
			debug.SetMemoryLimit(mb << 20)
			ev = ev.Int64("memory_limit_mb", mb)
		}
	}
	ev.Msg("garbage collector set (" + keyGCPercent + ", " + keyMemoryLimit + ")")
}
