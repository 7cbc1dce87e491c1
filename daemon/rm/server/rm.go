package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/daemon/rm/store"
	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/queueconf"
	"github.com/loomrm/loom/lifecycle"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rm/adapter"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"github.com/loomrm/loom/workload"
)

// YARN's exit statuses for containers the RM ends (ContainerExitStatus),
// as the lifecycle core names them.
const (
	ExitSuccess        = lifecycle.ExitSuccess
	ExitInvalid        = lifecycle.ExitInvalid
	ExitAborted        = lifecycle.ExitAborted
	ExitDisksFailed    = lifecycle.ExitDisksFailed
	ExitPreempted      = lifecycle.ExitPreempted
	ExitKilledByAM     = lifecycle.ExitKilledByAM
	ExitKilledByRM     = lifecycle.ExitKilledByRM
	ExitKilledAppDone  = lifecycle.ExitKilledAppDone
	amPriority         = 0
	defaultAppType     = "YARN"
	lostNodeDiagnostic = "Container released on a *lost* node"
)

// RM is the ResourceManager daemon.
type RM struct {
	cfg Config
	log zerolog.Logger

	mu   sync.Mutex
	core *rm.Core
	// labels are the node labels in force: the configured ones and an
	// admin's changes (labels.go).
	labels LabelsConfig
	// tree is the queue hierarchy in force (nil for flat queues),
	// treeFile where it is reloaded from.
	tree     *queueconf.Tree
	treeFile string
	// holdUntil: no scheduling pass before it (after a recovery).
	holdUntil time.Time
	// dueAt is when the core next has preemption or recall due, armed
	// when dueLoop's timer is set for it; dueMoved tells dueLoop it
	// moved (async.go).
	dueAt     time.Duration
	dueArmed  bool
	dueMoved  chan struct{}
	life      *lifecycle.Core
	start     time.Time
	clusterTS int64
	nextApp   int32
	reserved  map[int32]bool // ids handed out by getNewApplication, not yet submitted
	apps      map[rm.AppID]*appRec
	appOrder  []*appRec
	nodes     map[string]*nodeRec
	nodeByID  []*nodeRec
	// liveNodes counts the nodes in NS_RUNNING (setNodeState keeps it),
	// so that an allocate reply need not walk every node for it.
	liveNodes int
	conts     map[rm.ContainerID]*contRec

	servers []*rpc.Server
	// calls is the pool that serves clients' and AMs' calls, nil without
	// one (callnice.go).
	calls    *callPool
	addrs    map[string]string // listener addresses by role
	stop     chan struct{}
	wg       sync.WaitGroup
	launches sync.WaitGroup
	// launchSlots holds a token for each AM launch under way, at most
	// cfg.AMLaunchers.
	launchSlots chan struct{}
	web         *http.Server

	// store keeps apps and attempts across restarts (nil: recovery is
	// off); epoch counts the RM's starts on it.
	store store.Store
	epoch int64
	// tokenKey signs container tokens; NMs get it when they register.
	tokenKey *pb.MasterKeyProto
	// amrm signs AMRM tokens (see amrm.go); nmKey signs NMTokens (see
	// nmtoken.go).
	amrm, nmKey rollingKey
	// keyMu guards the rolling keys' cur and next for the heartbeat
	// path (nodeKeys), which does not take mu; writers hold both.
	keyMu sync.RWMutex
	// dtKey signs RM delegation tokens; dtokens are those issued and
	// live, by sequence number (dtoken.go).
	dtKey   rollingKey
	dtokens map[int32]*dtoken
	dtSeq   int32

	metrics    *metrics
	timeline   timeline
	altChanges []webui.AltruismChange
	// retireDue are running apps with more ended task containers than
	// they keep records of, retired after the lifecycle step that ended
	// them (lifecycle.go).
	retireDue []*appRec
	// grants are the last grants, for the scheduler's activities: a ring
	// whose next slot, once full, is grantNext (activities.go).
	grants    []webui.Grant
	grantNext int
	// hbQueue are the nodes whose heartbeats left reports since the last
	// asynchronous scheduling pass (async.go, nodemail.go), under hbMu.
	hbMu    sync.Mutex
	hbQueue []*nodeRec
	// nodesMu guards the nodes map for the heartbeat path, which does not
	// take mu; writers hold both.
	nodesMu sync.RWMutex
	// fenced is closed when the state store says another RM has taken
	// over (store.ErrFenced): this one must stop being active.
	fenced     chan struct{}
	fencedOnce sync.Once
	// reservations are the reservations held, by name (reservation.go);
	// resvIssued the ids given out and not yet used.
	reservations map[string]*resvRec
	resvIssued   map[int64]bool
	resvSeq      int64
}

type askKey struct {
	priority int
	demand   fairness.Vector
	kind     altruism.AskKind
	label    string // the node label it runs in
}

// localKey is a host or rack ResourceRequest's (or, as "*", the relax
// flag of the ask it qualifies): YARN groups them by priority and
// capability.
type localKey struct {
	priority int
	demand   fairness.Vector
	name     string
}

type localAsk struct {
	count int
	relax bool
}

// locality is what the host and rack requests say of the ask k, nil when
// they name none: hosts by name (the node's host, as NodeIds carry it),
// racks by path. Off-rack placement needs the "*" request's
// relax_locality (true when unset, as in YARN); a rack request with
// relax_locality false is not used at rack level.
func (a *appRec) locality(k askKey) *rm.Locality {
	var loc *rm.Locality
	relax := true
	for lk, la := range a.local {
		if lk.priority != k.priority || lk.demand != k.demand {
			continue
		}
		if lk.name == "*" {
			relax = la.relax
			continue
		}
		if loc == nil {
			loc = &rm.Locality{Hosts: map[string]int{}, Racks: map[string]int{}}
		}
		if strings.HasPrefix(lk.name, "/") {
			if la.relax {
				loc.Racks[lk.name] = la.count
			}
		} else {
			loc.Hosts[lk.name] = la.count
		}
	}
	if loc != nil {
		loc.Relax = relax
	}
	return loc
}

type appRec struct {
	id          rm.AppID
	yid         *pb.ApplicationIdProto
	ctx         *pb.ApplicationSubmissionContextProto
	user, queue string
	// preempting are the containers the RM asked the AM to give back
	// (preemption.go), sent in every allocate reply until they end.
	preempting map[rm.ContainerID]bool
	// lc is the app's lifecycle (package lifecycle): its state, final
	// status, diagnostics and attempts' states live there.
	lc         *lifecycle.App
	submitted  time.Time
	progress   float32
	amResource fairness.Vector
	// replay is the finished DAG job as the simulator replays it (see
	// history.go); nil for a stock AM's app.
	replay   *workload.Job
	attempts []*attemptRec

	asks  map[askKey]int
	local map[localKey]localAsk // host and rack requests (master.go)
	// label is the node label (partition) the app runs in, amLabel its
	// AM container's (labels.go).
	label, amLabel string
	work           float64
	critical       time.Duration
	// promisedAt and promised are the app's first promise (rm/promise.go)
	// as the core took it, on the wall clock, kept in the state store so
	// that a restarted RM restores it; promised is 0 until it is taken.
	promisedAt time.Time
	promised   time.Duration
	// demand is what a Loom AM said it needs (loom_demand), nil until it
	// does and for a stock AM.
	demand    *fairness.Vector
	newConts  []*contRec
	newKeys   []askKey // the ask each of newConts served
	completed []*pb.ContainerStatusProto
	lastResp  *pb.AllocateResponseProto
	nodesUsed map[*nodeRec]bool
	// logAgg is what each node said of aggregating the app's logs, by
	// node key.
	logAgg map[string]pb.LogAggregationStatusProto
	live   map[rm.ContainerID]*contRec // the app's containers not yet COMPLETE
	// memSec and vcoreSec are what the app's ended containers held, in
	// MB-seconds and vcore-seconds (YARN's memorySeconds, vcoreSeconds).
	memSec, vcoreSec float64
	// byWire finds the app's containers by their YARN ids, which are
	// numbered per attempt (see wireID); the core numbers them across
	// the RM.
	byWire map[wireKey]*contRec
	// pendingRelease are containers the AM released that no node had
	// reported yet after this RM took over (a restart, a failover): when
	// their node registers they are stopped instead of taken back, as
	// YARN's scheduler keeps an attempt's pending releases. Kept for one
	// NodeManager expiry after the start, when every live node has
	// registered.
	pendingRelease map[wireKey]bool
}

// wireKey is a container's YARN id within its app: the attempt and the
// id number.
type wireKey struct {
	attempt int32
	id      int64
}

type attemptRec struct {
	n   int32
	yid *pb.ApplicationAttemptIdProto
	// lc is the attempt's lifecycle: state, registration, exit,
	// diagnostics, start, launch and finish times.
	lc *lifecycle.Attempt
	// amWire is the AM container's YARN id number, kept in the state
	// store (0: no AM container yet).
	amWire int64
	// seq numbers the attempt's containers, as YARN's AppSchedulingInfo
	// does: the AM's is 1 in every attempt.
	seq         int64
	lastSeen    time.Time
	host        string
	rpcPort     int32
	trackingURL string
	// conts are the attempt's containers, live and ended, so that a
	// report or a retirement need not scan every container of the RM.
	conts []*contRec
	// ended counts the ended task containers among conts (lifecycle.go).
	ended int
	// allocMu runs the attempt's allocate calls one at a time (master.go).
	allocMu sync.Mutex
	// nmTokenNodes are the nodes the attempt's AM holds an NMToken for.
	nmTokenNodes map[*nodeRec]bool
}

type contRec struct {
	c       rm.Container
	yid     *pb.ContainerIdProto
	app     *appRec
	attempt *attemptRec
	node    *nodeRec
	// lc is the container's lifecycle: AM or not, state, exit,
	// diagnostics, creation and finish times.
	lc *lifecycle.Container
}

type nodeRec struct {
	id       rm.NodeID
	yid      *pb.NodeIdProto
	key      string
	httpPort int32
	version  string // the NM's nm_version
	rack     string // from the topology (net.topology.*)
	part     string // its node label; "" the default partition
	capacity fairness.Vector
	// nodeUtil and contUtil are what the NM last measured of itself and
	// of its containers (nil until it says).
	nodeUtil, contUtil *pb.ResourceUtilizationProto
	state              pb.NodeStateProto
	// mail is what its heartbeats touch, under its own lock: when it
	// last heartbeated, and what goes back to it (nodemail.go).
	mail  nodeMail
	conts map[rm.ContainerID]*contRec
}

// New makes an RM from a checked config.
func New(cfg Config, log zerolog.Logger) (*RM, error) {
	pol, err := cfg.NodePolicy()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.HistoryDir, 0o1777); err != nil {
		return nil, fmt.Errorf("loom.history.dir: %w", err)
	}
	now := time.Now()
	r := &RM{cfg: cfg, log: log,
		start: now, clusterTS: now.UnixMilli(), reserved: map[int32]bool{}, apps: map[rm.AppID]*appRec{},
		nodes: map[string]*nodeRec{}, conts: map[rm.ContainerID]*contRec{}, addrs: map[string]string{},
		stop: make(chan struct{}), dueMoved: make(chan struct{}, 1), launchSlots: make(chan struct{}, max(cfg.AMLaunchers, 1)),
		timeline:     timeline{apps: map[rm.AppID][]webui.AppSample{}},
		altChanges:   []webui.AltruismChange{{UnixMs: now.UnixMilli(), P: cfg.PAltruism, Who: "config"}},
		reservations: map[string]*resvRec{}, resvIssued: map[int64]bool{}, fenced: make(chan struct{}),
	}
	r.metrics = newMetrics(r)
	if c := cfg.SchedulerClass; c != "" && !strings.HasSuffix(c, ".CapacityScheduler") && !strings.HasSuffix(c, ".FairScheduler") {
		log.Warn().Str(keySchedulerClass, c).Msg("Loom schedules with loom.scheduler.policy whatever this names; " +
			"/ws/v1/cluster/scheduler answers in the CapacityScheduler's layout, having none for this class")
	}
	var state *store.State
	if cfg.Recovery {
		if state, err = r.openStore(); err != nil {
			return nil, err
		}
	}
	r.amrm = rollingKey{what: "AMRM", secret: amrmKeySecret, nextSecret: amrmNextKeySecret, every: cfg.AMRMRoll, activation: cfg.AMExpiry * 3 / 2}
	r.nmKey = rollingKey{what: "NMToken", secret: nmTokenKeySecret, nextSecret: nmTokenNextKeySecret, every: cfg.NMTokenRoll, activation: cfg.NMExpiry * 3 / 2}
	// A retired delegation key must outlive every token signed with it.
	r.dtKey = rollingKey{what: "delegation token", secret: dtKeySecret, nextSecret: dtNextKeySecret, every: cfg.DTKeyRoll, activation: cfg.DTMaxLife}
	r.dtokens = map[int32]*dtoken{}
	r.tokenKey, err = r.masterKey(state, containerKeySecret)
	if err == nil {
		err = r.loadRollingKey(&r.amrm, state, now)
	}
	if err == nil {
		err = r.loadRollingKey(&r.nmKey, state, now)
	}
	if err == nil {
		err = r.loadRollingKey(&r.dtKey, state, now)
	}
	if err == nil && state != nil {
		err = r.loadTokens(state.Secrets)
	}
	if err != nil {
		if r.store != nil {
			r.store.Close()
		}
		return nil, err
	}
	r.tree = cfg.Tree
	r.core = rm.New(rm.Config{Policy: pol, PAltruism: cfg.PAltruism, QueuePAltruism: r.coreQueuePAltruism(cfg.QueuePAltruism),
		FirstContainer: rm.ContainerID(r.epoch << 40), Locality: &cfg.Locality, Preemption: cfg.Preemption,
		Recall: cfg.Recall, PromiseSlack: cfg.PromiseSlack, ShareGrowth: cfg.ShareGrowth})
	var secrets map[string][]byte
	if state != nil {
		secrets = state.Secrets
	}
	if err := r.startLabels(secrets); err != nil {
		if r.store != nil {
			r.store.Close()
		}
		return nil, err
	}
	if cfg.Tree != nil {
		for _, line := range cfg.Tree.Ignored {
			r.log.Warn().Str("queues", cfg.Tree.Source).Msg("not used by Loom: " + line)
		}
		r.treeFile = cfg.TreeFile
		if err := r.applyTree(cfg.Tree); err != nil {
			if r.store != nil {
				r.store.Close()
			}
			return nil, err
		}
	}
	r.life = lifecycle.New()
	if state != nil {
		if err := r.recover(state); err != nil {
			r.store.Close()
			return nil, err
		}
		if len(r.apps) > 0 {
			// As YARN's work-preserving recovery: grant nothing until the
			// NodeManagers have had time to report the containers they
			// run. Granting at once double-books nodes whose containers
			// the RM has not heard of yet (a failover under load ended
			// with 27 of 16 vcores held and nothing granted again).
			r.holdUntil = time.Now().Add(cfg.RecoverySchedulingWait)
		}
	}
	return r, nil
}

// containerKeySecret names the container-token master key in the store.
const containerKeySecret = "ContainerTokenMasterKey"

// masterKey is a token master key (the container-token or the AMRM
// one): the one the state store kept under name, so that tokens issued
// before a restart stay valid, or a new one.
func (r *RM) masterKey(state *store.State, name string) (*pb.MasterKeyProto, error) {
	if k, err := r.storedKey(state, name); k != nil || err != nil {
		return k, err
	}
	k := newMasterKey(0)
	return k, r.saveKey(name, k)
}

// storedKey is the master key the state store kept under name, nil if
// none.
func (r *RM) storedKey(state *store.State, name string) (*pb.MasterKeyProto, error) {
	if state == nil {
		return nil, nil
	}
	b, ok := state.Secrets[name]
	if !ok {
		return nil, nil
	}
	k := &pb.MasterKeyProto{}
	if err := proto.Unmarshal(b, k); err != nil || len(k.GetBytes()) == 0 {
		return nil, fmt.Errorf("the state store's %s is damaged: %v", name, err)
	}
	return k, nil
}

// newMasterKey makes a random 64-byte key whose id is not notID.
func newMasterKey(notID int32) *pb.MasterKeyProto {
	for {
		secret := make([]byte, 64)
		rand.Read(secret)
		if id := int32(binary.BigEndian.Uint32(secret) >> 1); id != notID {
			return &pb.MasterKeyProto{KeyId: proto.Int32(id), Bytes: secret}
		}
	}
}

// saveKey keeps a master key in the state store, if there is one; a nil
// key removes it.
func (r *RM) saveKey(name string, k *pb.MasterKeyProto) error {
	if r.store == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var err error
	if k == nil {
		err = r.store.RemoveSecret(ctx, name)
	} else {
		b, _ := proto.Marshal(k)
		err = r.store.PutSecret(ctx, name, b)
	}
	if err != nil {
		r.storeFailed(err)
		return fmt.Errorf("saving the %s: %w", name, err)
	}
	return nil
}

// openStore opens the state store, counts this start in its epoch and
// reads what it holds.
func (r *RM) openStore() (*store.State, error) {
	cfg := r.cfg.Store
	cfg.Log = r.log
	st, err := store.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("yarn.resourcemanager.recovery.enabled: the state store: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r.epoch, err = st.BumpEpoch(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("the state store's epoch: %w", err)
	}
	state, err := st.Load(ctx)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("reading the state store: %w", err)
	}
	r.store = st
	return state, nil
}

// Start listens on the client, scheduler, tracker and web addresses and
// starts the liveness monitors and the timeline.
func (r *RM) Start() error {
	logger := r.log
	applyMemory(r.cfg, logger)
	applyProcs(r.cfg, logger)
	// Clients' and AMs' calls give way to node heartbeats (callnice.go).
	r.calls = r.startCallPool()
	roles := []struct {
		role, addr string
		p          rpc.Protocol
	}{
		{"client", r.cfg.ClientAddr, r.calls.onPool(rpc.ApplicationClientService(clientService{r}))},
		// An AM's allocate calls come one at a time on its own connection
		// (YARN's AllocateResponseLock serializes them anyway), so they
		// run on the connection's reader rather than a handler goroutine:
		// at 10,000 NMs and 2,000 AMs that cut the heartbeat p99 by a
		// quarter (docs/results/load.md).
		{"scheduler", r.cfg.SchedulerAddr, r.calls.onPool(rpc.ApplicationMasterService(masterService{r}).WithInline("allocate"))},
		{"tracker", r.cfg.TrackerAddr, r.trackerProtocol()},
	}
	for _, ro := range roles {
		ln, err := net.Listen("tcp", ro.addr)
		if err != nil {
			r.Stop(context.Background())
			return fmt.Errorf("%s address %s: %w", ro.role, ro.addr, err)
		}
		opts := r.cfg.RPC
		opts.ErrorClass, opts.Logger = rpc.ClassYarnException, &logger
		opts.Observe = r.metrics.observeRPC
		if ro.role == "scheduler" {
			opts.Secrets = amrmSecrets{r}
		}
		if ro.role == "client" {
			opts.Secrets = dtSecrets{r} // delegation tokens (dtoken.go)
		}
		if ro.role == "client" || ro.role == "tracker" {
			// Users and NodeManagers: Kerberos where it is on (nodes may
			// also keep their node tokens). AMs authenticate with their
			// AMRM tokens, as in YARN.
			opts.Kerberos = r.cfg.Kerberos
		}
		if ro.role == "tracker" {
			// Node tokens, with a cluster secret (nodeauth.go).
			opts.Secrets = r.trackerSecrets()
		}
		srv := rpc.NewServer(opts)
		srv.Register(ro.p)
		r.servers = append(r.servers, srv)
		r.addrs[ro.role] = ln.Addr().String()
		go srv.Serve(ln)
		r.log.Info().Str("role", ro.role).Str("addr", ln.Addr().String()).Msg("listening")
	}
	ln, err := net.Listen("tcp", r.cfg.WebAddr)
	if err != nil {
		r.Stop(context.Background())
		return fmt.Errorf("web address %s (yarn.resourcemanager.webapp.address): %w", r.cfg.WebAddr, err)
	}
	r.addrs["web"] = ln.Addr().String()
	web := webui.New(webBackend{clientService{r}}, webui.Config{AdminSecret: r.cfg.AdminSecret, WhatIf: r.cfg.WhatIf,
		Metrics: promhttp.HandlerFor(r.metrics.reg, promhttp.HandlerOpts{}), Log: r.log,
		SchedulerLayout: r.cfg.SchedulerLayout, SchedulerConf: r.schedulerConf, Logs: r.cfg.Logs,
		HATransition: r.cfg.HATransition})
	r.web = serveWeb(ln, r.cfg.WebAuth.wrap(web, r.log), r.cfg.Web, r.log)
	if r.cfg.WebAuth.kerberos() {
		r.log.Info().Str("principal", r.cfg.WebAuth.principal+"@"+r.cfg.WebAuth.realm).Msg("the web port authenticates callers with Kerberos (SPNEGO)")
	}
	r.log.Info().Str("role", "web").Str("addr", ln.Addr().String()).Msg("listening")
	if r.cfg.AsyncInterval > 0 {
		r.wg.Add(1)
		go r.scheduleLoop()
	}
	r.wg.Add(4)
	go r.dueLoop()
	go r.monitor()
	go r.sampler()
	go func() {
		defer r.wg.Done()
		r.watchQueueFile(r.stop, r.cfg.TreeReload)
	}()
	return nil
}

// Addr returns the address a role (client, scheduler, tracker, web)
// listens on.
func (r *RM) Addr(role string) string { return r.addrs[role] }

// Stop stops serving, answering calls in flight first.
func (r *RM) Stop(ctx context.Context) error {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	var errs []error
	if r.web != nil {
		errs = append(errs, r.web.Shutdown(ctx))
	}
	for _, s := range r.servers {
		errs = append(errs, s.Shutdown(ctx))
	}
	if r.calls != nil {
		r.calls.close()
	}
	r.wg.Wait()
	r.launches.Wait()
	if r.store != nil {
		errs = append(errs, r.store.Close())
	}
	return errors.Join(errs...)
}

// now is the core's clock: time since the RM started.
func (r *RM) now() time.Duration { return time.Since(r.start) }

// step feeds the core and applies what it decided. Callers hold mu.
func (r *RM) step(ev rm.Event) error {
	acts, err := r.core.Step(r.now(), ev)
	for _, a := range acts {
		switch a := a.(type) {
		case *rm.Allocated:
			r.allocated(a.Container)
		case rm.Lost:
			r.endContainer(a.Container.ID, ExitAborted, a.Reason, false)
		case rm.PreemptionAsked:
			r.preemptionAsked(a)
		case rm.Preempted:
			r.preempted(a)
		case rm.Promised:
			r.promiseTaken(a)
		}
	}
	return err
}

// promiseTaken keeps an app's first promise, the core's, in its record.
// Callers hold mu.
func (r *RM) promiseTaken(p rm.Promised) {
	a := r.apps[p.App]
	if a == nil || a.done() {
		return
	}
	a.promisedAt, a.promised = r.start.Add(p.At), p.Span
	r.persistApp(a)
}

// monitor expires silent nodes and AMs.
func (r *RM) monitor() {
	defer r.wg.Done()
	tick := time.NewTicker(min(time.Second, r.cfg.NMExpiry/4, r.cfg.AMExpiry/4))
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		r.mu.Lock()
		now := time.Now()
		for _, n := range r.nodeByID {
			if n == nil || n.state != pb.NodeStateProto_NS_RUNNING {
				continue
			}
			if seen := n.mail.seen(); now.Sub(seen) > r.cfg.NMExpiry {
				r.log.Warn().Str("node", n.key).Dur("silent", now.Sub(seen)).Msg("node LOST")
				r.nodeLost(n)
			}
		}
		r.expireUnreportedAMs(now)
		for _, a := range r.appOrder {
			at := a.current()
			if at != nil && (at.lc.Registered || at.lc.Recovered && !at.lc.AwaitingAM || a.unmanaged()) && !a.done() && !at.lc.State.Done() &&
				now.Sub(at.lastSeen) > r.cfg.AMExpiry {
				r.lifeStepLogged(lifecycle.AMLost{App: lifecycle.AppID(a.id), Exit: ExitInvalid, Diagnostics: fmt.Sprintf("ApplicationMaster for attempt %s timed out after %v without an allocate call",
					rpc.AttemptIDString(at.yid), r.cfg.AMExpiry)})
			}
		}
		r.killExpiredApps(now)
		r.expireReservations(now)
		r.mu.Unlock()
		r.rollKeys(now)
	}
}

// setNodeState moves a node to state s, keeping the count of live ones.
// Callers hold mu.
func (r *RM) setNodeState(n *nodeRec, s pb.NodeStateProto) {
	was, is := n.state == pb.NodeStateProto_NS_RUNNING, s == pb.NodeStateProto_NS_RUNNING
	switch {
	case is && !was:
		r.liveNodes++
	case was && !is:
		r.liveNodes--
	}
	n.state = s
}

func (r *RM) nodeLost(n *nodeRec) {
	r.setNodeState(n, pb.NodeStateProto_NS_LOST)
	n.mail.setLive(false, "", time.Time{})
	if err := r.step(rm.NodeLost{Node: n.id}); err != nil {
		r.log.Error().Err(err).Str("node", n.key).Msg("core refused a lost node")
	}
	// The core reported the node's containers Lost with their reasons;
	// make sure every record on the node ended.
	for id := range n.conts {
		r.endContainer(id, ExitAborted, lostNodeDiagnostic, false)
	}
}

func (a *appRec) current() *attemptRec {
	if len(a.attempts) == 0 {
		return nil
	}
	return a.attempts[len(a.attempts)-1]
}

func (a *appRec) done() bool { return a.lc.State.Done() }

// allocated records a container the core granted; the lifecycle core
// says whether it is the attempt's AM container, which the RM launches,
// or one the AM gets on its next allocate.
func (r *RM) allocated(c rm.Container) {
	a := r.apps[c.App]
	n := r.nodeByID[c.Node]
	at := a.current()
	at.seq++
	cr := &contRec{c: c, app: a, attempt: at, node: n,
		yid: &pb.ContainerIdProto{AppId: a.yid, AppAttemptId: at.yid, Id: proto.Int64(r.epoch<<40 | at.seq)}}
	r.conts[c.ID] = cr
	n.conts[c.ID] = cr
	at.conts = append(at.conts, cr)
	a.track(cr)
	a.nodesUsed[n] = true
	r.metrics.allocated(c.Kind, c.Placement)
	name := rpc.ContainerIDString(cr.yid)
	if err := r.lifeStep(lifecycle.Granted{Container: lifecycle.ContainerID(c.ID), App: lifecycle.AppID(a.id), Name: name}); err != nil {
		// The core granted to an app the lifecycle has ended: give it back.
		r.log.Error().Err(err).Str("container", name).Msg("a grant the lifecycle refused")
		delete(r.conts, c.ID)
		delete(n.conts, c.ID)
		delete(a.live, c.ID)
		at.conts = at.conts[:len(at.conts)-1]
		if err := r.step(rm.ContainerDone{Container: c.ID}); err != nil {
			r.log.Error().Err(err).Msg("core refused the refused grant back")
		}
		return
	}
	r.countPlacement(cr)
	r.recordGrant(cr, name)
}

func (r *RM) containerProto(cr *contRec) *pb.ContainerProto {
	ct := r.unsignedContainerProto(cr)
	ct.ContainerToken = r.containerToken(cr)
	return ct
}

// unsignedContainerProto is containerProto without its token. Callers
// hold mu.
func (r *RM) unsignedContainerProto(cr *contRec) *pb.ContainerProto {
	return &pb.ContainerProto{Id: cr.yid, NodeId: cr.node.yid,
		NodeHttpAddress: proto.String(fmt.Sprintf("%s:%d", cr.node.yid.GetHost(), cr.node.httpPort)),
		Resource:        rpc.ResourceFromVector(cr.c.Resource), Priority: &pb.PriorityProto{Priority: proto.Int32(int32(cr.c.Priority))},
		ExecutionType: pb.ExecutionTypeProto_GUARANTEED.Enum(),
		LoomAskKind:   rpc.AskKindProto(cr.c.Kind == altruism.Altruistic).Enum()}
}

// pushAsks sends the app's asks and demand to the core.
func (r *RM) pushAsks(a *appRec) {
	asks := make([]rm.Ask, 0, len(a.asks))
	for k, n := range a.asks {
		if n > 0 {
			asks = append(asks, rm.Ask{Priority: k.priority, Demand: k.demand, Kind: k.kind, Count: n, Locality: a.locality(k), Label: k.label})
		}
	}
	sortAsks(asks)
	// The same adapter as the simulator's: a Loom AM's demand as it sent
	// it, a stock AM's estimated from what it holds and asks for.
	usage, _ := r.core.Usage(a.id)
	app := adapter.App{ID: a.id, Usage: usage}
	if at := a.current(); at != nil {
		if cr, ok := a.live[at.amID()]; ok && cr.lc.IsAM {
			app.AMContainer = cr.c.Resource
		}
	}
	ev, err := adapter.Request(app, adapter.Message{Asks: asks, Demand: a.demand, RemainingWork: a.work, CriticalTime: a.critical})
	if err == nil {
		err = r.step(ev)
	}
	if err != nil {
		r.log.Error().Err(err).Str("app", rpc.AppIDString(a.yid)).Msg("core refused asks")
	}
}

// forgetCompleted drops the oldest finished apps beyond
// yarn.resourcemanager.max-completed-applications, with their container
// records, so a long-running RM does not grow without bound.
func (r *RM) forgetCompleted() {
	done := 0
	for _, a := range r.appOrder {
		if a.done() {
			done++
		}
	}
	if done <= r.cfg.MaxCompleted {
		return
	}
	keep := r.appOrder[:0]
	for _, a := range r.appOrder {
		if a.done() && done > r.cfg.MaxCompleted {
			done--
			delete(r.apps, a.id)
			delete(r.timeline.apps, a.id)
			r.lifeStepLogged(lifecycle.Forget{App: lifecycle.AppID(a.id)})
			r.unpersistApp(a)
			for _, at := range a.attempts {
				for _, cr := range at.conts {
					delete(r.conts, cr.c.ID)
					delete(cr.node.conts, cr.c.ID)
				}
			}
			continue
		}
		keep = append(keep, a)
	}
	clear(r.appOrder[len(keep):])
	r.appOrder = keep
}

// advertised turns a listen address into one others can dial.
func advertised(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, port)
}

// track indexes a live container under its app, by its core id and by
// its YARN id.
func (a *appRec) track(cr *contRec) {
	if a.live == nil {
		a.live = map[rm.ContainerID]*contRec{}
	}
	a.live[cr.c.ID] = cr
	if a.byWire == nil {
		a.byWire = map[wireKey]*contRec{}
	}
	a.byWire[wireKey{cr.yid.GetAppAttemptId().GetAttemptId(), cr.yid.GetId()}] = cr
}

// unmanaged: the app's AM runs outside the cluster (unmanaged_am); the RM
// launches nothing for it.
func (a *appRec) unmanaged() bool { return a.ctx.GetUnmanagedAm() }

// keepsContainers: the app asked YARN to keep its containers running when
// an attempt fails (keep_containers_across_application_attempts); the
// next attempt's AM inherits them.
func (a *appRec) keepsContainers() bool {
	return a.ctx.GetKeepContainersAcrossApplicationAttempts()
}

// contOf finds a container by its YARN id. An id that names no attempt
// (Loom's AM library sends just the number when it releases) is taken
// as one of the attempt at, when given. Callers hold mu.
func (r *RM) contOf(cid *pb.ContainerIdProto, at *attemptRec) *contRec {
	attempt := cid.GetAppAttemptId().GetAttemptId()
	a := (*appRec)(nil)
	if at != nil && cid.GetAppAttemptId() == nil {
		a, attempt = r.apps[rm.AppID(at.yid.GetApplicationId().GetId())], at.n
	} else if app := rpc.AppIDOf(cid); app != nil {
		a = r.apps[rm.AppID(app.GetId())]
		if a != nil && a.yid.GetClusterTimestamp() != app.GetClusterTimestamp() {
			a = nil
		}
	}
	if a == nil {
		return nil
	}
	return a.byWire[wireKey{attempt, cid.GetId()}]
}

// storeFailed notes a state store write that failed: one fenced out by
// another RM's takeover means this RM is no longer the active one.
func (r *RM) storeFailed(err error) {
	if errors.Is(err, store.ErrFenced) {
		r.fencedOnce.Do(func() {
			r.log.Error().Err(err).Msg("fenced: another ResourceManager is active; this one stops")
			close(r.fenced)
		})
	}
}

// Fenced is closed when another RM has taken over the state store.
func (r *RM) Fenced() <-chan struct{} { return r.fenced }
