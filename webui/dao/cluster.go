package dao

// ClusterInfoResponse is /ws/v1/cluster and /ws/v1/cluster/info.
type ClusterInfoResponse struct {
	ClusterInfo ClusterInfo `json:"clusterInfo"`
}

// ClusterInfo is the ResourceManager's identity.
type ClusterInfo struct {
	ID                            int64  `json:"id"`
	StartedOn                     int64  `json:"startedOn"`
	State                         string `json:"state"`
	HAState                       string `json:"haState"`
	ResourceManagerVersion        string `json:"resourceManagerVersion"`
	ResourceManagerBuildVersion   string `json:"resourceManagerBuildVersion"`
	ResourceManagerVersionBuiltOn string `json:"resourceManagerVersionBuiltOn"`
	HadoopVersion                 string `json:"hadoopVersion"`
	HadoopBuildVersion            string `json:"hadoopBuildVersion"`
	HadoopVersionBuiltOn          string `json:"hadoopVersionBuiltOn"`
}

// ClusterMetricsResponse is /ws/v1/cluster/metrics.
type ClusterMetricsResponse struct {
	ClusterMetrics ClusterMetrics `json:"clusterMetrics"`
}

// ClusterMetrics counts apps, resources, containers and nodes.
type ClusterMetrics struct {
	AppsSubmitted int `json:"appsSubmitted"`
	AppsCompleted int `json:"appsCompleted"`
	AppsPending   int `json:"appsPending"`
	AppsRunning   int `json:"appsRunning"`
	AppsFailed    int `json:"appsFailed"`
	AppsKilled    int `json:"appsKilled"`

	ReservedMB            int64 `json:"reservedMB"`
	AvailableMB           int64 `json:"availableMB"`
	AllocatedMB           int64 `json:"allocatedMB"`
	PendingMB             int64 `json:"pendingMB"`
	TotalMB               int64 `json:"totalMB"`
	ReservedVirtualCores  int64 `json:"reservedVirtualCores"`
	AvailableVirtualCores int64 `json:"availableVirtualCores"`
	AllocatedVirtualCores int64 `json:"allocatedVirtualCores"`
	PendingVirtualCores   int64 `json:"pendingVirtualCores"`
	TotalVirtualCores     int64 `json:"totalVirtualCores"`

	ContainersAllocated int `json:"containersAllocated"`
	ContainersReserved  int `json:"containersReserved"`
	ContainersPending   int `json:"containersPending"`

	TotalNodes           int `json:"totalNodes"`
	ActiveNodes          int `json:"activeNodes"`
	LostNodes            int `json:"lostNodes"`
	UnhealthyNodes       int `json:"unhealthyNodes"`
	DecommissioningNodes int `json:"decommissioningNodes"`
	DecommissionedNodes  int `json:"decommissionedNodes"`
	RebootedNodes        int `json:"rebootedNodes"`
	ShutdownNodes        int `json:"shutdownNodes"`
}

// Resource is YARN's ResourceInfo: memory in MB and virtual cores.
type Resource struct {
	Memory int64 `json:"memory"`
	VCores int64 `json:"vCores"`
}

// SchedulerResponse is /ws/v1/cluster/scheduler.
type SchedulerResponse struct {
	Scheduler SchedulerWrapper `json:"scheduler"`
}

// SchedulerWrapper holds the scheduler's info, as YARN nests it.
type SchedulerWrapper struct {
	SchedulerInfo FairSchedulerInfo `json:"schedulerInfo"`
}

// FairSchedulerInfo is YARN's fairScheduler shape: Loom's queues are
// weighted, as the Fair Scheduler's are.
type FairSchedulerInfo struct {
	Type      string    `json:"type"` // fairScheduler
	RootQueue FairQueue `json:"rootQueue"`
}

// FairQueue is one queue of the tree. Leaf queues carry
// Type "fairSchedulerLeafQueueInfo" and their app counts.
type FairQueue struct {
	Type                string     `json:"type,omitempty"`
	QueueName           string     `json:"queueName"`
	Weight              float64    `json:"weight"`
	SchedulingPolicy    string     `json:"schedulingPolicy"`
	MaxApps             int        `json:"maxApps"`
	MinResources        Resource   `json:"minResources"`
	MaxResources        Resource   `json:"maxResources"`
	UsedResources       Resource   `json:"usedResources"`
	SteadyFairResources Resource   `json:"steadyFairResources"`
	FairResources       Resource   `json:"fairResources"`
	ClusterResources    Resource   `json:"clusterResources"`
	AllocatedContainers int        `json:"allocatedContainers"`
	PendingContainers   int        `json:"pendingContainers"`
	ReservedContainers  int        `json:"reservedContainers"`
	Preemptable         bool       `json:"preemptable"`
	NumActiveApps       *int       `json:"numActiveApps,omitempty"`
	NumPendingApps      *int       `json:"numPendingApps,omitempty"`
	ChildQueues         *QueueList `json:"childQueues,omitempty"`
}

// QueueList is a parent queue's children.
type QueueList struct {
	Queue []FairQueue `json:"queue"`
}

// NodesResponse is /ws/v1/cluster/nodes. Nodes is nil, as YARN's
// {"nodes":null}, when no node matches.
type NodesResponse struct {
	Nodes *NodeList `json:"nodes"`
}

// NodeList is the matching nodes.
type NodeList struct {
	Node []Node `json:"node"`
}

// NodeResponse is /ws/v1/cluster/nodes/{nodeid}.
type NodeResponse struct {
	Node Node `json:"node"`
}

// Node is YARN's NodeInfo.
type Node struct {
	Rack                  string   `json:"rack"`
	State                 string   `json:"state"`
	ID                    string   `json:"id"`
	NodeHostName          string   `json:"nodeHostName"`
	NodeHTTPAddress       string   `json:"nodeHTTPAddress"`
	LastHealthUpdate      int64    `json:"lastHealthUpdate"`
	Version               string   `json:"version"`
	HealthReport          string   `json:"healthReport"`
	NumContainers         int      `json:"numContainers"`
	UsedMemoryMB          int64    `json:"usedMemoryMB"`
	AvailMemoryMB         int64    `json:"availMemoryMB"`
	UsedVirtualCores      int64    `json:"usedVirtualCores"`
	AvailableVirtualCores int64    `json:"availableVirtualCores"`
	NodeLabels            []string `json:"nodeLabels,omitempty"`
	UsedResource          Resource `json:"usedResource"`
	AvailableResource     Resource `json:"availableResource"`
}
