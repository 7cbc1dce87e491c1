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
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/daemon/rm/store"
	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rm/adapter"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// YARN's exit statuses for containers the RM ends (ContainerExitStatus).
const (
	ExitSuccess        = 0
	ExitInvalid        = -1000
	ExitAborted        = -100
	ExitDisksFailed    = -101
	ExitPreempted      = -102
	ExitKilledByAM     = -105
	ExitKilledByRM     = -106
	ExitKilledAppDone  = -107
	amPriority         = 0
	defaultAppType     = "YARN"
	lostNodeDiagnostic = "Container released on a *lost* node"
)

// RM is the ResourceManager daemon.
type RM struct {
	cfg Config
	log zerolog.Logger

	mu        sync.Mutex
	core      *rm.Core
	start     time.Time
	clusterTS int64
	nextApp   int32
	reserved  map[int32]bool // ids handed out by getNewApplication, not yet submitted
	apps      map[rm.AppID]*appRec
	appOrder  []*appRec
	nodes     map[string]*nodeRec
	nodeByID  []*nodeRec
	conts     map[rm.ContainerID]*contRec

	servers  []*rpc.Server
	addrs    map[string]string // listener addresses by role
	stop     chan struct{}
	wg       sync.WaitGroup
	launches sync.WaitGroup
	web      *http.Server

	// store keeps apps and attempts across restarts (nil: recovery is
	// off); epoch counts the RM's starts on it.
	store store.Store
	epoch int64
	// tokenKey signs container tokens; NMs get it when they register.
	tokenKey *pb.MasterKeyProto
	// amrm signs AMRM tokens (see amrm.go); nmKey signs NMTokens (see
	// nmtoken.go).
	amrm, nmKey rollingKey

	metrics    *metrics
	timeline   timeline
	altChanges []webui.AltruismChange
}

type askKey struct {
	priority int
	demand   fairness.Vector
	kind     altruism.AskKind
}

type appRec struct {
	id          rm.AppID
	yid         *pb.ApplicationIdProto
	ctx         *pb.ApplicationSubmissionContextProto
	user, queue string
	state       pb.YarnApplicationStateProto
	final       pb.FinalApplicationStatusProto
	diagnostics string
	submitted   time.Time
	finished    time.Time
	progress    float32
	amResource  fairness.Vector
	attempts    []*attemptRec

	asks     map[askKey]int
	work     float64
	critical time.Duration
	// demand is what a Loom AM said it needs (loom_demand), nil until it
	// does and for a stock AM.
	demand    *fairness.Vector
	newConts  []*contRec
	newKeys   []askKey // the ask each of newConts served
	completed []*pb.ContainerStatusProto
	lastResp  *pb.AllocateResponseProto
	nodesUsed map[*nodeRec]bool
	live      map[rm.ContainerID]*contRec // the app's containers not yet COMPLETE
	// memSec and vcoreSec are what the app's ended containers held, in
	// MB-seconds and vcore-seconds (YARN's memorySeconds, vcoreSeconds).
	memSec, vcoreSec float64
	// byWire finds the app's containers by their YARN ids, which are
	// numbered per attempt (see wireID); the core numbers them across
	// the RM.
	byWire map[wireKey]*contRec
}

// wireKey is a container's YARN id within its app: the attempt and the
// id number.
type wireKey struct {
	attempt int32
	id      int64
}

type attemptRec struct {
	n     int32
	yid   *pb.ApplicationAttemptIdProto
	state pb.YarnApplicationAttemptStateProto
	// amContainer is the AM container's core id; amWire its YARN id
	// number, kept in the state store (0: no AM container yet).
	amContainer rm.ContainerID
	amWire      int64
	// seq numbers the attempt's containers, as YARN's AppSchedulingInfo
	// does: the AM's is 1 in every attempt.
	seq         int64
	registered  bool
	lastSeen    time.Time
	host        string
	rpcPort     int32
	trackingURL string
	diagnostics string
	started     time.Time
	// recovered: read back from the state store after a restart; its AM
	// must register again. awaitingAM: no node has reported its AM
	// container yet.
	recovered, awaitingAM bool
	// conts are the attempt's containers, live and ended, so that a
	// report or a retirement need not scan every container of the RM.
	conts []*contRec
	// exit is the AM container's exit status when the attempt failed
	// (see countsAsFailure); launched is when its AM started, finished
	// when it ended.
	exit               int32
	launched, finished time.Time
	// nmTokenNodes are the nodes the attempt's AM holds an NMToken for.
	nmTokenNodes map[*nodeRec]bool
}

type contRec struct {
	c        rm.Container
	yid      *pb.ContainerIdProto
	app      *appRec
	attempt  *attemptRec
	node     *nodeRec
	isAM     bool
	state    pb.ContainerStateProto
	exit     int32
	diag     string
	created  time.Time
	finished time.Time
}

type nodeRec struct {
	id        rm.NodeID
	yid       *pb.NodeIdProto
	key       string
	httpPort  int32
	capacity  fairness.Vector
	state     pb.NodeStateProto
	lastSeen  time.Time
	respID    int32
	cleanup   []*pb.ContainerIdProto
	appsClean []*pb.ApplicationIdProto
	conts     map[rm.ContainerID]*contRec
	// session is the RPC client that registered the node (callSession):
	// without a cluster secret, the only one that may heartbeat and
	// unregister for it.
	session string
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
		stop:       make(chan struct{}),
		timeline:   timeline{apps: map[rm.AppID][]webui.AppSample{}},
		altChanges: []webui.AltruismChange{{UnixMs: now.UnixMilli(), P: cfg.PAltruism, Who: "config"}}}
	r.metrics = newMetrics(r)
	var state *store.State
	if cfg.Recovery {
		if state, err = r.openStore(); err != nil {
			return nil, err
		}
	}
	r.amrm = rollingKey{what: "AMRM", secret: amrmKeySecret, nextSecret: amrmNextKeySecret, every: cfg.AMRMRoll, activation: cfg.AMExpiry * 3 / 2}
	r.nmKey = rollingKey{what: "NMToken", secret: nmTokenKeySecret, nextSecret: nmTokenNextKeySecret, every: cfg.NMTokenRoll, activation: cfg.NMExpiry * 3 / 2}
	r.tokenKey, err = r.masterKey(state, containerKeySecret)
	if err == nil {
		err = r.loadRollingKey(&r.amrm, state, now)
	}
	if err == nil {
		err = r.loadRollingKey(&r.nmKey, state, now)
	}
	if err != nil {
		if r.store != nil {
			r.store.Close()
		}
		return nil, err
	}
	r.core = rm.New(rm.Config{Policy: pol, PAltruism: cfg.PAltruism, FirstContainer: rm.ContainerID(r.epoch << 40)})
	if state != nil {
		if err := r.recover(state); err != nil {
			r.store.Close()
			return nil, err
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
	roles := []struct {
		role, addr string
		p          rpc.Protocol
	}{
		{"client", r.cfg.ClientAddr, rpc.ApplicationClientService(clientService{r})},
		{"scheduler", r.cfg.SchedulerAddr, rpc.ApplicationMasterService(masterService{r})},
		{"tracker", r.cfg.TrackerAddr, rpc.ResourceTrackerService(trackerService{r})},
	}
	for _, ro := range roles {
		ln, err := net.Listen("tcp", ro.addr)
		if err != nil {
			r.Stop(context.Background())
			return fmt.Errorf("%s address %s: %w", ro.role, ro.addr, err)
		}
		opts := rpc.ServerOptions{ErrorClass: rpc.ClassYarnException, Logger: &logger}
		if ro.role == "scheduler" {
			opts.Secrets = amrmSecrets{r}
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
	r.web = serveWeb(ln, webui.New(webBackend{clientService{r}}, webui.Config{AdminSecret: r.cfg.AdminSecret,
		Metrics: promhttp.HandlerFor(r.metrics.reg, promhttp.HandlerOpts{}), Log: r.log}), r.log)
	r.log.Info().Str("role", "web").Str("addr", ln.Addr().String()).Msg("listening")
	r.wg.Add(2)
	go r.monitor()
	go r.sampler()
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
		case rm.Allocated:
			r.allocated(a.Container)
		case rm.Lost:
			r.containerEnded(a.Container.ID, ExitAborted, a.Reason, false)
		}
	}
	return err
}

// SetAltruism changes P(Altruism) from the next allocate on.
func (r *RM) SetAltruism(p float64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.step(rm.SetAltruism{P: p})
}

// SetLeftoverOrder changes the leftover order from the next heartbeat on.
func (r *RM) SetLeftoverOrder(o altruism.LeftoverOrder) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg := r.cfg
	cfg.LeftoverOrder = o
	pol, err := cfg.NodePolicy()
	if err != nil {
		return err
	}
	if err := r.step(rm.SetPolicy{Policy: pol}); err != nil {
		return err
	}
	r.cfg.LeftoverOrder = o
	return nil
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
			if n != nil && n.state == pb.NodeStateProto_NS_RUNNING && now.Sub(n.lastSeen) > r.cfg.NMExpiry {
				r.log.Warn().Str("node", n.key).Dur("silent", now.Sub(n.lastSeen)).Msg("node LOST")
				r.nodeLost(n)
			}
		}
		r.expireUnreportedAMs(now)
		for _, a := range r.appOrder {
			at := a.current()
			if at != nil && (at.registered || at.recovered && !at.awaitingAM || a.unmanaged()) && !a.done() && now.Sub(at.lastSeen) > r.cfg.AMExpiry {
				r.attemptFailed(a, ExitInvalid, fmt.Sprintf("ApplicationMaster for attempt %s timed out after %v without an allocate call",
					rpc.AttemptIDString(at.yid), r.cfg.AMExpiry))
			}
		}
		r.mu.Unlock()
		r.rollKeys(now)
	}
}

func (r *RM) nodeLost(n *nodeRec) {
	n.state = pb.NodeStateProto_NS_LOST
	if err := r.step(rm.NodeLost{Node: n.id}); err != nil {
		r.log.Error().Err(err).Str("node", n.key).Msg("core refused a lost node")
	}
	// The core reported the node's containers Lost with their reasons;
	// make sure every record on the node ended.
	for id := range n.conts {
		r.containerEnded(id, ExitAborted, lostNodeDiagnostic, false)
	}
}

func (a *appRec) current() *attemptRec {
	if len(a.attempts) == 0 {
		return nil
	}
	return a.attempts[len(a.attempts)-1]
}

func (a *appRec) done() bool {
	switch a.state {
	case pb.YarnApplicationStateProto_FINISHED, pb.YarnApplicationStateProto_FAILED, pb.YarnApplicationStateProto_KILLED:
		return true
	}
	return false
}

// allocated records a container the core granted: the AM's own, which
// the RM launches, or one the AM will get on its next allocate.
func (r *RM) allocated(c rm.Container) {
	a := r.apps[c.App]
	n := r.nodeByID[c.Node]
	at := a.current()
	at.seq++
	cr := &contRec{c: c, app: a, attempt: at, node: n, state: pb.ContainerStateProto_C_NEW, exit: ExitInvalid,
		created: time.Now(), yid: &pb.ContainerIdProto{AppId: a.yid, AppAttemptId: at.yid, Id: proto.Int64(r.epoch<<40 | at.seq)}}
	r.conts[c.ID] = cr
	n.conts[c.ID] = cr
	at.conts = append(at.conts, cr)
	a.track(cr)
	a.nodesUsed[n] = true
	r.metrics.allocated(c.Kind)
	if at.amWire == 0 && !at.registered && !a.unmanaged() {
		cr.isAM = true
		at.amContainer, at.amWire = c.ID, cr.yid.GetId()
		at.state = pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_ALLOCATED
		r.persistAttempt(a, at)
		a.asks = map[askKey]int{}
		r.pushAsks(a)
		r.launches.Add(1)
		go r.launchAM(cr, r.launchRequest(cr))
		return
	}
	key := askKey{priority: c.Priority, demand: c.Resource, kind: c.Kind}
	a.newConts = append(a.newConts, cr)
	a.newKeys = append(a.newKeys, key)
	// The ask is outstanding for one container fewer, as in YARN's
	// AppSchedulingInfo: an AM that asks for the same count again (a
	// failed task's retry) is asking for more, not repeating itself.
	if a.asks[key] > 0 {
		a.asks[key]--
	}
}

func (r *RM) containerProto(cr *contRec) *pb.ContainerProto {
	return &pb.ContainerProto{Id: cr.yid, NodeId: cr.node.yid,
		NodeHttpAddress: proto.String(fmt.Sprintf("%s:%d", cr.node.yid.GetHost(), cr.node.httpPort)),
		Resource:        rpc.ResourceFromVector(cr.c.Resource), Priority: &pb.PriorityProto{Priority: proto.Int32(int32(cr.c.Priority))},
		ContainerToken: r.containerToken(cr), ExecutionType: pb.ExecutionTypeProto_GUARANTEED.Enum(),
		LoomAskKind: rpc.AskKindProto(cr.c.Kind == altruism.Altruistic).Enum()}
}

// containerEnded closes a container record: the core frees it (unless it
// already did), the AM hears of it, the node is told to clean it up, and
// an AM container's end ends its attempt.
func (r *RM) containerEnded(id rm.ContainerID, exit int32, diag string, coreNeedsDone bool) {
	cr, ok := r.conts[id]
	if !ok || cr.state == pb.ContainerStateProto_C_COMPLETE {
		return
	}
	delete(cr.app.live, id)
	if coreNeedsDone {
		if _, live := r.core.Container(id); live {
			if err := r.step(rm.ContainerDone{Container: id}); err != nil {
				r.log.Error().Err(err).Int64("container", int64(id)).Msg("core refused a finished container")
			}
		}
	}
	cr.state, cr.exit, cr.diag, cr.finished = pb.ContainerStateProto_C_COMPLETE, exit, diag, time.Now()
	delete(cr.node.conts, id)
	a := cr.app
	held := cr.finished.Sub(cr.created).Seconds()
	a.memSec += cr.c.Resource[fairness.Memory] * held
	a.vcoreSec += cr.c.Resource[fairness.VCores] * held
	if cr.isAM {
		if !a.done() && cr.attempt == a.current() {
			r.amContainerEnded(a, cr)
		}
		return
	}
	if !a.done() && (cr.attempt == a.current() || a.keepsContainers()) {
		a.completed = append(a.completed, &pb.ContainerStatusProto{ContainerId: cr.yid,
			State: pb.ContainerStateProto_C_COMPLETE.Enum(), Diagnostics: proto.String(diag), ExitStatus: proto.Int32(exit)})
	}
}

// amContainerEnded: an AM that exits 0 without ever registering ran the
// whole app itself (a plain command as an app), so the app FINISHED with
// SUCCEEDED; otherwise the attempt failed.
func (r *RM) amContainerEnded(a *appRec, cr *contRec) {
	at := cr.attempt
	if cr.exit == ExitSuccess && !at.registered {
		at.state = pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FINISHED
		r.finishApp(a, pb.YarnApplicationStateProto_FINISHED, pb.FinalApplicationStatusProto_APP_SUCCEEDED,
			"the AM container exited 0 without registering: the command was the whole application")
		return
	}
	if at.state == pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FINISHED || at.state == pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED {
		return // the attempt has ended already; its AM container ends with it
	}
	diag := fmt.Sprintf("AM container %s exited with exitCode: %d", rpc.ContainerIDString(cr.yid), cr.exit)
	if cr.diag != "" {
		diag += ". " + cr.diag
	}
	r.attemptFailed(a, cr.exit, diag)
}

// attemptFailed ends the current attempt, whose AM container ended with
// exit (ExitInvalid when the AM went silent), kills its containers, and
// starts another attempt unless the app has failed as often as it may.
func (r *RM) attemptFailed(a *appRec, exit int32, diag string) {
	at := a.current()
	at.state = pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED
	at.diagnostics, at.exit, at.finished = diag, exit, time.Now()
	r.persistAttempt(a, at)
	r.log.Warn().Str("attempt", rpc.AttemptIDString(at.yid)).Int32("exit", exit).Bool("counts", at.countsAsFailure()).
		Str("why", diag).Msg("attempt failed")
	// The AM container ends with its attempt (when the AM went silent it
	// is still running), whether or not the app keeps the others.
	if cr, ok := a.live[at.amContainer]; ok && cr.isAM {
		cr.node.cleanup = append(cr.node.cleanup, cr.yid)
		r.containerEnded(cr.c.ID, ExitKilledByRM, "AM container of a failed attempt", true)
	}
	if !a.keepsContainers() {
		r.killAttemptContainers(a, at, ExitAborted, "Container of a failed attempt")
	}
	if max, failed := r.maxAttempts(a), r.failedAttempts(a, at.finished); failed >= max {
		why := "the maximum, yarn.resourcemanager.am.max-attempts"
		if max < r.cfg.MaxAttempts {
			why = "the app's max_app_attempts"
		}
		r.finishApp(a, pb.YarnApplicationStateProto_FAILED, pb.FinalApplicationStatusProto_APP_FAILED,
			fmt.Sprintf("Application %s failed %d times (%s) due to %s",
				rpc.AppIDString(a.yid), failed, why, diag))
		return
	}
	r.newAttempt(a)
}

// countsAsFailure says whether a failed attempt counts against the app's
// max attempts. As in YARN (RMAppAttemptImpl), an AM that ended through
// no fault of its own does not: its node was lost (-100), its disks
// failed (-101), it was preempted (-102) or the RM killed it (-106).
func (at *attemptRec) countsAsFailure() bool {
	if at.state != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED {
		return false
	}
	switch at.exit {
	case ExitAborted, ExitDisksFailed, ExitPreempted, ExitKilledByRM:
		return false
	}
	return true
}

// failedAttempts counts the app's failed attempts that count against its
// max attempts: with attempt_failures_validity_interval (ms) set, only
// those that ended within that long of now, as YARN's sliding window.
func (r *RM) failedAttempts(a *appRec, now time.Time) int {
	window := time.Duration(a.ctx.GetAttemptFailuresValidityInterval()) * time.Millisecond
	n := 0
	for _, at := range a.attempts {
		if at.countsAsFailure() && (window <= 0 || now.Sub(at.finished) <= window) {
			n++
		}
	}
	return n
}

func (r *RM) killAttemptContainers(a *appRec, at *attemptRec, exit int32, diag string) {
	for id, cr := range a.live {
		if cr.attempt == at && cr.state != pb.ContainerStateProto_C_COMPLETE {
			cr.node.cleanup = append(cr.node.cleanup, cr.yid)
			r.containerEnded(id, exit, diag, true)
		}
	}
}

func (r *RM) newAttempt(a *appRec) {
	n := int32(len(a.attempts) + 1)
	at := &attemptRec{n: n, yid: &pb.ApplicationAttemptIdProto{ApplicationId: a.yid, AttemptId: proto.Int32(n)},
		state: pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_SCHEDULED, started: time.Now()}
	a.attempts = append(a.attempts, at)
	a.lastResp = nil
	a.newConts, a.newKeys, a.completed = nil, nil, nil
	a.demand, a.work, a.critical = nil, 0, 0
	a.asks = map[askKey]int{{priority: amPriority, demand: a.amResource, kind: altruism.Default}: 1}
	a.state = pb.YarnApplicationStateProto_ACCEPTED
	if a.unmanaged() {
		// Nothing to launch: the attempt waits for its AM, which its
		// owner starts with the AMRM token from the app's report, and
		// which must register within the AM expiry.
		a.asks = map[askKey]int{}
		at.state, at.lastSeen, at.launched = pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_LAUNCHED, time.Now(), time.Now()
	}
	r.pushAsks(a)
	r.persistAttempt(a, at)
}

// pushAsks sends the app's asks and demand to the core.
func (r *RM) pushAsks(a *appRec) {
	asks := make([]rm.Ask, 0, len(a.asks))
	for k, n := range a.asks {
		if n > 0 {
			asks = append(asks, rm.Ask{Priority: k.priority, Demand: k.demand, Kind: k.kind, Count: n})
		}
	}
	sortAsks(asks)
	// The same adapter as the simulator's: a Loom AM's demand as it sent
	// it, a stock AM's estimated from what it holds and asks for.
	usage, _ := r.core.Usage(a.id)
	app := adapter.App{ID: a.id, Usage: usage}
	if at := a.current(); at != nil {
		if cr, ok := a.live[at.amContainer]; ok && cr.isAM {
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

// finishApp moves an app to a final state and frees everything it holds.
func (r *RM) finishApp(a *appRec, state pb.YarnApplicationStateProto, final pb.FinalApplicationStatusProto, diag string) {
	if a.done() {
		return
	}
	a.state, a.final, a.finished = state, final, time.Now()
	if diag != "" {
		a.diagnostics = diag
	}
	if at := a.current(); at != nil && at.finished.IsZero() {
		at.finished = a.finished
	}
	if at := a.current(); at != nil && at.state != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED {
		switch state {
		case pb.YarnApplicationStateProto_KILLED:
			at.state = pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_KILLED
		case pb.YarnApplicationStateProto_FAILED:
			at.state = pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED
		default:
			at.state = pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FINISHED
		}
	}
	for id, cr := range a.live {
		if cr.state != pb.ContainerStateProto_C_COMPLETE {
			cr.node.cleanup = append(cr.node.cleanup, cr.yid)
			r.containerEnded(id, ExitKilledAppDone, "Container of a completed application", false)
		}
	}
	for n := range a.nodesUsed {
		n.appsClean = append(n.appsClean, a.yid)
	}
	if err := r.step(rm.AppRemoved{App: a.id}); err != nil {
		r.log.Error().Err(err).Str("app", rpc.AppIDString(a.yid)).Msg("core refused app removal")
	}
	r.persistApp(a)
	if at := a.current(); at != nil {
		r.persistAttempt(a, at)
	}
	r.forgetCompleted()
	r.log.Info().Str("app", rpc.AppIDString(a.yid)).Str("state", state.String()).Str("final", final.String()).Msg("application done")
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
