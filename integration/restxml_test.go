package integration

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"strings"
	"testing"

	"github.com/loomrm/loom/daemon/webui/dao"
)

// xmlDoc fetches path with Accept: application/xml, checks that the
// answer is YARN's XML with the root element root, and decodes it into v.
func (w web) xmlDoc(method, path, body string, status int, root string, v any) {
	w.t.Helper()
	header := []string{"Accept", "application/xml"}
	if body != "" {
		header = append(header, "Content-Type", "application/xml")
	}
	rep := w.do(method, path, body, header...)
	if rep.status != status {
		w.t.Fatalf("%s %s: %d, want %d: %s", method, path, rep.status, status, rep.body)
	}
	if ct := rep.header.Get("Content-Type"); ct != "application/xml;charset=utf-8" {
		w.t.Errorf("%s %s: Content-Type %q, want application/xml;charset=utf-8", method, path, ct)
	}
	if !bytes.HasPrefix(rep.body, []byte(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`)) {
		w.t.Errorf("%s %s: no XML declaration: %s", method, path, rep.body)
	}
	dec := xml.NewDecoder(bytes.NewReader(rep.body))
	for {
		tok, err := dec.Token()
		if err != nil {
			w.t.Fatalf("%s %s: no root element: %v: %s", method, path, err, rep.body)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != root {
				w.t.Errorf("%s %s: root element <%s>, want <%s>: %s", method, path, se.Name.Local, root, rep.body)
			}
			if err := dec.DecodeElement(v, &se); err != nil {
				w.t.Fatalf("%s %s: %v: %s", method, path, err, rep.body)
			}
			return
		}
	}
}

// TestRESTInXML: a real RM answers YARN's REST resources in XML when
// asked, as YARN's do, with the JSON documents' values; an XML client can
// kill an app with YARN's XML body, and errors come back as an XML
// RemoteException. JSON stays the default.
func TestRESTInXML(t *testing.T) {
	c := startCluster(t, 2, "-D", "yarn.scheduler.minimum-allocation-mb=64", "-D", "loom.webapp.rest-write.enabled=true")
	w := web{t, "http://" + c.web}

	var info dao.ClusterInfo
	w.xmlDoc("GET", "/ws/v1/cluster/info", "", 200, "clusterInfo", &info)
	var infoJSON dao.ClusterInfoResponse
	w.json("GET", "/ws/v1/cluster/info", "", 200, &infoJSON)
	if info != infoJSON.ClusterInfo || info.State != "STARTED" || info.ID == 0 || info.StartedOn == 0 {
		t.Errorf("cluster info in XML %+v, in JSON %+v", info, infoJSON.ClusterInfo)
	}

	// An app that stays up until it is killed.
	id := w.newApp("xml-sleeper", "sleep 120")
	w.waitState(id, "ACCEPTED")

	var metrics dao.ClusterMetrics
	w.xmlDoc("GET", "/ws/v1/cluster/metrics", "", 200, "clusterMetrics", &metrics)
	if metrics.ActiveNodes != 2 || metrics.TotalNodes != 2 || metrics.TotalMB != 2*4096 || metrics.TotalVirtualCores != 8 ||
		metrics.AppsSubmitted != 1 {
		t.Errorf("cluster metrics in XML %+v", metrics)
	}

	var nodes dao.NodeList
	w.xmlDoc("GET", "/ws/v1/cluster/nodes", "", 200, "nodes", &nodes)
	if len(nodes.Node) != 2 {
		t.Fatalf("%d <node> elements, want 2: %+v", len(nodes.Node), nodes)
	}
	for _, n := range nodes.Node {
		if n.State != "RUNNING" || !strings.HasPrefix(n.ID, "127.0.0.1:") || n.AvailMemoryMB+n.UsedMemoryMB != 4096 ||
			n.AvailableResource.VCores+n.UsedResource.VCores != 4 {
			t.Errorf("node in XML %+v", n)
		}
	}
	var node dao.Node
	w.xmlDoc("GET", "/ws/v1/cluster/nodes/"+nodes.Node[0].ID, "", 200, "node", &node)
	if node.ID != nodes.Node[0].ID {
		t.Errorf("node %+v, want %s", node, nodes.Node[0].ID)
	}

	var apps dao.AppList
	w.xmlDoc("GET", "/ws/v1/cluster/apps", "", 200, "apps", &apps)
	if len(apps.App) != 1 || apps.App[0].ID != id || apps.App[0].Name != "xml-sleeper" || apps.App[0].Queue != "default" ||
		apps.App[0].User != "dr.who" || apps.App[0].StartedTime == 0 {
		t.Errorf("apps in XML %+v", apps)
	}
	var app dao.App
	w.xmlDoc("GET", "/ws/v1/cluster/apps/"+id, "", 200, "app", &app)
	if app.ID != id || app.ApplicationType != "LOOM-DAG" {
		t.Errorf("app in XML %+v", app)
	}
	var attempts dao.AppAttemptList
	w.xmlDoc("GET", "/ws/v1/cluster/apps/"+id+"/appattempts", "", 200, "appAttempts", &attempts)
	if len(attempts.AppAttempt) == 0 || !strings.HasPrefix(attempts.AppAttempt[0].AppAttemptID, "appattempt_") {
		t.Errorf("attempts in XML %+v", attempts)
	}
	var sched struct {
		SchedulerInfo dao.CapacitySchedulerInfo `xml:"schedulerInfo"`
	}
	w.xmlDoc("GET", "/ws/v1/cluster/scheduler", "", 200, "scheduler", &sched)
	if sched.SchedulerInfo.Type != "capacityScheduler" || sched.SchedulerInfo.QueueName != "root" {
		t.Errorf("scheduler in XML %+v", sched.SchedulerInfo)
	}

	// Kill it with YARN's XML body: 202, then 200 once it is over.
	var st dao.AppState
	kill := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><appstate><state>KILLED</state></appstate>`
	w.xmlDoc("PUT", "/ws/v1/cluster/apps/"+id+"/state", kill, http.StatusAccepted, "appstate", &st)
	w.waitState(id, "KILLED")
	w.xmlDoc("PUT", "/ws/v1/cluster/apps/"+id+"/state", kill, http.StatusOK, "appstate", &st)
	if st.State != "KILLED" {
		t.Errorf("state after the kill %+v", st)
	}
	var empty dao.AppList
	w.xmlDoc("GET", "/ws/v1/cluster/apps?states=RUNNING", "", 200, "apps", &empty)
	if len(empty.App) != 0 {
		t.Errorf("running apps %+v", empty)
	}

	// Errors in XML.
	var e dao.RemoteException
	w.xmlDoc("GET", "/ws/v1/cluster/apps/application_1_9999", "", http.StatusNotFound, "RemoteException", &e)
	if e.Exception != "NotFoundException" || e.JavaClassName != "org.apache.hadoop.yarn.webapp.NotFoundException" || e.Message == "" {
		t.Errorf("404 in XML %+v", e)
	}
	w.xmlDoc("PUT", "/ws/v1/cluster/apps/"+id+"/state", `<appstate><state>RUNNING</state></appstate>`,
		http.StatusBadRequest, "RemoteException", &e)
	if e.Exception != "BadRequestException" || !strings.Contains(e.Message, "KILLED") {
		t.Errorf("400 in XML %+v", e)
	}

	// JSON without Accept, and Loom's views in JSON whatever is asked.
	rep := w.do("GET", "/ws/v1/cluster/metrics", "")
	if !json.Valid(rep.body) || rep.header.Get("Content-Type") != "application/json" {
		t.Errorf("metrics without Accept: %q %s", rep.header.Get("Content-Type"), rep.body)
	}
	rep = w.do("GET", "/ws/v1/loom/scheduler", "", "Accept", "application/xml")
	if !json.Valid(rep.body) || rep.header.Get("Content-Type") != "application/json" {
		t.Errorf("Loom's scheduler with Accept: application/xml: %q %s", rep.header.Get("Content-Type"), rep.body)
	}
}
