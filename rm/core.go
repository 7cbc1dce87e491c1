// Package rm is the ResourceManager's core: a deterministic state machine
// that holds nodes, applications and their grouped asks, computes DRF
// shares, and decides which containers each node runs. Events go in
// through Step with the time as an argument; decisions come out as
// actions. It starts no goroutines and does no I/O: the RM server
// (daemon/rm/server) feeds it from RPC with a real clock, the simulator (tool/sim)
// from a trace with a virtual one, so both run the same policy code.
package rm

import (
	"cmp"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/fairness"
)

// AppID, NodeID and ContainerID are the core's handles. The server maps
// YARN's identifiers onto them.
type (
	AppID       int32
	NodeID      int32
	ContainerID int64
)

// Ask is a group of identical asks, the way YARN groups ResourceRequests:
// one entry per (priority, capability, kind) with a count.
type Ask struct {
	Priority int
	Demand   fairness.Vector
	Kind     altruism.AskKind
	Count    int
	// Locality, when set, names the hosts and racks the containers would
	// rather run on (locality.go); the core counts them down as it
	// places containers there.
	Locality *Locality
	// Label is the partition (node label) the containers run in; "" is
	// the default partition (labels.go).
	Label string
	// missed counts the nodes this ask skipped for its locality since its
	// last node- or rack-local grant (delay scheduling); waitSince is when
	// it first skipped one (waiting), for delays in time.
	missed    int
	waiting   bool
	waitSince time.Duration
}

// Container is a grant of Resource on Node to App, for an ask of Priority
// and Kind.
type Container struct {
	ID       ContainerID
	App      AppID
	Node     NodeID
	Resource fairness.Vector
	Priority int
	Kind     altruism.AskKind
	// Phase says whether the app's share or the leftover paid for it.
	Phase altruism.Phase
	// Placement is how it sits against its ask's locality.
	Placement Placement
	// Label is its ask's partition (a default-partition ask's container
	// may sit on a non-exclusive partition's node).
	Label string
}

// Config sets the core's policy and knobs.
type Config struct {
	Policy Policy
	// PAltruism is the probability that an AM yields at a decision. The
	// core only keeps it, so that operators can change it live; AMs read
	// it from every allocate response. QueuePAltruism overrides it for
	// the apps of a queue.
	PAltruism      float64
	QueuePAltruism map[string]float64
	// FirstContainer numbers containers: the first grant gets the id
	// after it. An RM that restarted starts past its epoch (epoch << 40,
	// as YARN does), so no id repeats one a node still runs.
	FirstContainer ContainerID
	// ShareInterval is how often DRF shares are recomputed when only
	// demands changed; apps or nodes coming and going recompute them at
	// once. YARN's fair scheduler recomputes fair shares every 500 ms
	// (yarn.scheduler.fair.update-interval-ms), the default here too.
	ShareInterval time.Duration
	// Locality is delay scheduling for asks that name hosts or racks;
	// the zero value is DefaultLocalityDelays.
	Locality *LocalityDelays
	// Preemption, when set, takes containers back for starved queues of
	// the queue tree (preemption.go).
	Preemption *PreemptionConfig
	// Recall, when positive, takes leftover-paid containers back for a
	// job below its share whose DEFAULT asks have waited this many times
	// its remaining critical path (recall.go); Carbyne's pass only.
	Recall float64
	// PromiseSlack, when positive, moves an app whose fluid finish has
	// passed 1 + PromiseSlack times the span it was first promised up
	// Carbyne's remaining-work orders (promise.go).
	PromiseSlack float64
	// ShareGrowth makes ShareGrowth project each app's share (growth.go);
	// off, it returns nothing and AMs plan within their current share.
	ShareGrowth bool
}

// Core is the RM's state machine.
type Core struct {
	// claims and drf are splitShares' working memory, kept from pass to
	// pass: shares are computed at every pass, for every app.
	claims []fairness.Claim
	drf    fairness.DRFScratch

	cfg   Config
	nodes []*node // by NodeID; nil for an unknown or removed node
	apps  []*app  // active apps, ordered by ID
	byID  map[AppID]*app
	conts containerTable
	next  ContainerID

	capacity fairness.Vector // of the live nodes
	used     fairness.Vector // by all containers

	// now is the time of the latest Step. Shares are stale (recomputed
	// before the next decision) after apps or nodes change, and due after
	// demands change and ShareInterval has passed since lastShares.
	now          time.Duration
	sharesStale  bool
	demandsMoved bool
	lastShares   time.Duration

	// growth is ShareGrowth's processor-sharing projection, made at
	// growthAt (growth.go); nil before the first.
	growth   map[string]*psRun
	growthAt time.Duration

	// shapes are the distinct task demands asked for now. A node that
	// fits none of them is settled: it is skipped until its free room
	// grows or a new shape is asked for. unsettled holds the others, so
	// that a scheduling pass on a large, busy cluster visits only nodes
	// that might take something. Each shape has an id while it is asked
	// for (shapeIDs; shapeRefs counts its outstanding asks by id,
	// freeShapes are ids to reuse); the candidates carry each ask's id
	// and each id's demand (Candidates.shapeOf, shapeVec), so that no
	// pass compares demands to number them.
	shapes     []fairness.Vector
	shapeIDs   map[fairness.Vector]int32
	shapeRefs  []int
	freeShapes []int32
	unsettled  bitset
	// stuck are the settled nodes that some shape fitted when a visit
	// settled them (its passes placed nothing there). With those, the
	// nodes a new shape fits are all a new shape can make worth a visit:
	// every other settled node fitted no shape and its room has not grown.
	stuck bitset
	// roomCeil is each live node's free room (by id) as a Ceiling, set
	// whenever its use or capacity changes, so that checking whether a
	// node fits any shape reads neither the node nor a tolerance.
	roomCeil []fairness.Ceiling
	// allocs is where Allocated actions come from, a chunk at a time,
	// each used once: boxed one by one they were an allocation per
	// container.
	allocs []Allocated

	cands Candidates // reused by every scheduling pass
	// layoutStale says the candidates' asks must be laid out again
	// (apps came or went); otherwise a round rewrites in place the
	// blocks of the apps in segDirty, whose outstanding asks changed,
	// as long as no block changed its length: a round then costs the
	// apps that changed, not every ask (a 4,000-job simulation has ~150
	// asks per round, and one or two apps that changed).
	layoutStale bool
	segDirty    []*app
	// viewsStale says every app's view in cands (its AppView and
	// altruism.App) must be written again: shares were recomputed, or
	// apps came or went. Otherwise only dirtyViews are, the apps whose
	// usage or remaining work changed since the last pass: rewriting
	// every view at every pass cost a 4,000-job simulation a tenth of
	// its time.
	viewsStale bool
	dirtyViews []*app
	// shareEpoch counts the times shares were recomputed (SharesEpoch).
	shareEpoch uint64
	// round numbers the scheduling rounds (Candidates.gen).
	round uint64
	owner []int
	// askOf is each candidate's index in its app's asks; placement,
	// granted and outstanding are the node pass's view of each (how
	// the node suits it, what the pass placed, its count before the
	// pass): see localize.
	askOf       []int
	placement   []Placement
	granted     []int
	outstanding []int
	localIdx    []int // the candidates whose asks have a locality
	live        int   // live nodes, for the locality delays' caps

	// reservations hold capacity for windows (reservation.go);
	// reservedKey is the set active when shares were last computed.
	reservations map[string]*reservation
	reservedKey  string

	// tree is the queue hierarchy (queues.go); nil for none. limitIdx
	// are the candidates whose apps sit under a queue with a maximum;
	// narrowIdx those a node pass may narrow (localIdx and limitIdx).
	tree      *tree
	limitIdx  []int
	narrowIdx []int
	heads     []headroomOf // per app, for one node pass (limitQueues)

	pre preemptState
	// recallDue is the earliest instant an app's wait runs out
	// (recall.go), when recallSet.
	recallDue time.Duration
	recallSet bool
	// withDefault are the apps with DEFAULT asks outstanding, by ID: the
	// only ones recall looks at.
	withDefault []*app
	recallApps  []*app
	// newPromises lists the apps promised since the last pass's end
	// (promise.go), for their Promised actions.
	newPromises []AppID
	// recallLast is when recall last took room back, if recallRan.
	recallRan  bool
	recallLast time.Duration

	// parts are the cluster's partitions (node labels) and whether each
	// is exclusive; partCap the live nodes' total in each, the default
	// ("") included; sharing the partition whose shares are being
	// computed (labels.go).
	parts     map[string]bool
	partCap   map[string]fairness.Vector
	sharing   string
	splitting bool
}

type node struct {
	id         NodeID
	capacity   fairness.Vector
	used       fairness.Vector
	host, rack string
	part       string // its partition; "" the default
}

type app struct {
	id    AppID
	queue string
	user  string
	label string // the partition its demand is shared in
	q     int    // its leaf in the tree; -1 without one
	// held: its queues or user are at their bound of running apps; it
	// waits with no share and no grants.
	held     bool
	weight   float64
	asks     []Ask
	demand   fairness.Vector
	work     float64       // remaining work, for SRTF
	critical time.Duration // remaining critical path, for SJF
	usage    fairness.Vector
	share    fairness.Vector
	// ids are the app's containers, in the order it got them, with
	// ended ones among them until there are more of those than live
	// ones (nconts); ended ones are told apart by the core's table.
	ids    []ContainerID
	nconts int
	// leftovers counts the live ones the leftover paid for (Phase
	// FromLeftover): recall takes only those, and most apps hold none.
	leftovers int
	// viewDirty: the app is in the core's dirtyViews.
	viewDirty bool
	// seg is the app's outstanding asks as the node passes take them
	// (App unset), segAskOf their indices in asks, segLocal whether one
	// has a locality. The candidates copy it each round; it is built
	// again only when segStale (the asks were replaced, or a grant
	// changed a count), which in a round is true of a few apps.
	seg      []altruism.Ask
	segAskOf []int
	segShape []int32
	segLocal bool
	segStale bool
	// segAt is where seg starts in the candidates' asks, -1 when it is
	// not among them (held, or nothing outstanding).
	segAt int
	// reservation is the reservation the app was submitted to, if any.
	reservation string
	// waiting: below its share, its DEFAULT asks found no room at the
	// passes since waitSince (recall.go). defaults counts its outstanding
	// DEFAULT asks in the default partition; while it is above 0 the app
	// is in the core's withDefault.
	waiting   bool
	waitSince time.Duration
	defaults  int
	// promised: the app's first promise is kept (promise.go): from
	// firstAt, a fluid finish firstSpan later.
	promised           bool
	firstAt, firstSpan time.Duration
	// workFrom is the shares epoch after the one in which the app first
	// sent its remaining work: its share from then on counts its demand.
	workFrom uint64
}

// New returns an empty core.
func New(cfg Config) *Core {
	if cfg.Policy == nil {
		cfg.Policy = Carbyne(altruism.SRTFFirst)
	}
	if cfg.ShareInterval <= 0 {
		cfg.ShareInterval = 500 * time.Millisecond
	}
	cfg.QueuePAltruism = maps.Clone(cfg.QueuePAltruism)
	return &Core{cfg: cfg, byID: map[AppID]*app{},
		shapeIDs: map[fairness.Vector]int32{}, next: cfg.FirstContainer, pre: preemptState{asked: map[ContainerID]askedBack{}},
		partCap: map[string]fairness.Vector{}}
}

// Event is an input to Step.
type Event interface{ event() }

// Events.
type (
	// NodeUp registers a node, or re-registers a known one with a new
	// capacity.
	NodeUp struct {
		Node     NodeID
		Capacity fairness.Vector
		// Host and Rack place it for asks with locality.
		Host, Rack string
		// Partition is its node label ("" the default partition).
		Partition string
	}
	// NodeLost removes a node; its containers are lost.
	NodeLost struct{ Node NodeID }
	// AppAdded admits an application.
	AppAdded struct {
		App    AppID
		Queue  string
		Weight float64
		// User is who submitted it: a leaf queue's share is split
		// among its users first.
		User string
		// Label is the partition its demand is shared in: its
		// submission's node label expression, or its queue's default
		// (QueueDefaultLabel); "" the default partition.
		Label string
	}
	// AppMoved moves a running app to another queue with that queue's
	// weight (YARN's moveApplicationAcrossQueues): its share follows at
	// once, and its AM is told the new queue's P(Altruism).
	AppMoved struct {
		App    AppID
		Queue  string
		Weight float64
	}
	// AppRequest is an AM's allocate call: its outstanding asks (they
	// replace the previous ones), its demand for DRF (running plus
	// pending), its remaining work for SRTF and its remaining critical
	// path for SJF.
	AppRequest struct {
		App           AppID
		Asks          []Ask
		Demand        fairness.Vector
		RemainingWork float64
		CriticalTime  time.Duration
	}
	// AppDemand updates an app's demand for DRF without touching its
	// asks: its running plus pending tasks changed, its asks did not.
	AppDemand struct {
		App    AppID
		Demand fairness.Vector
	}
	// ContainerDone frees a container: its task finished or its AM
	// released it.
	ContainerDone struct{ Container ContainerID }
	// AppRemoved ends an application; its containers are freed.
	AppRemoved struct{ App AppID }
	// Schedule fills nodes: the given ones, or every live node when
	// Nodes is empty (the simulator's scheduling event).
	Schedule struct{ Nodes []NodeID }
	// SetAltruism changes P(Altruism) from the next decision on: the
	// cluster's (Queue empty), or one queue's override of it; Clear
	// removes a queue's override, so that its apps follow the cluster's.
	SetAltruism struct {
		P     float64
		Queue string
		Clear bool
	}
	// SetPolicy swaps the node pass, e.g. to change the leftover order
	// while the RM runs, from the next decision on.
	SetPolicy struct{ Policy Policy }
	// ContainerRecovered puts back a container a node reports running
	// after an RM restart: it holds its resource on its node and counts in
	// its app's usage, as if granted. Later grants get higher ids.
	ContainerRecovered struct{ Container Container }
)

func (NodeUp) event()             {}
func (NodeLost) event()           {}
func (AppAdded) event()           {}
func (AppRequest) event()         {}
func (AppDemand) event()          {}
func (ContainerDone) event()      {}
func (AppRemoved) event()         {}
func (Schedule) event()           {}
func (SetAltruism) event()        {}
func (AppMoved) event()           {}
func (SetPolicy) event()          {}
func (ContainerRecovered) event() {}

// Action is an output of Step.
type Action interface{ action() }

// Actions.
type (
	// Allocated grants a container. It comes as *Allocated (see
	// Core.allocs): a pass grants thousands.
	Allocated struct{ Container Container }
	// Lost reports a container that ended with its node or app.
	Lost struct {
		Container Container
		Reason    string
	}
)

func (*Allocated) action() {}
func (Lost) action()       {}

// Step applies one event at time now and returns what the core decided.
// Bad input is an error that names the object, and changes nothing.
func (c *Core) Step(now time.Duration, ev Event) ([]Action, error) {
	c.now = now
	switch e := ev.(type) {
	case NodeUp:
		return nil, c.nodeUp(e)
	case NodeLost:
		return c.nodeLost(e.Node)
	case AppAdded:
		return nil, c.appAdded(e)
	case AppMoved:
		return nil, c.appMoved(e)
	case AppRequest:
		return nil, c.appRequest(e)
	case AppPromise:
		return nil, c.appPromise(e)
	case AppDemand:
		return nil, c.appDemand(e)
	case ContainerDone:
		return nil, c.containerDone(e.Container)
	case AppRemoved:
		return c.appRemoved(e.App)
	case Schedule:
		return c.schedule(e.Nodes)
	case SetAltruism:
		return nil, c.setAltruism(e)
	case ReservationSet:
		return nil, c.reservationSet(e)
	case ReservationRemoved:
		return nil, c.reservationRemoved(e.ID)
	case AppReserved:
		return nil, c.appReserved(e)
	case ContainerRecovered:
		return nil, c.containerRecovered(e.Container)
	case QueuesSet:
		return nil, c.queuesSet(e)
	case AMContainer:
		return nil, c.amContainer(e.Container)
	case PartitionsSet:
		return nil, c.partitionsSet(e)
	case NodeLabeled:
		return nil, c.nodeLabeled(e)
	case SetPolicy:
		if e.Policy == nil {
			return nil, fmt.Errorf("no policy")
		}
		c.cfg.Policy = e.Policy
		return nil, nil
	}
	return nil, fmt.Errorf("unknown event %T", ev)
}

func (c *Core) containerRecovered(ct Container) error {
	n, err := c.node(ct.Node)
	if err != nil {
		return err
	}
	a, err := c.app(ct.App)
	if err != nil {
		return err
	}
	switch {
	case ct.ID <= 0:
		return fmt.Errorf("container %d: an id must be positive", ct.ID)
	case c.conts.Get(ct.ID) != nil:
		return fmt.Errorf("container %d is already known", ct.ID)
	case ct.Resource.HasNegative() || ct.Resource.IsZero():
		return fmt.Errorf("container %d: resource %v must be positive", ct.ID, ct.Resource)
	}
	c.conts.Put(ct)
	n.used = n.used.Add(ct.Resource)
	c.roomChanged(n)
	c.used = c.used.Add(ct.Resource)
	c.charge(a, ct.Resource)
	c.addToApp(a, &ct)
	c.next = max(c.next, ct.ID)
	c.sharesStale = true
	return nil
}

func (c *Core) nodeUp(e NodeUp) error {
	if e.Node < 0 {
		return fmt.Errorf("node %d: a node id cannot be negative", e.Node)
	}
	if e.Capacity.HasNegative() || e.Capacity.IsZero() {
		return fmt.Errorf("node %d: capacity %v must be positive", e.Node, e.Capacity)
	}
	if why := c.partitionKnown(e.Partition); why != "" {
		return fmt.Errorf("node %d: %s", e.Node, why)
	}
	for int(e.Node) >= len(c.nodes) {
		c.nodes = append(c.nodes, nil)
	}
	n := c.nodes[e.Node]
	if n == nil {
		n = &node{id: e.Node}
		c.nodes[e.Node] = n
		c.live++
	} else {
		c.capacity = c.capacity.Sub(n.capacity)
		c.partCap[n.part] = c.partCap[n.part].Sub(n.capacity)
	}
	n.capacity, n.host, n.rack, n.part = e.Capacity, e.Host, e.Rack, e.Partition
	c.roomChanged(n)
	c.capacity = c.capacity.Add(e.Capacity)
	c.partCap[n.part] = c.partCap[n.part].Add(n.capacity)
	c.sharesStale = true
	c.unsettled.set(int(e.Node))
	return nil
}

func (c *Core) nodeLost(id NodeID) ([]Action, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	var acts []Action
	for _, cid := range c.containerIDs(func(k *Container) bool { return k.Node == id }) {
		acts = append(acts, Lost{Container: *c.conts.Get(cid), Reason: fmt.Sprintf("node %d lost", id)})
		c.free(cid)
	}
	c.capacity = c.capacity.Sub(n.capacity)
	c.partCap[n.part] = c.partCap[n.part].Sub(n.capacity)
	c.nodes[id] = nil
	c.live--
	c.unsettled.clear(int(id))
	c.stuck.clear(int(id))
	c.sharesStale = true
	return acts, nil
}

func (c *Core) appAdded(e AppAdded) error {
	if _, dup := c.byID[e.App]; dup {
		return fmt.Errorf("app %d is already running", e.App)
	}
	w := e.Weight
	if w == 0 {
		w = 1
	}
	if !(w > 0) {
		return fmt.Errorf("app %d: weight %v must be positive", e.App, e.Weight)
	}
	q, err := c.leafOf(e.App, e.Queue)
	if err != nil {
		return err
	}
	a := &app{id: e.App, queue: e.Queue, user: e.User, q: q, weight: w, label: e.Label, segStale: true, segAt: -1}
	if why := c.mayAccess(a.q, e.Label); why != "" {
		return fmt.Errorf("app %d: %s", e.App, why)
	}
	if c.tree != nil {
		c.tree.qs[q].apps++
		if c.runnable(a) != "" {
			a.held = true
		} else {
			c.countRunning(a, 1)
		}
	}
	c.byID[e.App] = a
	i, _ := slices.BinarySearchFunc(c.apps, e.App, func(x *app, id AppID) int { return cmp.Compare(x.id, id) })
	c.apps = slices.Insert(c.apps, i, a)
	c.sharesStale, c.layoutStale = true, true
	return nil
}

func (c *Core) appMoved(e AppMoved) error {
	a, err := c.app(e.App)
	if err != nil {
		return err
	}
	w := e.Weight
	if w == 0 {
		w = 1
	}
	if !(w > 0) {
		return fmt.Errorf("app %d: weight %v must be positive", e.App, e.Weight)
	}
	q, err := c.leafOf(e.App, e.Queue)
	if err != nil {
		return err
	}
	if c.tree != nil && q != a.q {
		for _, l := range append([]string{a.label}, askLabels(a.asks)...) {
			if why := c.mayAccess(q, l); why != "" {
				return fmt.Errorf("app %d cannot move to queue %s: %s", e.App, e.Queue, why)
			}
		}
		if !a.held {
			// As the Fair Scheduler: a running app moves only where it
			// may run.
			c.countRunning(a, -1)
			from := a.q
			a.q = q
			why := c.runnable(a)
			a.q = from
			c.countRunning(a, 1)
			if why != "" {
				return fmt.Errorf("app %d cannot move to queue %s: %s", e.App, e.Queue, why)
			}
			c.countRunning(a, -1)
		}
		c.tree.charge(a.q, a, a.usage.Scale(-1))
		c.tree.qs[a.q].apps--
		c.tree.charge(q, a, a.usage)
		c.tree.qs[q].apps++
		a.q = q
		if !a.held {
			c.countRunning(a, 1)
		}
		c.startWaiting()
	}
	a.queue, a.weight, a.q = e.Queue, w, q
	c.sharesStale = true
	return nil
}

func (c *Core) appRequest(e AppRequest) error {
	a, err := c.app(e.App)
	if err != nil {
		return err
	}
	for _, k := range e.Asks {
		switch {
		case k.Count < 0:
			return fmt.Errorf("app %d: ask at priority %d has a negative count %d", e.App, k.Priority, k.Count)
		case k.Demand.HasNegative() || k.Demand.IsZero():
			return fmt.Errorf("app %d: ask at priority %d: capability %v must be positive", e.App, k.Priority, k.Demand)
		case k.Kind != altruism.Default && k.Kind != altruism.Altruistic:
			return fmt.Errorf("app %d: ask at priority %d has unknown kind %d", e.App, k.Priority, k.Kind)
		}
		if why := c.mayAccess(a.q, k.Label); why != "" {
			return fmt.Errorf("app %d: ask at priority %d: %s", e.App, k.Priority, why)
		}
	}
	if e.Demand.HasNegative() {
		return fmt.Errorf("app %d: demand %v is negative", e.App, e.Demand)
	}
	c.unsettleForLabels(a.asks, e.Asks)
	for _, k := range a.asks {
		c.dropShape(k)
	}
	for _, k := range e.Asks {
		c.addShape(k)
	}
	// An ask that stays keeps its missed opportunities (YARN counts them
	// per scheduler key across allocate calls); its locality is the
	// core's own copy, counted down as containers are placed.
	next := make([]Ask, len(e.Asks))
	// One locality per priority and capability, as YARN groups host and
	// rack requests: a DEFAULT and an ALTRUISTIC ask of the same stage
	// share it, so that a host's count is spent once.
	type group struct {
		priority int
		demand   fairness.Vector
	}
	shared := map[group]*Locality{}
	for i, k := range e.Asks {
		k.missed, k.waiting, k.waitSince = 0, false, 0
		for _, old := range a.asks {
			if old.Priority == k.Priority && old.Kind == k.Kind && old.Demand == k.Demand {
				k.missed, k.waiting, k.waitSince = old.missed, old.waiting, old.waitSince
			}
		}
		if k.Locality != nil {
			g := group{k.Priority, k.Demand}
			if shared[g] == nil {
				shared[g] = &Locality{Hosts: maps.Clone(k.Locality.Hosts), Racks: maps.Clone(k.Locality.Racks), Relax: k.Locality.Relax}
			}
			k.Locality = shared[g]
		}
		next[i] = k
	}
	a.asks = next
	c.countDefaults(a)
	c.segChanged(a)
	c.setDemand(a, e.Demand)
	a.work, a.critical = e.RemainingWork, e.CriticalTime
	if a.workFrom == 0 && e.RemainingWork > 0 {
		a.workFrom = c.shareEpoch + 1
	}
	c.viewChanged(a)
	return nil
}

func (c *Core) appDemand(e AppDemand) error {
	a, err := c.app(e.App)
	if err != nil {
		return err
	}
	if e.Demand.HasNegative() {
		return fmt.Errorf("app %d: demand %v is negative", e.App, e.Demand)
	}
	c.setDemand(a, e.Demand)
	return nil
}

// setDemand records an app's demand. An app starting or ceasing to demand
// anything changes who competes, as an arrival does: shares are stale at
// once. Other changes wait for the share interval.
func (c *Core) setDemand(a *app, d fairness.Vector) {
	if a.demand == d {
		return
	}
	if a.demand.IsZero() != d.IsZero() {
		c.sharesStale = true
	} else {
		c.demandsMoved = true
	}
	a.demand = d
}

func (c *Core) containerDone(id ContainerID) error {
	if c.conts.Get(id) == nil {
		return fmt.Errorf("container %d is not running", id)
	}
	c.free(id)
	return nil
}

func (c *Core) appRemoved(id AppID) ([]Action, error) {
	if _, err := c.app(id); err != nil {
		return nil, err
	}
	// The app's own containers, in ID order for determinism: scanning
	// every container in a large cluster at each departure would cost
	// more than the rest of the departure.
	a := c.byID[id]
	ids := c.appContainers(a)
	var acts []Action
	for _, cid := range ids {
		acts = append(acts, Lost{Container: *c.conts.Get(cid), Reason: fmt.Sprintf("app %d removed", id)})
		c.free(cid)
	}
	for _, k := range a.asks {
		c.dropShape(k)
	}
	delete(c.byID, id)
	c.apps = slices.DeleteFunc(c.apps, func(a *app) bool { return a.id == id })
	a.asks = nil
	c.countDefaults(a)
	c.layoutStale = true
	if c.tree != nil {
		c.tree.qs[a.q].apps--
		if !a.held {
			c.countRunning(a, -1)
			c.startWaiting()
		}
	}
	c.sharesStale = true
	return acts, nil
}

// containerIDs lists matching containers in ID order, for determinism.
func (c *Core) containerIDs(match func(*Container) bool) []ContainerID {
	var ids []ContainerID
	c.conts.All(func(k *Container) {
		if match(k) {
			ids = append(ids, k.ID)
		}
	})
	return ids
}

func (c *Core) free(id ContainerID) {
	k := c.conts.Get(id)
	c.conts.Delete(id) // k stays readable
	c.forgetPreempted(k)
	if n := c.nodes[k.Node]; n != nil {
		n.used = n.used.Sub(k.Resource)
		c.roomChanged(n)
		c.used = c.used.Sub(k.Resource)
		c.unsettled.set(int(k.Node))
	}
	if a := c.byID[k.App]; a != nil {
		c.charge(a, k.Resource.Scale(-1))
		c.dropFromApp(a, k)
	}
}

func (c *Core) node(id NodeID) (*node, error) {
	if id < 0 || int(id) >= len(c.nodes) || c.nodes[id] == nil {
		return nil, fmt.Errorf("node %d is not registered", id)
	}
	return c.nodes[id], nil
}

func (c *Core) app(id AppID) (*app, error) {
	a, ok := c.byID[id]
	if !ok {
		return nil, fmt.Errorf("app %d is not running", id)
	}
	return a, nil
}

// refreshShares recomputes every app's DRF share when they are stale or
// due.
func (c *Core) refreshShares() {
	due := c.demandsMoved && c.now-c.lastShares >= c.cfg.ShareInterval
	if key := c.reservationsKey(); key != c.reservedKey {
		c.reservedKey, c.sharesStale = key, true
	}
	if !c.sharesStale && !due {
		return
	}
	c.viewsStale = true
	c.shareEpoch++
	if len(c.reservations) > 0 || c.reservedKey != "" {
		c.reservedShares()
		c.sharesStale, c.demandsMoved, c.lastShares = false, false, c.now
		return
	}
	c.splitShares(c.capacity, c.apps)
	c.sharesStale, c.demandsMoved, c.lastShares = false, false, c.now
}

// splitShares gives the apps their DRF shares of capacity: down the queue
// tree when there is one, else each app a claim on the whole.
func (c *Core) splitShares(capacity fairness.Vector, apps []*app) {
	if c.labelled() && c.sharing == "" && !c.splitting {
		c.splitting = true
		c.partitionShares(capacity, apps, c.splitShares)
		c.splitting = false
		return
	}
	if c.tree != nil {
		running := make([]*app, 0, len(apps))
		for _, a := range apps {
			if a.held {
				a.share = fairness.Vector{}
			} else {
				running = append(running, a)
			}
		}
		c.treeShares(capacity, running)
		return
	}
	claims := slices.Grow(c.claims[:0], len(apps))[:len(apps)]
	for i, a := range apps {
		claims[i] = fairness.Claim{Weight: a.weight, Demand: a.demand}
	}
	c.claims = claims
	for i, s := range c.drf.Within(c.capacity, capacity, claims) {
		apps[i].share = s
	}
}

// askLabels are the partitions an app's outstanding asks name.
func askLabels(asks []Ask) []string {
	var out []string
	for _, k := range asks {
		if k.Count > 0 && k.Label != "" && !slices.Contains(out, k.Label) {
			out = append(out, k.Label)
		}
	}
	return out
}

// charge adds v (negative to take back) to what an app holds, and to its
// queues'.
func (c *Core) charge(a *app, v fairness.Vector) {
	a.usage = a.usage.Add(v)
	c.viewChanged(a)
	if c.tree != nil && a.q >= 0 {
		c.tree.charge(a.q, a, v)
	}
}

// schedule runs the policy's node pass on the given nodes, or on every
// unsettled node, in ID order, until the asks run out.
func (c *Core) schedule(ids []NodeID) ([]Action, error) {
	for _, id := range ids {
		if _, err := c.node(id); err != nil {
			return nil, err
		}
	}
	c.refreshShares()
	preempted := c.preempt()
	acts, err := c.fill(ids)
	if err != nil {
		return nil, err
	}
	acts, err = c.recall(acts)
	acts = c.promisesTaken(acts)
	return append(preempted, acts...), err
}

// fill runs the node passes of schedule.
func (c *Core) fill(ids []NodeID) ([]Action, error) {
	cands, owner := c.candidates()
	if len(cands.Asks) == 0 {
		return nil, nil
	}
	delays := DefaultLocalityDelays
	if c.cfg.Locality != nil {
		delays = *c.cfg.Locality
	}
	left := cands.total
	if !cands.steady || scanRounds {
		left = 0
		for _, k := range cands.Asks {
			left += k.Count
		}
	}
	pol := c.nodePolicy()
	var acts []Action
	visit := func(id NodeID) {
		fit := c.fitsSome(c.roomCeil[id])
		if !fit && (len(c.pre.room) == 0 || len(c.pre.room[id]) == 0) {
			// Settled: no ask fits, so no pass below could place or
			// count a missed chance (they all need an ask that fits).
			// Only room a preemption freed for someone is taken up (or
			// dropped) by a visit whatever fits.
			if left > 0 {
				c.unsettled.clear(int(id))
				c.stuck.clear(int(id))
			}
			return
		}
		n := c.nodes[id]
		free := n.capacity.Sub(n.used)
		for _, i := range c.narrowIdx {
			c.granted[i], c.outstanding[i] = 0, cands.Asks[i].Count
		}
		withheld := c.localize(n, cands, delays)
		withheld = c.limitQueues(cands, free) || withheld
		withheld = c.narrowPartitions(n, cands) || withheld
		placed := false
		for _, as := range c.preemptedPass(n, cands) {
			acts = c.grant(acts, n, cands, owner, as)
			left -= as.Count
			placed = true
		}
		if c.reservedKey != "" {
			for _, as := range c.reservedPass(n, cands) {
				acts = c.grant(acts, n, cands, owner, as)
				left -= as.Count
				placed = true
			}
		}
		if placed {
			free = n.capacity.Sub(n.used)
			fit = c.fitsSome(c.roomCeil[id])
		}
		if fit {
			state := NodeState{Free: free, Capacity: n.capacity, Cluster: c.capacity}
			for _, as := range pol.Fill(state, cands) {
				acts = c.grant(acts, n, cands, owner, as)
				left -= as.Count
				placed = true
			}
		}
		c.unlocalize(cands)
		// A pass that placed nothing with asks outstanding proves the
		// node fits none of them; one that ran out of asks, or held some
		// back for their locality (they may take it later), proves
		// nothing.
		if !placed && left > 0 && !withheld {
			c.unsettled.clear(int(id))
			c.stuck.set(int(id))
		}
	}
	if len(ids) > 0 {
		for _, id := range ids {
			visit(id)
		}
		return acts, nil
	}
	for i := c.unsettled.next(0); i >= 0 && left > 0; i = c.unsettled.next(i + 1) {
		visit(NodeID(i))
	}
	return acts, nil
}

// nodePolicy is the node pass to run now. Carbyne at P(Altruism) 0 is
// DRF: no job yields, so there is no leftover to hand out, and Carbyne
// then schedules exactly as DRF does, so that turning the knob to 0 live
// gives the fairness baseline itself. A queue whose override is above 0
// keeps Carbyne's pass.
func (c *Core) nodePolicy() Policy {
	if _, ok := c.cfg.Policy.(carbyne); ok && c.cfg.PAltruism == 0 {
		for _, p := range c.cfg.QueuePAltruism {
			if p > 0 {
				return c.cfg.Policy
			}
		}
		return drf{}
	}
	return c.cfg.Policy
}

func (c *Core) setAltruism(e SetAltruism) error {
	if !e.Clear && !(e.P >= 0 && e.P <= 1) {
		return fmt.Errorf("P(Altruism) %v must be between 0 and 1", e.P)
	}
	switch {
	case e.Queue == "" && e.Clear:
		return fmt.Errorf("only a queue's override of P(Altruism) can be cleared")
	case e.Queue == "":
		c.cfg.PAltruism = e.P
	case e.Clear:
		delete(c.cfg.QueuePAltruism, e.Queue)
	default:
		if c.cfg.QueuePAltruism == nil {
			c.cfg.QueuePAltruism = map[string]float64{}
		}
		c.cfg.QueuePAltruism[e.Queue] = e.P
	}
	return nil
}

// PAltruismOf is the P(Altruism) an app's AM is told: its queue's
// override, or the cluster's.
func (c *Core) PAltruismOf(id AppID) (float64, error) {
	a, err := c.app(id)
	if err != nil {
		return 0, err
	}
	if p, ok := c.cfg.QueuePAltruism[a.queue]; ok {
		return p, nil
	}
	return c.cfg.PAltruism, nil
}

// QueuePAltruism is a copy of the queues' overrides of P(Altruism).
func (c *Core) QueuePAltruism() map[string]float64 { return maps.Clone(c.cfg.QueuePAltruism) }

// grant creates the containers of one placement and appends their
// actions to acts.
func (c *Core) grant(acts []Action, n *node, cands *Candidates, owner []int, as altruism.Assignment) []Action {
	k := &cands.Asks[as.Ask]
	a := c.apps[owner[as.Ask]]
	if r := c.room(a, k.Demand); r >= 0 && as.Count > r {
		// Another ask of its queue took the room on this node.
		as.Count = r
	}
	if as.Count == 0 {
		return acts
	}
	place := c.placement[as.Ask]
	c.granted[as.Ask] += as.Count
	if ak := &a.asks[c.askOf[as.Ask]]; ak.Locality != nil {
		ak.Locality.served(n.host, n.rack, as.Count)
		if place == NodeLocal || place == RackLocal {
			ak.missed, ak.waiting = 0, false
		}
	}
	for i := 0; i < as.Count; i++ {
		c.next++
		ct := c.conts.Put(Container{ID: c.next, App: a.id, Node: n.id, Resource: k.Demand,
			Priority: k.Priority, Kind: k.Kind, Phase: as.Phase, Placement: place, Label: a.asks[c.askOf[as.Ask]].Label})
		n.used = n.used.Add(k.Demand)
		c.used = c.used.Add(k.Demand)
		c.charge(a, k.Demand)
		c.addToApp(a, ct)
		if len(c.allocs) == 0 {
			c.allocs = make([]Allocated, 256)
		}
		c.allocs[0] = Allocated{Container: *ct}
		acts = append(acts, &c.allocs[0])
		c.allocs = c.allocs[1:]
	}
	c.roomChanged(n)
	cands.Apps[owner[as.Ask]].Usage = a.usage
	cands.Alt[owner[as.Ask]].Usage = a.usage
	cands.drfKey[owner[as.Ask]] = a.usage.DominantShare(c.capacity) / cands.Apps[owner[as.Ask]].Weight
	cands.usageChanged(owner[as.Ask])
	k.Count -= as.Count
	cands.total -= as.Count
	c.takeAsk(a, k, as.Count)
	return acts
}

// candidates flattens the apps' outstanding asks for a node pass. The
// buffers are the core's own, reused from pass to pass; the apps' views
// are written again only where they changed (viewsStale, dirtyViews).
func (c *Core) candidates() (*Candidates, []int) {
	cands := &c.cands
	if c.viewsStale || len(cands.Apps) != len(c.apps) || cands.keyCap != c.capacity {
		cands.Apps = slices.Grow(cands.Apps[:0], len(c.apps))[:len(c.apps)]
		cands.Alt = slices.Grow(cands.Alt[:0], len(c.apps))[:len(c.apps)]
		cands.drfKey = slices.Grow(cands.drfKey[:0], len(c.apps))[:len(c.apps)]
		cands.keyCap = c.capacity
		for i, a := range c.apps {
			c.writeView(i, a)
		}
	} else {
		for _, a := range c.dirtyViews {
			i, ok := slices.BinarySearchFunc(c.apps, a.id, func(x *app, id AppID) int { return cmp.Compare(x.id, id) })
			if ok {
				c.writeView(i, a)
			}
		}
	}
	for _, a := range c.dirtyViews {
		a.viewDirty = false
	}
	c.viewsStale, c.dirtyViews = false, c.dirtyViews[:0]

	cands.fresh = false
	c.round++
	cands.gen = c.round
	if !c.patchAsks() {
		c.layAsks()
	}
	c.segDirty = c.segDirty[:0]
	cands.steady = len(c.narrowIdx) == 0
	return cands, c.owner
}

// patchAsks brings the last round's asks up to date by rewriting the
// blocks of the apps whose asks changed, and says whether it could: not
// when apps came or went, or a block would change its length, or some
// ask is narrowed at nodes (locality, queues, partitions), whose lists
// layAsks makes.
func (c *Core) patchAsks() bool {
	if scanRounds || c.layoutStale || c.tree != nil || len(c.localIdx) > 0 || c.labelled() {
		return false
	}
	cands := &c.cands
	for _, a := range c.segDirty {
		if !a.segStale || a.held {
			continue
		}
		was := len(a.seg)
		a.segment(c.shapeIDs)
		if len(a.seg) != was || a.segLocal {
			return false
		}
		if was == 0 {
			continue
		}
		i := cands.Asks[a.segAt].App
		for x, k := range a.seg {
			cands.total += k.Count - cands.Asks[a.segAt+x].Count
			cands.Asks[a.segAt+x] = k
			cands.Asks[a.segAt+x].App = i
		}
		copy(c.askOf[a.segAt:], a.segAskOf)
		copy(cands.shapeOf[a.segAt:], a.segShape)
		cands.noteChanged(i)
	}
	return true
}

// layAsks flattens every app's outstanding asks into the candidates.
func (c *Core) layAsks() {
	cands := &c.cands
	c.layoutStale = false
	cands.layout++
	cands.Asks, cands.shapeOf, cands.blocks = cands.Asks[:0], cands.shapeOf[:0], cands.blocks[:0]
	c.owner, c.askOf = c.owner[:0], c.askOf[:0]
	c.localIdx, c.limitIdx, c.narrowIdx = c.localIdx[:0], c.limitIdx[:0], c.narrowIdx[:0]
	labelled := c.labelled()
	for i, a := range c.apps {
		a.segAt = -1
		cands.blocks = append(cands.blocks, int32(len(cands.Asks)))
		if a.held {
			continue
		}
		if a.segStale {
			a.segment(c.shapeIDs)
		}
		if len(a.seg) == 0 {
			continue
		}
		limited := c.limited(a)
		at := len(cands.Asks)
		a.segAt = at
		cands.Asks = append(cands.Asks, a.seg...)
		for x := at; x < len(cands.Asks); x++ {
			cands.Asks[x].App = i
		}
		cands.shapeOf = append(cands.shapeOf, a.segShape...)
		c.askOf = append(c.askOf, a.segAskOf...)
		for range a.seg {
			c.owner = append(c.owner, i)
		}
		if !a.segLocal && !limited && !labelled {
			continue
		}
		for x, j := range a.segAskOf {
			local := a.asks[j].Locality != nil
			if local {
				c.localIdx = append(c.localIdx, at+x)
			}
			if limited {
				c.limitIdx = append(c.limitIdx, at+x)
			}
			if local || limited || labelled {
				c.narrowIdx = append(c.narrowIdx, at+x)
			}
		}
	}
	n := len(cands.Asks)
	cands.blocks = append(cands.blocks, int32(n))
	cands.total = 0
	for _, k := range cands.Asks {
		cands.total += k.Count
	}
	c.placement = slices.Grow(c.placement[:0], n)[:n]
	clear(c.placement) // Anywhere
	c.granted = slices.Grow(c.granted[:0], n)[:n]
	c.outstanding = slices.Grow(c.outstanding[:0], n)[:n]
}

// scanRounds lays every round's asks out again and has DRF scan them at
// every node, as before rounds kept anything: the reference of
// TestRoundMemoryMatchesScanning. Never set outside tests.
var scanRounds bool

// segChanged notes that app a's outstanding asks changed.
func (c *Core) segChanged(a *app) {
	if !a.segStale {
		a.segStale = true
		c.segDirty = append(c.segDirty, a)
	}
}

// segment builds app a's outstanding asks for the candidates, with their
// shapes' ids.
func (a *app) segment(ids map[fairness.Vector]int32) {
	a.seg, a.segAskOf, a.segShape, a.segLocal = a.seg[:0], a.segAskOf[:0], a.segShape[:0], false
	for j := range a.asks {
		k := &a.asks[j]
		if k.Count <= 0 {
			continue
		}
		a.seg = append(a.seg, altruism.Ask{Kind: k.Kind, Priority: k.Priority, Demand: k.Demand, Count: k.Count})
		a.segAskOf = append(a.segAskOf, j)
		a.segShape = append(a.segShape, ids[k.Demand])
		a.segLocal = a.segLocal || k.Locality != nil
	}
	a.segStale = false
}

// writeView writes app a's views at position i of the candidates.
func (c *Core) writeView(i int, a *app) {
	w := a.weight
	if c.tree != nil {
		// Under a tree the least served app is the one furthest below
		// its share (usage over share, as the Fair Scheduler compares
		// them), not below its weight: an app's weight says nothing of
		// its queues'.
		w = max(a.share.DominantShare(c.capacity), 1e-9)
	}
	rank := c.leftoverRank(a)
	workMoved := c.cands.Alt[i].RemainingWork != rank || c.cands.Apps[i].RemainingWork != a.work
	c.cands.Apps[i] = AppView{Share: a.share, Usage: a.usage, RemainingWork: a.work,
		Weight: w, CriticalTime: a.critical}
	c.cands.Alt[i] = altruism.App{Share: a.share, Usage: a.usage, RemainingWork: rank, Weight: w}
	if k := a.usage.DominantShare(c.capacity) / w; k != c.cands.drfKey[i] || workMoved {
		c.cands.drfKey[i] = k
		c.cands.noteChanged(i)
	}
}

// viewChanged notes that app a's view in the candidates is out of date.
func (c *Core) viewChanged(a *app) {
	if !a.viewDirty {
		a.viewDirty = true
		c.dirtyViews = append(c.dirtyViews, a)
	}
}

// SharesEpoch brings the apps' shares up to date, as EachApp does, and
// says how many times they have been recomputed: while it stays the
// same, no app's share has changed, and a reader of every app's share
// need only look again at the apps whose usage it saw change.
func (c *Core) SharesEpoch() uint64 {
	c.refreshShares()
	return c.shareEpoch
}

// EachApp calls fn for every running app in ID order with what it holds
// and its share: the simulator's metrics read them all whenever shares
// were recomputed (SharesEpoch).
func (c *Core) EachApp(fn func(id AppID, usage, share fairness.Vector)) {
	c.refreshShares()
	for _, a := range c.apps {
		fn(a.id, a.usage, a.share)
	}
}

// takeAsk lowers the app's outstanding ask that a node pass served.
func (c *Core) takeAsk(a *app, served *altruism.Ask, n int) {
	for i := range a.asks {
		k := &a.asks[i]
		if k.Priority == served.Priority && k.Kind == served.Kind && k.Demand == served.Demand && k.Count > 0 {
			k.Count -= n
			if k.Kind == altruism.Default && k.Label == "" {
				a.defaults -= n
				if a.defaults == 0 {
					c.dropDefault(a)
				}
			}
			c.segChanged(a)
			if k.Count == 0 {
				c.dropShape(Ask{Demand: k.Demand, Count: 1})
			}
			return
		}
	}
}

// addShape counts an outstanding ask's shape. A shape nobody asked for
// until now may fit where none did: every node where some shape fits is
// a candidate again. Those are the nodes the new shape fits and the stuck
// ones; any other settled node was settled fitting no shape (a visit to
// a node that fits none only settles it, and room a preemption freed
// keeps its node unsettled until a visit takes it), its room has not
// grown since (that unsettles it), and each shape asked for since then
// was checked against it here.
func (c *Core) addShape(k Ask) {
	if k.Count <= 0 {
		return
	}
	if id, ok := c.shapeIDs[k.Demand]; ok {
		c.shapeRefs[id]++
		return
	}
	var id int32
	if n := len(c.freeShapes); n > 0 {
		id, c.freeShapes = c.freeShapes[n-1], c.freeShapes[:n-1]
		c.shapeRefs[id], c.cands.shapeVec[id] = 1, k.Demand
	} else {
		id = int32(len(c.shapeRefs))
		c.shapeRefs, c.cands.shapeVec = append(c.shapeRefs, 1), append(c.cands.shapeVec, k.Demand)
	}
	c.shapeIDs[k.Demand] = id
	c.shapes = append(c.shapes, k.Demand)
	c.unsettled.take(c.stuck)
	for i, n := range c.nodes {
		if n != nil && !c.unsettled.has(i) && k.Demand.FitsUnder(c.roomCeil[i]) {
			c.unsettled.set(i)
		}
	}
}

// roomChanged notes a node's free room after its use or capacity changed.
func (c *Core) roomChanged(n *node) {
	if i := int(n.id); i >= len(c.roomCeil) {
		c.roomCeil = append(c.roomCeil, make([]fairness.Ceiling, i+1-len(c.roomCeil))...)
	}
	c.roomCeil[n.id] = n.capacity.Sub(n.used).Ceiling()
}

// fitsSome reports whether any shape asked for now fits under a node's
// room.
func (c *Core) fitsSome(ceil fairness.Ceiling) bool {
	for _, d := range c.shapes {
		if d.FitsUnder(ceil) {
			return true
		}
	}
	return false
}

// dropShape uncounts an ask's shape when it stops being outstanding, so
// that the shapes checked at every node are only the ones asked for now.
func (c *Core) dropShape(k Ask) {
	if k.Count <= 0 {
		return
	}
	id := c.shapeIDs[k.Demand]
	if c.shapeRefs[id]--; c.shapeRefs[id] > 0 {
		return
	}
	delete(c.shapeIDs, k.Demand)
	// Until the id is reused, its demand fits nowhere: an ask that still
	// carries it in this round has nothing left to place.
	c.freeShapes, c.cands.shapeVec[id] = append(c.freeShapes, id), noShape
	c.shapes = slices.DeleteFunc(c.shapes, func(d fairness.Vector) bool { return d == k.Demand })
}

// Share returns an app's current DRF share A_k.
func (c *Core) Share(id AppID) (fairness.Vector, error) {
	a, err := c.app(id)
	if err != nil {
		return fairness.Vector{}, err
	}
	c.refreshShares()
	return a.share, nil
}

// Usage returns what an app holds now.
func (c *Core) Usage(id AppID) (fairness.Vector, error) {
	a, err := c.app(id)
	if err != nil {
		return fairness.Vector{}, err
	}
	return a.usage, nil
}

// Demand is what an app demands for DRF (running plus pending), as its
// driver last said through the adapter.
func (c *Core) Demand(id AppID) (fairness.Vector, error) {
	a, err := c.app(id)
	if err != nil {
		return fairness.Vector{}, err
	}
	return a.demand, nil
}

// Policy returns the node pass in force.
func (c *Core) Policy() Policy { return c.cfg.Policy }

// PAltruism is the current P(Altruism).
func (c *Core) PAltruism() float64 { return c.cfg.PAltruism }

// LastContainerID is the highest container id the core has granted or
// taken back; every later grant's is higher.
func (c *Core) LastContainerID() ContainerID { return c.next }

// Capacity is the live nodes' total.
func (c *Core) Capacity() fairness.Vector { return c.capacity }

// Used is what all containers hold.
func (c *Core) Used() fairness.Vector { return c.used }

// Container returns a running container.
func (c *Core) Container(id ContainerID) (Container, bool) {
	k := c.conts.Get(id)
	if k == nil {
		return Container{}, false
	}
	return *k, true
}

// bitset is a set of small non-negative integers, iterated in order.
type bitset []uint64

func (b *bitset) set(i int) {
	for i/64 >= len(*b) {
		*b = append(*b, 0)
	}
	(*b)[i/64] |= 1 << (i % 64)
}

// take adds o's members to b and empties o.
func (b *bitset) take(o bitset) {
	for len(*b) < len(o) {
		*b = append(*b, 0)
	}
	for w, x := range o {
		(*b)[w] |= x
		o[w] = 0
	}
}

func (b bitset) has(i int) bool { return i/64 < len(b) && b[i/64]&(1<<(i%64)) != 0 }

func (b bitset) clear(i int) {
	if i/64 < len(b) {
		b[i/64] &^= 1 << (i % 64)
	}
}

// next returns the smallest member ≥ i, or −1.
func (b bitset) next(i int) int {
	for w := i / 64; w < len(b); w++ {
		word := b[w]
		if w == i/64 {
			word &= ^uint64(0) << (i % 64)
		}
		if word != 0 {
			return w*64 + bits.TrailingZeros64(word)
		}
	}
	return -1
}
