package webui

import "net/http"

// route is one resource of the web port. Name is what the Backend sees
// as the call's method (rpc.CallInfo.Method) and what the logs say.
type route struct {
	Name    string
	Method  string
	Pattern string
	Handle  func(*call) error
}

// routes is every resource the web port serves. A GET route answers
// HEAD too; a path served with another method answers 405.
var routes = []route{
	// YARN's ResourceManager REST API.
	{"getClusterInfo", http.MethodGet, "/ws/v1/cluster", getClusterInfo},
	{"getClusterInfo", http.MethodGet, "/ws/v1/cluster/info", getClusterInfo},
	{"getClusterMetrics", http.MethodGet, "/ws/v1/cluster/metrics", getClusterMetrics},
	{"getSchedulerInfo", http.MethodGet, "/ws/v1/cluster/scheduler", getSchedulerInfo},
	{"getActivities", http.MethodGet, "/ws/v1/cluster/scheduler/activities", getActivities},
	{"getAppActivities", http.MethodGet, "/ws/v1/cluster/scheduler/app-activities/{appid}", getAppActivities},
	{"getSchedulerConfiguration", http.MethodGet, "/ws/v1/cluster/scheduler-conf", getSchedulerConf},
	{"updateSchedulerConfiguration", http.MethodPut, "/ws/v1/cluster/scheduler-conf", updateSchedulerConf},
	{"getApps", http.MethodGet, "/ws/v1/cluster/apps", getApps},
	{"submitApplication", http.MethodPost, "/ws/v1/cluster/apps", submitApplication},
	{"createNewApplication", http.MethodPost, "/ws/v1/cluster/apps/new-application", createNewApplication},
	{"getApp", http.MethodGet, "/ws/v1/cluster/apps/{appid}", getApp},
	{"getAppAttempts", http.MethodGet, "/ws/v1/cluster/apps/{appid}/appattempts", getAppAttempts},
	{"getAppAttempt", http.MethodGet, "/ws/v1/cluster/apps/{appid}/appattempts/{appattemptid}", getAppAttempt},
	{"getAttemptContainers", http.MethodGet, "/ws/v1/cluster/apps/{appid}/appattempts/{appattemptid}/containers", getAttemptContainers},
	{"getAttemptContainer", http.MethodGet, "/ws/v1/cluster/apps/{appid}/appattempts/{appattemptid}/containers/{containerid}", getAttemptContainer},
	{"getAppQueue", http.MethodGet, "/ws/v1/cluster/apps/{appid}/queue", getAppQueue},
	{"updateAppQueue", http.MethodPut, "/ws/v1/cluster/apps/{appid}/queue", updateAppQueue},
	{"getAppPriority", http.MethodGet, "/ws/v1/cluster/apps/{appid}/priority", getAppPriority},
	{"updateAppPriority", http.MethodPut, "/ws/v1/cluster/apps/{appid}/priority", updateAppPriority},
	{"updateAppTimeout", http.MethodPut, "/ws/v1/cluster/apps/{appid}/timeout", updateAppTimeout},
	{"getAppTimeouts", http.MethodGet, "/ws/v1/cluster/apps/{appid}/timeouts", getAppTimeouts},
	{"getAppTimeout", http.MethodGet, "/ws/v1/cluster/apps/{appid}/timeouts/{type}", getAppTimeout},
	{"getAppStatistics", http.MethodGet, "/ws/v1/cluster/appstatistics", getAppStatistics},
	{"getNodeLabels", http.MethodGet, "/ws/v1/cluster/get-node-labels", getNodeLabels},
	{"getNodeToLabels", http.MethodGet, "/ws/v1/cluster/get-node-to-labels", getNodeToLabels},
	{"getLabelsToNodes", http.MethodGet, "/ws/v1/cluster/label-mappings", getLabelsToNodes},
	{"getLabelsOnNode", http.MethodGet, "/ws/v1/cluster/nodes/{nodeid}/get-labels", getLabelsOnNode},
	{"addToClusterNodeLabels", http.MethodPost, "/ws/v1/cluster/add-node-labels", addNodeLabels},
	{"removeFromClusterNodeLabels", http.MethodPost, "/ws/v1/cluster/remove-node-labels", removeNodeLabels},
	{"replaceLabelsOnNodes", http.MethodPost, "/ws/v1/cluster/replace-node-to-labels", replaceNodeToLabels},
	{"replaceLabelsOnNode", http.MethodPost, "/ws/v1/cluster/nodes/{nodeid}/replace-labels", replaceLabelsOnNode},
	{"getAppState", http.MethodGet, "/ws/v1/cluster/apps/{appid}/state", getAppState},
	{"updateAppState", http.MethodPut, "/ws/v1/cluster/apps/{appid}/state", updateAppState},
	{"getClusterUserInfo", http.MethodGet, "/ws/v1/cluster/userinfo", getClusterUserInfo},
	{"signalToContainer", http.MethodPost, "/ws/v1/cluster/containers/{containerid}/signal/{command}", signalContainer},
	{"updateNodeResource", http.MethodPost, "/ws/v1/cluster/nodes/{nodeid}/resource", updateNodeResource},
	{"dumpSchedulerLogs", http.MethodPost, "/ws/v1/cluster/scheduler/logs", dumpSchedulerLogs},
	{"checkUserAccessToQueue", http.MethodGet, "/ws/v1/cluster/queues/{queue}/access", checkUserAccessToQueue},
	{"postDelegationToken", http.MethodPost, "/ws/v1/cluster/delegation-token", postDelegationToken},
	{"postDelegationTokenExpiration", http.MethodPost, "/ws/v1/cluster/delegation-token/expiration", renewDelegationToken},
	{"cancelDelegationToken", http.MethodDelete, "/ws/v1/cluster/delegation-token", cancelDelegationToken},
	{"createNewReservation", http.MethodPost, "/ws/v1/cluster/reservation/new-reservation", newReservation},
	{"submitReservation", http.MethodPost, "/ws/v1/cluster/reservation/submit", submitReservation},
	{"updateReservation", http.MethodPost, "/ws/v1/cluster/reservation/update", updateReservation},
	{"deleteReservation", http.MethodPost, "/ws/v1/cluster/reservation/delete", deleteReservation},
	{"listReservation", http.MethodGet, "/ws/v1/cluster/reservation/list", listReservations},
	{"getNodes", http.MethodGet, "/ws/v1/cluster/nodes", getNodes},
	{"getNode", http.MethodGet, "/ws/v1/cluster/nodes/{nodeid}", getNode},

	// Loom's views.
	{"getLoomScheduler", http.MethodGet, "/ws/v1/loom/scheduler", getLoomScheduler},
	{"getAltruism", http.MethodGet, "/ws/v1/loom/scheduler/altruism", getAltruism},
	{"setAltruism", http.MethodPut, "/ws/v1/loom/scheduler/altruism", setAltruism},
	{"getTimeline", http.MethodGet, "/ws/v1/loom/timeline", getTimeline},
	{"getAppDAG", http.MethodGet, "/ws/v1/loom/apps/{appid}/dag", getAppDAG},
	{"getAppTasks", http.MethodGet, "/ws/v1/loom/apps/{appid}/tasks", getAppTasks},
	{"getAppTimeline", http.MethodGet, "/ws/v1/loom/apps/{appid}/timeline", getAppTimeline},
	{"getAppPlacements", http.MethodGet, "/ws/v1/loom/apps/{appid}/placements", getAppPlacements},
	{"getAppLogs", http.MethodGet, "/ws/v1/loom/apps/{appid}/logs", getAppLogs},
	{"getAppLogFile", http.MethodGet, "/ws/v1/loom/apps/{appid}/logs/{containerid}/{file}", getAppLogFile},
	{"getRecordedWorkload", http.MethodGet, "/ws/v1/loom/history/workload", getRecordedWorkload},
	{"getWhatIf", http.MethodGet, "/ws/v1/loom/whatif", getWhatIf},
	{"setHAState", http.MethodPut, "/ws/v1/loom/ha/state", setHAState},

	// Prometheus.
	{"metrics", http.MethodGet, "/metrics", serveMetrics},

	// The web UI, also at YARN's UI paths: client libraries probe GET
	// /cluster to find the active RM and take anything but 200 as "not
	// this one".
	{"ui", http.MethodGet, "/", serveIndex},
	{"ui", http.MethodGet, "/cluster", serveIndex},
	{"ui", http.MethodGet, "/cluster/{page:apps|nodes|scheduler}", serveIndex},
	{"ui", http.MethodGet, "/cluster/apps/{state}", serveIndex},
	{"ui", http.MethodGet, "/cluster/app/{appid}", serveIndex},
	{"uiAsset", http.MethodGet, "/ui/{asset:.+}", serveAsset},
}
