package webui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// appID reads the {appid} of the path.
func (c *call) appID() (*pb.ApplicationIdProto, error) {
	s := c.vars()["appid"]
	id, err := rpc.ParseAppID(s)
	if err != nil {
		return nil, badRequest("Invalid ApplicationId: %v", err)
	}
	return id, nil
}

func isFinal(s pb.YarnApplicationStateProto) bool {
	switch s {
	case pb.YarnApplicationStateProto_FINISHED, pb.YarnApplicationStateProto_FAILED, pb.YarnApplicationStateProto_KILLED:
		return true
	}
	return false
}

// elapsed is YARN's elapsed time of an app: to its finish, or to now
// while it runs.
func elapsed(started, finished, now int64) int64 {
	switch {
	case started <= 0:
		return 0
	case finished > 0:
		return max(0, finished-started)
	}
	return max(0, now-started)
}

// amContainer is where an app's AM runs.
type amContainer struct {
	id       string // container id
	nodeID   string // host:port
	nodeHTTP string // host:port of the NodeManager's web server
}

// nodeIndex finds nodes' web addresses, asking the Backend once per
// request.
type nodeIndex struct {
	c     *call
	ctx   context.Context
	nodes map[string]string // node id to http address
}

func (ni *nodeIndex) httpAddress(nodeID string) string {
	if ni.nodes == nil {
		ni.nodes = map[string]string{}
		resp, err := ni.c.s.b.GetClusterNodes(ni.ctx, &pb.GetClusterNodesRequestProto{NodeStates: allNodeStates()})
		if err == nil {
			for _, n := range resp.GetNodeReports() {
				ni.nodes[nodeIDString(n.GetNodeId())] = n.GetHttpAddress()
			}
		}
	}
	return ni.nodes[nodeID]
}

// findAMContainer finds an attempt's AM container and its node: the
// reports do not carry the node, so it takes the attempt's containers.
// It is best effort: nil when any of it is unknown.
func (ni *nodeIndex) findAMContainer(attempt *pb.ApplicationAttemptIdProto, cid *pb.ContainerIdProto) *amContainer {
	if attempt == nil || cid == nil {
		return nil
	}
	am := &amContainer{id: rpc.ContainerIDString(cid)}
	conts, err := ni.c.s.b.GetContainers(ni.ctx, &pb.GetContainersRequestProto{ApplicationAttemptId: attempt})
	if err != nil {
		return am
	}
	for _, ct := range conts.GetContainers() {
		if rpc.ContainerIDString(ct.GetContainerId()) == am.id {
			am.nodeID = nodeIDString(ct.GetNodeId())
			am.nodeHTTP = ct.GetNodeHttpAddress()
			if am.nodeHTTP == "" && am.nodeID != "" {
				am.nodeHTTP = ni.httpAddress(am.nodeID)
			}
		}
	}
	return am
}

// currentAM finds the AM container of an app's current attempt.
func (ni *nodeIndex) currentAM(rep *pb.ApplicationReportProto) *amContainer {
	at := rep.GetCurrentApplicationAttemptId()
	if at == nil {
		return nil
	}
	atts, err := ni.c.s.b.GetApplicationAttempts(ni.ctx, &pb.GetApplicationAttemptsRequestProto{ApplicationId: rep.GetApplicationId()})
	if err != nil {
		return nil
	}
	for _, a := range atts.GetApplicationAttempts() {
		if a.GetApplicationAttemptId().GetAttemptId() == at.GetAttemptId() {
			return ni.findAMContainer(at, a.GetAmContainerId())
		}
	}
	return nil
}

// logsLink is the NodeManager's page of a container's logs, as YARN
// links it.
func logsLink(nodeHTTP, container, user string) string {
	if nodeHTTP == "" || container == "" {
		return ""
	}
	return "http://" + nodeHTTP + "/node/containerlogs/" + container + "/" + user
}

func finalStatus(s pb.FinalApplicationStatusProto) string {
	return strings.TrimPrefix(s.String(), "APP_")
}

// appInfo is a report as YARN's AppInfo.
func (s *server) appInfo(rep *pb.ApplicationReportProto, clusterID int64, am *amContainer) dao.App {
	usage := rep.GetAppResource_Usage()
	tracking := rep.GetTrackingUrl()
	if tracking == "N/A" {
		tracking = ""
	}
	a := dao.App{ID: rpc.AppIDString(rep.GetApplicationId()), User: rep.GetUser(), Name: rep.GetName(),
		Queue: rep.GetQueue(), State: rep.GetYarnApplicationState().String(),
		FinalStatus: finalStatus(rep.GetFinalApplicationStatus()), Progress: finite(float64(rep.GetProgress()) * 100),
		TrackingURL: tracking, Diagnostics: rep.GetDiagnostics(), ClusterID: clusterID,
		ApplicationType: rep.GetApplicationType(), ApplicationTags: strings.Join(rep.GetApplicationTags(), ","),
		Priority: rep.GetPriority().GetPriority(), StartedTime: rep.GetStartTime(), LaunchTime: rep.GetLaunchTime(),
		FinishedTime: rep.GetFinishTime(),
		ElapsedTime:  elapsed(rep.GetStartTime(), rep.GetFinishTime(), s.now().UnixMilli()),
		AllocatedMB:  usage.GetUsedResources().GetMemory(), AllocatedVCores: int64(usage.GetUsedResources().GetVirtualCores()),
		ReservedMB: usage.GetReservedResources().GetMemory(), ReservedVCores: int64(usage.GetReservedResources().GetVirtualCores()),
		RunningContainers: int(usage.GetNumUsedContainers()), MemorySeconds: usage.GetMemorySeconds(),
		VcoreSeconds: usage.GetVcoreSeconds(), QueueUsagePercent: finite(float64(usage.GetQueueUsagePercentage())),
		ClusterUsagePercent:    finite(float64(usage.GetClusterUsagePercentage())),
		PreemptedMemorySeconds: usage.GetPreemptedMemorySeconds(), PreemptedVcoreSeconds: usage.GetPreemptedVcoreSeconds(),
		UnmanagedApp: rep.GetUnmanagedApplication(), LogAggregation: strings.TrimPrefix(rep.GetLogAggregationStatus().String(), "LOG_"),
		AppNodeLabelExpr: rep.GetAppNodeLabelExpression(), AMNodeLabelExpr: rep.GetAmNodeLabelExpression()}
	if a.Diagnostics == "N/A" {
		a.Diagnostics = ""
	}
	// YARN's tracking UI: nothing to follow yet, the AM, or the history
	// once the app is over.
	switch {
	case isFinal(rep.GetYarnApplicationState()):
		a.TrackingUI = "History"
	case tracking == "":
		a.TrackingUI = "UNASSIGNED"
	default:
		a.TrackingUI = "ApplicationMaster"
	}
	if h := rep.GetHost(); h != "" && h != "N/A" && rep.GetRpcPort() > 0 {
		a.AMRPCAddress = fmt.Sprintf("%s:%d", h, rep.GetRpcPort())
	}
	if am != nil && am.nodeHTTP != "" {
		a.AMHostHTTPAddress = am.nodeHTTP
		a.AMContainerLogs = logsLink(am.nodeHTTP, am.id, a.User)
	}
	return a
}

func getApps(c *call) error {
	f, err := parseAppsFilter(c.r.URL.Query())
	if err != nil {
		return err
	}
	ctx := c.ctx()
	resp, err := c.s.b.GetApplications(ctx, &pb.GetApplicationsRequestProto{})
	if err != nil {
		return err
	}
	clusterID := c.s.b.Info().ID
	ni := &nodeIndex{c: c, ctx: ctx}
	out := dao.AppsResponse{}
	for _, rep := range resp.GetApplications() {
		if !f.match(rep) {
			continue
		}
		if f.limit > 0 && out.Apps != nil && int64(len(out.Apps.App)) >= f.limit {
			break
		}
		var am *amContainer
		if !isFinal(rep.GetYarnApplicationState()) {
			am = ni.currentAM(rep)
		}
		if out.Apps == nil {
			out.Apps = &dao.AppList{}
		}
		out.Apps.App = append(out.Apps.App, c.s.appInfo(rep, clusterID, am))
	}
	return c.json(http.StatusOK, out)
}

// report is one app's report, or a 404.
func (c *call) report(ctx context.Context, id *pb.ApplicationIdProto) (*pb.ApplicationReportProto, error) {
	resp, err := c.s.b.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: id})
	if err != nil {
		return nil, err
	}
	if resp.GetApplicationReport() == nil {
		return nil, notFound("app with id: %s not found", rpc.AppIDString(id))
	}
	return resp.GetApplicationReport(), nil
}

func getApp(c *call) error {
	id, err := c.appID()
	if err != nil {
		return err
	}
	ctx := c.ctx()
	rep, err := c.report(ctx, id)
	if err != nil {
		return err
	}
	ni := &nodeIndex{c: c, ctx: ctx}
	return c.json(http.StatusOK, dao.AppResponse{App: c.s.appInfo(rep, c.s.b.Info().ID, ni.currentAM(rep))})
}

func getAppAttempts(c *call) error {
	id, err := c.appID()
	if err != nil {
		return err
	}
	ctx := c.ctx()
	rep, err := c.report(ctx, id)
	if err != nil {
		return err
	}
	resp, err := c.s.b.GetApplicationAttempts(ctx, &pb.GetApplicationAttemptsRequestProto{ApplicationId: id})
	if err != nil {
		return err
	}
	ni := &nodeIndex{c: c, ctx: ctx}
	out := dao.AppAttemptsResponse{AppAttempts: dao.AppAttemptList{AppAttempt: []dao.AppAttempt{}}}
	for _, at := range resp.GetApplicationAttempts() {
		a := dao.AppAttempt{ID: at.GetApplicationAttemptId().GetAttemptId(), StartTime: at.GetStartTime(),
			FinishedTime: at.GetFinishTime(), AppAttemptID: rpc.AttemptIDString(at.GetApplicationAttemptId()),
			AppAttemptState: strings.TrimPrefix(at.GetYarnApplicationAttemptState().String(), "APP_ATTEMPT_")}
		if d := at.GetDiagnostics(); d != "N/A" {
			a.Diagnostics = d
		}
		if am := ni.findAMContainer(at.GetApplicationAttemptId(), at.GetAmContainerId()); am != nil {
			a.ContainerID, a.NodeID, a.NodeHTTPAddress = am.id, am.nodeID, am.nodeHTTP
			a.LogsLink = logsLink(am.nodeHTTP, am.id, rep.GetUser())
		}
		out.AppAttempts.AppAttempt = append(out.AppAttempts.AppAttempt, a)
	}
	return c.json(http.StatusOK, out)
}

func getAppState(c *call) error {
	id, err := c.appID()
	if err != nil {
		return err
	}
	rep, err := c.report(c.ctx(), id)
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, dao.AppState{State: rep.GetYarnApplicationState().String()})
}

// parseStateBody reads the body of PUT apps/{appid}/state, in JSON or
// as YARN's XML, <appstate><state>KILLED</state></appstate>. KILLED is
// the only state a client may ask for, as in YARN.
func parseStateBody(c *call) error {
	var body struct {
		State *string `json:"state" xml:"state"`
	}
	if err := readBodyOrXML(c, &body, "appstate"); err != nil {
		return err
	}
	if body.State == nil {
		return badRequest("state is missing: send {\"state\":\"KILLED\"}")
	}
	if !strings.EqualFold(strings.TrimSpace(*body.State), pb.YarnApplicationStateProto_KILLED.String()) {
		return badRequest("state: only 'KILLED' is allowed as a target state, got %q", *body.State)
	}
	return nil
}

func updateAppState(c *call) error {
	id, err := c.appID()
	if err != nil {
		return err
	}
	if err := parseStateBody(c); err != nil {
		return err
	}
	ctx := c.ctx()
	rep, err := c.report(ctx, id)
	if err != nil {
		return err
	}
	if isFinal(rep.GetYarnApplicationState()) {
		return c.json(http.StatusOK, dao.AppState{State: rep.GetYarnApplicationState().String()})
	}
	diag := fmt.Sprintf("killed through the web service by %s from %s", c.user(), remoteIP(c.r))
	if _, err := c.s.b.ForceKillApplication(ctx, &pb.KillApplicationRequestProto{ApplicationId: id,
		Diagnostics: proto.String(diag)}); err != nil {
		return err
	}
	if rep, err = c.report(ctx, id); err != nil {
		return err
	}
	c.w.Header().Set("Location", c.url(c.r.URL.Path))
	return c.json(http.StatusAccepted, dao.AppState{State: rep.GetYarnApplicationState().String()})
}

func createNewApplication(c *call) error {
	resp, err := c.s.b.GetNewApplication(c.ctx(), &pb.GetNewApplicationRequestProto{})
	if err != nil {
		return err
	}
	if resp.GetApplicationId() == nil {
		return internalError("the ResourceManager gave no application id")
	}
	maxCap := resp.GetMaximumCapability()
	return c.json(http.StatusOK, dao.NewApplication{ApplicationID: rpc.AppIDString(resp.GetApplicationId()),
		MaximumResourceCapability: dao.Resource{Memory: maxCap.GetMemory(), VCores: int64(maxCap.GetVirtualCores())}})
}

func submitApplication(c *call) error {
	var body dao.AppSubmission
	if err := readSubmission(c, &body); err != nil {
		return err
	}
	sc, err := submissionContext(&body)
	if err != nil {
		return err
	}
	if _, err := c.s.b.SubmitApplication(c.ctx(), &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: sc}); err != nil {
		// YARN answers a refused submission as a bad request, whatever
		// the scheduler's reason.
		we := fromBackend(err)
		var re *rpc.RemoteError
		if we.status == http.StatusInternalServerError && errors.As(err, &re) {
			we = badRequest("%s", re.Message)
		}
		return we
	}
	c.w.Header().Set("Location", c.url("/ws/v1/cluster/apps/"+rpc.AppIDString(sc.GetApplicationId())))
	c.w.WriteHeader(http.StatusAccepted)
	return nil
}
