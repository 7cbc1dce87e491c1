package dao

// AppsResponse is /ws/v1/cluster/apps. Apps is nil, as YARN's
// {"apps":null}, when no app matches.
type AppsResponse struct {
	Apps *AppList `json:"apps"`
}

// AppList is the matching apps.
type AppList struct {
	App []App `json:"app"`
}

// AppResponse is /ws/v1/cluster/apps/{appid}.
type AppResponse struct {
	App App `json:"app"`
}

// App is YARN's AppInfo.
type App struct {
	ID          string  `json:"id"`
	User        string  `json:"user"`
	Name        string  `json:"name"`
	Queue       string  `json:"queue"`
	State       string  `json:"state"`
	FinalStatus string  `json:"finalStatus"`
	Progress    float64 `json:"progress"` // percent, 0 to 100
	TrackingUI  string  `json:"trackingUI"`
	TrackingURL string  `json:"trackingUrl,omitempty"`
	Diagnostics string  `json:"diagnostics"`
	ClusterID   int64   `json:"clusterId"`
	// ApplicationType and ApplicationTags (comma-separated) as the
	// submission gave them.
	ApplicationType string `json:"applicationType"`
	ApplicationTags string `json:"applicationTags"`
	Priority        int32  `json:"priority"`
	StartedTime     int64  `json:"startedTime"`
	LaunchTime      int64  `json:"launchTime"`
	FinishedTime    int64  `json:"finishedTime"`
	ElapsedTime     int64  `json:"elapsedTime"`
	// The AM container's logs and node, while it is known.
	AMContainerLogs     string  `json:"amContainerLogs,omitempty"`
	AMHostHTTPAddress   string  `json:"amHostHttpAddress,omitempty"`
	AMRPCAddress        string  `json:"amRPCAddress,omitempty"`
	AllocatedMB         int64   `json:"allocatedMB"`
	AllocatedVCores     int64   `json:"allocatedVCores"`
	ReservedMB          int64   `json:"reservedMB"`
	ReservedVCores      int64   `json:"reservedVCores"`
	RunningContainers   int     `json:"runningContainers"`
	MemorySeconds       int64   `json:"memorySeconds"`
	VcoreSeconds        int64   `json:"vcoreSeconds"`
	QueueUsagePercent   float64 `json:"queueUsagePercentage"`
	ClusterUsagePercent float64 `json:"clusterUsagePercentage"`
	// Loom does not preempt: these stay 0.
	PreemptedResourceMB    int64  `json:"preemptedResourceMB"`
	PreemptedVCores        int64  `json:"preemptedResourceVCores"`
	PreemptedMemorySeconds int64  `json:"preemptedMemorySeconds"`
	PreemptedVcoreSeconds  int64  `json:"preemptedVcoreSeconds"`
	UnmanagedApp           bool   `json:"unmanagedApplication"`
	LogAggregation         string `json:"logAggregationStatus"`
	AppNodeLabelExpr       string `json:"appNodeLabelExpression,omitempty"`
	AMNodeLabelExpr        string `json:"amNodeLabelExpression,omitempty"`
}

// AppAttemptsResponse is /ws/v1/cluster/apps/{appid}/appattempts.
type AppAttemptsResponse struct {
	AppAttempts AppAttemptList `json:"appAttempts"`
}

// AppAttemptList is an app's attempts, oldest first.
type AppAttemptList struct {
	AppAttempt []AppAttempt `json:"appAttempt"`
}

// AppAttempt is YARN's AppAttemptInfo. ID is the attempt's number.
type AppAttempt struct {
	ID                       int32  `json:"id"`
	StartTime                int64  `json:"startTime"`
	FinishedTime             int64  `json:"finishedTime"`
	ContainerID              string `json:"containerId"`
	NodeHTTPAddress          string `json:"nodeHttpAddress"`
	NodeID                   string `json:"nodeId"`
	LogsLink                 string `json:"logsLink"`
	BlacklistedNodes         string `json:"blacklistedNodes"`
	NodesBlacklistedBySystem string `json:"nodesBlacklistedBySystem"`
	AppAttemptID             string `json:"appAttemptId"`
	AppAttemptState          string `json:"appAttemptState"`
	Diagnostics              string `json:"diagnosticsInfo,omitempty"`
}

// AppState is the body of apps/{appid}/state, read and written.
type AppState struct {
	State string `json:"state"`
}

// NewApplication is the answer to POST apps/new-application.
type NewApplication struct {
	ApplicationID             string   `json:"application-id"`
	MaximumResourceCapability Resource `json:"maximum-resource-capability"`
}
