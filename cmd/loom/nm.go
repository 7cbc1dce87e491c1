package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomrm/loom/daemon/nm"
	"github.com/loomrm/loom/internal/hadoopconf"
)

func nmCommand() *cobra.Command {
	var (
		cf                                  confFlags
		rmAddr, address, localDirs, logDirs string
		webAddress                          string
		memoryMB, vcores                    int
	)
	cmd := &cobra.Command{
		Use:   "nm",
		Short: "Run a NodeManager",
		Long: `Run a NodeManager: it serves ContainerManagementProtocol, registers with the
ResourceManager's resource tracker and heartbeats to it, and runs each
container as a process group of its own, with its resources localised
(file:// and hdfs://), YARN's environment, its
stdout and stderr in its log dir, and its physical memory enforced.

It reads core-site.xml and yarn-site.xml from the config dir:

  yarn.nodemanager.address                        where to listen (${yarn.nodemanager.hostname}:0)
  yarn.nodemanager.webapp.address                 the web services and container logs
                                                  (${yarn.nodemanager.hostname}:8042; port 0 picks one)
  yarn.resourcemanager.resource-tracker.address   the RM (${yarn.resourcemanager.hostname}:8031)
  yarn.nodemanager.resource.memory-mb             memory offered, MB (-1: 80% of the machine)
  yarn.nodemanager.resource.cpu-vcores            vcores offered (-1: every CPU)
  loom.nodemanager.resource.disk-mbps             disk bandwidth offered, MB/s (0: none)
  loom.nodemanager.resource.network-mbps          network bandwidth offered, MB/s (0: none)
  yarn.nodemanager.local-dirs, log-dirs           comma-separated dirs
  yarn.nodemanager.pmem-check-enabled             kill containers over their memory (true)
  yarn.nodemanager.container-monitor.interval-ms  how often memory is checked (3000)
  yarn.nodemanager.sleep-delay-before-sigkill.ms  SIGTERM to SIGKILL (250)
  loom.nodemanager.simple-auth.enabled            let callers without an NMToken start and
                                                  stop containers (false: TOKEN auth only, as YARN's)
  loom.cluster.secret-file                        a file (not open to every user) holding the
                                                  cluster secret the RM has too (none)
  loom.cluster.secret                             the same secret inline (containers can read the
                                                  config dir: prefer the file)

ContainerManagementProtocol takes TOKEN auth (SASL DIGEST-MD5) with the
NMToken the RM gave the caller, signed with the NMToken master key the RM
sends at registration; an attempt may start, stop and read only its own
application's containers.

The web address serves YARN's NodeManager REST API, read-only:
/ws/v1/node[/info], /ws/v1/node/apps[/{appid}], /ws/v1/node/containers[/{id}],
/ws/v1/node/containers/{id}/logs[/{file}], and the log page the RM's UI links
to, /node/containerlogs/{id}/{user}[/{file}]. The port it binds is the one
registered with the RM; if the default 8042 is taken (a second NM on one
machine), a free port is taken instead.

With a cluster secret the NM proves to the RM that it belongs: it
authenticates its resource-tracker connection with a token naming its node
(LoomNodeToken:host:port, password HMAC-SHA1(secret, identifier); SASL
DIGEST-MD5, the secret never crosses the wire). An RM with a secret refuses
NMs without it; one without takes any NM.

Flags override the files. A bad value is refused at start, naming the key.
SIGINT or SIGTERM kills the containers and stops the NodeManager.`,
		Example: "  loom nm --conf-dir /etc/hadoop/conf\n" +
			"  loom nm --rm 127.0.0.1:8031 --address 127.0.0.1:0 --webapp-address 127.0.0.1:0 --memory-mb 8192 --vcores 4 --local-dirs /tmp/nm1/local --log-dirs /tmp/nm1/logs",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.load(nm.Defaults, nm.ConfFiles)
			if err != nil {
				return err
			}
			f := cmd.Flags()
			for flag, key := range map[string]string{
				"rm": "yarn.resourcemanager.resource-tracker.address", "address": "yarn.nodemanager.address",
				"webapp-address": "yarn.nodemanager.webapp.address",
				"memory-mb":      "yarn.nodemanager.resource.memory-mb", "vcores": "yarn.nodemanager.resource.cpu-vcores",
				"local-dirs": "yarn.nodemanager.local-dirs", "log-dirs": "yarn.nodemanager.log-dirs",
			} {
				if f.Changed(flag) {
					c.Set(key, f.Lookup(flag).Value.String())
				}
			}
			cfg, err := nm.LoadConfig(c)
			if err != nil {
				return err
			}
			cfg.ConfDir = hadoopconf.Dir(cf.dir)

			log := daemonLogger()
			n, err := nm.New(cfg, log)
			if err != nil {
				return err
			}
			sig, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if err := n.Start(sig); err != nil {
				return err
			}
			select {
			case <-n.Done():
				return n.Err()
			case <-sig.Done():
			}
			stop()
			fmt.Fprintln(os.Stderr, "loom nm: stopping: killing containers")
			ctx, cancel := context.WithTimeout(context.Background(), cfg.KillDelay+30*time.Second)
			defer cancel()
			return n.Shutdown(ctx)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&rmAddr, "rm", "", "the RM's resource tracker, host:port (yarn.resourcemanager.resource-tracker.address)")
	fl.StringVar(&address, "address", "", "where to serve ContainerManagementProtocol, host:port; port 0 picks one (yarn.nodemanager.address)")
	fl.StringVar(&webAddress, "webapp-address", "", "where to serve the web services and container logs, host:port; port 0 picks one (yarn.nodemanager.webapp.address)")
	fl.IntVar(&memoryMB, "memory-mb", -1, "memory offered in MB, -1 to detect (yarn.nodemanager.resource.memory-mb)")
	fl.IntVar(&vcores, "vcores", -1, "vcores offered, -1 for every CPU (yarn.nodemanager.resource.cpu-vcores)")
	fl.StringVar(&localDirs, "local-dirs", "", "comma-separated dirs for caches and working dirs (yarn.nodemanager.local-dirs)")
	fl.StringVar(&logDirs, "log-dirs", "", "comma-separated dirs for container logs (yarn.nodemanager.log-dirs)")
	cf.add(cmd)
	return cmd
}
