package webui

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// Scheduler layouts of /ws/v1/cluster/scheduler (Config.SchedulerLayout).
const (
	LayoutCapacity = "capacity"
	LayoutFair     = "fair"
)

// yarnMaxApplications is the CapacityScheduler's default
// yarn.scheduler.capacity.maximum-applications: Loom sets no such limit
// of its own, and reports YARN's.
const yarnMaxApplications = 10000

// capacityScheduler is /ws/v1/cluster/scheduler in the CapacityScheduler's
// layout without a queue tree: root and its leaves, each leaf's capacity
// its weight's part of the total weight.
func (c *call) capacityScheduler(resp *pb.GetQueueInfoResponseProto, sched Scheduler) error {
	capacity := sched.Capacity
	var totalWeight float64
	byName := map[string]QueueShare{}
	for _, q := range sched.Queues {
		byName[q.Name] = q
		totalWeight += q.Weight
	}
	pct := func(used, of fairness.Vector) float64 { return finite(100 * used.DominantShare(of)) }
	root := resp.GetQueueInfo()
	info := dao.CapacitySchedulerInfo{Type: "capacityScheduler", Capacity: 100, MaxCapacity: 100, QueueName: "root",
		UsedCapacity: pct(sched.Used, capacity), Health: c.health()}
	for _, ch := range root.GetChildQueues() {
		if info.Queues == nil {
			info.Queues = &dao.CapacityQueueList{}
		}
		name := ch.GetQueueName()
		share := byName[name]
		q := dao.CapacityQueue{Type: "capacitySchedulerLeafQueueInfo", QueuePath: "root." + name, QueueName: name,
			MaxCapacity: 100, AbsoluteMaxCapacity: 100, State: "RUNNING", Weight: finite(share.Weight),
			ResourcesUsed: resource(share.Usage)}
		if totalWeight > 0 {
			q.Capacity = finite(100 * share.Weight / totalWeight)
		}
		q.AbsoluteCapacity = q.Capacity
		q.AbsoluteUsedCapacity = pct(share.Usage, capacity)
		if q.Capacity > 0 {
			q.UsedCapacity = finite(100 * q.AbsoluteUsedCapacity / q.Capacity)
		}
		q.UsedResources = fmt.Sprintf("<memory:%d, vCores:%d>", q.ResourcesUsed.Memory, q.ResourcesUsed.VCores)
		var active, waiting, containers, pending int
		users := map[string]*dao.QueueUser{}
		user := func(name string) *dao.QueueUser {
			if users[name] == nil {
				users[name] = &dao.QueueUser{Username: name}
			}
			return users[name]
		}
		for _, a := range ch.GetApplications() {
			switch a.GetYarnApplicationState() {
			case pb.YarnApplicationStateProto_RUNNING:
				active++
				user(a.GetUser()).NumActiveApplications++
			case pb.YarnApplicationStateProto_NEW, pb.YarnApplicationStateProto_NEW_SAVING,
				pb.YarnApplicationStateProto_SUBMITTED, pb.YarnApplicationStateProto_ACCEPTED:
				waiting++
				user(a.GetUser()).NumPendingApplications++
			}
		}
		for _, a := range sched.Apps {
			if a.Queue != name {
				continue
			}
			containers += a.Running
			pending += a.PendingDefault + a.PendingAltruistic
			u := user(a.User)
			u.ResourcesUsed = dao.Resource{Memory: u.ResourcesUsed.Memory + resource(a.Usage).Memory,
				VCores: u.ResourcesUsed.VCores + resource(a.Usage).VCores}
		}
		q.NumApplications = active + waiting
		capacityLeaf(&q, active, waiting, containers, pending, yarnMaxApplications, share.PAltruism, users)
		info.Queues.Queue = append(info.Queues.Queue, q)
	}
	return c.json(200, dao.SchedulerResponse{Scheduler: dao.SchedulerWrapper{SchedulerInfo: info}})
}

// capacitySchedulerTree is /ws/v1/cluster/scheduler in the
// CapacityScheduler's layout for a queue tree: root, then each queue
// nested under its parent (see capacityTree for the percentages).
func (c *call) capacitySchedulerTree(t *queueTree, sched Scheduler) error {
	info := dao.CapacitySchedulerInfo{Type: "capacityScheduler", Capacity: 100, MaxCapacity: 100, QueueName: "root",
		UsedCapacity: memPct(t.root.Usage, sched.Capacity), Health: c.health()}
	for _, ch := range t.root.children {
		if info.Queues == nil {
			info.Queues = &dao.CapacityQueueList{}
		}
		info.Queues.Queue = append(info.Queues.Queue, capacityTree(ch, sched))
	}
	return c.json(200, dao.SchedulerResponse{Scheduler: dao.SchedulerWrapper{SchedulerInfo: info}})
}

// health is the CapacityScheduler's health: its last allocation from the
// scheduler's grants; Loom neither reserves nor preempts.
func (c *call) health() dao.CapacitySchedHealth {
	grants := c.s.b.RecentGrants()
	t := newQueueTree(c.s.b.Scheduler())
	h := dao.CapacitySchedHealth{OperationsInfo: []dao.SchedOperation{}, LastRunDetails: []dao.SchedRunDetail{}}
	last := dao.SchedOperation{Operation: "last-allocation", NodeID: "N/A", ContainerID: "N/A", Queue: "N/A"}
	var count int64
	var moved fairness.Vector
	if n := len(grants); n > 0 {
		g := grants[n-1]
		h.LastRun = g.UnixMs
		last = dao.SchedOperation{Operation: "last-allocation", NodeID: g.Node, ContainerID: g.Container, Queue: t.path(g.Queue)}
		// The last run is the grants of the last second.
		for _, g := range grants {
			if g.UnixMs > h.LastRun-1000 {
				count++
				moved = moved.Add(g.Resource)
			}
		}
	}
	h.OperationsInfo = append(h.OperationsInfo, last)
	for _, op := range []string{"last-release", "last-preemption", "last-reservation"} {
		h.OperationsInfo = append(h.OperationsInfo, dao.SchedOperation{Operation: op, NodeID: "N/A", ContainerID: "N/A", Queue: "N/A"})
	}
	h.LastRunDetails = append(h.LastRunDetails, dao.SchedRunDetail{Operation: "releases"},
		dao.SchedRunDetail{Operation: "allocations", Count: count, Resources: resource(moved)},
		dao.SchedRunDetail{Operation: "reservations"})
	return h
}

// activityTime is YARN's dateTime of an activity.
func activityTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("Mon Jan 02 15:04:05 MST 2006")
}

// grantPath is one grant as YARN's activity tree: root, the queue, the
// app, the request that was served, each ACCEPTED or ALLOCATED, with
// why the scheduler placed it.
func grantPath(g Grant, t *queueTree) dao.ActivityNode {
	zero, prio, req := 0, g.Priority, int64(-1)
	why := map[string]string{
		"in-share":   "within the app's DRF share",
		"over-share": "beyond the app's DRF share, from capacity no app below its share could use",
		"leftover":   "from the leftover after every app's share",
	}[g.Phase]
	if why == "" {
		why = g.Phase
	}
	request := dao.ActivityNode{Name: fmt.Sprintf("request_%d_-1", g.Priority), RequestPriority: &prio, AllocationRequestID: &req,
		AllocationState: "ALLOCATED", NodeID: g.Node, ContainerID: g.Container,
		Diagnostic: fmt.Sprintf("%s ask, %s", g.Kind, resourceString(g.Resource))}
	app := dao.ActivityNode{Name: g.App, AppPriority: &zero, AllocationState: "ALLOCATED",
		Diagnostic: fmt.Sprintf("%s ask served %s", g.Kind, why), Children: []dao.ActivityNode{request}}
	queue := dao.ActivityNode{Name: t.path(g.Queue), AllocationState: "ACCEPTED", Diagnostic: "", Children: []dao.ActivityNode{app}}
	return dao.ActivityNode{Name: "root", AllocationState: "ACCEPTED", Diagnostic: "", Children: []dao.ActivityNode{queue}}
}

func resourceString(v fairness.Vector) string {
	r := resource(v)
	return fmt.Sprintf("<memory:%d, vCores:%d>", r.Memory, r.VCores)
}

// getActivities is the scheduler's latest allocation (on nodeid when
// given): every container it placed there in that round. YARN records
// the next allocation after the call; Loom keeps the last ones, so the
// answer is at once.
func getActivities(c *call) error {
	q := c.r.URL.Query()
	node := q.Get("nodeid")
	if gb := q.Get("groupBy"); gb != "" && !strings.EqualFold(gb, "diagnostic") {
		return badRequest("Got invalid groupBy: %s, valid groupBy types: [DIAGNOSTIC]", gb)
	}
	grants := c.s.b.RecentGrants()
	t := newQueueTree(c.s.b.Scheduler())
	now := c.s.now().UnixMilli()
	// The latest round: the newest grant's node and time.
	i := len(grants) - 1
	for i >= 0 && node != "" && grants[i].Node != node {
		i--
	}
	if i < 0 {
		out := dao.Activities{NodeID: node, Timestamp: now, DateTime: activityTime(now),
			Diagnostic: "waiting for display"}
		if node != "" && !slices.ContainsFunc(c.nodeIDs(), func(id string) bool { return id == node }) {
			return badRequest("Cannot find node or device with id %s", node)
		}
		return c.json(200, dao.ActivitiesResponse{Activities: out})
	}
	last := grants[i]
	out := dao.Activities{NodeID: last.Node, Timestamp: last.UnixMs, DateTime: activityTime(last.UnixMs)}
	for _, g := range grants {
		if g.Node == last.Node && g.UnixMs == last.UnixMs {
			out.Allocations = append(out.Allocations, dao.NodeAllocation{Partition: "", UpdatedContainerID: g.Container,
				FinalAllocationState: "ALLOCATED", Root: grantPath(g, t)})
		}
	}
	return c.json(200, dao.ActivitiesResponse{Activities: out})
}

// nodeIDs are the cluster's nodes' ids.
func (c *call) nodeIDs() []string {
	resp, err := c.s.b.GetClusterNodes(c.ctx(), &pb.GetClusterNodesRequestProto{NodeStates: allNodeStates()})
	if err != nil {
		return nil
	}
	var ids []string
	for _, n := range resp.GetNodeReports() {
		ids = append(ids, nodeIDString(n.GetNodeId()))
	}
	return ids
}

// getAppActivities is one app's last allocations, newest first (at most
// maxTime seconds old when given, at most limit of them).
func getAppActivities(c *call) error {
	id := c.vars()["appid"]
	appID, err := rpc.ParseAppID(id)
	if err != nil {
		return badRequest("Invalid ApplicationId: %s", id)
	}
	// The app must exist, and the caller may see it as through the client
	// protocol.
	if _, err := c.s.b.GetApplicationReport(c.ctx(), &pb.GetApplicationReportRequestProto{ApplicationId: appID}); err != nil {
		return err
	}
	limit := math.MaxInt
	if l := c.r.URL.Query().Get("limit"); l != "" {
		var n int
		if _, err := fmt.Sscanf(l, "%d", &n); err != nil || n <= 0 {
			return badRequest("limit must be a positive integer: %q", l)
		}
		limit = n
	}
	grants := c.s.b.RecentGrants()
	t := newQueueTree(c.s.b.Scheduler())
	out := dao.AppActivities{ApplicationID: id}
	for i := len(grants) - 1; i >= 0 && len(out.Allocations) < limit; i-- {
		g := grants[i]
		if g.App != id {
			continue
		}
		path := grantPath(g, t).Children[0].Children[0]
		out.Allocations = append(out.Allocations, dao.AppAllocation{NodeID: g.Node, Timestamp: g.UnixMs,
			DateTime: activityTime(g.UnixMs), QueueName: t.path(g.Queue), AllocationState: "ALLOCATED",
			Diagnostic: path.Diagnostic, Children: path.Children})
	}
	if len(out.Allocations) == 0 {
		out.Diagnostic = "waiting for display"
	}
	return c.json(200, dao.AppActivitiesResponse{AppActivities: out})
}

// getSchedulerConf is the scheduler's configuration in effect.
func getSchedulerConf(c *call) error {
	props := []dao.ConfProperty{}
	if c.s.cfg.SchedulerConf != nil {
		props = append(props, c.s.cfg.SchedulerConf()...)
	}
	return c.json(200, dao.SchedConfResponse{Configuration: dao.SchedConf{Property: props}})
}

// updateSchedulerConf refuses YARN's scheduler-configuration mutation,
// as YARN does for a scheduler whose configuration is not mutable, and
// says what Loom changes live instead.
func updateSchedulerConf(c *call) error {
	return badRequest("Configuration change only supported by MutableConfScheduler. Loom's scheduler is configured from " +
		"yarn-site.xml; what it changes live is P(Altruism), for the cluster or a queue: PUT /ws/v1/loom/scheduler/altruism")
}
