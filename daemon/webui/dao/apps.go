package dao

// AppsResponse is /ws/v1/cluster/apps. Apps is nil, as YARN's
// {"apps":null}, when no app matches.
type AppsResponse struct {
	Apps *AppList `json:"apps" xml:"apps"`
}

// AppList is the matching apps.
type AppList struct {
	App []App `json:"app" xml:"app"`
}

// AppResponse is /ws/v1/cluster/apps/{appid}.
type AppResponse struct {
	App App `json:"app" xml:"app"`
}

// App is YARN's AppInfo.
type App struct {
	ID          string  `json:"id" xml:"id"`
	User        string  `json:"user" xml:"user"`
	Name        string  `json:"name" xml:"name"`
	Queue       string  `json:"queue" xml:"queue"`
	State       string  `json:"state" xml:"state"`
	FinalStatus string  `json:"finalStatus" xml:"finalStatus"`
	Progress    float64 `json:"progress" xml:"progress"` // percent, 0 to 100
	TrackingUI  string  `json:"trackingUI" xml:"trackingUI"`
	TrackingURL string  `json:"trackingUrl,omitempty" xml:"trackingUrl,omitempty"`
	Diagnostics string  `json:"diagnostics" xml:"diagnostics"`
	ClusterID   int64   `json:"clusterId" xml:"clusterId"`
	// ApplicationType and ApplicationTags (comma-separated) as the
	// submission gave them.
	ApplicationType string `json:"applicationType" xml:"applicationType"`
	ApplicationTags string `json:"applicationTags" xml:"applicationTags"`
	Priority        int32  `json:"priority" xml:"priority"`
	StartedTime     int64  `json:"startedTime" xml:"startedTime"`
	LaunchTime      int64  `json:"launchTime" xml:"launchTime"`
	FinishedTime    int64  `json:"finishedTime" xml:"finishedTime"`
	ElapsedTime     int64  `json:"elapsedTime" xml:"elapsedTime"`
	// The AM container's logs and node, while it is known.
	AMContainerLogs     string  `json:"amContainerLogs,omitempty" xml:"amContainerLogs,omitempty"`
	AMHostHTTPAddress   string  `json:"amHostHttpAddress,omitempty" xml:"amHostHttpAddress,omitempty"`
	AMRPCAddress        string  `json:"amRPCAddress,omitempty" xml:"amRPCAddress,omitempty"`
	AllocatedMB         int64   `json:"allocatedMB" xml:"allocatedMB"`
	AllocatedVCores     int64   `json:"allocatedVCores" xml:"allocatedVCores"`
	ReservedMB          int64   `json:"reservedMB" xml:"reservedMB"`
	ReservedVCores      int64   `json:"reservedVCores" xml:"reservedVCores"`
	RunningContainers   int     `json:"runningContainers" xml:"runningContainers"`
	MemorySeconds       int64   `json:"memorySeconds" xml:"memorySeconds"`
	VcoreSeconds        int64   `json:"vcoreSeconds" xml:"vcoreSeconds"`
	QueueUsagePercent   float64 `json:"queueUsagePercentage" xml:"queueUsagePercentage"`
	ClusterUsagePercent float64 `json:"clusterUsagePercentage" xml:"clusterUsagePercentage"`
	// Loom does not preempt: these stay 0.
	PreemptedResourceMB    int64  `json:"preemptedResourceMB" xml:"preemptedResourceMB"`
	PreemptedVCores        int64  `json:"preemptedResourceVCores" xml:"preemptedResourceVCores"`
	PreemptedMemorySeconds int64  `json:"preemptedMemorySeconds" xml:"preemptedMemorySeconds"`
	PreemptedVcoreSeconds  int64  `json:"preemptedVcoreSeconds" xml:"preemptedVcoreSeconds"`
	NumNonAMPreempted      int    `json:"numNonAMContainerPreempted" xml:"numNonAMContainerPreempted"`
	NumAMPreempted         int    `json:"numAMContainerPreempted" xml:"numAMContainerPreempted"`
	UnmanagedApp           bool   `json:"unmanagedApplication" xml:"unmanagedApplication"`
	LogAggregation         string `json:"logAggregationStatus" xml:"logAggregationStatus"`
	AppNodeLabelExpr       string `json:"appNodeLabelExpression,omitempty" xml:"appNodeLabelExpression,omitempty"`
	AMNodeLabelExpr        string `json:"amNodeLabelExpression,omitempty" xml:"amNodeLabelExpression,omitempty"`
}

// AppAttemptsResponse is /ws/v1/cluster/apps/{appid}/appattempts.
type AppAttemptsResponse struct {
	AppAttempts AppAttemptList `json:"appAttempts" xml:"appAttempts"`
}

// AppAttemptList is an app's attempts, oldest first.
type AppAttemptList struct {
	AppAttempt []AppAttempt `json:"appAttempt" xml:"appAttempt"`
}

// AppAttempt is YARN's AppAttemptInfo. ID is the attempt's number.
type AppAttempt struct {
	ID                       int32  `json:"id" xml:"id"`
	StartTime                int64  `json:"startTime" xml:"startTime"`
	FinishedTime             int64  `json:"finishedTime" xml:"finishedTime"`
	ContainerID              string `json:"containerId" xml:"containerId"`
	NodeHTTPAddress          string `json:"nodeHttpAddress" xml:"nodeHttpAddress"`
	NodeID                   string `json:"nodeId" xml:"nodeId"`
	LogsLink                 string `json:"logsLink" xml:"logsLink"`
	BlacklistedNodes         string `json:"blacklistedNodes" xml:"blacklistedNodes"`
	NodesBlacklistedBySystem string `json:"nodesBlacklistedBySystem" xml:"nodesBlacklistedBySystem"`
	AppAttemptID             string `json:"appAttemptId" xml:"appAttemptId"`
	AppAttemptState          string `json:"appAttemptState" xml:"appAttemptState"`
	Diagnostics              string `json:"diagnosticsInfo,omitempty" xml:"diagnosticsInfo,omitempty"`
}

// AppState is the body of apps/{appid}/state, read and written.
type AppState struct {
	State string `json:"state" xml:"state"`
}

// NewApplication is the answer to POST apps/new-application.
type NewApplication struct {
	ApplicationID             string   `json:"application-id" xml:"application-id"`
	MaximumResourceCapability Resource `json:"maximum-resource-capability" xml:"maximum-resource-capability"`
}

// XMLRoot is the root element of the document in XML, as YARN names it.
func (AppState) XMLRoot() string { return "appstate" }

// XMLRoot is the root element of the document in XML, as YARN names it.
func (NewApplication) XMLRoot() string { return "NewApplication" }
