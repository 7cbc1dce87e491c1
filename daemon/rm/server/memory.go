package server

import (
	"os"
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
)

func loadMemory(c *hadoopconf.Conf, cfg *Config) error {
	p, err := c.Int(keyGCPercent)
	if err != nil {
		return err
	}
	if p < 10 || p > 10000 {
		return c.Errorf(keyGCPercent, "%d is not between 10 and 10000 (percent of the live heap the heap may grow by before a collection)", p)
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
