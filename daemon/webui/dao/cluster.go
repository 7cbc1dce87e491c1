package dao

// ClusterInfoResponse is /ws/v1/cluster and /ws/v1/cluster/info.
type ClusterInfoResponse struct {
	ClusterInfo ClusterInfo `json:"clusterInfo" xml:"clusterInfo"`
}

// ClusterInfo is the ResourceManager's identity.
type ClusterInfo struct {
	ID                            int64  `json:"id" xml:"id"`
	StartedOn                     int64  `json:"startedOn" xml:"startedOn"`
	State                         string `json:"state" xml:"state"`
	HAState                       string `json:"haState" xml:"haState"`
	ResourceManagerVersion        string `json:"resourceManagerVersion" xml:"resourceManagerVersion"`
	ResourceManagerBuildVersion   string `json:"resourceManagerBuildVersion" xml:"resourceManagerBuildVersion"`
	ResourceManagerVersionBuiltOn string `json:"resourceManagerVersionBuiltOn" xml:"resourceManagerVersionBuiltOn"`
	HadoopVersion                 string `json:"hadoopVersion" xml:"hadoopVersion"`
	HadoopBuildVersion            string `json:"hadoopBuildVersion" xml:"hadoopBuildVersion"`
	HadoopVersionBuiltOn          string `json:"hadoopVersionBuiltOn" xml:"hadoopVersionBuiltOn"`
	RMStateStoreName              string `json:"rmStateStoreName" xml:"rmStateStoreName"`
	HAZooKeeperConnectionState    string `json:"haZooKeeperConnectionState" xml:"haZooKeeperConnectionState"`
}

// ClusterMetricsResponse is /ws/v1/cluster/metrics.
type ClusterMetricsResponse struct {
	ClusterMetrics ClusterMetrics `json:"clusterMetrics" xml:"clusterMetrics"`
}

// ClusterMetrics counts apps, resources, containers and nodes.
type ClusterMetrics struct {
	AppsSubmitted int `json:"appsSubmitted" xml:"appsSubmitted"`
	AppsCompleted int `json:"appsCompleted" xml:"appsCompleted"`
	AppsPending   int `json:"appsPending" xml:"appsPending"`
	AppsRunning   int `json:"appsRunning" xml:"appsRunning"`
	AppsFailed    int `json:"appsFailed" xml:"appsFailed"`
	AppsKilled    int `json:"appsKilled" xml:"appsKilled"`

	ReservedMB            int64 `json:"reservedMB" xml:"reservedMB"`
	AvailableMB           int64 `json:"availableMB" xml:"availableMB"`
	AllocatedMB           int64 `json:"allocatedMB" xml:"allocatedMB"`
	PendingMB             int64 `json:"pendingMB" xml:"pendingMB"`
	TotalMB               int64 `json:"totalMB" xml:"totalMB"`
	ReservedVirtualCores  int64 `json:"reservedVirtualCores" xml:"reservedVirtualCores"`
	AvailableVirtualCores int64 `json:"availableVirtualCores" xml:"availableVirtualCores"`
	AllocatedVirtualCores int64 `json:"allocatedVirtualCores" xml:"allocatedVirtualCores"`
	PendingVirtualCores   int64 `json:"pendingVirtualCores" xml:"pendingVirtualCores"`
	TotalVirtualCores     int64 `json:"totalVirtualCores" xml:"totalVirtualCores"`

	ContainersAllocated int `json:"containersAllocated" xml:"containersAllocated"`
	ContainersReserved  int `json:"containersReserved" xml:"containersReserved"`
	ContainersPending   int `json:"containersPending" xml:"containersPending"`

	TotalNodes           int `json:"totalNodes" xml:"totalNodes"`
	ActiveNodes          int `json:"activeNodes" xml:"activeNodes"`
	LostNodes            int `json:"lostNodes" xml:"lostNodes"`
	UnhealthyNodes       int `json:"unhealthyNodes" xml:"unhealthyNodes"`
	DecommissioningNodes int `json:"decommissioningNodes" xml:"decommissioningNodes"`
	DecommissionedNodes  int `json:"decommissionedNodes" xml:"decommissionedNodes"`
	RebootedNodes        int `json:"rebootedNodes" xml:"rebootedNodes"`
	ShutdownNodes        int `json:"shutdownNodes" xml:"shutdownNodes"`
}

// Resource is YARN's ResourceInfo: memory in MB and virtual cores.
type Resource struct {
	Memory int64 `json:"memory" xml:"memory"`
	VCores int64 `json:"vCores" xml:"vCores"`
}

// SchedulerResponse is /ws/v1/cluster/scheduler.
type SchedulerResponse struct {
	Scheduler SchedulerWrapper `json:"scheduler" xml:"scheduler"`
}

// SchedulerWrapper holds the scheduler's info, as YARN nests it.
type SchedulerWrapper struct {
	// SchedulerInfo is a FairSchedulerInfo or a CapacitySchedulerInfo.
	SchedulerInfo any `json:"schedulerInfo" xml:"schedulerInfo"`
}

// FairSchedulerInfo is YARN's fairScheduler shape: Loom's queues are
// weighted, as the Fair Scheduler's are.
type FairSchedulerInfo struct {
	Type      string    `json:"type" xml:"type,attr"` // fairScheduler; an xsi:type attribute in XML
	RootQueue FairQueue `json:"rootQueue" xml:"rootQueue"`
}

// FairQueue is one queue of the tree. Leaf queues carry
// Type "fairSchedulerLeafQueueInfo" and their app counts.
type FairQueue struct {
	Type                string     `json:"type,omitempty" xml:"type,attr,omitempty"`
	QueueName           string     `json:"queueName" xml:"queueName"`
	Weight              float64    `json:"weight" xml:"weight"`
	SchedulingPolicy    string     `json:"schedulingPolicy" xml:"schedulingPolicy"`
	MaxApps             int        `json:"maxApps" xml:"maxApps"`
	MinResources        Resource   `json:"minResources" xml:"minResources"`
	MaxResources        Resource   `json:"maxResources" xml:"maxResources"`
	UsedResources       Resource   `json:"usedResources" xml:"usedResources"`
	SteadyFairResources Resource   `json:"steadyFairResources" xml:"steadyFairResources"`
	FairResources       Resource   `json:"fairResources" xml:"fairResources"`
	DemandResources     Resource   `json:"demandResources" xml:"demandResources"`
	ClusterResources    Resource   `json:"clusterResources" xml:"clusterResources"`
	AllocatedContainers int        `json:"allocatedContainers" xml:"allocatedContainers"`
	PendingContainers   int        `json:"pendingContainers" xml:"pendingContainers"`
	ReservedContainers  int        `json:"reservedContainers" xml:"reservedContainers"`
	Preemptable         bool       `json:"preemptable" xml:"preemptable"`
	NumActiveApps       *int       `json:"numActiveApps,omitempty" xml:"numActiveApps,omitempty"`
	NumPendingApps      *int       `json:"numPendingApps,omitempty" xml:"numPendingApps,omitempty"`
	ChildQueues         *QueueList `json:"childQueues,omitempty" xml:"childQueues,omitempty"`
}

// QueueList is a parent queue's children.
type QueueList struct {
	Queue []FairQueue `json:"queue" xml:"queue"`
}

// NodesResponse is /ws/v1/cluster/nodes. Nodes is nil, as YARN's
// {"nodes":null}, when no node matches.
type NodesResponse struct {
	Nodes *NodeList `json:"nodes" xml:"nodes"`
}

// NodeList is the matching nodes.
type NodeList struct {
	Node []Node `json:"node" xml:"node"`
}

// NodeResponse is /ws/v1/cluster/nodes/{nodeid}.
type NodeResponse struct {
	Node Node `json:"node" xml:"node"`
}

// Node is YARN's NodeInfo.
type Node struct {
	Rack                       string               `json:"rack" xml:"rack"`
	State                      string               `json:"state" xml:"state"`
	ID                         string               `json:"id" xml:"id"`
	NodeHostName               string               `json:"nodeHostName" xml:"nodeHostName"`
	NodeHTTPAddress            string               `json:"nodeHTTPAddress" xml:"nodeHTTPAddress"`
	LastHealthUpdate           int64                `json:"lastHealthUpdate" xml:"lastHealthUpdate"`
	Version                    string               `json:"version" xml:"version"`
	HealthReport               string               `json:"healthReport" xml:"healthReport"`
	NumContainers              int                  `json:"numContainers" xml:"numContainers"`
	UsedMemoryMB               int64                `json:"usedMemoryMB" xml:"usedMemoryMB"`
	AvailMemoryMB              int64                `json:"availMemoryMB" xml:"availMemoryMB"`
	UsedVirtualCores           int64                `json:"usedVirtualCores" xml:"usedVirtualCores"`
	AvailableVirtualCores      int64                `json:"availableVirtualCores" xml:"availableVirtualCores"`
	NumRunningOpportContainers int                  `json:"numRunningOpportContainers" xml:"numRunningOpportContainers"`
	UsedMemoryOpportGB         int64                `json:"usedMemoryOpportGB" xml:"usedMemoryOpportGB"`
	UsedVirtualCoresOpport     int64                `json:"usedVirtualCoresOpport" xml:"usedVirtualCoresOpport"`
	NumQueuedContainers        int                  `json:"numQueuedContainers" xml:"numQueuedContainers"`
	NodeLabels                 []string             `json:"nodeLabels,omitempty" xml:"nodeLabels,omitempty"`
	ResourceUtilization        *ResourceUtilization `json:"resourceUtilization,omitempty" xml:"resourceUtilization,omitempty"`
	UsedResource               Resource             `json:"usedResource" xml:"usedResource"`
	AvailableResource          Resource             `json:"availableResource" xml:"availableResource"`
	TotalResource              Resource             `json:"totalResource" xml:"totalResource"`
}

// ResourceUtilization is what a node's NodeManager last measured: the
// node's memory in use and busy cores, and its containers' share of them.
// CPU is in cores busy.
type ResourceUtilization struct {
	NodePhysicalMemoryMB                 int32   `json:"nodePhysicalMemoryMB" xml:"nodePhysicalMemoryMB"`
	NodeVirtualMemoryMB                  int32   `json:"nodeVirtualMemoryMB" xml:"nodeVirtualMemoryMB"`
	NodeCPUUsage                         float64 `json:"nodeCPUUsage" xml:"nodeCPUUsage"`
	AggregatedContainersPhysicalMemoryMB int32   `json:"aggregatedContainersPhysicalMemoryMB" xml:"aggregatedContainersPhysicalMemoryMB"`
	AggregatedContainersVirtualMemoryMB  int32   `json:"aggregatedContainersVirtualMemoryMB" xml:"aggregatedContainersVirtualMemoryMB"`
	ContainersCPUUsage                   float64 `json:"containersCPUUsage" xml:"containersCPUUsage"`
}
