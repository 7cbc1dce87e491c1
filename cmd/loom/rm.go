package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/loomrm/loom/daemon/rm/server"
	"github.com/loomrm/loom/internal/hadoopconf"
)

// confFlags are the flags every daemon shares: where the Hadoop config
// lives, and -D overrides in Hadoop's own spelling.
type confFlags struct {
	dir       string
	overrides []string
}

func (f *confFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "conf-dir", "", "Hadoop config dir with yarn-site.xml (default: $HADOOP_CONF_DIR)")
	cmd.Flags().StringArrayVarP(&f.overrides, "define", "D", nil, "set a config key, key=value (repeatable), over the files")
}

// load reads the config dir and applies the -D overrides.
func (f *confFlags) load(defaults map[string]string, files []string) (*hadoopconf.Conf, error) {
	c := hadoopconf.New(defaults)
	if err := c.LoadDir(hadoopconf.Dir(f.dir), files...); err != nil {
		return nil, err
	}
	for _, kv := range f.overrides {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("-D %q: want key=value", kv)
		}
		c.Set(strings.TrimSpace(k), v)
	}
	return c, nil
}

// daemonLogger logs to stderr, in colour only on a terminal, so that
// redirected logs stay plain text.
func daemonLogger() zerolog.Logger {
	w := zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly, NoColor: !term.IsTerminal(int(os.Stderr.Fd()))}
	return zerolog.New(w).With().Timestamp().Logger()
}

// untilSignal waits for SIGINT or SIGTERM.
func untilSignal() os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(ch)
	return <-ch
}

func rmCommand() *cobra.Command {
	var cf confFlags
	var haID, cpuProfile, memProfile string
	cmd := &cobra.Command{
		Use:   "rm",
		Short: "Run the ResourceManager",
		Long: `Run Loom's ResourceManager. It reads an existing Hadoop config dir
(yarn-site.xml: yarn.resourcemanager.address and friends, NM liveness expiry,
max attempts, min/max allocation) and Loom's own loom.* keys:

  loom.scheduler.policy          carbyne (default), drf, tetris or sjf
  loom.scheduler.p-altruism      P(Altruism), 0 to 1 (1)
  loom.scheduler.leftover-order  srtf, efficiency-first or jct-first
  loom.scheduler.leftover-cap    a job's holding from the leftover, in shares (2; 0 none)
  loom.heartbeat.interval-ms     the NodeManagers' heartbeat interval
  loom.queues                    queues, comma-separated (default)
  loom.queue.<name>.weight       a queue's DRF weight (1)
  loom.history.dir               where DAG AMs write job histories (/tmp/loom/history)
  loom.admin.secret              the credential REST asks for to change P(Altruism) (none: refused)
  loom.webapp.rest-write.enabled REST submission and kills (false: refused, as anyone may claim any user)
  loom.cluster.secret-file       a file (not open to every user) with the secret NodeManagers prove (none)
  loom.cluster.secret            the same secret inline (at least 16 bytes; prefer the file)
  loom.resourcemanager.node.maximum-memory-mb, -vcores
                                 the most one node may offer (64 TB, 8192); a larger node is told to shut down

With yarn.resourcemanager.recovery.enabled=true it keeps apps and attempts in
a state store (loom.store.kind: local, zookeeper or hdfs; loom.store.dir,
loom.store.zk-address, loom.store.hdfs-uri) and a restart is work-preserving.
Each AM authenticates to the scheduler with the AMRM token the RM puts in
its credentials (SASL DIGEST-MD5); the key behind the tokens rolls every
yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs (86400).
AMs (and the RM, launching them) start containers with NMTokens, one per
node, signed with a key NodeManagers get when they register; it rolls every
yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs (86400).
NodeManagers prove they belong with the cluster secret: with one set, the
resource tracker takes registerNodeManager, nodeHeartbeat and
unRegisterNodeManager for a node only on a connection authenticated with
that node's token (SASL DIGEST-MD5). Without one the RM warns at start that
nodes are not authenticated: anyone who reaches the tracker can register a
node, though only the RPC client that registered a node may heartbeat for
it or unregister it.
yarn.acl.enable and yarn.admin.acl guard kills and P(Altruism). The web UI,
YARN's REST API and /metrics are on yarn.resourcemanager.webapp.address.

A broken or contradictory config is refused at start, naming the key.`,
		Example: "  loom rm --conf-dir /etc/hadoop/conf\n  loom rm -D yarn.resourcemanager.hostname=127.0.0.1 -D loom.scheduler.p-altruism=0.5",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.load(server.Defaults, server.ConfFiles)
			if err != nil {
				return err
			}
			if haID != "" {
				c.Set("yarn.resourcemanager.ha.id", haID)
			}
			cfg, err := server.LoadConfig(c)
			if err != nil {
				return err
			}
			cfg.WhatIf = rmWhatIf
			log := daemonLogger()
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			if memProfile != "" {
				defer func() {
					if err := writeProfile("allocs", memProfile); err != nil {
						log.Error().Err(err).Msg("--memprofile")
					}
				}()
			}
			raiseFileLimit(log)
			if cfg.HA.Enabled {
				// One of several RMs: standby until elected (RunHA).
				ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				err := server.RunHA(ctx, cfg, log)
				fmt.Fprintf(os.Stderr, "loom rm: stopping\n")
				return err
			}
			r, err := server.New(cfg, log)
			if err != nil {
				return err
			}
			if err := r.Start(); err != nil {
				return err
			}
			sig := untilSignal()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			fmt.Fprintf(os.Stderr, "loom rm: %v: stopping\n", sig)
			return r.Stop(ctx)
		},
	}
	cf.add(cmd)
	cmd.Flags().StringVar(&haID, "ha-id", "", "this RM's id among yarn.resourcemanager.ha.rm-ids (yarn.resourcemanager.ha.id)")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the RM to this file, until it stops (for diagnosis: loom bench load --rm-process --cpuprofile uses it)")
	cmd.Flags().StringVar(&memProfile, "memprofile", "", "write a memory profile of the RM (what it allocated, and what is live) to this file when it stops (for diagnosis: loom bench load --rm-process --memprofile uses it)")
	return cmd
}

// raiseFileLimit lifts the open-file limit to its hard limit: every
// NodeManager, AM and client holds a connection, and a 10,000-node load
// test stopped at the 4,096th NM on the usual soft limit. It says what the
// limit is.
func raiseFileLimit(log zerolog.Logger) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn().Err(err).Msg("cannot read the open-file limit")
		return
	}
	soft := lim.Cur
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			log.Warn().Err(err).Uint64("soft", soft).Uint64("hard", lim.Max).Msg("cannot raise the open-file limit; connections beyond it are refused")
			return
		}
	}
	log.Info().Uint64("was", soft).Uint64("now", lim.Cur).Msg("open-file limit")
}
