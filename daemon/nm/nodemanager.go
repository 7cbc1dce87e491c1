// Package nm is Loom's NodeManager: it serves YARN's
// ContainerManagementProtocol, registers with the ResourceManager and
// heartbeats to it, and runs each container as a process group of its
// own: localised resources, YARN's environment, logs in its log dir, and
// its physical memory watched from /proc.
//
// Containers run as the NodeManager's own OS user (YARN's
// DefaultContainerExecutor); USER is the application's submitter.
package nm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Version is what the NM reports as nm_version.
const Version = "loom-0.1"

// defaultHeartbeatInterval is used until the RM names one
// (yarn.resourcemanager.nodemanagers.heartbeat-interval-ms, 1 s).
const defaultHeartbeatInterval = time.Second

// trackStopped is how long a completed container stays known after the RM
// has seen it: it still answers getContainerStatuses, and a second start
// of it is refused (yarn.nodemanager.duration-to-track-stopped-containers).
const trackStopped = 10 * time.Minute

// ErrShutdownByRM is what Err wraps when the RM told the NM to shut down.
var ErrShutdownByRM = errors.New("the ResourceManager told this NodeManager to shut down")

// NodeManager is one node's container manager.
type NodeManager struct {
	cfg *Config
	log zerolog.Logger

	srv *rpc.Server
	ln  net.Listener
	// The web services (web.go), and the port they are bound to: the
	// one registered with the RM and given to containers.
	web       *http.Server
	webLn     net.Listener
	httpPort  int
	startedAt time.Time
	nodeID    *pb.NodeIdProto
	nodeKey   string // host:port, as the RM keys nodes
	rm        *rpc.Client
	tracker   rpc.ResourceTrackerClient

	// ctx lives until shutdown; the background loops and fetches end with
	// it.
	ctx        context.Context
	cancel     context.CancelFunc
	loops      sync.WaitGroup // tracker and monitor
	work       sync.WaitGroup // container runners, fetches, app clean-ups
	kick       chan struct{}  // asks for an out-of-band heartbeat
	registered chan struct{}
	regOnce    sync.Once

	mu           sync.Mutex
	started      bool
	stopping     bool
	isRegistered bool
	rmIdentifier int64
	masterKey    *pb.MasterKeyProto // container tokens (see verifyContainerTokenPassword)
	// nmMasterKey checks NMTokens, and nmPrevKey the ones made before the
	// RM's last roll; attemptKeys is the key each attempt first started
	// a container with (see nmTokenSecrets).
	nmMasterKey, nmPrevKey *pb.MasterKeyProto
	attemptKeys            map[string]*pb.MasterKeyProto
	respID                 int32
	lastHealth             *pb.NodeHealthStatusProto // as last sent to the RM
	// nodeUtil and contUtil are the monitor's last measurement of the
	// node and of its containers (utilMeasured once there is one).
	nodeUtil, contUtil Utilization
	utilMeasured       bool
	// logReports are the log aggregation outcomes the RM has not yet
	// been told of, by app.
	logReports      map[string]*logReport
	containers      map[string]*container
	apps            map[string]*application
	recentlyStopped map[string]time.Time
	seq             int64 // numbers filecache dirs and executor address files

	// executorBin is the loom binary, run as `executorBin executor` for an
	// app's executor.
	executorBin string

	stopOnce sync.Once
	done     chan struct{}
	err      error
}

// New makes a NodeManager; Start runs it.
func New(cfg *Config, log zerolog.Logger) (*NodeManager, error) {
	if cfg == nil {
		return nil, errors.New("nm: no config")
	}
	if len(cfg.LocalDirs) == 0 || len(cfg.LogDirs) == 0 {
		return nil, errors.New("nm: the config has no local-dirs or log-dirs (use LoadConfig)")
	}
	if cfg.MonitorInterval <= 0 {
		return nil, errors.New("nm: the config's container monitor interval must be positive")
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("nm: cannot find the loom binary to run executors: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &NodeManager{cfg: cfg, executorBin: bin, log: log.With().Str("component", "nm").Logger(),
		ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), registered: make(chan struct{}),
		containers: map[string]*container{}, apps: map[string]*application{}, recentlyStopped: map[string]time.Time{},
		attemptKeys: map[string]*pb.MasterKeyProto{}, logReports: map[string]*logReport{},
		done: make(chan struct{})}, nil
}

// Start makes the local and log dirs, starts serving
// ContainerManagementProtocol on the configured address, and starts
// registering with the RM and heartbeating in the background (ctx bounds
// only the start itself). Registration is retried until the RM answers;
// Registered says when it has.
func (n *NodeManager) Start(ctx context.Context) error {
	n.mu.Lock()
	if n.started {
		n.mu.Unlock()
		return errors.New("nm: already started")
	}
	n.started = true
	n.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := n.cfg.RunAs.checkRunAs(); err != nil {
		return err
	}
	switch ra := n.cfg.RunAs; {
	case ra.Enabled && ra.LimitUsers:
		n.log.Info().Str("user", ra.LocalUser).Msg("containers run as one local user (LinuxContainerExecutor, nonsecure-mode.limit-users)")
	case ra.Enabled:
		n.log.Info().Msg("containers run as their apps' submitters (LinuxContainerExecutor)")
	default:
		n.log.Warn().Msg("containers run as this NodeManager's own user (DefaultContainerExecutor); set " + keyExecutorClass + " to the LinuxContainerExecutor to run them as users")
	}
	for _, d := range append(append([]string{}, n.cfg.LocalDirs...), n.cfg.LogDirs...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("nm: %w", err)
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", n.cfg.Address)
	if err != nil {
		return fmt.Errorf("nm: listening on %s (yarn.nodemanager.address): %w", n.cfg.Address, err)
	}
	n.ln = ln
	host, err := n.nodeHost(ln.Addr())
	if err != nil {
		ln.Close()
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	n.nodeID = &pb.NodeIdProto{Host: &host, Port: ptr(int32(port))}
	n.nodeKey = net.JoinHostPort(host, strconv.Itoa(port))
	n.log = n.log.With().Str("node", n.nodeKey).Logger()
	n.startedAt = time.Now()
	if err := n.startWeb(); err != nil {
		ln.Close()
		return err
	}

	logger := n.log.With().Str("component", "nm-rpc").Logger()
	opts := n.cfg.RPC
	opts.Logger, opts.Secrets, opts.TokenOnly = &logger, nmTokenSecrets{n}, !n.cfg.SimpleAuth
	n.srv = rpc.NewServer(opts)
	n.srv.Register(rpc.ContainerManagementService(cmService{n}))
	go func() {
		if err := n.srv.Serve(ln); err != nil && !errors.Is(err, rpc.ErrServerClosed) {
			n.log.Error().Err(err).Msg("ContainerManagementProtocol server stopped")
		}
	}()

	// With a cluster secret, the node's token authenticates every call
	// to the tracker (nodeauth.go).
	copts := rpc.ClientOptions{DialTimeout: 5 * time.Second, CallTimeout: 30 * time.Second, Retries: -1, Token: n.nodeToken()}
	if k := n.cfg.Kerberos; k != nil {
		// Kerberos instead of the node token: the RM checks the
		// principal's host is this node's.
		cl, err := rpc.KerberosKeytabLogin(k.Protocol+"/"+k.Host+"@"+k.Realm, k.Keytab)
		if err != nil {
			n.srv.Close()
			ln.Close()
			return fmt.Errorf("nm: %w", err)
		}
		copts.Token, copts.Kerberos = nil, cl
		n.log.Info().Str("principal", k.Protocol+"/"+k.Host+"@"+k.Realm).Msg("logs in to the ResourceManager with Kerberos")
	}
	copts.Failover = n.cfg.TrackerFailover
	n.rm = rpc.NewClient(n.cfg.TrackerAddress, copts)
	if n.cfg.ClusterSecretInConf {
		n.log.Warn().Str("key", n.cfg.ClusterSecretKey).
			Msg("the cluster secret is written in a config file, which containers can read (HADOOP_CONF_DIR): any job could pose as a node; " +
				"put it in a file only this daemon's user reads and name that file in loom.cluster.secret-file")
	}
	n.tracker = rpc.ResourceTrackerClient{C: n.rm}
	n.log.Info().Str("address", ln.Addr().String()).Str("resource", n.cfg.Resource.String()).
		Strs("local_dirs", n.cfg.LocalDirs).Strs("log_dirs", n.cfg.LogDirs).
		Msg("ContainerManagementProtocol listening")

	n.loops.Add(2)
	go n.trackerLoop()
	go n.monitorLoop()
	return nil
}

// nodeHost is the host the NM registers under: the bound host, or for a
// wildcard bind the configured hostname, else this machine's name.
func (n *NodeManager) nodeHost(a net.Addr) (string, error) {
	host, _, err := net.SplitHostPort(n.cfg.Address)
	if err != nil {
		return "", fmt.Errorf("nm: yarn.nodemanager.address %q: %w", n.cfg.Address, err)
	}
	if !isWildcard(host) {
		return host, nil
	}
	if !isWildcard(n.cfg.Hostname) {
		return n.cfg.Hostname, nil
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "", fmt.Errorf("nm: yarn.nodemanager.address binds every interface and this machine has no hostname (%v): set yarn.nodemanager.hostname", err)
	}
	return h, nil
}

func isWildcard(host string) bool {
	return host == "" || host == "0.0.0.0" || host == "::" || host == "[::]"
}

// Addr is the address ContainerManagementProtocol listens on.
func (n *NodeManager) Addr() string {
	if n.ln == nil {
		return ""
	}
	return n.ln.Addr().String()
}

// NodeID is the node id registered with the RM, "host:port".
func (n *NodeManager) NodeID() string { return n.nodeKey }

// Registered is closed once the NM has first registered with the RM.
func (n *NodeManager) Registered() <-chan struct{} { return n.registered }

// Done is closed once the NM has stopped: after Shutdown, or after the RM
// told it to shut down (then Err says why).
func (n *NodeManager) Done() <-chan struct{} { return n.done }

// Err is why the NM stopped on its own (wrapping ErrShutdownByRM), or nil.
// Read it after Done.
func (n *NodeManager) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// Shutdown stops taking containers, kills every running one (SIGTERM,
// then SIGKILL after the configured delay), tells the RM the node is
// going away, and stops serving. If ctx ends first, what is left is
// abandoned and ctx's error returned.
func (n *NodeManager) Shutdown(ctx context.Context) error {
	return n.stop(ctx, nil)
}

// stop is Shutdown, and the RM's SHUTDOWN when reason is set (then the NM
// does not unregister: the RM already knows).
func (n *NodeManager) stop(ctx context.Context, reason error) error {
	first := false
	n.stopOnce.Do(func() { first = true })
	if !first {
		select {
		case <-n.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer close(n.done)
	// Containers are killed first, so that each reports why it ended
	// rather than that its localisation was cancelled.
	n.mu.Lock()
	n.stopping = true
	n.err = reason
	registered := n.isRegistered
	started := n.started
	live := 0
	for _, a := range n.apps {
		if a.exec != nil {
			n.stopExecutorLocked(a.exec, ExitKilledAfterAppCompletion, diagAppFinishedOnNMEnd)
		}
	}
	for _, c := range n.containers {
		if c.state != stateDone {
			n.killLocked(c, ExitKilledAfterAppCompletion, diagAppFinishedOnNMEnd)
			live++
		}
	}
	n.mu.Unlock()
	if live > 0 {
		n.log.Info().Int("containers", live).Msg("killing containers on shutdown")
	}
	n.cancel()
	if !started || n.srv == nil {
		// Never started, or its start failed before serving.
		return nil
	}
	n.loops.Wait()

	var err error
	workDone := make(chan struct{})
	go func() { n.work.Wait(); close(workDone) }()
	select {
	case <-workDone:
	case <-ctx.Done():
		err = ctx.Err()
	}

	if registered && reason == nil && err == nil {
		uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var resp pb.UnRegisterNodeManagerResponseProto
		e := n.rm.Call(uctx, rpc.ResourceTrackerProtocol, "unRegisterNodeManager",
			&pb.UnRegisterNodeManagerRequestProto{NodeId: n.nodeID}, &resp)
		cancel()
		if e != nil {
			n.log.Debug().Err(e).Msg("unRegisterNodeManager failed; the RM will expire the node")
		}
	}
	if e := n.srv.Shutdown(ctx); e != nil && err == nil {
		err = e
	}
	if n.web != nil {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if e := n.web.Shutdown(wctx); e != nil {
			// A log being streamed is cut rather than waited for.
			n.web.Close()
		}
		cancel()
	}
	n.rm.Close()
	n.log.Info().Msg("NodeManager stopped")
	return err
}

// ptr returns a pointer to v, for proto2 optional fields.
func ptr[T any](v T) *T { return &v }
