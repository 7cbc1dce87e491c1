package dao

import "encoding/json"

// AppAttemptResponse is /ws/v1/cluster/apps/{appid}/appattempts/{appattemptid}.
type AppAttemptResponse struct {
	AppAttempt AppAttemptInfo `json:"appAttempt" xml:"appAttempt"`
}

// AppAttemptInfo is YARN's generic AppAttemptInfo, one attempt as the
// attempt resource gives it.
type AppAttemptInfo struct {
	AppAttemptID        string `json:"appAttemptId" xml:"appAttemptId"`
	Host                string `json:"host" xml:"host"`
	RPCPort             int32  `json:"rpcPort" xml:"rpcPort"`
	TrackingURL         string `json:"trackingUrl" xml:"trackingUrl"`
	OriginalTrackingURL string `json:"originalTrackingUrl" xml:"originalTrackingUrl"`
	DiagnosticsInfo     string `json:"diagnosticsInfo" xml:"diagnosticsInfo"`
	AppAttemptState     string `json:"appAttemptState" xml:"appAttemptState"`
	AMContainerID       string `json:"amContainerId" xml:"amContainerId"`
	StartedTime         int64  `json:"startedTime" xml:"startedTime"`
	FinishedTime        int64  `json:"finishedTime" xml:"finishedTime"`
}

// ContainersResponse is .../appattempts/{appattemptid}/containers.
type ContainersResponse struct {
	Containers ContainerList `json:"containers" xml:"containers"`
}

// ContainerList is an attempt's containers.
type ContainerList struct {
	Container []Container `json:"container" xml:"container"`
}

// ContainerResponse is .../containers/{containerid}.
type ContainerResponse struct {
	Container Container `json:"container" xml:"container"`
}

// Container is YARN's generic ContainerInfo.
type Container struct {
	ContainerID         string `json:"containerId" xml:"containerId"`
	AllocatedMB         int64  `json:"allocatedMB" xml:"allocatedMB"`
	AllocatedVCores     int64  `json:"allocatedVCores" xml:"allocatedVCores"`
	AssignedNodeID      string `json:"assignedNodeId" xml:"assignedNodeId"`
	Priority            int32  `json:"priority" xml:"priority"`
	StartedTime         int64  `json:"startedTime" xml:"startedTime"`
	FinishedTime        int64  `json:"finishedTime" xml:"finishedTime"`
	ElapsedTime         int64  `json:"elapsedTime" xml:"elapsedTime"`
	DiagnosticsInfo     string `json:"diagnosticsInfo" xml:"diagnosticsInfo"`
	LogURL              string `json:"logUrl" xml:"logUrl"`
	ContainerExitStatus int32  `json:"containerExitStatus" xml:"containerExitStatus"`
	ContainerState      string `json:"containerState" xml:"containerState"`
	NodeHTTPAddress     string `json:"nodeHttpAddress" xml:"nodeHttpAddress"`
	NodeID              string `json:"nodeId" xml:"nodeId"`
	// AllocatedResources is every resource type's amount, as YARN's
	// map of resource name to value.
	AllocatedResources []ResourceEntry `json:"allocatedResources" xml:"allocatedResources"`
}

// ResourceEntry is one resource type's amount: memory-mb or vcores.
type ResourceEntry struct {
	Key   string `json:"key" xml:"key"`
	Value int64  `json:"value" xml:"value"`
}

// AppQueue is apps/{appid}/queue.
type AppQueue struct {
	Queue string `json:"queue" xml:"queue"`
}

// XMLRoot is the root element of the document in XML, as YARN names it.
func (AppQueue) XMLRoot() string { return "appqueue" }

// AppPriority is apps/{appid}/priority.
type AppPriority struct {
	Priority int32 `json:"priority" xml:"priority"`
}

// XMLRoot is the root element of the document in XML, as YARN names it.
func (AppPriority) XMLRoot() string { return "applicationpriority" }

// TimeoutsResponse is apps/{appid}/timeouts.
type TimeoutsResponse struct {
	Timeouts TimeoutList `json:"timeouts" xml:"timeouts"`
}

// TimeoutList is an app's timeouts.
type TimeoutList struct {
	Timeout []Timeout `json:"timeout" xml:"timeout"`
}

// TimeoutResponse is apps/{appid}/timeouts/{type}.
type TimeoutResponse struct {
	Timeout Timeout `json:"timeout" xml:"timeout"`
}

// Timeout is YARN's AppTimeoutInfo. An app without the timeout has
// expiryTime UNLIMITED and remainingTimeInSeconds -1.
type Timeout struct {
	Type                   string `json:"type" xml:"type"`
	ExpiryTime             string `json:"expiryTime" xml:"expiryTime"`
	RemainingTimeInSeconds int64  `json:"remainingTimeInSeconds" xml:"remainingTimeInSeconds"`
}

// AppStatisticsResponse is /ws/v1/cluster/appstatistics.
type AppStatisticsResponse struct {
	AppStatInfo AppStatInfo `json:"appStatInfo" xml:"appStatInfo"`
}

// AppStatInfo is the counts, one item per state asked for.
type AppStatInfo struct {
	StatItem []StatItem `json:"statItem" xml:"statItem"`
}

// StatItem counts the apps of one state and type ("*" for every type).
type StatItem struct {
	State string `json:"state" xml:"state"`
	Type  string `json:"type" xml:"type"`
	Count int64  `json:"count" xml:"count"`
}

// NodeLabelsInfo is /ws/v1/cluster/get-node-labels.
type NodeLabelsInfo struct {
	NodeLabelInfo []NodeLabel `json:"nodeLabelInfo" xml:"nodeLabelInfo"`
}

// XMLRoot is the root element of the document in XML, as YARN names it.
func (NodeLabelsInfo) XMLRoot() string { return "nodeLabelsInfo" }

// NodeLabel is YARN's NodeLabelInfo.
type NodeLabel struct {
	Name        string `json:"name" xml:"name"`
	Exclusivity bool   `json:"exclusivity" xml:"exclusivity"`
}

// NodeToLabelsInfo is /ws/v1/cluster/get-node-to-labels: JAXB's map, an
// entry per node with labels.
type NodeToLabelsInfo struct {
	NodeToLabels NodeToLabelsMap `json:"nodeToLabels" xml:"nodeToLabels"`
}

// XMLRoot is the root element of the document in XML, as YARN names it.
func (NodeToLabelsInfo) XMLRoot() string { return "nodeToLabelsInfo" }

// NodeToLabelsMap is the map's entries, by node id.
type NodeToLabelsMap struct {
	Entry []NodeToLabelsEntry `json:"entry,omitempty" xml:"entry,omitempty"`
}

// NodeToLabelsEntry is one node (host:port) and its labels.
type NodeToLabelsEntry struct {
	Key   string         `json:"key" xml:"key"`
	Value NodeLabelsInfo `json:"value" xml:"value"`
}

// LabelsToNodesInfo is /ws/v1/cluster/label-mappings: each label and the
// nodes that carry it, as JAXB writes a map.
type LabelsToNodesInfo struct {
	LabelsToNodes LabelsToNodesMap `json:"labelsToNodes" xml:"labelsToNodes"`
}

// XMLRoot is the root element of the document in XML, as YARN names it.
func (LabelsToNodesInfo) XMLRoot() string { return "labelsToNodesInfo" }

// LabelsToNodesMap is the map's entries.
type LabelsToNodesMap struct {
	Entry []LabelNodesEntry `json:"entry,omitempty" xml:"entry,omitempty"`
}

// LabelNodesEntry is one label and its nodes.
type LabelNodesEntry struct {
	Key   NodeLabel `json:"key" xml:"key"`
	Value NodeIDs   `json:"value" xml:"value"`
}

// NodeIDs is a list of node ids.
type NodeIDs struct {
	NodeID []string `json:"nodes" xml:"nodes"`
}

// ClusterUserInfoResponse is /ws/v1/cluster/userinfo.
type ClusterUserInfoResponse struct {
	ClusterUserInfo ClusterUserInfo `json:"clusterUserInfo" xml:"clusterUserInfo"`
}

// ClusterUserInfo is who runs the RM and who asks.
type ClusterUserInfo struct {
	RMLoginUser   string `json:"rmLoginUser" xml:"rmLoginUser"`
	RequestedUser string `json:"requestedUser" xml:"requestedUser"`
}

// ResourceOption is the body of POST /nodes/{nodeid}/resource.
type ResourceOption struct {
	Resource          *Resource `json:"resource" xml:"resource"`
	OverCommitTimeout int64     `json:"overCommitTimeout" xml:"overCommitTimeout"`
}

// ResourceInfoResponse is a node's new resource.
type ResourceInfoResponse struct {
	ResourceInfo Resource `json:"resourceInfo" xml:"resourceInfo"`
}

// QueueACLInfo is /queues/{queue}/access: YARN's RMQueueAclInfo.
type QueueACLInfo struct {
	Allowed     bool   `json:"allowed" xml:"allowed"`
	User        string `json:"user" xml:"user"`
	Diagnostics string `json:"diagnostics,omitempty" xml:"diagnostics,omitempty"`
}

// XMLRoot is the root element of the document in XML, as YARN names it.
func (QueueACLInfo) XMLRoot() string { return "rmQueueAclInfo" }

// DelegationToken is the body and answer of /delegation-token.
type DelegationToken struct {
	Token              string `json:"token,omitempty" xml:"token,omitempty"`
	Renewer            string `json:"renewer,omitempty" xml:"renewer,omitempty"`
	Owner              string `json:"owner,omitempty" xml:"owner,omitempty"`
	Kind               string `json:"kind,omitempty" xml:"kind,omitempty"`
	NextExpirationTime int64  `json:"expiration-time,omitempty" xml:"expiration-time,omitempty"`
	MaxValidity        int64  `json:"max-validity,omitempty" xml:"max-validity,omitempty"`
}

// XMLRoot is the root element of the document in XML, as YARN names it.
func (DelegationToken) XMLRoot() string { return "delegation-token" }

// NewReservation is the answer of POST /reservation/new-reservation.
type NewReservation struct {
	ReservationID string `json:"reservation-id" xml:"reservation-id"`
}

// XMLRoot is the root element of the document in XML, as YARN names it.
func (NewReservation) XMLRoot() string { return "new-reservation" }

// ReservationSubmission is the body of POST /reservation/submit, and of
// /reservation/update (without the queue) and /reservation/delete (the
// id alone).
type ReservationSubmission struct {
	Queue         string                 `json:"queue,omitempty"`
	ReservationID string                 `json:"reservation-id"`
	Definition    *ReservationDefinition `json:"reservation-definition,omitempty"`
}

// ReservationDefinition is when and what a reservation asks for.
type ReservationDefinition struct {
	Arrival  int64               `json:"arrival" xml:"arrival"`
	Deadline int64               `json:"deadline" xml:"deadline"`
	Name     string              `json:"reservation-name" xml:"reservation-name"`
	Requests ReservationRequests `json:"reservation-requests" xml:"reservation-requests"`
}

// ReservationRequests are its stages and how to read them: 0 ANY, 1 ALL,
// 2 ORDER, 3 ORDER_NO_GAP. Request is one or a list (YARN's JSON writes
// a list of one as the element).
type ReservationRequests struct {
	Interpreter int                  `json:"reservation-request-interpreter" xml:"reservation-request-interpreter"`
	Request     json.RawMessage      `json:"reservation-request,omitempty" xml:"-"`
	Requests    []ReservationRequest `json:"-" xml:"reservation-request"`
}

// ReservationRequest is one stage: containers of a capability for a
// duration (ms).
type ReservationRequest struct {
	Duration       int64    `json:"duration" xml:"duration"`
	NumContainers  int32    `json:"num-containers" xml:"num-containers"`
	MinConcurrency int32    `json:"min-concurrency" xml:"min-concurrency"`
	Capability     Resource `json:"capability" xml:"capability"`
}

// ReservationList is GET /reservation/list.
type ReservationList struct {
	Reservations []ReservationInfo `json:"reservations" xml:"reservations"`
}

// XMLRoot is the root element of the document in XML, as YARN names it.
func (ReservationList) XMLRoot() string { return "reservationListInfo" }

// ReservationInfo is one reservation held.
type ReservationInfo struct {
	AcceptanceTime      int64                 `json:"acceptance-time" xml:"acceptance-time"`
	User                string                `json:"user" xml:"user"`
	ResourceAllocations []ResourceAllocation  `json:"resource-allocations" xml:"resource-allocations"`
	ReservationID       string                `json:"reservation-id" xml:"reservation-id"`
	Definition          ReservationDefinition `json:"reservation-definition" xml:"reservation-definition"`
}

// ResourceAllocation is what a reservation holds over a span.
type ResourceAllocation struct {
	Resource  Resource `json:"resource" xml:"resource"`
	StartTime int64    `json:"startTime" xml:"startTime"`
	EndTime   int64    `json:"endTime" xml:"endTime"`
}
