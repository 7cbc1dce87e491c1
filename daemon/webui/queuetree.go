package webui

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Hierarchical queues: with a Fair Scheduler allocation file or a
// Capacity Scheduler tree the backend lists every queue with its path
// (QueueShare.Path), and /ws/v1/cluster/scheduler nests them as YARN
// does. Without a tree (no queue has a path) the flat answers of
// cluster.go and schedext.go stand, unchanged.

// queueNode is one queue of the tree, with what the answers count of its
// apps: a parent's counts are its subtree's.
type queueNode struct {
	QueueShare
	parent   *queueNode
	children []*queueNode
	// The scheduler's apps: containers held and asks pending.
	containers, pendingAsks int
	// YARN's apps, by state: running, and not yet running.
	active, waiting int
	// users are a leaf's users, by name.
	users map[string]*dao.QueueUser
}

// leaf says apps run in the queue: the backend says so, and it has no
// children.
func (n *queueNode) leaf() bool { return n.parent != nil && n.Leaf && len(n.children) == 0 }

func (n *queueNode) user(name string) *dao.QueueUser {
	if n.users == nil {
		n.users = map[string]*dao.QueueUser{}
	}
	if n.users[name] == nil {
		n.users[name] = &dao.QueueUser{Username: name}
	}
	return n.users[name]
}

// queueTree is the scheduler's queues as a tree.
type queueTree struct {
	root   *queueNode
	byPath map[string]*queueNode
	// byName are the leaves by their own name; nil for a name two
	// leaves share.
	byName map[string]*queueNode
}

// newQueueTree builds the tree the backend lists; nil when the RM has
// none (no queue has a path). A queue whose parent is not listed hangs
// under root; a tree listed without root gets one, the whole cluster.
func newQueueTree(sched Scheduler) *queueTree {
	if !slices.ContainsFunc(sched.Queues, func(q QueueShare) bool { return q.Path != "" }) {
		return nil
	}
	t := &queueTree{byPath: map[string]*queueNode{}, byName: map[string]*queueNode{}}
	var nodes []*queueNode
	for _, q := range sched.Queues {
		if q.Path == "" || t.byPath[q.Path] != nil {
			continue
		}
		n := &queueNode{QueueShare: q}
		t.byPath[q.Path] = n
		nodes = append(nodes, n)
	}
	t.root = t.byPath["root"]
	if t.root == nil {
		t.root = &queueNode{QueueShare: QueueShare{Name: "root", Path: "root", Weight: 1, Usage: sched.Used, Max: sched.Capacity}}
		t.byPath["root"] = t.root
	}
	for _, n := range nodes {
		if n == t.root {
			continue
		}
		p := t.byPath[n.Parent]
		if p == nil || p == n {
			p = t.root
		}
		n.parent = p
		p.children = append(p.children, n)
	}
	// Only what hangs from root is shown (a loop of parents is not).
	var index func(n *queueNode, depth int)
	index = func(n *queueNode, depth int) {
		if depth > len(nodes) {
			return
		}
		if n.leaf() {
			if _, dup := t.byName[n.Name]; dup {
				t.byName[n.Name] = nil
			} else {
				t.byName[n.Name] = n
			}
		}
		for _, ch := range n.children {
			index(ch, depth+1)
		}
	}
	index(t.root, 0)
	return t
}

// leafOf is the leaf an app's queue names: its full path (the Fair
// Scheduler's "root.eng.etl"), its path below root ("eng.etl") or its
// own name (the Capacity Scheduler's "etl"); nil for none.
func (t *queueTree) leafOf(queue string) *queueNode {
	for _, p := range []string{queue, "root." + queue} {
		if n := t.byPath[p]; n != nil && n.leaf() {
			return n
		}
	}
	return t.byName[queue]
}

// path is the full path of an app's queue as YARN's activities and
// health name it: "root." and the name without a tree; with one its
// leaf's path, or the name when it is a path already.
func (t *queueTree) path(queue string) string {
	if t == nil {
		return "root." + queue
	}
	if n := t.leafOf(queue); n != nil {
		return n.Path
	}
	if queue == "root" || strings.HasPrefix(queue, "root.") {
		return queue
	}
	return "root." + queue
}

// count reads the scheduler's apps (containers, asks pending, each
// user's usage) and YARN's app reports anywhere in the queue answer
// (running and waiting apps) into each app's leaf and its parents.
func (t *queueTree) count(sched Scheduler, resp *pb.GetQueueInfoResponseProto) {
	for _, a := range sched.Apps {
		leaf := t.leafOf(a.Queue)
		if leaf == nil {
			continue
		}
		u, r := leaf.user(a.User), resource(a.Usage)
		u.ResourcesUsed = dao.Resource{Memory: u.ResourcesUsed.Memory + r.Memory, VCores: u.ResourcesUsed.VCores + r.VCores}
		for n := leaf; n != nil; n = n.parent {
			n.containers += a.Running
			n.pendingAsks += a.PendingDefault + a.PendingAltruistic
		}
	}
	seen := map[string]bool{}
	var walk func(q *pb.QueueInfoProto, depth int)
	walk = func(q *pb.QueueInfoProto, depth int) {
		if q == nil || depth > 64 {
			return
		}
		for _, a := range q.GetApplications() {
			id := rpc.AppIDString(a.GetApplicationId())
			leaf := t.leafOf(a.GetQueue())
			if seen[id] || leaf == nil {
				continue
			}
			seen[id] = true
			var active, waiting int
			switch a.GetYarnApplicationState() {
			case pb.YarnApplicationStateProto_RUNNING:
				active = 1
				leaf.user(a.GetUser()).NumActiveApplications++
			case pb.YarnApplicationStateProto_NEW, pb.YarnApplicationStateProto_NEW_SAVING,
				pb.YarnApplicationStateProto_SUBMITTED, pb.YarnApplicationStateProto_ACCEPTED:
				waiting = 1
				leaf.user(a.GetUser()).NumPendingApplications++
			default:
				continue
			}
			for n := leaf; n != nil; n = n.parent {
				n.active += active
				n.waiting += waiting
			}
		}
		for _, ch := range q.GetChildQueues() {
			walk(ch, depth+1)
		}
	}
	walk(resp.GetQueueInfo(), 0)
}

// maximum is a queue's maximum: the whole cluster when it has none (and
// for root).
func (n *queueNode) maximum(capacity fairness.Vector) fairness.Vector {
	if n.parent == nil || n.Max.IsZero() {
		return capacity
	}
	return n.Max
}

// guarantee is a queue's guarantee; root's is the whole cluster.
func (n *queueNode) guarantee(capacity fairness.Vector) fairness.Vector {
	if n.parent == nil {
		return capacity
	}
	return n.Min
}

// fairTree is the tree in the Fair Scheduler's layout: each queue by its
// full path, its minResources and maxResources its guarantee and
// maximum, fairResources its DRF share now, steadyFairResources its
// parent's steady share split by weight among its siblings (root's is
// the cluster; unlike the Fair Scheduler's, it does not bend to
// minimums and maximums), maxApps its maxRunningApps (2^31-1 when
// unlimited, as the Fair Scheduler writes it).
func fairTree(n *queueNode, sched Scheduler, steady fairness.Vector) dao.FairQueue {
	capacity := sched.Capacity
	policy := n.Policy
	if policy == "" {
		policy = sched.Policy
	}
	maxApps := math.MaxInt32
	if n.MaxRunningApps > 0 {
		maxApps = n.MaxRunningApps
	}
	weight := finite(n.Weight)
	if n.parent == nil && weight <= 0 {
		weight = 1
	}
	f := dao.FairQueue{QueueName: n.Path, Weight: weight, SchedulingPolicy: policy, MaxApps: maxApps,
		MinResources: resource(n.Min), MaxResources: resource(n.maximum(capacity)),
		UsedResources: resource(n.Usage), SteadyFairResources: resource(steady), FairResources: resource(n.Share),
		DemandResources: resource(n.Demand), ClusterResources: resource(capacity),
		AllocatedContainers: n.containers, PendingContainers: n.pendingAsks}
	if n.leaf() {
		f.Type = "fairSchedulerLeafQueueInfo"
		active, waiting := n.active, n.waiting
		f.NumActiveApps, f.NumPendingApps = &active, &waiting
		return f
	}
	if len(n.children) == 0 {
		return f
	}
	var total float64
	for _, ch := range n.children {
		total += max(0, finite(ch.Weight))
	}
	f.ChildQueues = &dao.QueueList{Queue: make([]dao.FairQueue, 0, len(n.children))}
	for _, ch := range n.children {
		var s fairness.Vector
		if total > 0 {
			s = steady.Scale(max(0, finite(ch.Weight)) / total)
		}
		f.ChildQueues.Queue = append(f.ChildQueues.Queue, fairTree(ch, sched, s))
	}
	return f
}

// memPct is 100 x part / whole by memory, the Capacity Scheduler's
// default resource calculator's measure; 0 when whole has no memory.
func memPct(part, whole fairness.Vector) float64 {
	return finite(100 * part[fairness.Memory] / whole[fairness.Memory])
}

// capacityTree is a queue and its subtree in the Capacity Scheduler's
// layout. The percentages are by memory, as the Capacity Scheduler's
// default resource calculator (DefaultResourceCalculator) computes them:
//
//   - capacity: the queue's guarantee (Min) over its parent's (root's is
//     the cluster), absoluteCapacity its guarantee over the cluster;
//   - maxCapacity: its maximum (Max) over its parent's, absoluteMaxCapacity
//     its maximum over the cluster;
//   - usedCapacity: what it holds (Usage) over its guarantee (0 without
//     one, as YARN), absoluteUsedCapacity what it holds over the cluster.
//
// A parent's numApplications and resourcesUsed are its subtree's. A
// leaf's maxApplications (and the other limits on apps) is its
// maxRunningApps, YARN's default 10000 when unlimited.
func capacityTree(n *queueNode, sched Scheduler) dao.CapacityQueue {
	capacity := sched.Capacity
	parent := n.parent
	q := dao.CapacityQueue{QueuePath: n.Path, QueueName: n.Name, State: "RUNNING", Weight: finite(n.Weight),
		Capacity:             memPct(n.guarantee(capacity), parent.guarantee(capacity)),
		MaxCapacity:          memPct(n.maximum(capacity), parent.maximum(capacity)),
		AbsoluteCapacity:     memPct(n.guarantee(capacity), capacity),
		AbsoluteMaxCapacity:  memPct(n.maximum(capacity), capacity),
		UsedCapacity:         memPct(n.Usage, n.guarantee(capacity)),
		AbsoluteUsedCapacity: memPct(n.Usage, capacity),
		NumApplications:      n.active + n.waiting, ResourcesUsed: resource(n.Usage),
		NodeLabels: n.NodeLabels, DefaultNodeLabelExpression: n.DefaultNodeLabel}
	q.UsedResources = fmt.Sprintf("<memory:%d, vCores:%d>", q.ResourcesUsed.Memory, q.ResourcesUsed.VCores)
	if n.leaf() {
		q.Type = "capacitySchedulerLeafQueueInfo"
		maxApps := yarnMaxApplications
		if n.MaxRunningApps > 0 {
			maxApps = n.MaxRunningApps
		}
		capacityLeaf(&q, n.active, n.waiting, n.containers, n.pendingAsks, maxApps, n.PAltruism, n.users)
		if n.UserLimitFactor != 0 {
			f := finite(n.UserLimitFactor)
			q.UserLimitFactor = &f
		}
		return q
	}
	for _, ch := range n.children {
		if q.Queues == nil {
			q.Queues = &dao.CapacityQueueList{}
		}
		q.Queues.Queue = append(q.Queues.Queue, capacityTree(ch, sched))
	}
	return q
}

// capacityLeaf fills what only a leaf carries: its apps, containers,
// limits, P(Altruism) and users (by name).
func capacityLeaf(q *dao.CapacityQueue, active, waiting, containers, pending, maxApps int, pAltruism float64,
	users map[string]*dao.QueueUser) {
	limit, factor, zero := 100, 1.0, 0
	p := finite(pAltruism)
	q.NumActiveApplications, q.NumPendingApplications = &active, &waiting
	q.NumContainers, q.AllocatedContainers, q.PendingContainers, q.ReservedContainers = &containers, &containers, &pending, &zero
	q.MaxApplications, q.MaxApplicationsPerUser, q.MaxActiveApplications, q.MaxActiveApplicationsPerUser = &maxApps, &maxApps, &maxApps, &maxApps
	q.UserLimit, q.UserLimitFactor, q.PAltruism = &limit, &factor, &p
	q.Users = &dao.UserList{User: []dao.QueueUser{}}
	for _, name := range sortedKeys(users) {
		q.Users.User = append(q.Users.User, *users[name])
	}
}

// appQueue is the name apps, and overrides of P(Altruism), know a queue
// by: without a tree its Name; with one its full path under the Fair
// Scheduler's layout, its own name under the Capacity Scheduler's.
func (s *server) appQueue(q QueueShare) string {
	if q.Path != "" && s.cfg.SchedulerLayout == LayoutFair {
		return q.Path
	}
	return q.Name
}

// overridable says a queue may carry an override of P(Altruism): every
// queue without a tree, a leaf with one.
func overridable(q QueueShare) bool { return q.Path == "" || q.Leaf }
