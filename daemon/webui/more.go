package webui

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// attemptID reads the {appattemptid} of the path, which must be an
// attempt of the {appid}.
func (c *call) attemptID(app *pb.ApplicationIdProto) (*pb.ApplicationAttemptIdProto, error) {
	s := c.vars()["appattemptid"]
	id, err := rpc.ParseAttemptID(s)
	if err != nil {
		return nil, badRequest("Invalid AppAttemptId: %v", err)
	}
	if !proto.Equal(id.GetApplicationId(), app) {
		return nil, badRequest("appattempt %s is not an attempt of app %s", s, rpc.AppIDString(app))
	}
	return id, nil
}

// parseContainerID reads container_[e<epoch>_]<cluster ts>_<app>_<attempt>_<id>.
func parseContainerID(s string) (*pb.ContainerIdProto, error) {
	bad := fmt.Errorf("%q is not a container id (container_[e<epoch>_]<cluster>_<app>_<attempt>_<id>)", s)
	parts := strings.Split(s, "_")
	if len(parts) < 5 || parts[0] != "container" {
		return nil, bad
	}
	var epoch int64
	if len(parts) == 6 {
		e, ok := strings.CutPrefix(parts[1], "e")
		n, err := strconv.ParseInt(e, 10, 64)
		if !ok || err != nil || n < 0 {
			return nil, bad
		}
		epoch, parts = n, append(parts[:1:1], parts[2:]...)
	}
	if len(parts) != 5 {
		return nil, bad
	}
	ts, err1 := strconv.ParseInt(parts[1], 10, 64)
	app, err2 := strconv.ParseInt(parts[2], 10, 32)
	att, err3 := strconv.ParseInt(parts[3], 10, 32)
	n, err4 := strconv.ParseInt(parts[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || n < 0 || n >= 1<<40 {
		return nil, bad
	}
	appID := &pb.ApplicationIdProto{Id: proto.Int32(int32(app)), ClusterTimestamp: proto.Int64(ts)}
	return &pb.ContainerIdProto{AppId: appID,
		AppAttemptId: &pb.ApplicationAttemptIdProto{ApplicationId: appID, AttemptId: proto.Int32(int32(att))},
		Id:           proto.Int64(epoch<<40 | n)}, nil
}

func notNA(s string) string {
	if s == "N/A" {
		return ""
	}
	return s
}

func getAppAttempt(c *call) error {
	app, err := c.appID()
	if err != nil {
		return err
	}
	id, err := c.attemptID(app)
	if err != nil {
		return err
	}
	ctx := c.ctx()
	if _, err := c.report(ctx, app); err != nil {
		return err
	}
	resp, err := c.s.b.GetApplicationAttemptReport(ctx, &pb.GetApplicationAttemptReportRequestProto{ApplicationAttemptId: id})
	if err != nil {
		return err
	}
	at := resp.GetApplicationAttemptReport()
	if at == nil {
		return notFound("appAttempt with id: %s not found", rpc.AttemptIDString(id))
	}
	a := dao.AppAttemptInfo{AppAttemptID: rpc.AttemptIDString(at.GetApplicationAttemptId()), Host: notNA(at.GetHost()),
		RPCPort: at.GetRpcPort(), TrackingURL: notNA(at.GetTrackingUrl()), OriginalTrackingURL: notNA(at.GetOriginalTrackingUrl()),
		DiagnosticsInfo: notNA(at.GetDiagnostics()),
		AppAttemptState: strings.TrimPrefix(at.GetYarnApplicationAttemptState().String(), "APP_ATTEMPT_"),
		StartedTime:     at.GetStartTime(), FinishedTime: at.GetFinishTime()}
	if at.GetAmContainerId() != nil {
		a.AMContainerID = rpc.ContainerIDString(at.GetAmContainerId())
	}
	return c.json(http.StatusOK, dao.AppAttemptResponse{AppAttempt: a})
}

// containerInfo is a report as YARN's ContainerInfo.
func (s *server) containerInfo(ct *pb.ContainerReportProto, user string, ni *nodeIndex) dao.Container {
	node := nodeIDString(ct.GetNodeId())
	httpAddr := ct.GetNodeHttpAddress()
	if httpAddr == "" && node != "" {
		httpAddr = ni.httpAddress(node)
	}
	id := rpc.ContainerIDString(ct.GetContainerId())
	d := dao.Container{ContainerID: id, AllocatedMB: ct.GetResource().GetMemory(),
		AllocatedVCores: int64(ct.GetResource().GetVirtualCores()), AssignedNodeID: node,
		Priority: ct.GetPriority().GetPriority(), StartedTime: ct.GetCreationTime(), FinishedTime: ct.GetFinishTime(),
		ElapsedTime:     elapsed(ct.GetCreationTime(), ct.GetFinishTime(), s.now().UnixMilli()),
		DiagnosticsInfo: notNA(ct.GetDiagnosticsInfo()), LogURL: ct.GetLogUrl(), ContainerExitStatus: ct.GetContainerExitStatus(),
		ContainerState: strings.TrimPrefix(ct.GetContainerState().String(), "C_"), NodeHTTPAddress: httpAddr, NodeID: node,
		AllocatedResources: []dao.ResourceEntry{{Key: "memory-mb", Value: ct.GetResource().GetMemory()},
			{Key: "vcores", Value: int64(ct.GetResource().GetVirtualCores())}}}
	if d.LogURL == "" {
		d.LogURL = logsLink(httpAddr, id, user)
	}
	return d
}

func getAttemptContainers(c *call) error {
	app, err := c.appID()
	if err != nil {
		return err
	}
	id, err := c.attemptID(app)
	if err != nil {
		return err
	}
	ctx := c.ctx()
	rep, err := c.report(ctx, app)
	if err != nil {
		return err
	}
	// The attempt must exist: an unknown one is a 404, not an empty list.
	if _, err := c.s.b.GetApplicationAttemptReport(ctx, &pb.GetApplicationAttemptReportRequestProto{ApplicationAttemptId: id}); err != nil {
		return err
	}
	resp, err := c.s.b.GetContainers(ctx, &pb.GetContainersRequestProto{ApplicationAttemptId: id})
	if err != nil {
		return err
	}
	ni := &nodeIndex{c: c, ctx: ctx}
	out := dao.ContainersResponse{Containers: dao.ContainerList{Container: []dao.Container{}}}
	for _, ct := range resp.GetContainers() {
		out.Containers.Container = append(out.Containers.Container, c.s.containerInfo(ct, rep.GetUser(), ni))
	}
	return c.json(http.StatusOK, out)
}

func getAttemptContainer(c *call) error {
	app, err := c.appID()
	if err != nil {
		return err
	}
	id, err := c.attemptID(app)
	if err != nil {
		return err
	}
	cid, err := parseContainerID(c.vars()["containerid"])
	if err != nil {
		return badRequest("Invalid ContainerId: %v", err)
	}
	if !proto.Equal(cid.GetAppAttemptId(), id) {
		return badRequest("container %s is not a container of appattempt %s", c.vars()["containerid"], rpc.AttemptIDString(id))
	}
	ctx := c.ctx()
	rep, err := c.report(ctx, app)
	if err != nil {
		return err
	}
	resp, err := c.s.b.GetContainerReport(ctx, &pb.GetContainerReportRequestProto{ContainerId: cid})
	if err != nil {
		return err
	}
	if resp.GetContainerReport() == nil {
		return notFound("container with id: %s not found", rpc.ContainerIDString(cid))
	}
	ni := &nodeIndex{c: c, ctx: ctx}
	return c.json(http.StatusOK, dao.ContainerResponse{Container: c.s.containerInfo(resp.GetContainerReport(), rep.GetUser(), ni)})
}

// appReport is the {appid}'s report, or an error.
func (c *call) appReport() (*pb.ApplicationReportProto, error) {
	id, err := c.appID()
	if err != nil {
		return nil, err
	}
	return c.report(c.ctx(), id)
}

func getAppQueue(c *call) error {
	rep, err := c.appReport()
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, dao.AppQueue{Queue: rep.GetQueue()})
}

func getAppPriority(c *call) error {
	rep, err := c.appReport()
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, dao.AppPriority{Priority: rep.GetPriority().GetPriority()})
}

// timeoutTypes are YARN's ApplicationTimeoutType names.
func timeoutTypeName(t pb.ApplicationTimeoutTypeProto) string {
	return strings.TrimPrefix(t.String(), "APP_TIMEOUT_")
}

// appTimeout is one of the report's timeouts, or YARN's unlimited one
// when the app has none of that type.
func appTimeout(rep *pb.ApplicationReportProto, t pb.ApplicationTimeoutTypeProto) dao.Timeout {
	for _, m := range rep.GetAppTimeouts() {
		at := m.GetApplicationTimeout()
		typ := m.GetApplicationTimeoutType()
		if m.ApplicationTimeoutType == nil {
			typ = at.GetApplicationTimeoutType()
		}
		if typ != t || at == nil {
			continue
		}
		exp := at.GetExpireTime()
		if exp == "" {
			exp = "UNLIMITED"
		}
		return dao.Timeout{Type: timeoutTypeName(t), ExpiryTime: exp, RemainingTimeInSeconds: at.GetRemainingTime()}
	}
	return dao.Timeout{Type: timeoutTypeName(t), ExpiryTime: "UNLIMITED", RemainingTimeInSeconds: -1}
}

func getAppTimeouts(c *call) error {
	rep, err := c.appReport()
	if err != nil {
		return err
	}
	out := dao.TimeoutsResponse{Timeouts: dao.TimeoutList{Timeout: []dao.Timeout{}}}
	for _, v := range sortedKeys(pb.ApplicationTimeoutTypeProto_name) {
		out.Timeouts.Timeout = append(out.Timeouts.Timeout, appTimeout(rep, pb.ApplicationTimeoutTypeProto(v)))
	}
	return c.json(http.StatusOK, out)
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func getAppTimeout(c *call) error {
	name := c.vars()["type"]
	v, ok := pb.ApplicationTimeoutTypeProto_value["APP_TIMEOUT_"+strings.ToUpper(name)]
	if !ok {
		return badRequest("Invalid application-timeout type %q; the only type is LIFETIME", name)
	}
	rep, err := c.appReport()
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, dao.TimeoutResponse{Timeout: appTimeout(rep, pb.ApplicationTimeoutTypeProto(v))})
}

// splitQuery is a comma list query parameter's values, trimmed, without
// empties.
func splitQuery(values []string) []string {
	var out []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func getAppStatistics(c *call) error {
	q := c.r.URL.Query()
	var states []pb.YarnApplicationStateProto
	for _, s := range splitQuery(q["states"]) {
		v, ok := pb.YarnApplicationStateProto_value[strings.ToUpper(s)]
		if !ok {
			return badRequest("Invalid application-state %s specified. It should be one of %s", s, appStateNames())
		}
		if !slices.Contains(states, pb.YarnApplicationStateProto(v)) {
			states = append(states, pb.YarnApplicationStateProto(v))
		}
	}
	if len(states) == 0 {
		for _, v := range sortedKeys(pb.YarnApplicationStateProto_name) {
			states = append(states, pb.YarnApplicationStateProto(v))
		}
	}
	types := splitQuery(q["applicationTypes"])
	if len(types) > 1 {
		return badRequest("# of applicationTypes = %d, we temporarily support at most one applicationType", len(types))
	}
	typ := "*"
	if len(types) == 1 {
		typ = strings.ToLower(types[0])
	}
	resp, err := c.s.b.GetApplications(c.ctx(), &pb.GetApplicationsRequestProto{})
	if err != nil {
		return err
	}
	counts := map[pb.YarnApplicationStateProto]int64{}
	for _, a := range resp.GetApplications() {
		if typ == "*" || strings.EqualFold(a.GetApplicationType(), typ) {
			counts[a.GetYarnApplicationState()]++
		}
	}
	out := dao.AppStatisticsResponse{AppStatInfo: dao.AppStatInfo{StatItem: []dao.StatItem{}}}
	for _, s := range states {
		out.AppStatInfo.StatItem = append(out.AppStatInfo.StatItem, dao.StatItem{State: s.String(), Type: typ, Count: counts[s]})
	}
	return c.json(http.StatusOK, out)
}

func getNodeLabels(c *call) error {
	resp, err := c.s.b.GetClusterNodeLabels(c.ctx(), &pb.GetClusterNodeLabelsRequestProto{})
	if err != nil {
		return err
	}
	out := dao.NodeLabelsInfo{NodeLabelInfo: []dao.NodeLabel{}}
	seen := map[string]bool{}
	for _, l := range resp.GetNodeLabels() {
		seen[l.GetName()] = true
		out.NodeLabelInfo = append(out.NodeLabelInfo, dao.NodeLabel{Name: l.GetName(), Exclusivity: l.GetIsExclusive()})
	}
	for _, n := range resp.GetDeprecatedNodeLabels() {
		if !seen[n] {
			out.NodeLabelInfo = append(out.NodeLabelInfo, dao.NodeLabel{Name: n, Exclusivity: true})
		}
	}
	return c.json(http.StatusOK, out)
}

func getNodeToLabels(c *call) error {
	byNode, err := labelsByNode(c)
	if err != nil {
		return err
	}
	out := dao.NodeToLabelsInfo{}
	for id, v := range byNode {
		out.NodeToLabels.Entry = append(out.NodeToLabels.Entry, dao.NodeToLabelsEntry{Key: id, Value: v})
	}
	slices.SortFunc(out.NodeToLabels.Entry, func(a, b dao.NodeToLabelsEntry) int { return strings.Compare(a.Key, b.Key) })
	return c.json(http.StatusOK, out)
}
