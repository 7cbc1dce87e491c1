package integration

import (
	"fmt"
	"testing"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestRESTMore: a real RM serves the app attempt, container, queue,
// priority, timeout, statistics and node-label resources (issue 17) for
// a finished shell app, in JSON and XML, and 404s unknown ids.
func TestRESTMore(t *testing.T) {
	c := startCluster(t, 1, "-D", "yarn.scheduler.minimum-allocation-mb=64")
	w := web{t, "http://" + c.web}
	id := c.submit(t, "restmore", "exit 0")
	rep := c.waitState(t, id, pb.YarnApplicationStateProto_FINISHED)
	app := "/ws/v1/cluster/apps/" + rpc.AppIDString(id)
	attempt := rpc.AttemptIDString(rep.GetCurrentApplicationAttemptId())

	var at dao.AppAttemptResponse
	w.json("GET", app+"/appattempts/"+attempt, "", 200, &at)
	if at.AppAttempt.AppAttemptID != attempt || at.AppAttempt.AppAttemptState != "FINISHED" || at.AppAttempt.AMContainerID == "" ||
		at.AppAttempt.StartedTime <= 0 || at.AppAttempt.FinishedTime < at.AppAttempt.StartedTime {
		t.Errorf("attempt %+v", at.AppAttempt)
	}
	var atX dao.AppAttemptInfo
	w.xmlDoc("GET", app+"/appattempts/"+attempt, "", 200, "appAttempt", &atX)
	if atX != at.AppAttempt {
		t.Errorf("attempt in XML %+v, in JSON %+v", atX, at.AppAttempt)
	}

	var conts dao.ContainersResponse
	w.json("GET", app+"/appattempts/"+attempt+"/containers", "", 200, &conts)
	var am *dao.Container
	for i, ct := range conts.Containers.Container {
		if ct.ContainerID == at.AppAttempt.AMContainerID {
			am = &conts.Containers.Container[i]
		}
	}
	if am == nil {
		t.Fatalf("the AM container %s is not among the attempt's containers %+v", at.AppAttempt.AMContainerID, conts)
	}
	if am.AllocatedMB <= 0 || am.NodeID == "" || am.AssignedNodeID != am.NodeID {
		t.Errorf("AM container %+v", *am)
	}
	var contsX dao.ContainerList
	w.xmlDoc("GET", app+"/appattempts/"+attempt+"/containers", "", 200, "containers", &contsX)
	if len(contsX.Container) != len(conts.Containers.Container) {
		t.Errorf("XML lists %d containers, JSON %d", len(contsX.Container), len(conts.Containers.Container))
	}
	var one dao.ContainerResponse
	w.json("GET", app+"/appattempts/"+attempt+"/containers/"+am.ContainerID, "", 200, &one)
	if one.Container.ContainerID != am.ContainerID || one.Container.NodeID != am.NodeID {
		t.Errorf("container %+v, want %+v", one.Container, *am)
	}
	var oneX dao.Container
	w.xmlDoc("GET", app+"/appattempts/"+attempt+"/containers/"+am.ContainerID, "", 200, "container", &oneX)
	if oneX.ContainerID != am.ContainerID {
		t.Errorf("container in XML %+v", oneX)
	}

	var q dao.AppQueue
	w.json("GET", app+"/queue", "", 200, &q)
	if q.Queue != rep.GetQueue() || q.Queue == "" {
		t.Errorf("queue %q, report says %q", q.Queue, rep.GetQueue())
	}
	var qX dao.AppQueue
	w.xmlDoc("GET", app+"/queue", "", 200, "appqueue", &qX)
	if qX != q {
		t.Errorf("queue in XML %+v", qX)
	}
	var p dao.AppPriority
	w.json("GET", app+"/priority", "", 200, &p)
	if p.Priority != rep.GetPriority().GetPriority() {
		t.Errorf("priority %d, report says %d", p.Priority, rep.GetPriority().GetPriority())
	}
	var pX dao.AppPriority
	w.xmlDoc("GET", app+"/priority", "", 200, "applicationpriority", &pX)
	if pX != p {
		t.Errorf("priority in XML %+v", pX)
	}

	var tos dao.TimeoutsResponse
	w.json("GET", app+"/timeouts", "", 200, &tos)
	if len(tos.Timeouts.Timeout) != 1 || tos.Timeouts.Timeout[0].Type != "LIFETIME" {
		t.Errorf("timeouts %+v", tos)
	}
	var tosX dao.TimeoutList
	w.xmlDoc("GET", app+"/timeouts", "", 200, "timeouts", &tosX)
	if len(tosX.Timeout) != 1 || tosX.Timeout[0] != tos.Timeouts.Timeout[0] {
		t.Errorf("timeouts in XML %+v", tosX)
	}
	var to dao.TimeoutResponse
	w.json("GET", app+"/timeouts/LIFETIME", "", 200, &to)
	if to.Timeout != tos.Timeouts.Timeout[0] {
		t.Errorf("LIFETIME %+v, in the list %+v", to.Timeout, tos.Timeouts.Timeout[0])
	}
	var toX dao.Timeout
	w.xmlDoc("GET", app+"/timeouts/LIFETIME", "", 200, "timeout", &toX)
	if toX != to.Timeout {
		t.Errorf("LIFETIME in XML %+v", toX)
	}

	var st dao.AppStatisticsResponse
	w.json("GET", "/ws/v1/cluster/appstatistics?states=finished,running", "", 200, &st)
	want := []dao.StatItem{{State: "FINISHED", Type: "*", Count: 1}, {State: "RUNNING", Type: "*", Count: 0}}
	if fmt.Sprint(st.AppStatInfo.StatItem) != fmt.Sprint(want) {
		t.Errorf("statistics %+v, want %+v", st.AppStatInfo.StatItem, want)
	}
	var stX dao.AppStatInfo
	w.xmlDoc("GET", "/ws/v1/cluster/appstatistics?states=finished,running", "", 200, "appStatInfo", &stX)
	if fmt.Sprint(stX.StatItem) != fmt.Sprint(want) {
		t.Errorf("statistics in XML %+v", stX)
	}
	w.json("GET", "/ws/v1/cluster/appstatistics", "", 200, &st)
	if len(st.AppStatInfo.StatItem) != 8 {
		t.Errorf("statistics of every state %+v", st.AppStatInfo.StatItem)
	}

	for _, tc := range []struct{ path, want string }{
		{"/ws/v1/cluster/get-node-labels", `{"nodeLabelInfo":[]}`},
		{"/ws/v1/cluster/get-node-to-labels", `{"nodeToLabels":{}}`},
	} {
		if r := w.do("GET", tc.path, ""); r.status != 200 || string(r.body) != tc.want {
			t.Errorf("%s: %d %s, want %s", tc.path, r.status, r.body, tc.want)
		}
	}
	var labels dao.NodeLabelsInfo
	w.xmlDoc("GET", "/ws/v1/cluster/get-node-labels", "", 200, "nodeLabelsInfo", &labels)
	var n2l dao.NodeToLabelsInfo
	w.xmlDoc("GET", "/ws/v1/cluster/get-node-to-labels", "", 200, "nodeToLabelsInfo", &n2l)

	// Unknown ids are 404s, as the other app resources answer them.
	missing := rpc.AttemptIDString(&pb.ApplicationAttemptIdProto{ApplicationId: id, AttemptId: rep.GetCurrentApplicationAttemptId().AttemptId})
	missing = missing[:len(missing)-2] + "99"
	w.remoteException("GET", app+"/appattempts/"+missing, "", 404, "NotFoundException")
	w.remoteException("GET", app+"/appattempts/"+missing+"/containers", "", 404, "NotFoundException")
	w.remoteException("GET", app+"/appattempts/"+attempt+"/containers/"+am.ContainerID[:len(am.ContainerID)-2]+"99", "", 404, "NotFoundException")
	gone := "/ws/v1/cluster/apps/" + rpc.AppIDString(id)[:len(rpc.AppIDString(id))-2] + "99"
	for _, sub := range []string{"/queue", "/priority", "/timeouts", "/timeouts/LIFETIME"} {
		w.remoteException("GET", gone+sub, "", 404, "NotFoundException")
	}
}
