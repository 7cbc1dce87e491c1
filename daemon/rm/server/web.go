package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loomrm/loom/altruism"
	"github.com/loomrm/loom/am"
	"github.com/loomrm/loom/daemon/rm/store"
	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Version is the RM's version in /ws/v1/cluster/info.
var Version = "loom-dev"

// timelineLen bounds the timeline: an hour of one-second samples.
const timelineLen = 3600

// timeline is what the RM keeps for the web alone: the cluster and each
// app sampled once a second, and the containers granted by placement.
type timeline struct {
	samples []webui.Sample
	apps    map[rm.AppID][]webui.AppSample
	// rate is allocations per second over the last sample.
	rate                      float64
	lastAlloc, lastAltruistic float64
	lastAt                    time.Time
	// placements counts grants by locality (placements.go); an app's
	// tally goes when the RM forgets the app, at the next sample.
	placements placementLedger
}

func appendBounded[T any](s []T, v T) []T {
	if len(s) >= timelineLen {
		s = slices.Delete(s, 0, len(s)-timelineLen+1)
	}
	return append(s, v)
}

// sample records the cluster now. Callers hold mu.
func (r *RM) sample(now time.Time) {
	capacity, used := r.core.Capacity(), r.core.Used()
	s := webui.Sample{UnixMs: now.UnixMilli()}
	for k := range fairness.NumKinds {
		if capacity[k] > 0 {
			s.Utilisation[k] = used[k] / capacity[k]
		}
	}
	var ratios []float64
	for _, a := range r.appOrder {
		if a.done() {
			continue
		}
		s.RunningApps++
		for k, n := range a.asks {
			if k.kind == altruism.Altruistic {
				s.PendingAltruistic += n
			} else {
				s.PendingDefault += n
			}
		}
		share, _ := r.core.Share(a.id)
		usage, _ := r.core.Usage(a.id)
		as := webui.AppSample{UnixMs: s.UnixMs, DominantShare: share.DominantShare(capacity),
			DominantUsage: usage.DominantShare(capacity)}
		r.timeline.apps[a.id] = appendBounded(r.timeline.apps[a.id], as)
		if as.DominantShare > 0 {
			ratios = append(ratios, as.DominantUsage/as.DominantShare)
		}
	}
	s.Jain = fairness.Jain(ratios)
	if len(ratios) <= 1 {
		s.Jain = 1
	}
	yielded, over, below := r.altruismNow()
	s.Yielded, s.HeldOverShare, s.BehindShare = yielded.DominantShare(capacity), over.DominantShare(capacity), below
	allocs, alt := r.metrics.allocCount, r.metrics.altruisticCount
	if !r.timeline.lastAt.IsZero() {
		if dt := now.Sub(r.timeline.lastAt).Seconds(); dt > 0 {
			r.timeline.rate = (allocs - r.timeline.lastAlloc) / dt
			s.AltruisticPerSec = (alt - r.timeline.lastAltruistic) / dt
		}
	}
	r.timeline.lastAlloc, r.timeline.lastAltruistic, r.timeline.lastAt = allocs, alt, now
	r.timeline.samples = appendBounded(r.timeline.samples, s)
	r.timeline.placements.forget(func(id rm.AppID) bool { return r.apps[id] != nil })
}

// sampler samples the timeline once a second until the RM stops.
func (r *RM) sampler() {
	defer r.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			r.mu.Lock()
			r.sample(now)
			r.mu.Unlock()
		}
	}
}

// webBackend is what the web port reads: the client protocol's own
// handlers for YARN's resources, and the RM's state for Loom's views.
type webBackend struct{ clientService }

var _ webui.Backend = webBackend{}

func (b webBackend) Info() webui.ClusterInfo {
	info := webui.ClusterInfo{ID: b.r.clusterTS, StartedOnMs: b.r.start.UnixMilli(), State: "STARTED", HAState: "ACTIVE",
		Version: Version, StateStore: b.r.stateStoreName(), LoginUser: loginUser()}
	if b.r.cfg.HAZKState != nil {
		info.HAZKState = b.r.cfg.HAZKState()
	}
	return info
}

// loginUser is who runs this process.
func loginUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

// UpdateNodeResource sets what a node offers, for an admin, as YARN's
// AdminService.updateNodeResource: the scheduler sees the new capacity at
// once; containers already there keep running even if they no longer fit.
// The node's own configuration is what it offers again if it registers
// anew (YARN keeps such changes in dynamic-resources.xml; Loom does not).
func (b webBackend) UpdateNodeResource(ctx context.Context, node string, capacity fairness.Vector) (fairness.Vector, error) {
	r := b.r
	r.mu.Lock()
	defer r.mu.Unlock()
	who := caller(ctx)
	if !r.isAdmin(who) {
		return fairness.Vector{}, rpc.Errorf(rpc.ClassAccessControl, "User %s doesn't have permission to call 'updateNodeResource'", who)
	}
	n := r.nodes[node]
	if n == nil || n.state != pb.NodeStateProto_NS_RUNNING {
		return fairness.Vector{}, fmt.Errorf("node %s: %w (or not RUNNING)", node, webui.ErrNotFound)
	}
	capacity = capacity.With(fairness.Disk, n.capacity[fairness.Disk]).With(fairness.Network, n.capacity[fairness.Network])
	if err := r.step(rm.NodeUp{Node: n.id, Capacity: capacity, Host: n.yid.GetHost(), Rack: n.rack, Partition: n.part}); err != nil {
		return fairness.Vector{}, rpc.Errorf(rpc.ClassYarnException, "node %s: %v", node, err)
	}
	r.log.Info().Str("node", node).Str("was", n.capacity.String()).Str("now", capacity.String()).Str("by", who).Msg("node resource updated")
	n.capacity = capacity
	return capacity, nil
}

// stateStoreName names the RM's store as YARN's rmStateStoreName does:
// Loom's own stores are named for what they keep apps in.
func (r *RM) stateStoreName() string {
	if !r.cfg.Recovery {
		return "org.apache.hadoop.yarn.server.resourcemanager.recovery.NullRMStateStore"
	}
	switch r.cfg.Store.Kind {
	case store.KindZooKeeper:
		return "loom ZooKeeper state store (" + strings.Join(r.cfg.Store.ZKAddresses, ",") + ")"
	case store.KindHDFS:
		return "loom HDFS state store"
	default:
		return "loom local state store (bbolt, " + r.cfg.Store.Dir + ")"
	}
}

// schedulerConf is the scheduler's keys as configured, with P(Altruism)
// and the queues' overrides as they are now (they change live).
func (r *RM) schedulerConf() []dao.ConfProperty {
	r.mu.Lock()
	p, qp := r.core.PAltruism(), map[string]float64{}
	for q, v := range r.core.QueuePAltruism() {
		qp[r.shownQueue(q)] = v
	}
	r.mu.Unlock()
	seen := map[string]bool{}
	var out []dao.ConfProperty
	for _, kv := range r.cfg.SchedulerConf {
		seen[kv[0]] = true
		out = append(out, dao.ConfProperty{Name: kv[0], Value: kv[1]})
	}
	set := func(k, v string) {
		if !seen[k] {
			out = append(out, dao.ConfProperty{Name: k})
			seen[k] = true
		}
		for i := range out {
			if out[i].Name == k {
				out[i].Value = v
			}
		}
	}
	set("loom.scheduler.p-altruism", strconv.FormatFloat(p, 'g', -1, 64))
	for q, v := range qp {
		set("loom.queue."+q+".p-altruism", strconv.FormatFloat(v, 'g', -1, 64))
	}
	slices.SortFunc(out, func(a, b dao.ConfProperty) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// NodeVersions is each registered node's nm_version.
func (b webBackend) NodeVersions() map[string]string {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	out := make(map[string]string, len(b.r.nodeByID))
	for _, n := range b.r.nodeByID {
		if n != nil {
			out[n.key] = n.version
		}
	}
	return out
}

func (b webBackend) Scheduler() webui.Scheduler {
	r := b.r
	r.mu.Lock()
	defer r.mu.Unlock()
	capacity, used := r.core.Capacity(), r.core.Used()
	s := webui.Scheduler{Policy: r.cfg.Policy, PAltruism: r.core.PAltruism(), LeftoverOrder: r.cfg.LeftoverOrder.String(),
		LeftoverCap: r.cfg.LeftoverCap, Recall: r.cfg.Recall, PromiseSlack: r.cfg.PromiseSlack, ShareGrowth: r.cfg.ShareGrowth, Capacity: capacity, Used: used, Leftover: capacity.Sub(used).ClampZero(),
		Placements: r.timeline.placements.cluster}
	queues := map[string]*webui.QueueShare{}
	overrides := r.core.QueuePAltruism()
	for name, w := range r.cfg.Queues {
		path, _, _ := r.coreQueue(name)
		p, override := overrides[path]
		if !override {
			p = r.core.PAltruism()
		}
		queues[name] = &webui.QueueShare{Name: name, Weight: w, PAltruism: p, Override: override}
	}
	for _, a := range r.appOrder {
		if a.done() {
			continue
		}
		share, _ := r.core.Share(a.id)
		usage, _ := r.core.Usage(a.id)
		// The demand the core schedules by: what the adapter made of the
		// AM's message.
		demand, _ := r.core.Demand(a.id)
		as := webui.AppShare{ID: rpc.AppIDString(a.yid), Name: a.ctx.GetApplicationName(), Queue: a.queue, User: a.user,
			Share: share, DominantShare: share.DominantShare(capacity), Usage: usage, DominantUsage: usage.DominantShare(capacity),
			RemainingWork: a.work, Demand: demand, Placements: r.timeline.placements.app(a.id)}
		for k, n := range a.asks {
			as.Pending = as.Pending.Add(k.demand.Scale(float64(n)))
			if k.kind == altruism.Altruistic {
				as.PendingAltruistic += n
			} else {
				as.PendingDefault += n
			}
		}
		as.Running = len(a.live)
		as.Promise, _ = r.core.Promise(a.id)
		s.Apps = append(s.Apps, as)
		if q := queues[a.queue]; q != nil {
			q.Usage = q.Usage.Add(usage)
			q.Apps++
		}
	}
	if r.tree != nil {
		s.Queues = r.treeShares(queues)
		return s
	}
	for _, name := range slices.Sorted(maps.Keys(queues)) {
		s.Queues = append(s.Queues, *queues[name])
	}
	return s
}

// treeShares lists the queue tree for the web: every queue, parents
// first, with the core's shares and the tree's settings; leaves carry
// their P(Altruism) from leaves (by the names apps give). Callers hold mu.
func (r *RM) treeShares(leaves map[string]*webui.QueueShare) []webui.QueueShare {
	var out []webui.QueueShare
	for _, v := range r.core.Queues() {
		q := r.tree.Find(v.Name)
		if q == nil {
			continue
		}
		qs := webui.QueueShare{Name: q.ShortName(), Path: v.Name, Parent: v.Parent, Leaf: v.Leaf, Weight: q.Weight,
			Usage: v.Usage, Apps: v.Apps, Share: v.Share, Min: v.Min, Max: v.Max, Demand: v.Demand,
			MaxRunningApps: q.MaxRunningApps, Policy: q.Policy, SubmitACL: q.SubmitACL.String(), AdminACL: q.AdminACL.String(),
			UserLimitFactor: q.UserLimitFactor}
		if r.labels.Enabled {
			qs.NodeLabels, qs.DefaultNodeLabel = queueLabels(q), r.core.QueueDefaultLabel(v.Name)
		}
		if v.Leaf {
			if l := leaves[appQueueName(r.tree, q)]; l != nil {
				qs.PAltruism, qs.Override = l.PAltruism, l.Override
			}
		}
		if v.Parent != "" || v.Name == "root" {
			out = append(out, qs)
		}
	}
	return out
}

func (b webBackend) SetAltruism(ctx context.Context, set webui.AltruismSet, who string) error {
	r := b.r
	if user := caller(ctx); !r.isAdmin(user) {
		return rpc.Errorf(rpc.ClassAccessControl, "User %s is not an admin (yarn.admin.acl): only an admin may change P(Altruism)", user)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	queue := set.Queue
	if queue != "" {
		path, _, ok := r.coreQueue(queue)
		if !ok {
			return rpc.Errorf(rpc.ClassYarnException, "queue %q is not in loom.queues (nor a leaf of the scheduler's queue tree)", set.Queue)
		}
		queue = path
	}
	if err := r.step(rm.SetAltruism{P: set.P, Queue: queue, Clear: set.Clear}); err != nil {
		return err
	}
	r.altChanges = append(r.altChanges, webui.AltruismChange{UnixMs: time.Now().UnixMilli(), P: set.P, Who: who,
		Queue: set.Queue, Cleared: set.Clear})
	r.log.Info().Float64("p_altruism", set.P).Str("queue", set.Queue).Bool("clear", set.Clear).Str("who", who).Msg("P(Altruism) changed")
	return nil
}

// RESTWritesEnabled: the key turns them on; so does Kerberos on the web
// port, which knows its callers.
func (b webBackend) RESTWritesEnabled() bool { return b.r.cfg.RESTWrites || b.r.cfg.WebAuth.kerberos() }

func (b webBackend) AltruismChanges() []webui.AltruismChange {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	return slices.Clone(b.r.altChanges)
}

func (b webBackend) Timeline() []webui.Sample {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	return slices.Clone(b.r.timeline.samples)
}

// appNamed finds an app by its id string; the error wraps
// webui.ErrNotFound. Callers hold mu.
func (r *RM) appNamed(id string) (*appRec, error) {
	yid, err := rpc.ParseAppID(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", webui.ErrNotFound, err)
	}
	a, err := r.appByID(yid)
	if err != nil {
		return nil, fmt.Errorf("%w: application %s", webui.ErrNotFound, id)
	}
	return a, nil
}

func (b webBackend) AppTimeline(id string) ([]webui.AppSample, error) {
	r := b.r
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := r.appNamed(id)
	if err != nil {
		return nil, err
	}
	return slices.Clone(r.timeline.apps[a.id]), nil
}

func (b webBackend) AppHistory(id string) (*am.History, error) {
	r := b.r
	r.mu.Lock()
	a, err := r.appNamed(id)
	dir := r.cfg.HistoryDir
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, rpc.AppIDString(a.yid)+".json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has none in %s", webui.ErrNoHistory, id, dir)
	}
	if err != nil {
		return nil, err
	}
	var h am.History
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("the history of %s (%s): %w", id, path, err)
	}
	return &h, nil
}
