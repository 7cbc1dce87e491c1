package webui

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

func getClusterInfo(c *call) error {
	info := c.s.b.Info()
	zkState := info.HAZKState
	if zkState == "" {
		zkState = noElector
	}
	return c.json(200, dao.ClusterInfoResponse{ClusterInfo: dao.ClusterInfo{
		ID: info.ID, StartedOn: info.StartedOnMs, State: info.State, HAState: info.HAState,
		ResourceManagerVersion: info.Version, ResourceManagerBuildVersion: "loom " + info.Version,
		ResourceManagerVersionBuiltOn: "", HadoopVersion: info.Version, HadoopBuildVersion: "loom " + info.Version,
		HadoopVersionBuiltOn: "", RMStateStoreName: info.StateStore, HAZooKeeperConnectionState: zkState}})
}

// allNodeStates asks for every node: the RPC's empty list means the
// running ones only, while YARN's REST lists every node by default.
func allNodeStates() []pb.NodeStateProto {
	states := make([]pb.NodeStateProto, 0, len(pb.NodeStateProto_name))
	for v := range pb.NodeStateProto_name {
		states = append(states, pb.NodeStateProto(v))
	}
	return states
}

func nodeState(s pb.NodeStateProto) string { return strings.TrimPrefix(s.String(), "NS_") }

func getClusterMetrics(c *call) error {
	ctx := c.ctx()
	cm, err := c.s.b.GetClusterMetrics(ctx, &pb.GetClusterMetricsRequestProto{})
	if err != nil {
		return err
	}
	nodes, err := c.s.b.GetClusterNodes(ctx, &pb.GetClusterNodesRequestProto{NodeStates: allNodeStates()})
	if err != nil {
		return err
	}
	apps, err := c.s.b.GetApplications(ctx, &pb.GetApplicationsRequestProto{})
	if err != nil {
		return err
	}
	m := dao.ClusterMetrics{}
	for _, a := range apps.GetApplications() {
		m.AppsSubmitted++
		switch a.GetYarnApplicationState() {
		case pb.YarnApplicationStateProto_NEW, pb.YarnApplicationStateProto_NEW_SAVING,
			pb.YarnApplicationStateProto_SUBMITTED, pb.YarnApplicationStateProto_ACCEPTED:
			m.AppsPending++
		case pb.YarnApplicationStateProto_RUNNING:
			m.AppsRunning++
		case pb.YarnApplicationStateProto_FINISHED:
			m.AppsCompleted++
		case pb.YarnApplicationStateProto_FAILED:
			m.AppsFailed++
		case pb.YarnApplicationStateProto_KILLED:
			m.AppsKilled++
		}
	}
	for _, n := range nodes.GetNodeReports() {
		switch n.GetNodeState() {
		case pb.NodeStateProto_NS_RUNNING:
			// Only live nodes count towards capacity, as in YARN.
			m.TotalMB += n.GetCapability().GetMemory()
			m.AllocatedMB += n.GetUsed().GetMemory()
			m.TotalVirtualCores += int64(n.GetCapability().GetVirtualCores())
			m.AllocatedVirtualCores += int64(n.GetUsed().GetVirtualCores())
			m.ContainersAllocated += int(n.GetNumContainers())
		case pb.NodeStateProto_NS_DECOMMISSIONING:
			m.DecommissioningNodes++
		case pb.NodeStateProto_NS_SHUTDOWN:
			m.ShutdownNodes++
		}
	}
	m.AvailableMB = max(0, m.TotalMB-m.AllocatedMB)
	m.AvailableVirtualCores = max(0, m.TotalVirtualCores-m.AllocatedVirtualCores)
	y := cm.GetClusterMetrics()
	m.ActiveNodes = int(y.GetNumActiveNms())
	m.LostNodes = int(y.GetNumLostNms())
	m.UnhealthyNodes = int(y.GetNumUnhealthyNms())
	m.DecommissionedNodes = int(y.GetNumDecommissionedNms())
	m.RebootedNodes = int(y.GetNumRebootedNms())
	m.TotalNodes = m.ActiveNodes + m.LostNodes + m.UnhealthyNodes + m.DecommissionedNodes + m.RebootedNodes +
		m.DecommissioningNodes + m.ShutdownNodes
	for _, a := range c.s.b.Scheduler().Apps {
		m.ContainersPending += a.PendingDefault + a.PendingAltruistic
		m.PendingMB += int64(math.Round(a.Pending[fairness.Memory]))
		m.PendingVirtualCores += int64(math.Round(a.Pending[fairness.VCores]))
	}
	return c.json(200, dao.ClusterMetricsResponse{ClusterMetrics: m})
}

// resource is a vector as YARN's ResourceInfo: memory and vcores.
func resource(v fairness.Vector) dao.Resource {
	return dao.Resource{Memory: int64(math.Round(finite(v[fairness.Memory]))),
		VCores: int64(math.Round(finite(v[fairness.VCores])))}
}

func getSchedulerInfo(c *call) error {
	resp, err := c.s.b.GetQueueInfo(c.ctx(), &pb.GetQueueInfoRequestProto{QueueName: proto.String("root"),
		IncludeApplications: proto.Bool(true), IncludeChildQueues: proto.Bool(true), Recursive: proto.Bool(true)})
	if err != nil {
		return err
	}
	sched := c.s.b.Scheduler()
	if t := newQueueTree(sched); t != nil {
		t.count(sched, resp)
		if c.s.cfg.SchedulerLayout != LayoutFair {
			return c.capacitySchedulerTree(t, sched)
		}
		return c.json(200, dao.SchedulerResponse{Scheduler: dao.SchedulerWrapper{
			SchedulerInfo: dao.FairSchedulerInfo{Type: "fairScheduler", RootQueue: fairTree(t.root, sched, sched.Capacity)}}})
	}
	if c.s.cfg.SchedulerLayout != LayoutFair {
		return c.capacityScheduler(resp, sched)
	}
	qs := queueShares{sched: sched, byName: map[string]QueueShare{}}
	for _, q := range sched.Queues {
		qs.byName[q.Name] = q
		qs.totalWeight += q.Weight
	}
	root := qs.info(resp.GetQueueInfo(), "")
	return c.json(200, dao.SchedulerResponse{Scheduler: dao.SchedulerWrapper{
		SchedulerInfo: dao.FairSchedulerInfo{Type: "fairScheduler", RootQueue: root}}})
}

// queueShares joins YARN's queue tree with the scheduler's weights and
// usage.
type queueShares struct {
	sched       Scheduler
	byName      map[string]QueueShare
	totalWeight float64
}

func (qs queueShares) info(q *pb.QueueInfoProto, parent string) dao.FairQueue {
	short := q.GetQueueName()
	path := q.GetQueuePath()
	if path == "" {
		path = short
		if parent != "" {
			path = parent + "." + short
		}
	}
	capacity := qs.sched.Capacity
	f := dao.FairQueue{QueueName: path, Weight: 1, SchedulingPolicy: qs.sched.Policy, MaxApps: math.MaxInt32,
		MaxResources: resource(capacity), ClusterResources: resource(capacity)}
	// A leaf is a queue apps run in; the scheduler names it without
	// "root.".
	name := strings.TrimPrefix(path, "root.")
	var used, fair, demand fairness.Vector
	var allocated, pending int
	for _, a := range qs.sched.Apps {
		if path == "root" || a.Queue == name || strings.HasPrefix(a.Queue, name+".") {
			fair = fair.Add(a.Share)
			demand = demand.Add(a.Demand)
			allocated += a.Running
			pending += a.PendingDefault + a.PendingAltruistic
		}
	}
	f.FairResources, f.DemandResources = resource(fair), resource(demand)
	f.AllocatedContainers, f.PendingContainers = allocated, pending
	if path == "root" {
		used = qs.sched.Used
		f.SteadyFairResources = resource(capacity)
	} else if s, ok := qs.byName[name]; ok {
		used = s.Usage
		f.Weight = finite(s.Weight)
		if qs.totalWeight > 0 {
			f.SteadyFairResources = resource(capacity.Scale(s.Weight / qs.totalWeight))
		}
	}
	f.UsedResources = resource(used)
	if children := q.GetChildQueues(); len(children) > 0 {
		f.ChildQueues = &dao.QueueList{Queue: make([]dao.FairQueue, 0, len(children))}
		for _, ch := range children {
			f.ChildQueues.Queue = append(f.ChildQueues.Queue, qs.info(ch, path))
		}
		return f
	}
	if path == "root" {
		return f
	}
	f.Type = "fairSchedulerLeafQueueInfo"
	var active, waiting int
	for _, a := range q.GetApplications() {
		switch a.GetYarnApplicationState() {
		case pb.YarnApplicationStateProto_RUNNING:
			active++
		case pb.YarnApplicationStateProto_NEW, pb.YarnApplicationStateProto_NEW_SAVING,
			pb.YarnApplicationStateProto_SUBMITTED, pb.YarnApplicationStateProto_ACCEPTED:
			waiting++
		}
	}
	f.NumActiveApps, f.NumPendingApps = &active, &waiting
	return f
}

// nodeIDString is YARN's NodeId.toString(), host:port.
func nodeIDString(id *pb.NodeIdProto) string {
	if id == nil {
		return ""
	}
	return id.GetHost() + ":" + strconv.Itoa(int(id.GetPort()))
}

// noElector is YARN's haZooKeeperConnectionState without RM HA: there
// is no elector's ZooKeeper session to describe.
const noElector = "Could not find leader elector. Verify both HA and automatic failover are enabled."

func nodeInfo(n *pb.NodeReportProto, versions map[string]string) dao.Node {
	used, capab := n.GetUsed(), n.GetCapability()
	d := dao.Node{Rack: n.GetRackName(), State: nodeState(n.GetNodeState()), ID: nodeIDString(n.GetNodeId()),
		NodeHostName: n.GetNodeId().GetHost(), NodeHTTPAddress: n.GetHttpAddress(),
		LastHealthUpdate: n.GetLastHealthReportTime(), HealthReport: n.GetHealthReport(),
		NumContainers: int(n.GetNumContainers()), UsedMemoryMB: used.GetMemory(),
		AvailMemoryMB: max(0, capab.GetMemory()-used.GetMemory()), UsedVirtualCores: int64(used.GetVirtualCores()),
		AvailableVirtualCores: max(0, int64(capab.GetVirtualCores())-int64(used.GetVirtualCores())),
		NodeLabels:            n.GetNodeLabels()}
	d.Version = versions[d.ID]
	if nu, cu := n.GetNodeUtilization(), n.GetContainersUtilization(); nu != nil || cu != nil {
		d.ResourceUtilization = &dao.ResourceUtilization{NodePhysicalMemoryMB: nu.GetPmem(), NodeVirtualMemoryMB: nu.GetVmem(),
			NodeCPUUsage: float64(nu.GetCpu()), AggregatedContainersPhysicalMemoryMB: cu.GetPmem(),
			AggregatedContainersVirtualMemoryMB: cu.GetVmem(), ContainersCPUUsage: float64(cu.GetCpu())}
	}
	d.UsedResource = dao.Resource{Memory: d.UsedMemoryMB, VCores: d.UsedVirtualCores}
	d.AvailableResource = dao.Resource{Memory: d.AvailMemoryMB, VCores: d.AvailableVirtualCores}
	d.TotalResource = dao.Resource{Memory: capab.GetMemory(), VCores: int64(capab.GetVirtualCores())}
	return d
}

// parseNodeStates reads the states query parameter: a comma list of
// YARN's node states, in any case.
func parseNodeStates(values []string) ([]pb.NodeStateProto, error) {
	var states []pb.NodeStateProto
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			st, ok := pb.NodeStateProto_value["NS_"+strings.ToUpper(s)]
			if !ok {
				return nil, badRequest("states: invalid node state %q; valid states are %s", s, nodeStateNames())
			}
			states = append(states, pb.NodeStateProto(st))
		}
	}
	return states, nil
}

func nodeStateNames() string {
	names := make([]string, 0, len(pb.NodeStateProto_name))
	for v := int32(1); v <= int32(len(pb.NodeStateProto_name)); v++ {
		if n, ok := pb.NodeStateProto_name[v]; ok {
			names = append(names, strings.TrimPrefix(n, "NS_"))
		}
	}
	return strings.Join(names, ", ")
}

func getNodes(c *call) error {
	states, err := parseNodeStates(c.r.URL.Query()["states"])
	if err != nil {
		return err
	}
	if len(states) == 0 {
		states = allNodeStates()
	}
	resp, err := c.s.b.GetClusterNodes(c.ctx(), &pb.GetClusterNodesRequestProto{NodeStates: states})
	if err != nil {
		return err
	}
	out := dao.NodesResponse{}
	versions := c.s.b.NodeVersions()
	for _, n := range sortedNodes(resp.GetNodeReports()) {
		if out.Nodes == nil {
			out.Nodes = &dao.NodeList{}
		}
		out.Nodes.Node = append(out.Nodes.Node, nodeInfo(n, versions))
	}
	return c.json(200, out)
}

func getNode(c *call) error {
	id := c.vars()["nodeid"]
	resp, err := c.s.b.GetClusterNodes(c.ctx(), &pb.GetClusterNodesRequestProto{NodeStates: allNodeStates()})
	if err != nil {
		return err
	}
	for _, n := range resp.GetNodeReports() {
		if nodeIDString(n.GetNodeId()) == id {
			return c.json(200, dao.NodeResponse{Node: nodeInfo(n, c.s.b.NodeVersions())})
		}
	}
	return notFound("nodeId, %s, is not found", id)
}

// sortedNodes orders nodes by id, so that answers do not shuffle
// between calls.
func sortedNodes(ns []*pb.NodeReportProto) []*pb.NodeReportProto {
	out := slices.Clone(ns)
	slices.SortFunc(out, func(a, b *pb.NodeReportProto) int {
		return strings.Compare(nodeIDString(a.GetNodeId()), nodeIDString(b.GetNodeId()))
	})
	return out
}
