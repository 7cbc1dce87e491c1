package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/internal/queueconf"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"

	"google.golang.org/protobuf/proto"
)

// Queue trees: a Fair Scheduler's allocation file, when the scheduler
// class is the FairScheduler and the file exists, or a Capacity
// Scheduler's tree (capacity-scheduler.xml), when loom.queues is not set.
// The RM hands the tree to the core (DRF down it, guarantees, maxima),
// places apps by its rules, checks its submit ACLs, and reloads the file
// when it changes, as the Fair Scheduler does every 10 seconds.

const (
	keyFairAllocFile  = "yarn.scheduler.fair.allocation.file"
	keySchedulingWait = "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms"
)

// loadQueueTree reads the tree the configuration names, if any, and the
// file to watch for changes ("" for none).
func loadQueueTree(c *hadoopconf.Conf) (*queueconf.Tree, string, error) {
	_, class := schedulerLayout(c)
	listed := c.Source("loom.queues") != "default"
	if strings.HasSuffix(class, ".FairScheduler") {
		file, _ := c.String(keyFairAllocFile)
		if file == "" {
			file = "fair-scheduler.xml"
		}
		if !filepath.IsAbs(file) && c.ConfDir() != "" {
			file = filepath.Join(c.ConfDir(), file)
		}
		if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
			if c.Source(keyFairAllocFile) != "default" {
				return nil, "", c.Errorf(keyFairAllocFile, "the allocation file %s does not exist", file)
			}
			return nil, "", nil // the Fair Scheduler's one default queue
		}
		if listed {
			return nil, "", c.Errorf("loom.queues", "set either loom.queues or a Fair Scheduler allocation file (%s), not both", file)
		}
		t, err := queueconf.ReadFairFile(file)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", keyFairAllocFile, err)
		}
		if _, _, err := defaultPlacement(c, t); err != nil {
			return nil, "", err
		}
		return t, file, nil
	}
	if _, set := c.Raw(keyCapacityRoot + ".queues"); set && !listed {
		t, err := queueconf.FromCapacity(c)
		if err != nil {
			return nil, "", err
		}
		file := ""
		if src := c.Source(keyCapacityRoot + ".queues"); filepath.IsAbs(src) {
			file = src
		}
		return t, file, nil
	}
	return nil, "", nil
}

// defaultPlacement gives a file without a queuePlacementPolicy the Fair
// Scheduler's rules from yarn-site.xml: the user's own queue when
// yarn.scheduler.fair.user-as-default-queue (true), creating queues when
// yarn.scheduler.fair.allow-undeclared-pools (true).
func defaultPlacement(c *hadoopconf.Conf, t *queueconf.Tree) (userQueue, undeclared bool, err error) {
	flag := func(key string) (bool, error) {
		if _, set := c.Raw(key); !set {
			return true, nil
		}
		return c.Bool(key)
	}
	if userQueue, err = flag("yarn.scheduler.fair.user-as-default-queue"); err != nil {
		return
	}
	if undeclared, err = flag("yarn.scheduler.fair.allow-undeclared-pools"); err != nil {
		return
	}
	if t.PlacementDefaulted {
		t.Placement = queueconf.DefaultPlacement(userQueue, undeclared)
	}
	return
}

// CoreQueues turns a tree into the core's queues, parents first (the
// simulator's --queues uses it too, so both feed the core alike).
func CoreQueues(t *queueconf.Tree) (rm.QueuesSet, error) { return coreQueues(t, 0) }

// coreQueues is CoreQueues with a Capacity Scheduler leaf's starvation
// timeout for preemption (0 for none).
func coreQueues(t *queueconf.Tree, csStarve time.Duration) (rm.QueuesSet, error) {
	set := rm.QueuesSet{UserMaxApps: t.UserMaxApps, UserMaxAppsDefault: t.UserMaxAppsDefault}
	var out []rm.QueueConf
	var err error
	t.Walk(func(q *queueconf.Queue) {
		if err != nil || q.Parent == nil {
			return
		}
		qc := rm.QueueConf{Name: q.Name, Weight: q.Weight, Labels: q.Labels, LabelWeight: q.LabelCapacity, DefaultLabel: q.DefaultLabel}
		if t.Kind != queueconf.KindCapacity {
			// The Fair Scheduler's maxRunningApps holds apps back; the
			// Capacity Scheduler's maximum-applications refuses them at
			// submission (placeApp).
			qc.MaxRunningApps = q.MaxRunningApps
		}
		if t.Kind == queueconf.KindCapacity {
			qc.Preemption = rm.PreemptionTimes{MinShareTimeout: csStarve}
			if len(q.Children) == 0 && q.UserLimitFactor > 0 {
				// -1 turns the limit off, as in YARN.
				qc.UserLimitFactor = q.UserLimitFactor
			}
		} else {
			qc.Preemption = preemptionTimes(q)
			// A Fair Scheduler leaf says fifo only when asked to (its
			// default is fair). A Capacity Scheduler leaf orders its apps
			// fifo by default; Loom keeps DRF among them there, the
			// fairness a team moving to Loom comes for.
			qc.FIFO = q.Policy == queueconf.PolicyFIFO && len(q.Children) == 0
		}
		if qc.Weight <= 0 {
			// A Capacity Scheduler queue of capacity 0 runs on idle
			// capacity only: the least weight the core takes.
			qc.Weight = 1e-5
		}
		for _, v := range []struct {
			dst  *fairness.Vector
			src  map[string]float64
			what string
		}{{&qc.Min, q.Min.Abs, "guarantee"}, {&qc.MinFrac, q.Min.Frac, "guarantee"},
			{&qc.Max, q.Max.Abs, "maximum"}, {&qc.MaxFrac, q.Max.Frac, "maximum"}} {
			if len(v.src) == 0 {
				continue
			}
			if *v.dst, err = fairness.FromMap(v.src); err != nil {
				err = fmt.Errorf("queue %s: its %s: %w", q.Name, v.what, err)
				return
			}
		}
		out = append(out, qc)
	})
	set.Queues = out
	return set, err
}

// appQueueName is how an app's queue is shown: the Fair Scheduler's full
// path, the Capacity Scheduler's leaf name.
func appQueueName(t *queueconf.Tree, q *queueconf.Queue) string {
	if t.Kind == "capacity" {
		return q.Name[strings.LastIndexByte(q.Name, '.')+1:]
	}
	return q.Name
}

// leafNames are the queues apps may name, as cfg.Queues keeps them: each
// leaf by the name its scheduler shows, with weight 1 (an app's own).
func leafNames(t *queueconf.Tree) map[string]float64 {
	m := map[string]float64{}
	for _, q := range t.Leaves() {
		m[appQueueName(t, q)] = 1
	}
	return m
}

// coreQueue is the queue the core knows an app's queue by, and the app's
// weight: with a tree the leaf's full path and 1 (the tree weighs the
// queues), else the name and the queue's weight.
func (r *RM) coreQueue(name string) (string, float64, bool) {
	if r.tree == nil {
		w, ok := r.cfg.Queues[name]
		return name, w, ok
	}
	q := r.tree.Find(name)
	if q == nil || len(q.Children) > 0 {
		return "", 0, false
	}
	return q.Name, 1, true
}

// placeApp finds the leaf queue a new app goes to, by the tree's rules,
// creating it when a rule says so, and checks the user may submit there.
// Callers hold mu.
func (r *RM) placeApp(requested, user, appID string) (string, error) {
	if requested == "default" {
		requested = ""
	}
	groups := r.userGroups(user)
	path, created, err := r.tree.Place(requested, user, groups)
	if err != nil {
		return "", rpc.Errorf(rpc.ClassYarnException, "Application %s submitted by user %s could not be placed in a queue: %v", appID, user, err)
	}
	if created {
		if err := r.addLeaf(path); err != nil {
			return "", rpc.Errorf(rpc.ClassYarnException, "Application %s submitted by user %s: queue %s cannot be created: %v", appID, user, path, err)
		}
	}
	q := r.tree.Find(path)
	if q == nil || len(q.Children) > 0 {
		return "", rpc.Errorf(rpc.ClassYarnException, "Application %s submitted by user %s to a queue that is not a leaf queue: %s", appID, user, path)
	}
	if r.cfg.ACLEnabled && !q.MaySubmit(user, groups) && !q.MayAdminister(user, groups) {
		return "", rpc.Errorf(rpc.ClassAccessControl, "User %s does not have permission to submit %s to queue %s", user, appID, appQueueName(r.tree, q))
	}
	if r.tree.Kind == queueconf.KindCapacity && q.MaxRunningApps > 0 {
		// The Capacity Scheduler's maximum-applications counts the
		// queue's apps not finished, and refuses one more.
		n := 0
		for _, a := range r.appOrder {
			if !a.done() && a.queue == appQueueName(r.tree, q) {
				n++
			}
		}
		if n >= q.MaxRunningApps {
			return "", rpc.Errorf(rpc.ClassYarnException, "Queue %s already has %d applications, cannot accept submission of application: %s", q.Name, n, appID)
		}
	}
	return appQueueName(r.tree, q), nil
}

func (r *RM) userGroups(user string) []string {
	if r.cfg.Groups == nil {
		return nil
	}
	return r.cfg.Groups(user)
}

// addLeaf adds a leaf a placement rule created (its parents too), with
// the Fair Scheduler's defaults for a queue the file does not name.
func (r *RM) addLeaf(path string) error {
	var parent, first *queueconf.Queue
	parts := strings.Split(path, ".")
	for i := 1; i <= len(parts); i++ {
		name := strings.Join(parts[:i], ".")
		q := r.tree.Find(name)
		if q != nil && q.Name == name {
			parent = q
			continue
		}
		if parent == nil {
			return fmt.Errorf("%s is not under root", path)
		}
		q = &queueconf.Queue{Name: name, Parent: parent, Weight: 1, Policy: parent.Policy}
		parent.Children = append(parent.Children, q)
		if first == nil {
			first = q
		}
		parent = q
	}
	if err := r.applyTree(r.tree); err != nil {
		// Nothing changes: the queues added here go again.
		if first != nil {
			p := first.Parent
			p.Children = p.Children[:len(p.Children)-1]
		}
		return err
	}
	return nil
}

// applyTree hands a (new or changed) tree to the core; the core refuses a
// tree that would strand a running app, and then nothing changes.
func (r *RM) applyTree(t *queueconf.Tree) error {
	set, err := coreQueues(t, r.cfg.CSStarve)
	if err != nil {
		return err
	}
	if err := r.step(set); err != nil {
		return err
	}
	r.tree = t
	r.cfg.Queues = leafNames(t)
	return nil
}

// watchQueueFile reloads the tree's file when it changes, until stop.
// A broken file is logged and the tree in force stays, as the Fair
// Scheduler keeps its last good allocations.
func (r *RM) watchQueueFile(stop <-chan struct{}, every time.Duration) {
	if r.treeFile == "" {
		return
	}
	last := modTime(r.treeFile)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		m := modTime(r.treeFile)
		if m.Equal(last) {
			continue
		}
		last = m
		if err := r.reloadQueues(); err != nil {
			r.log.Error().Err(err).Str("file", r.treeFile).Msg("the queue file changed but cannot be used; the queues stay as they were")
			continue
		}
		r.log.Info().Str("file", r.treeFile).Msg("queues reloaded")
	}
}

func modTime(file string) time.Time {
	st, err := os.Stat(file)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// reloadQueues reads the tree's file again and applies it.
func (r *RM) reloadQueues() error {
	var t *queueconf.Tree
	var err error
	if t, err = ReadQueueFile(r.treeFile); err != nil {
		return err
	}
	if t.PlacementDefaulted {
		t.Placement = queueconf.DefaultPlacement(r.cfg.FairUserQueue, r.cfg.FairUndeclared)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applyTree(t)
}

// coreQueuePAltruism keys the queues' P(Altruism) overrides by the
// core's queue names.
func (r *RM) coreQueuePAltruism(byName map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(byName))
	for name, p := range byName {
		path, _, _ := r.coreQueue(name)
		if path == "" {
			path = name
		}
		out[path] = p
	}
	return out
}

// shownQueue is the name a queue the core knows is shown by.
func (r *RM) shownQueue(corePath string) string {
	if r.tree == nil {
		return corePath
	}
	if q := r.tree.Find(corePath); q != nil {
		return appQueueName(r.tree, q)
	}
	return corePath
}

// treeQueueInfo answers getQueueInfo from the tree: the named queue (by
// full path, path under root, or a Capacity Scheduler leaf's name), its
// children when asked (all the way down when recursive), its apps when
// asked. Capacity is the queue's weight among its siblings' (a Capacity
// Scheduler's capacity, of the parent), MaximumCapacity its maximum and
// CurrentCapacity its usage, both as dominant shares of the cluster
// (the Fair Scheduler reports them of the cluster too). Callers hold mu.
func (r *RM) treeQueueInfo(req *pb.GetQueueInfoRequestProto) (*pb.GetQueueInfoResponseProto, error) {
	name := req.GetQueueName()
	if name == "" {
		name = "root"
	}
	q := r.tree.Find(name)
	if q == nil {
		return nil, rpc.Errorf("java.io.IOException", "Unknown queue: %s", req.GetQueueName())
	}
	views := map[string]rm.QueueView{}
	for _, v := range r.core.Queues() {
		views[v.Name] = v
	}
	capacity := r.core.Capacity()
	var info func(q *queueconf.Queue, children bool) *pb.QueueInfoProto
	info = func(q *queueconf.Queue, children bool) *pb.QueueInfoProto {
		v := views[q.Name]
		share := 1.0
		if q.Parent != nil {
			var sum float64
			for _, s := range q.Parent.Children {
				sum += s.Weight
			}
			if sum > 0 {
				share = q.Weight / sum
			}
		}
		qi := &pb.QueueInfoProto{QueueName: proto.String(appQueueName(r.tree, q)), QueuePath: proto.String(q.Name),
			Capacity: proto.Float32(float32(share)), MaximumCapacity: proto.Float32(1), CurrentCapacity: proto.Float32(0),
			State: pb.QueueStateProto_Q_RUNNING.Enum()}
		if r.labels.Enabled {
			qi.AccessibleNodeLabels = queueLabels(q)
			if l := r.core.QueueDefaultLabel(q.Name); l != "" {
				qi.DefaultNodeLabelExpression = proto.String(l)
			}
		}
		if !capacity.IsZero() {
			qi.MaximumCapacity = proto.Float32(float32(min(v.Max.DominantShare(capacity), 1)))
			qi.CurrentCapacity = proto.Float32(float32(v.Usage.DominantShare(capacity)))
		}
		if len(q.Children) == 0 && req.GetIncludeApplications() {
			for _, a := range r.appOrder {
				if a.queue == appQueueName(r.tree, q) {
					qi.Applications = append(qi.Applications, r.report(a))
				}
			}
		}
		if children {
			for _, c := range q.Children {
				qi.ChildQueues = append(qi.ChildQueues, info(c, req.GetRecursive()))
			}
		}
		return qi
	}
	return &pb.GetQueueInfoResponseProto{QueueInfo: info(q, req.GetIncludeChildQueues())}, nil
}

// ReadQueueFile reads a queue tree from a Fair Scheduler allocation file
// or a capacity-scheduler.xml, whichever the file is (its root element
// says: <allocations> or <configuration>).
func ReadQueueFile(file string) (*queueconf.Tree, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(string(b), "<configuration") {
		return queueconf.ReadFairFile(file)
	}
	c := hadoopconf.New(nil)
	if err := c.Load(file, strings.NewReader(string(b))); err != nil {
		return nil, err
	}
	return queueconf.FromCapacity(c)
}
