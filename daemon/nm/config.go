package nm

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/internal/hostmem"
	"github.com/loomrm/loom/internal/logagg"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"google.golang.org/protobuf/proto"
)

// Defaults are YARN's, for the keys the NodeManager reads, and Loom's own
// (loom.*).
var Defaults = map[string]string{
	"hadoop.tmp.dir": "/tmp/hadoop-${user.name}",
	"fs.defaultFS":   "file:///",
	// yarn.log.dir is a system property YARN's scripts set from
	// $YARN_LOG_DIR or $HADOOP_LOG_DIR; Loom reads the same variables.
	"yarn.log.dir": defaultLogDir(),

	"yarn.nodemanager.hostname":                                       "0.0.0.0",
	"yarn.nodemanager.address":                                        "${yarn.nodemanager.hostname}:0",
	"yarn.nodemanager.webapp.address":                                 "${yarn.nodemanager.hostname}:8042",
	"yarn.resourcemanager.hostname":                                   "0.0.0.0",
	"yarn.resourcemanager.resource-tracker.address":                   "${yarn.resourcemanager.hostname}:8031",
	"yarn.resourcemanager.connect.retry-interval.ms":                  "30000",
	"yarn.nodemanager.resource.memory-mb":                             "-1",
	"yarn.nodemanager.node-labels.provider":                           "",
	"yarn.nodemanager.node-labels.provider.configured-node-partition": "",
	"yarn.nodemanager.resource.cpu-vcores":                            "-1",
	"yarn.nodemanager.resource.system-reserved-memory-mb":             "-1",
	"loom.nodemanager.resource.disk-mbps":                             "0",
	"loom.nodemanager.resource.network-mbps":                          "0",
	"yarn.nodemanager.local-dirs":                                     "${hadoop.tmp.dir}/nm-local-dir",
	"yarn.nodemanager.log-dirs":                                       "${yarn.log.dir}/userlogs",
	"yarn.nodemanager.pmem-check-enabled":                             "true",
	"yarn.nodemanager.container-monitor.interval-ms":                  "3000",
	"yarn.nodemanager.sleep-delay-before-sigkill.ms":                  "250",
	"yarn.nodemanager.user-home-dir":                                  "/home/",
	"loom.nodemanager.simple-auth.enabled":                            "false",
	"loom.cluster.secret":                                             "",
	"loom.cluster.secret-file":                                        "",
	logagg.KeyEnabled:                                                 "false",
	logagg.KeyRemoteDir:                                               logagg.DefaultRemoteDir,
	logagg.KeySuffix:                                                  logagg.DefaultSuffix,
}

// ConfFiles are the files read from the config dir, in order.
var ConfFiles = []string{"core-site.xml", "yarn-site.xml", "hadoop-policy.xml"}

func defaultLogDir() string {
	for _, env := range []string{"YARN_LOG_DIR", "HADOOP_LOG_DIR"} {
		if d := os.Getenv(env); d != "" {
			return d
		}
	}
	return "${hadoop.tmp.dir}/logs"
}

// Config is the NodeManager's configuration, checked.
type Config struct {
	// Label, when set, is the node label this NM reports in every
	// registration and heartbeat (the RM's
	// yarn.node-labels.configuration-type distributed): the config
	// provider's yarn.nodemanager.node-labels.provider.configured-node-partition.
	// "" reports none.
	Label  string
	Labels bool // a provider is configured: report, even when Label is ""
	// Address is where ContainerManagementProtocol listens
	// (yarn.nodemanager.address; port 0 picks a free one, which is the
	// port registered with the RM).
	Address string
	// Hostname is the host the NM registers under when Address binds the
	// wildcard address (yarn.nodemanager.hostname; 0.0.0.0 means this
	// machine's hostname).
	Hostname string
	// HTTPPort is the port of yarn.nodemanager.webapp.address. The port
	// the web server is bound to (HTTPPort, or a free one for 0) is what
	// is reported to the RM and to containers (NM_HTTP_PORT).
	HTTPPort int
	// WebAddress is where the NodeManager's web services listen
	// (yarn.nodemanager.webapp.address). WebAddressDefaulted says it was
	// not set: then, should its port be taken (a second NM on one
	// machine), the web server takes a free port instead of failing.
	WebAddress          string
	WebAddressDefaulted bool
	// TrackerAddress is the RM's ResourceTracker
	// (yarn.resourcemanager.resource-tracker.address); with RM HA,
	// TrackerFailover are the other RMs' trackers.
	TrackerAddress  string
	TrackerFailover []string
	// RetryInterval caps the back-off between attempts to reach the RM
	// (yarn.resourcemanager.connect.retry-interval.ms).
	RetryInterval time.Duration

	// Resource is what the node offers: memory-mb, vcores, and Loom's
	// disk and network bandwidth (0: not offered).
	Resource fairness.Vector
	// Physical is the machine as detected (memory in MB, logical CPUs).
	Physical fairness.Vector

	// LocalDirs hold the per-application caches and container working
	// dirs; LogDirs the container logs. Absolute paths.
	LocalDirs []string
	LogDirs   []string
	// UserHomeDir is the HOME given to containers
	// (yarn.nodemanager.user-home-dir).
	UserHomeDir string

	// PmemCheck kills containers over their memory
	// (yarn.nodemanager.pmem-check-enabled), checked every
	// MonitorInterval (yarn.nodemanager.container-monitor.interval-ms).
	PmemCheck       bool
	MonitorInterval time.Duration
	// KillDelay is the wait between SIGTERM and SIGKILL
	// (yarn.nodemanager.sleep-delay-before-sigkill.ms).
	KillDelay time.Duration

	// LogAggregation copies an app's container logs, when it finishes,
	// to RemoteLogDir/<user>/RemoteLogSuffix/<app> (yarn.log-aggregation-enable,
	// yarn.nodemanager.remote-app-log-dir[-suffix]); see internal/logagg.
	LogAggregation  bool
	RemoteLogDir    string
	RemoteLogSuffix string

	// DefaultFS resolves local resources whose URL has no scheme or host
	// (fs.defaultFS).
	DefaultFS string
	// ConfDir, when set, is given to containers as HADOOP_CONF_DIR.
	ConfDir string
	// SimpleAuth lets callers without an NMToken start and stop
	// containers, trusting the container token alone
	// (loom.nodemanager.simple-auth.enabled). Off by default: as YARN's,
	// the container manager takes NMToken (TOKEN) auth only.
	SimpleAuth bool
	// RunAs is who containers run as: the NodeManager's user, or with
	// the LinuxContainerExecutor one local user or each app's submitter
	// (see runas.go).
	RunAs RunAs
	// RPC is the container manager's limits (ipc.maximum.data.length,
	// loom.rpc.*) and Policy: proxy users and, with
	// hadoop.security.authorization, its service-level ACL
	// (security.containermanagement.protocol.acl, hadoop-policy.xml).
	RPC rpc.ServerOptions
	// Kerberos, with hadoop.security.authentication=kerberos, is the NM's
	// principal and key (yarn.nodemanager.principal, .keytab), with which
	// it logs in to the ResourceManager.
	Kerberos *rpc.Kerberos
	// ClusterSecret, when set, is what the NM proves to the RM that it
	// belongs to the cluster with (loom.cluster.secret, or the contents
	// of loom.cluster.secret-file; see nodeauth.go). ClusterSecretKey
	// names the key, and ClusterSecretInConf says it was written into a
	// config file, which containers can read.
	ClusterSecret       []byte
	ClusterSecretKey    string
	ClusterSecretInConf bool
}

// LoadConfig reads and checks the NodeManager's keys. Every error names
// the key and where its value came from.
func LoadConfig(c *hadoopconf.Conf) (*Config, error) {
	cfg := &Config{}
	var errs []error
	add := func(err error) { errs = append(errs, err) }

	var err error
	cfg.Address, err = c.Addr("yarn.nodemanager.address")
	add(err)
	cfg.Hostname, err = c.String("yarn.nodemanager.hostname")
	add(err)
	cfg.Hostname = strings.TrimSpace(cfg.Hostname)
	if web, err := c.Addr("yarn.nodemanager.webapp.address"); err != nil {
		add(err)
	} else {
		_, p, _ := net.SplitHostPort(web)
		cfg.HTTPPort, _ = strconv.Atoi(p)
		cfg.WebAddress = web
		cfg.WebAddressDefaulted = c.Source("yarn.nodemanager.webapp.address") == "default"
	}
	if trackers, err := c.RMAddrs("yarn.resourcemanager.resource-tracker.address"); err != nil {
		add(err)
	} else if len(trackers) > 1 {
		// RM HA: every RM's tracker, failed over across.
		cfg.TrackerFailover = trackers[1:]
		c.Set("yarn.resourcemanager.resource-tracker.address", trackers[0])
	}
	cfg.TrackerAddress, err = c.Addr("yarn.resourcemanager.resource-tracker.address")
	add(err)
	if err == nil && strings.HasSuffix(cfg.TrackerAddress, ":0") {
		add(c.Errorf("yarn.resourcemanager.resource-tracker.address", "%q: the RM's port cannot be 0", cfg.TrackerAddress))
	}
	cfg.RetryInterval, err = c.PositiveMillis("yarn.resourcemanager.connect.retry-interval.ms")
	add(err)
	add(cfg.loadLabel(c))

	physMB, physErr := hostmem.TotalMB()
	cfg.Physical[fairness.Memory] = float64(physMB)
	cfg.Physical[fairness.VCores] = float64(runtime.NumCPU())

	mem, err := c.Int("yarn.nodemanager.resource.memory-mb")
	add(err)
	if err == nil {
		switch {
		case mem == -1:
			if physErr != nil {
				add(c.Errorf("yarn.nodemanager.resource.memory-mb", "-1 asks to detect the memory, but %v; set it", physErr))
				break
			}
			reserved, err := c.Int("yarn.nodemanager.resource.system-reserved-memory-mb")
			add(err)
			mem = detectContainerMemoryMB(physMB, reserved)
			if mem <= 0 {
				add(c.Errorf("yarn.nodemanager.resource.memory-mb", "-1 asks to detect the memory, but %d MB of physical memory less %d MB reserved (yarn.nodemanager.resource.system-reserved-memory-mb) leaves none; set it",
					physMB, reserved))
			}
		case mem <= 0:
			add(c.Errorf("yarn.nodemanager.resource.memory-mb", "%d MB must be positive, or -1 to detect it", mem))
		}
	}
	cfg.Resource[fairness.Memory] = float64(mem)

	cores, err := c.Int("yarn.nodemanager.resource.cpu-vcores")
	add(err)
	if err == nil {
		switch {
		case cores == -1:
			cores = int64(runtime.NumCPU())
		case cores <= 0:
			add(c.Errorf("yarn.nodemanager.resource.cpu-vcores", "%d must be positive, or -1 to use every CPU", cores))
		}
	}
	cfg.Resource[fairness.VCores] = float64(cores)

	for _, k := range []struct {
		key  string
		kind fairness.Kind
	}{{"loom.nodemanager.resource.disk-mbps", fairness.Disk}, {"loom.nodemanager.resource.network-mbps", fairness.Network}} {
		v, err := c.Int(k.key)
		add(err)
		if err == nil && v < 0 {
			add(c.Errorf(k.key, "%d MB/s must not be negative (0: not offered)", v))
		}
		cfg.Resource[k.kind] = float64(v)
	}

	cfg.LocalDirs, err = dirList(c, "yarn.nodemanager.local-dirs")
	add(err)
	cfg.LogDirs, err = dirList(c, "yarn.nodemanager.log-dirs")
	add(err)
	cfg.UserHomeDir, err = c.String("yarn.nodemanager.user-home-dir")
	add(err)

	cfg.PmemCheck, err = c.Bool("yarn.nodemanager.pmem-check-enabled")
	add(err)
	cfg.SimpleAuth, err = c.Bool("loom.nodemanager.simple-auth.enabled")
	add(err)
	cfg.RunAs, err = loadRunAs(c)
	add(err)
	cfg.Kerberos, err = rpc.ServerKerberos(c, "yarn.nodemanager.principal", "yarn.nodemanager.keytab", cfg.Hostname)
	add(err)
	cfg.RPC, err = rpc.ServerOptionsFromConf(c, rpc.SystemGroups())
	add(err)
	cfg.MonitorInterval, err = c.PositiveMillis("yarn.nodemanager.container-monitor.interval-ms")
	add(err)
	cfg.KillDelay, err = c.Millis("yarn.nodemanager.sleep-delay-before-sigkill.ms")
	add(err)
	if err == nil && cfg.KillDelay < 0 {
		add(c.Errorf("yarn.nodemanager.sleep-delay-before-sigkill.ms", "%d ms must not be negative", cfg.KillDelay.Milliseconds()))
	}
	cfg.DefaultFS, err = c.String("fs.defaultFS")
	add(err)
	cfg.LogAggregation, err = c.Bool(logagg.KeyEnabled)
	add(err)
	cfg.RemoteLogDir, err = c.String(logagg.KeyRemoteDir)
	add(err)
	cfg.RemoteLogSuffix, err = c.String(logagg.KeySuffix)
	add(err)
	if cfg.LogAggregation && err == nil {
		if strings.Contains(cfg.RemoteLogSuffix, "/") || cfg.RemoteLogSuffix == "" || cfg.RemoteLogSuffix == ".." {
			add(c.Errorf(logagg.KeySuffix, "%q must be one directory name", cfg.RemoteLogSuffix))
		}
	}
	cfg.ClusterSecret, cfg.ClusterSecretKey, cfg.ClusterSecretInConf, err = loadClusterSecret(c)
	add(err)

	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// dirList reads a comma-separated list of directories, as Hadoop writes
// them (plain paths or file:// URIs), made absolute.
func dirList(c *hadoopconf.Conf, key string) ([]string, error) {
	s, err := c.String(key)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for d := range strings.SplitSeq(s, ",") {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(d, "file://"); ok {
			d = rest
		}
		if strings.Contains(d, "://") {
			return nil, c.Errorf(key, "%q: only local directories are supported", d)
		}
		if strings.Contains(d, "${") {
			return nil, c.Errorf(key, "%q has an unresolved ${...} reference", d)
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, c.Errorf(key, "%q: %v", d, err)
		}
		dirs = append(dirs, abs)
	}
	if len(dirs) == 0 {
		return nil, c.Errorf(key, "no directory given")
	}
	return dirs, nil
}

// detectContainerMemoryMB is what YARN's detect-hardware-capabilities
// gives containers: the physical memory less what is reserved for the
// system, or 80% of it when no reservation is set. (YARN also subtracts
// twice the NM's JVM heap; a Go NM has none to speak of.)
func detectContainerMemoryMB(physMB, reservedMB int64) int64 {
	if reservedMB != -1 {
		return physMB - reservedMB
	}
	return int64(0.8 * float64(physMB))
}

// loadLabel reads the node-label provider: "config" (the partition named
// in this file) is the one Loom's NM offers; YARN's script provider runs
// a script Loom does not.
func (cfg *Config) loadLabel(c *hadoopconf.Conf) error {
	prov, err := c.String("yarn.nodemanager.node-labels.provider")
	if err != nil {
		return err
	}
	switch strings.TrimSpace(prov) {
	case "":
		return nil
	case "config":
	default:
		return c.Errorf("yarn.nodemanager.node-labels.provider", "%q: Loom's NodeManager takes config (the partition in yarn.nodemanager.node-labels.provider.configured-node-partition)", prov)
	}
	cfg.Labels = true
	l, err := c.String("yarn.nodemanager.node-labels.provider.configured-node-partition")
	if err != nil {
		return err
	}
	cfg.Label = strings.TrimSpace(l)
	if strings.ContainsAny(cfg.Label, ", &|") {
		return c.Errorf("yarn.nodemanager.node-labels.provider.configured-node-partition", "%q: one label", l)
	}
	return nil
}

// labelsProto is what the NM reports of its label; nil without a
// provider.
func (cfg *Config) labelsProto() *pb.NodeLabelsProto {
	if !cfg.Labels {
		return nil
	}
	out := &pb.NodeLabelsProto{}
	if cfg.Label != "" {
		out.NodeLabels = []*pb.NodeLabelProto{{Name: proto.String(cfg.Label), IsExclusive: proto.Bool(true)}}
	}
	return out
}
