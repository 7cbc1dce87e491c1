// Package server is the ResourceManager daemon: it serves YARN's client,
// AM and node protocols over Hadoop IPC and feeds the rm core from them
// with a real clock. All scheduling decisions are the core's; this
// package keeps YARN's application, attempt, container and node records
// around it, and launches AMs on NodeManagers.
package server

import (
	"errors"
	"github.com/loomrm/loom/daemon/webui"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loomrm/loom/daemon/rm/store"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/internal/logagg"
	"github.com/loomrm/loom/internal/queueconf"
	"github.com/loomrm/loom/internal/topology"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
)

// Defaults are YARN's, for the keys Loom reads, and Loom's own.
var Defaults = map[string]string{
	"yarn.scheduler.capacity.node-locality-delay":            "40",
	"yarn.scheduler.fair.locality-delay-node-ms":             "-1",
	"yarn.scheduler.fair.locality-delay-rack-ms":             "-1",
	"yarn.scheduler.capacity.rack-locality-additional-delay": "-1",
	"loom.scheduler.async.interval-ms":                       "0",
	keyGCPercent:                                             "400",
	keyMemoryLimit:                                           "0",
	keyMinProcs:                                              strconv.Itoa(defaultMinProcs),
	keyPassNice:                                              strconv.Itoa(defaultPassNice),
	keyCallNice:                                              strconv.Itoa(defaultCallNice),
	keyCallThreads:                                           strconv.Itoa(defaultCallThreads),
	"yarn.resourcemanager.ha.automatic-failover.zk-base-path": "/yarn-leader-election",
	"yarn.resourcemanager.ha.automatic-failover.enabled":      "true",
	keyReservations:                                                      "false",
	keyReservableShare:                                                   "0.8",
	logagg.KeyRemoteDir:                                                  logagg.DefaultRemoteDir,
	logagg.KeySuffix:                                                     logagg.DefaultSuffix,
	"yarn.cluster.max-application-priority":                              "0",
	logagg.KeyEnabled:                                                    "false",
	"yarn.log-aggregation-status.time-out.ms":                            "600000",
	"yarn.resourcemanager.hostname":                                      "0.0.0.0",
	"yarn.resourcemanager.address":                                       "${yarn.resourcemanager.hostname}:8032",
	"yarn.resourcemanager.scheduler.address":                             "${yarn.resourcemanager.hostname}:8030",
	"yarn.resourcemanager.resource-tracker.address":                      "${yarn.resourcemanager.hostname}:8031",
	"yarn.resourcemanager.webapp.address":                                "${yarn.resourcemanager.hostname}:8088",
	"yarn.nm.liveness-monitor.expiry-interval-ms":                        "600000",
	"yarn.am.liveness-monitor.expiry-interval-ms":                        "600000",
	"yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs": "86400",
	"yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs":    "86400",
	"yarn.resourcemanager.delegation.key.update-interval":                "86400000",
	"yarn.resourcemanager.delegation.token.renew-interval":               "86400000",
	"yarn.resourcemanager.delegation.token.max-lifetime":                 "604800000",
	"yarn.resourcemanager.am.max-attempts":                               "2",
	keyAMLaunchers:                                                       "50",
	"yarn.resourcemanager.max-completed-applications":                    "1000",
	keyMaxCompletedContainers:                                            "10000",
	"yarn.resourcemanager.nodemanagers.heartbeat-interval-ms":            "1000",
	"yarn.scheduler.minimum-allocation-mb":                               "1024",
	"yarn.scheduler.maximum-allocation-mb":                               "8192",
	"yarn.scheduler.minimum-allocation-vcores":                           "1",
	"yarn.scheduler.maximum-allocation-vcores":                           "4",
	"yarn.acl.enable":                                                    "false",
	keyLabelsEnabled:                                                     "false",
	keyLabelsType:                                                        "centralized",
	keyLabelsPartitions:                                                  "",
	keyLabelsNodes:                                                       "",
	"yarn.admin.acl":                                                     "*",
	"yarn.resourcemanager.recovery.enabled":                              "false",

	"loom.scheduler.policy":          rm.DefaultPolicyConfig().Policy,
	"loom.scheduler.p-altruism":      strconv.FormatFloat(rm.DefaultPolicyConfig().PAltruism, 'g', -1, 64),
	"loom.scheduler.leftover-order":  rm.DefaultPolicyConfig().LeftoverOrder.String(),
	"loom.scheduler.leftover-cap":    strconv.FormatFloat(rm.DefaultPolicyConfig().LeftoverCap, 'g', -1, 64),
	"loom.scheduler.tetris-fairness": "0",
	"loom.scheduler.recall":          strconv.FormatFloat(rm.DefaultPolicyConfig().Recall, 'g', -1, 64),
	"loom.scheduler.promise-slack":   strconv.FormatFloat(rm.DefaultPolicyConfig().PromiseSlack, 'g', -1, 64),
	"loom.scheduler.share-growth":    strconv.FormatBool(rm.DefaultPolicyConfig().ShareGrowth),
	"loom.heartbeat.interval-ms":     "${yarn.resourcemanager.nodemanagers.heartbeat-interval-ms}",
	"loom.queues":                    "default",
	// After recovering apps, no container is granted for this long, so
	// that the NodeManagers report the containers they run first (YARN's
	// work-preserving recovery wait).
	keySchedulingWait: "10000",
	// Preemption, off by default in both schedulers.
	keyFairPreemption:  "false",
	keyFairWaitKill:    "15000",
	keyMonitorEnable:   "false",
	keyCSMaxWaitKill:   "15000",
	keyCSMonitorPeriod: "3000",
	// How often the RM looks for a change of the queue tree's file (the
	// Fair Scheduler's reload interval, 10 s).
	"loom.queues.reload-interval-ms": "10000",
	"loom.history.dir":               "/tmp/loom/history",
	"loom.admin.secret":              "",

	// Off: the web port knows callers only by the user.name they claim.
	"loom.webapp.rest-write.enabled": "false",
}

// ConfFiles are the files read from the config dir, in order.
var ConfFiles = []string{"core-site.xml", "yarn-site.xml", "capacity-scheduler.xml", "hadoop-policy.xml", "loom-site.xml"}

// Config is the RM's configuration, checked.
type Config struct {
	ClientAddr, SchedulerAddr, TrackerAddr, WebAddr string

	// WhatIf is the simulator's what-if for the operations page, which
	// the command that starts the RM supplies; nil leaves it off.
	WhatIf webui.WhatIfFunc

	NMExpiry time.Duration
	AMExpiry time.Duration
	// AMRMRoll is how often the AMRM master key is replaced.
	AMRMRoll time.Duration
	// NMTokenRoll is how often the NM-token master key is replaced.
	NMTokenRoll time.Duration
	// Delegation tokens: how often their master key is replaced, how
	// long a token lives between renewals, and at most
	// (yarn.resourcemanager.delegation.*).
	DTKeyRoll, DTRenew, DTMaxLife time.Duration
	HeartbeatInterval             time.Duration
	MaxAttempts                   int
	// AMLaunchers is how many AM containers the RM starts on their NMs
	// at once (yarn.resourcemanager.amlauncher.thread-count, YARN's
	// AMLauncher pool); the others wait their turn.
	AMLaunchers int
	// MaxCompleted is how many finished apps the RM remembers;
	// MaxCompletedContainers how many ended task containers a running
	// app's attempt keeps records of (a finished app's are all dropped).
	MaxCompleted, MaxCompletedContainers int
	MinAlloc                             fairness.Vector
	MaxAlloc                             fairness.Vector

	// PolicyConfig is the policy and its knobs (loom.scheduler.*).
	rm.PolicyConfig
	// Queues maps each queue to its weight; QueuePAltruism the queues
	// that override P(Altruism) to their value.
	Queues         map[string]float64
	QueuePAltruism map[string]float64
	// Tree is the queue hierarchy (queuetree.go), nil for loom.queues'
	// flat queues; TreeFile the file it came from, watched for changes
	// every TreeReload (10 s).
	Tree       *queueconf.Tree
	TreeFile   string
	TreeReload time.Duration
	// FairUserQueue and FairUndeclared are the Fair Scheduler's
	// user-as-default-queue and allow-undeclared-pools, for a reloaded
	// allocation file without a queuePlacementPolicy.
	FairUserQueue, FairUndeclared bool
	// RecoverySchedulingWait holds scheduling back after a restart or a
	// failover that recovered running apps (rm.go).
	RecoverySchedulingWait time.Duration
	// Preemption is on for a tree when its scheduler's key says so
	// (preemption.go); CSStarve is a Capacity Scheduler leaf's
	// starvation timeout (the monitor's interval).
	Preemption *rm.PreemptionConfig
	CSStarve   time.Duration
	// SchedulerLayout is the layout of /ws/v1/cluster/scheduler
	// (yarn.resourcemanager.scheduler.class), and SchedulerConf the
	// scheduler's keys as configured (loom.scheduler.*, loom.queue*,
	// yarn.scheduler.*), for /ws/v1/cluster/scheduler-conf.
	SchedulerLayout string
	SchedulerClass  string
	// LogAggregation is whether NodeManagers aggregate logs
	// (yarn.log-aggregation-enable); an app's report says how it went,
	// or TIME_OUT when a node has not said within LogAggregationTimeout
	// of the app's end (yarn.log-aggregation-status.time-out.ms).
	LogAggregation        bool
	LogAggregationTimeout time.Duration
	// Logs is where the logs are aggregated, for the web UI (nil with
	// aggregation off).
	Logs *webui.LogsConfig
	// Reservations turns on the reservation system
	// (yarn.resourcemanager.reservation-system.enable); ReservableShare is
	// the part of the cluster reservations may hold at once
	// (loom.reservation.max-share).
	Reservations    bool
	ReservableShare float64
	// AsyncInterval, when positive, schedules asynchronously: a loop
	// places asks on the nodes that heartbeated, every interval
	// (loom.scheduler.async.interval-ms; 0, the default: in each
	// heartbeat).
	AsyncInterval time.Duration
	// GCPercent and MemoryLimitMB steer Go's garbage collector, as -Xmx
	// and the collector's flags steer YARN's JVM (see memory.go).
	GCPercent     int
	MemoryLimitMB int64
	// MinProcs is the fewest Ps (GOMAXPROCS) the RM runs with
	// (loom.resourcemanager.min-procs; see memory.go).
	MinProcs int
	// PassNice is added to the nice value of the threads that run the
	// RM's own scheduling passes (loom.scheduler.pass-nice; passnice.go).
	PassNice int
	// CallNice is added to the nice value of the CallThreads threads that
	// serve clients' and AMs' calls (loom.resourcemanager.call-nice and
	// call-threads; callnice.go).
	CallNice, CallThreads int
	// MaxAppPriority is the highest application priority
	// (yarn.cluster.max-application-priority): higher ones are capped to
	// it. Loom's policies do not order apps by priority.
	MaxAppPriority int32
	SchedulerConf  [][2]string
	// HistoryDir is where DAG AMs write their job histories, one file per
	// app (a directory every node sees, as MapReduce's staging dir).
	HistoryDir string
	// AdminSecret is the credential the web API asks for before it
	// changes P(Altruism); empty refuses every change.
	AdminSecret string
	// NodeAuth is the cluster secret NodeManagers prove and the largest
	// node taken (loom.cluster.secret*, loom.resourcemanager.node.*).
	NodeAuth NodeAuth
	// RESTWrites lets REST calls change state: submit, new-application,
	// kill (loom.webapp.rest-write.enabled). Off, they are refused: the
	// web port knows its callers only by the user.name they claim.
	RESTWrites bool
	// WebAuth is how the web port authenticates: SIMPLE, or Kerberos
	// SPNEGO (hadoop.http.authentication.*).
	WebAuth webAuth
	// Web is the web port's limits (loom.webapp.*-timeout-ms,
	// max-body-bytes, max-connections[-per-address], limit-loopback).
	Web webLimits
	// ACLEnabled turns on the ACLs (yarn.acl.enable); AdminACL is
	// yarn.admin.acl.
	ACLEnabled bool
	// Labels are the node labels (partitions) and how nodes get them
	// (labels.go).
	Labels   LabelsConfig
	AdminACL rpc.ACL
	// RPC is every RPC server's limits (ipc.maximum.data.length,
	// loom.rpc.*) and Policy: who may call which protocol, by proxy-user
	// rules (hadoop.proxyuser.*) and, with
	// hadoop.security.authorization, the service-level ACLs of
	// hadoop-policy.xml. Groups resolves users' groups for it and for
	// the ACLs above.
	RPC    rpc.ServerOptions
	Groups rpc.Groups
	// Kerberos, with hadoop.security.authentication=kerberos, is the RM's
	// principal and key (yarn.resourcemanager.principal, .keytab): the
	// client port then takes Kerberos (SASL GSSAPI) and no SIMPLE.
	Kerberos *rpc.Kerberos
	// Locality is delay scheduling for asks that name hosts or racks
	// (yarn.scheduler.capacity.node-locality-delay and
	// rack-locality-additional-delay, in missed scheduling opportunities).
	Locality rm.LocalityDelays
	// Topology says which rack each node is on (net.topology.* in
	// core-site.xml: a script or a table; /default-rack without).
	Topology *topology.Resolver
	// HA is RM high availability (yarn.resourcemanager.ha.*): this RM's
	// id among the rm-ids, elected active through ZooKeeper (ha.go).
	HA HAConfig
	// HATransition, set by RunHA, takes an admin's request to change this
	// RM's HA state (PUT /ws/v1/loom/ha/state); HAZKState, set by RunHA,
	// is the elector's ZooKeeper connection state (clusterInfo's
	// haZooKeeperConnectionState).
	HATransition func(state string) error
	HAZKState    func() string
	// Recovery keeps apps and attempts in Store and recovers them on a
	// restart (yarn.resourcemanager.recovery.enabled).
	Recovery bool
	Store    store.Config
}

// LoadConfig reads and checks the RM's keys. Every error names the key.
func LoadConfig(c *hadoopconf.Conf) (Config, error) {
	var cfg Config
	var errs []error
	addr := func(key string) string {
		a, err := c.Addr(key)
		errs = append(errs, err)
		return a
	}
	positive := func(key string) time.Duration {
		d, err := c.PositiveMillis(key)
		errs = append(errs, err)
		return d
	}
	integer := func(key string, min int64) int64 {
		n, err := c.Int(key)
		if err == nil && n < min {
			err = c.Errorf(key, "%d is below the minimum of %d", n, min)
		}
		errs = append(errs, err)
		return n
	}
	ha, err := loadHA(c)
	if err != nil {
		return cfg, err
	}
	cfg.HA = ha
	cfg.ClientAddr = addr("yarn.resourcemanager.address")
	cfg.SchedulerAddr = addr("yarn.resourcemanager.scheduler.address")
	cfg.TrackerAddr = addr("yarn.resourcemanager.resource-tracker.address")
	cfg.WebAddr = addr("yarn.resourcemanager.webapp.address")
	cfg.NMExpiry = positive("yarn.nm.liveness-monitor.expiry-interval-ms")
	cfg.AMExpiry = positive("yarn.am.liveness-monitor.expiry-interval-ms")
	cfg.AMRMRoll = time.Duration(integer("yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs", 1)) * time.Second
	cfg.NMTokenRoll = time.Duration(integer("yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs", 1)) * time.Second
	cfg.DTKeyRoll = positive("yarn.resourcemanager.delegation.key.update-interval")
	cfg.DTRenew = positive("yarn.resourcemanager.delegation.token.renew-interval")
	cfg.DTMaxLife = positive("yarn.resourcemanager.delegation.token.max-lifetime")
	cfg.HeartbeatInterval = positive("loom.heartbeat.interval-ms")
	cfg.RecoverySchedulingWait = time.Duration(integer(keySchedulingWait, 0)) * time.Millisecond
	cfg.MaxAttempts = int(integer("yarn.resourcemanager.am.max-attempts", 1))
	cfg.AMLaunchers = int(integer(keyAMLaunchers, 1))
	cfg.MaxCompleted = int(integer("yarn.resourcemanager.max-completed-applications", 0))
	cfg.MaxCompletedContainers = int(integer(keyMaxCompletedContainers, 0))
	cfg.MinAlloc = fairness.New(float64(integer("yarn.scheduler.minimum-allocation-mb", 0)),
		float64(integer("yarn.scheduler.minimum-allocation-vcores", 0)))
	cfg.MaxAlloc = fairness.New(float64(integer("yarn.scheduler.maximum-allocation-mb", 1)),
		float64(integer("yarn.scheduler.maximum-allocation-vcores", 1)))
	if err := firstError(errs); err != nil {
		return cfg, err
	}
	// Contradictions across keys.
	for _, k := range []struct {
		kind     fairness.Kind
		min, max string
	}{
		{fairness.Memory, "yarn.scheduler.minimum-allocation-mb", "yarn.scheduler.maximum-allocation-mb"},
		{fairness.VCores, "yarn.scheduler.minimum-allocation-vcores", "yarn.scheduler.maximum-allocation-vcores"},
	} {
		if cfg.MinAlloc[k.kind] > cfg.MaxAlloc[k.kind] {
			return cfg, c.Errorf(k.min, "%v is above %s = %v", cfg.MinAlloc[k.kind], k.max, cfg.MaxAlloc[k.kind])
		}
	}
	if cfg.AMRMRoll <= 3*cfg.AMExpiry {
		// A new key is used only once every live AM has had a token
		// under it: 1.5 AM expiries after it was made.
		return cfg, c.Errorf("yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs",
			"%v should be more than 3 X yarn.am.liveness-monitor.expiry-interval-ms (%v)", cfg.AMRMRoll, cfg.AMExpiry)
	}
	if cfg.NMTokenRoll <= 3*cfg.NMExpiry {
		// A new key signs tokens only once every live NM has it: 1.5 NM
		// expiries after it was made.
		return cfg, c.Errorf("yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs",
			"%v should be more than 3 X yarn.nm.liveness-monitor.expiry-interval-ms (%v)", cfg.NMTokenRoll, cfg.NMExpiry)
	}
	if cfg.NMExpiry <= cfg.HeartbeatInterval {
		return cfg, c.Errorf("yarn.nm.liveness-monitor.expiry-interval-ms",
			"%v is not longer than the heartbeat interval %v: every node would be lost", cfg.NMExpiry, cfg.HeartbeatInterval)
	}

	policy, err := c.String("loom.scheduler.policy")
	if err != nil {
		return cfg, err
	}
	order, err := c.String("loom.scheduler.leftover-order")
	if err != nil {
		return cfg, err
	}
	p, err := c.Float("loom.scheduler.p-altruism")
	if err != nil {
		return cfg, err
	}
	leftoverCap, err := c.Float("loom.scheduler.leftover-cap")
	if err != nil {
		return cfg, err
	}
	tetrisFair, err := c.Float("loom.scheduler.tetris-fairness")
	if err != nil {
		return cfg, err
	}
	recall, err := c.Float("loom.scheduler.recall")
	if err != nil {
		return cfg, err
	}
	slack, err := c.Float("loom.scheduler.promise-slack")
	if err != nil {
		return cfg, err
	}
	growth, err := c.Bool("loom.scheduler.share-growth")
	if err != nil {
		return cfg, err
	}
	cfg.PolicyConfig, err = rm.ParsePolicyConfig(policy, p, order, leftoverCap)
	if err == nil {
		cfg.PolicyConfig.TetrisFairness, cfg.PolicyConfig.Recall = tetrisFair, recall
		cfg.PolicyConfig.PromiseSlack, cfg.PolicyConfig.ShareGrowth = slack, growth
		err = cfg.PolicyConfig.Validate()
	}
	if err != nil {
		var pe *rm.PolicyError
		if errors.As(err, &pe) {
			return cfg, c.Errorf("loom.scheduler."+pe.Knob, "%s", pe.Err)
		}
		return cfg, err
	}
	if cfg.HistoryDir, err = c.String("loom.history.dir"); err != nil {
		return cfg, err
	}
	if cfg.HistoryDir == "" || !filepath.IsAbs(cfg.HistoryDir) {
		return cfg, c.Errorf("loom.history.dir", "%q is not an absolute path", cfg.HistoryDir)
	}
	if cfg.AdminSecret, err = c.String("loom.admin.secret"); err != nil {
		return cfg, err
	}
	if cfg.NodeAuth, err = loadNodeAuth(c); err != nil {
		return cfg, err
	}
	if cfg.RESTWrites, err = c.Bool("loom.webapp.rest-write.enabled"); err != nil {
		return cfg, err
	}
	if cfg.Web, err = loadWebLimits(c); err != nil {
		return cfg, err
	}
	if cfg.WebAuth, err = loadWebAuth(c, webHost(cfg.WebAddr)); err != nil {
		return cfg, err
	}
	if cfg.ACLEnabled, err = c.Bool("yarn.acl.enable"); err != nil {
		return cfg, err
	}
	if cfg.Labels, err = loadLabels(c); err != nil {
		return cfg, err
	}
	admins, err := c.String("yarn.admin.acl")
	if err != nil {
		return cfg, err
	}
	cfg.AdminACL = rpc.ParseACL(admins)
	cfg.Groups = rpc.SystemGroups()
	if cfg.RPC, err = rpc.ServerOptionsFromConf(c, cfg.Groups); err != nil {
		return cfg, err
	}
	if cfg.Topology, err = topology.New(c); err != nil {
		return cfg, err
	}
	for _, d := range []struct {
		key string
		to  *int
	}{{"yarn.scheduler.capacity.node-locality-delay", &cfg.Locality.Node},
		{"yarn.scheduler.capacity.rack-locality-additional-delay", &cfg.Locality.Rack}} {
		v, err := c.Int(d.key)
		if err != nil {
			return cfg, err
		}
		if v < -1 {
			return cfg, c.Errorf(d.key, "%d: want -1 (see YARN's meaning) or a number of missed scheduling opportunities", v)
		}
		*d.to = int(v)
	}
	for _, d := range []struct {
		key string
		to  *time.Duration
	}{{"yarn.scheduler.fair.locality-delay-node-ms", &cfg.Locality.NodeTime},
		{"yarn.scheduler.fair.locality-delay-rack-ms", &cfg.Locality.RackTime}} {
		v, err := c.Int(d.key)
		if err != nil {
			return cfg, err
		}
		if v < -1 {
			return cfg, c.Errorf(d.key, "%d: want -1 (off) or milliseconds", v)
		}
		*d.to = time.Duration(v) * time.Millisecond
	}
	rmHost, err := c.String("yarn.resourcemanager.hostname")
	if err != nil {
		return cfg, err
	}
	if cfg.Kerberos, err = rpc.ServerKerberos(c, "yarn.resourcemanager.principal", "yarn.resourcemanager.keytab", rmHost); err != nil {
		return cfg, err
	}
	if p, err := c.Int("yarn.cluster.max-application-priority"); err != nil {
		return cfg, err
	} else if p < 0 || p > math.MaxInt32 {
		return cfg, c.Errorf("yarn.cluster.max-application-priority", "%d is not between 0 and %d", p, math.MaxInt32)
	} else {
		cfg.MaxAppPriority = int32(p)
	}
	if cfg.AsyncInterval, err = c.Millis("loom.scheduler.async.interval-ms"); err != nil {
		return cfg, err
	} else if cfg.AsyncInterval < 0 {
		return cfg, c.Errorf("loom.scheduler.async.interval-ms", "%v must not be negative (0: schedule in each heartbeat)", cfg.AsyncInterval)
	}
	if err := loadMemory(c, &cfg); err != nil {
		return cfg, err
	}
	if err := loadPassNice(c, &cfg); err != nil {
		return cfg, err
	}
	if err := loadCallNice(c, &cfg); err != nil {
		return cfg, err
	}
	if err := loadProcs(c, &cfg); err != nil {
		return cfg, err
	}
	if cfg.Reservations, err = c.Bool(keyReservations); err != nil {
		return cfg, err
	}
	if cfg.ReservableShare, err = c.Float(keyReservableShare); err != nil {
		return cfg, err
	} else if !(cfg.ReservableShare > 0 && cfg.ReservableShare <= 1) {
		return cfg, c.Errorf(keyReservableShare, "%v is not in (0, 1]", cfg.ReservableShare)
	}
	if cfg.LogAggregation, err = c.Bool(logagg.KeyEnabled); err != nil {
		return cfg, err
	}
	if cfg.LogAggregation {
		cfg.Logs = &webui.LogsConfig{}
		if cfg.Logs.RemoteDir, err = c.String(logagg.KeyRemoteDir); err != nil {
			return cfg, err
		}
		if cfg.Logs.Suffix, err = c.String(logagg.KeySuffix); err != nil {
			return cfg, err
		}
		if _, ok := c.Raw("fs.defaultFS"); ok {
			if cfg.Logs.DefaultFS, err = c.String("fs.defaultFS"); err != nil {
				return cfg, err
			}
		}
	}
	if cfg.LogAggregationTimeout, err = c.PositiveMillis("yarn.log-aggregation-status.time-out.ms"); err != nil {
		return cfg, err
	}
	if cfg.Recovery, err = c.Bool("yarn.resourcemanager.recovery.enabled"); err != nil {
		return cfg, err
	}
	if cfg.Recovery {
		if cfg.Store, err = store.LoadConfig(c); err != nil {
			return cfg, err
		}
	}
	if cfg.HA.Enabled && (!cfg.Recovery || cfg.Store.Kind != store.KindZooKeeper) {
		return cfg, c.Errorf(hadoopconf.KeyHAEnabled, "RM HA needs the RMs to share their state in ZooKeeper: set "+
			"yarn.resourcemanager.recovery.enabled=true and %s=%s (and its ZooKeeper address)", store.KeyKind, store.KindZooKeeper)
	}
	cfg.SchedulerLayout, cfg.SchedulerClass = schedulerLayout(c)
	for _, prefix := range []string{"loom.scheduler.", "loom.queue", "yarn.scheduler."} {
		for _, k := range c.Keys(prefix) {
			if v, err := c.String(k); err == nil {
				cfg.SchedulerConf = append(cfg.SchedulerConf, [2]string{k, v})
			}
		}
	}
	if cfg.Tree, cfg.TreeFile, err = loadQueueTree(c); err != nil {
		return cfg, err
	}
	if cfg.FairUserQueue, cfg.FairUndeclared, err = defaultPlacement(c, &queueconf.Tree{}); err != nil {
		return cfg, err
	}
	if cfg.Preemption, cfg.CSStarve, err = preemptionConfig(c, cfg.Tree); err != nil {
		return cfg, err
	}
	if cfg.TreeReload, err = c.PositiveMillis("loom.queues.reload-interval-ms"); err != nil {
		return cfg, err
	}
	cfg.Queues, cfg.QueuePAltruism, err = queues(c, cfg.Tree)
	return cfg, err
}

// keyMaxCompletedContainers bounds the ended task containers a running
// app's attempt keeps records of (lifecycle.go's maybeRetireEnded).
const keyMaxCompletedContainers = "loom.resourcemanager.app.max-completed-containers"

// keySchedulerClass names YARN's scheduler.
const keySchedulerClass = "yarn.resourcemanager.scheduler.class"

// schedulerLayout reads yarn.resourcemanager.scheduler.class: Loom
// schedules with its own policy whatever it names, and serves
// /ws/v1/cluster/scheduler in that scheduler's layout, which is what the
// dashboards of such a cluster read. No class, or one Loom has no layout
// for (the RM warns of it), is YARN's default, the CapacityScheduler.
func schedulerLayout(c *hadoopconf.Conf) (layout, class string) {
	class, _ = c.Raw(keySchedulerClass)
	class = strings.TrimSpace(class)
	if strings.HasSuffix(class, ".FairScheduler") {
		return webui.LayoutFair, class
	}
	return webui.LayoutCapacity, class
}

// queues reads loom.queues, each loom.queue.<name>.weight (1 by default)
// and each loom.queue.<name>.p-altruism (the queue's override of
// P(Altruism); none by default). A key for a queue not listed is a
// mistake worth refusing.
func queues(c *hadoopconf.Conf, tree *queueconf.Tree) (map[string]float64, map[string]float64, error) {
	list, err := c.String("loom.queues")
	if err != nil {
		return nil, nil, err
	}
	qs := map[string]float64{}
	if tree != nil {
		// A tree's leaves, by the names its scheduler shows.
		qs, list = leafNames(tree), ""
	}
	for _, q := range strings.Split(list, ",") {
		q = strings.TrimSpace(q)
		if q == "" {
			continue
		}
		if _, dup := qs[q]; dup {
			return nil, nil, c.Errorf("loom.queues", "queue %q is listed twice", q)
		}
		qs[q] = 1
	}
	if len(qs) == 0 {
		return nil, nil, c.Errorf("loom.queues", "no queues")
	}
	ps := map[string]float64{}
	keys := c.Keys("loom.queue.")
	slices.Sort(keys)
	for _, k := range keys {
		rest := strings.TrimPrefix(k, "loom.queue.")
		name, knob := rest, ""
		for _, suffix := range []string{".weight", ".p-altruism"} {
			if n, ok := strings.CutSuffix(rest, suffix); ok {
				name, knob = n, suffix
			}
		}
		if knob == "" {
			return nil, nil, c.Errorf(k, "unknown key (queues take only loom.queue.<name>.weight and loom.queue.<name>.p-altruism)")
		}
		if _, listed := qs[name]; !listed {
			if tree != nil {
				return nil, nil, c.Errorf(k, "queue %q is not a leaf queue of the %s scheduler's tree", name, tree.Kind)
			}
			return nil, nil, c.Errorf(k, "queue %q is not in loom.queues", name)
		}
		v, err := c.Float(k)
		if err != nil {
			return nil, nil, err
		}
		switch knob {
		case ".weight":
			if tree != nil {
				return nil, nil, c.Errorf(k, "the queues' weights come from the %s scheduler's tree", tree.Kind)
			}
			if !(v > 0) {
				return nil, nil, c.Errorf(k, "weight %v must be positive", v)
			}
			qs[name] = v
		default:
			if err := rm.CheckPAltruism(v); err != nil {
				var pe *rm.PolicyError
				if errors.As(err, &pe) {
					return nil, nil, c.Errorf(k, "%s", pe.Err)
				}
				return nil, nil, c.Errorf(k, "%v", err)
			}
			ps[name] = v
		}
	}
	return qs, ps, nil
}

const keyCapacityRoot = "yarn.scheduler.capacity.root"

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
