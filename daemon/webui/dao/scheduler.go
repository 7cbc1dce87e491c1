package dao

// CapacitySchedulerInfo is YARN's capacityScheduler shape of
// /ws/v1/cluster/scheduler, served when the configuration names the
// CapacityScheduler (or no scheduler: YARN's default). Loom's queues are
// weighted: a queue's capacity is its weight's part of the total, the
// share it is guaranteed.
type CapacitySchedulerInfo struct {
	Type         string              `json:"type" xml:"type,attr"` // capacityScheduler
	Capacity     float64             `json:"capacity" xml:"capacity"`
	UsedCapacity float64             `json:"usedCapacity" xml:"usedCapacity"`
	MaxCapacity  float64             `json:"maxCapacity" xml:"maxCapacity"`
	QueueName    string              `json:"queueName" xml:"queueName"`
	Queues       *CapacityQueueList  `json:"queues,omitempty" xml:"queues,omitempty"`
	Health       CapacitySchedHealth `json:"health" xml:"health"`
}

// CapacityQueueList is a parent queue's children.
type CapacityQueueList struct {
	Queue []CapacityQueue `json:"queue" xml:"queue"`
}

// CapacityQueue is one queue; a leaf (Type
// capacitySchedulerLeafQueueInfo) carries its apps, limits and users.
type CapacityQueue struct {
	Type                 string   `json:"type,omitempty" xml:"type,attr,omitempty"`
	QueuePath            string   `json:"queuePath" xml:"queuePath"`
	Capacity             float64  `json:"capacity" xml:"capacity"`
	UsedCapacity         float64  `json:"usedCapacity" xml:"usedCapacity"`
	MaxCapacity          float64  `json:"maxCapacity" xml:"maxCapacity"`
	AbsoluteCapacity     float64  `json:"absoluteCapacity" xml:"absoluteCapacity"`
	AbsoluteMaxCapacity  float64  `json:"absoluteMaxCapacity" xml:"absoluteMaxCapacity"`
	AbsoluteUsedCapacity float64  `json:"absoluteUsedCapacity" xml:"absoluteUsedCapacity"`
	Weight               float64  `json:"weight" xml:"weight"`
	NumApplications      int      `json:"numApplications" xml:"numApplications"`
	UsedResources        string   `json:"usedResources" xml:"usedResources"`
	QueueName            string   `json:"queueName" xml:"queueName"`
	State                string   `json:"state" xml:"state"`
	ResourcesUsed        Resource `json:"resourcesUsed" xml:"resourcesUsed"`
	// NodeLabels are the labels the queue may access, and
	// DefaultNodeLabelExpression its apps' default (with labels on).
	NodeLabels                 []string           `json:"nodeLabels,omitempty" xml:"nodeLabels,omitempty"`
	DefaultNodeLabelExpression string             `json:"defaultNodeLabelExpression,omitempty" xml:"defaultNodeLabelExpression,omitempty"`
	Queues                     *CapacityQueueList `json:"queues,omitempty" xml:"queues,omitempty"`

	// A leaf's.
	NumActiveApplications        *int      `json:"numActiveApplications,omitempty" xml:"numActiveApplications,omitempty"`
	NumPendingApplications       *int      `json:"numPendingApplications,omitempty" xml:"numPendingApplications,omitempty"`
	NumContainers                *int      `json:"numContainers,omitempty" xml:"numContainers,omitempty"`
	AllocatedContainers          *int      `json:"allocatedContainers,omitempty" xml:"allocatedContainers,omitempty"`
	ReservedContainers           *int      `json:"reservedContainers,omitempty" xml:"reservedContainers,omitempty"`
	PendingContainers            *int      `json:"pendingContainers,omitempty" xml:"pendingContainers,omitempty"`
	MaxApplications              *int      `json:"maxApplications,omitempty" xml:"maxApplications,omitempty"`
	MaxApplicationsPerUser       *int      `json:"maxApplicationsPerUser,omitempty" xml:"maxApplicationsPerUser,omitempty"`
	UserLimit                    *int      `json:"userLimit,omitempty" xml:"userLimit,omitempty"`
	UserLimitFactor              *float64  `json:"userLimitFactor,omitempty" xml:"userLimitFactor,omitempty"`
	Users                        *UserList `json:"users,omitempty" xml:"users,omitempty"`
	MaxActiveApplications        *int      `json:"maxActiveApplications,omitempty" xml:"maxActiveApplications,omitempty"`
	MaxActiveApplicationsPerUser *int      `json:"maxActiveApplicationsPerUser,omitempty" xml:"maxActiveApplicationsPerUser,omitempty"`
	AMResourceLimit              *Resource `json:"AMResourceLimit,omitempty" xml:"AMResourceLimit,omitempty"`
	UsedAMResource               *Resource `json:"usedAMResource,omitempty" xml:"usedAMResource,omitempty"`
	PAltruism                    *float64  `json:"pAltruism,omitempty" xml:"pAltruism,omitempty"`
}

// UserList is a leaf queue's users.
type UserList struct {
	User []QueueUser `json:"user" xml:"user"`
}

// QueueUser is what one user's apps hold in a queue.
type QueueUser struct {
	Username               string   `json:"username" xml:"username"`
	ResourcesUsed          Resource `json:"resourcesUsed" xml:"resourcesUsed"`
	NumActiveApplications  int      `json:"numActiveApplications" xml:"numActiveApplications"`
	NumPendingApplications int      `json:"numPendingApplications" xml:"numPendingApplications"`
}

// CapacitySchedHealth is the scheduler's last operations.
type CapacitySchedHealth struct {
	LastRun        int64            `json:"lastrun" xml:"lastrun"`
	OperationsInfo []SchedOperation `json:"operationsInfo" xml:"operationsInfo"`
	LastRunDetails []SchedRunDetail `json:"lastRunDetails" xml:"lastRunDetails"`
}

// SchedOperation is the last operation of a kind: where and for which
// container and queue ("N/A" when there was none).
type SchedOperation struct {
	Operation   string `json:"operation" xml:"operation"`
	NodeID      string `json:"nodeId" xml:"nodeId"`
	ContainerID string `json:"containerId" xml:"containerId"`
	Queue       string `json:"queue" xml:"queue"`
}

// SchedRunDetail counts one kind of operation and what it moved.
type SchedRunDetail struct {
	Operation string   `json:"operation" xml:"operation"`
	Count     int64    `json:"count" xml:"count"`
	Resources Resource `json:"resources" xml:"resources"`
}

// ActivitiesResponse is /ws/v1/cluster/scheduler/activities.
type ActivitiesResponse struct {
	Activities Activities `json:"activities" xml:"activities"`
}

// Activities is what the scheduler did at its latest allocation (on one
// node, when asked for one): one NodeAllocation per container placed.
type Activities struct {
	NodeID      string           `json:"nodeId,omitempty" xml:"nodeId,omitempty"`
	Timestamp   int64            `json:"timestamp" xml:"timestamp"`
	DateTime    string           `json:"dateTime" xml:"dateTime"`
	Diagnostic  string           `json:"diagnostic,omitempty" xml:"diagnostic,omitempty"`
	Allocations []NodeAllocation `json:"allocations,omitempty" xml:"allocations,omitempty"`
}

// NodeAllocation is one container's placement as a path down the queue
// tree: root, the queue, the app, the request.
type NodeAllocation struct {
	Partition            string       `json:"partition" xml:"partition"`
	UpdatedContainerID   string       `json:"updatedContainerId" xml:"updatedContainerId"`
	FinalAllocationState string       `json:"finalAllocationState" xml:"finalAllocationState"`
	Root                 ActivityNode `json:"root" xml:"root"`
}

// ActivityNode is one step of an allocation's path.
type ActivityNode struct {
	Name                string         `json:"name" xml:"name"`
	AppPriority         *int           `json:"appPriority,omitempty" xml:"appPriority,omitempty"`
	RequestPriority     *int           `json:"requestPriority,omitempty" xml:"requestPriority,omitempty"`
	AllocationRequestID *int64         `json:"allocationRequestId,omitempty" xml:"allocationRequestId,omitempty"`
	AllocationState     string         `json:"allocationState" xml:"allocationState"`
	Diagnostic          string         `json:"diagnostic" xml:"diagnostic"`
	NodeID              string         `json:"nodeId,omitempty" xml:"nodeId,omitempty"`
	ContainerID         string         `json:"containerId,omitempty" xml:"containerId,omitempty"`
	Children            []ActivityNode `json:"children,omitempty" xml:"children,omitempty"`
}

// AppActivitiesResponse is /ws/v1/cluster/scheduler/app-activities/{appid}.
type AppActivitiesResponse struct {
	AppActivities AppActivities `json:"appActivities" xml:"appActivities"`
}

// AppActivities is one app's last allocations, newest first.
type AppActivities struct {
	ApplicationID string          `json:"applicationId" xml:"applicationId"`
	Allocations   []AppAllocation `json:"allocations,omitempty" xml:"allocations,omitempty"`
	Diagnostic    string          `json:"diagnostic,omitempty" xml:"diagnostic,omitempty"`
}

// AppAllocation is one of an app's allocations.
type AppAllocation struct {
	NodeID          string         `json:"nodeId" xml:"nodeId"`
	Timestamp       int64          `json:"timestamp" xml:"timestamp"`
	DateTime        string         `json:"dateTime" xml:"dateTime"`
	QueueName       string         `json:"queueName" xml:"queueName"`
	AppPriority     int            `json:"appPriority" xml:"appPriority"`
	AllocationState string         `json:"allocationState" xml:"allocationState"`
	Diagnostic      string         `json:"diagnostic" xml:"diagnostic"`
	Children        []ActivityNode `json:"children" xml:"children"`
}

// SchedConfResponse is GET /ws/v1/cluster/scheduler-conf.
type SchedConfResponse struct {
	Configuration SchedConf `json:"configuration" xml:"configuration"`
}

// SchedConf is the scheduler's configuration, key by key.
type SchedConf struct {
	Property []ConfProperty `json:"property" xml:"property"`
}

// ConfProperty is one key and its value in effect.
type ConfProperty struct {
	Name  string `json:"name" xml:"name"`
	Value string `json:"value" xml:"value"`
}
