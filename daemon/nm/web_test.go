package nm

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/loomrm/loom/rpc"
)

// webGet fetches a path from the NM's web services.
func webGet(t *testing.T, n *NodeManager, method, path string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+n.WebAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// field walks a decoded JSON value along keys and list indexes.
func field(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func TestWebServices(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	done, running := containerID(1, 1), containerID(1, 2)
	start(t, cm, token(t, n, done, 256), launch("echo hello-web; echo oops >&2", nil, nil))
	start(t, cm, token(t, n, running, 512), launch("echo still-here; exec sleep 60", nil, nil))
	stub.completed(t, done, 10*time.Second)
	waitFile(t, logDir(n, running)+"/stdout", 10*time.Second)
	doneID, runID := ContainerIDString(done), ContainerIDString(running)
	appID := ApplicationIDString(rpc.AppIDOf(done))
	unknown := ContainerIDString(containerID(1, 99))

	type check struct {
		path []any
		want any // a value, or a func(any) bool
	}
	isNum := func(v any) bool { _, ok := v.(float64); return ok }
	isPositive := func(v any) bool { f, ok := v.(float64); return ok && f > 0 }
	hasAll := func(items ...string) func(any) bool {
		return func(v any) bool {
			l, ok := v.([]any)
			if !ok {
				return false
			}
			for _, want := range items {
				found := false
				for _, x := range l {
					found = found || x == want
				}
				if !found {
					return false
				}
			}
			return true
		}
	}
	nodeChecks := []check{
		{[]any{"nodeInfo", "id"}, n.NodeID()},
		{[]any{"nodeInfo", "nodeHostName"}, "127.0.0.1"},
		{[]any{"nodeInfo", "nodeManagerVersion"}, Version},
		{[]any{"nodeInfo", "totalPmemAllocatedContainersMB"}, 4096.0},
		{[]any{"nodeInfo", "totalVmemAllocatedContainersMB"}, 8601.0},
		{[]any{"nodeInfo", "totalVCoresAllocatedContainers"}, 4.0},
		{[]any{"nodeInfo", "nodeHealthy"}, true},
		{[]any{"nodeInfo", "healthReport"}, ""},
		{[]any{"nodeInfo", "lastNodeUpdateTime"}, isPositive},
		{[]any{"nodeInfo", "nmStartupTime"}, isPositive},
	}
	errCheck := func(exception string) []check {
		return []check{
			{[]any{"RemoteException", "exception"}, exception},
			{[]any{"RemoteException", "javaClassName"}, "org.apache.hadoop.yarn.webapp." + exception},
			{[]any{"RemoteException", "message"}, func(v any) bool { s, _ := v.(string); return s != "" }},
		}
	}
	for _, tc := range []struct {
		name, path string
		status     int
		checks     []check
	}{
		{"node", "/ws/v1/node", 200, nodeChecks},
		{"node info", "/ws/v1/node/info", 200, nodeChecks},
		{"apps", "/ws/v1/node/apps", 200, []check{
			{[]any{"apps", "app", 0, "id"}, appID},
			{[]any{"apps", "app", 0, "state"}, "RUNNING"},
			{[]any{"apps", "app", 0, "user"}, "alice"},
			{[]any{"apps", "app", 0, "containerids"}, hasAll(doneID, runID)},
		}},
		{"apps of another user", "/ws/v1/node/apps?user=bob", 200, []check{{[]any{"apps", "app"}, nil}}},
		{"apps in a bad state", "/ws/v1/node/apps?state=SLEEPING", 400, errCheck("BadRequestException")},
		{"app", "/ws/v1/node/apps/" + appID, 200, []check{
			{[]any{"app", "id"}, appID},
			{[]any{"app", "containerids"}, hasAll(doneID, runID)},
		}},
		{"unknown app", "/ws/v1/node/apps/application_1_9999", 404, errCheck("NotFoundException")},
		{"not an app id", "/ws/v1/node/apps/bogus", 400, errCheck("BadRequestException")},
		{"containers", "/ws/v1/node/containers", 200, []check{
			{[]any{"containers", "container", 0, "id"}, doneID},
			{[]any{"containers", "container", 1, "id"}, runID},
			{[]any{"containers", "container", 0, "exitCode"}, isNum},
			{[]any{"containers", "container", 1, "totalMemoryNeededMB"}, 512.0},
			{[]any{"containers", "container", 1, "containerLogFiles"}, hasAll("stdout", "stderr")},
		}},
		{"completed container", "/ws/v1/node/containers/" + doneID, 200, []check{
			{[]any{"container", "id"}, doneID},
			{[]any{"container", "state"}, "DONE"},
			{[]any{"container", "exitCode"}, 0.0},
			{[]any{"container", "diagnostics"}, ""},
			{[]any{"container", "user"}, "alice"},
			{[]any{"container", "totalMemoryNeededMB"}, 256.0},
			{[]any{"container", "totalVCoresNeeded"}, 1.0},
			{[]any{"container", "nodeId"}, n.NodeID()},
			{[]any{"container", "containerLogsLink"}, "http://" + n.WebAddr() + "/node/containerlogs/" + doneID + "/alice"},
			{[]any{"container", "containerLogFiles"}, hasAll("stdout", "stderr")},
		}},
		{"running container", "/ws/v1/node/containers/" + runID, 200, []check{
			{[]any{"container", "state"}, "RUNNING"},
			{[]any{"container", "exitCode"}, float64(ExitInvalid)},
		}},
		{"unknown container", "/ws/v1/node/containers/" + unknown, 404, errCheck("NotFoundException")},
		{"not a container id", "/ws/v1/node/containers/container_x", 400, errCheck("BadRequestException")},
		{"log list", "/ws/v1/node/containers/" + doneID + "/logs", 200, []check{
			{[]any{0, "containerId"}, doneID},
			{[]any{0, "nodeId"}, n.NodeID()},
			{[]any{0, "logAggregationType"}, "LOCAL"},
			{[]any{0, "containerLogInfo", 0, "fileName"}, "stderr"},
			{[]any{0, "containerLogInfo", 0, "fileSize"}, "5"},
			{[]any{0, "containerLogInfo", 1, "fileName"}, "stdout"},
			{[]any{0, "containerLogInfo", 1, "fileSize"}, "10"},
			{[]any{0, "containerLogInfo", 1, "lastModifiedTime"}, func(v any) bool { s, _ := v.(string); return s != "" }},
		}},
		{"log list of an unknown container", "/ws/v1/node/containers/" + unknown + "/logs", 404, errCheck("NotFoundException")},
		{"missing log file", "/ws/v1/node/containers/" + doneID + "/logs/syslog", 404, errCheck("NotFoundException")},
		{"log of an unknown container", "/ws/v1/node/containers/" + unknown + "/logs/stdout", 404, errCheck("NotFoundException")},
		{"traversal with an escaped slash", "/ws/v1/node/containers/" + doneID + "/logs/..%2F..%2F..%2Fetc%2Fpasswd", 400, errCheck("BadRequestException")},
		{"escaped dot-dot", "/ws/v1/node/containers/" + doneID + "/logs/%2E%2E", 400, errCheck("BadRequestException")},
		{"dot-dot in a name", "/ws/v1/node/containers/" + doneID + "/logs/..stdout", 400, errCheck("BadRequestException")},
		{"escaped backslash", "/ws/v1/node/containers/" + doneID + "/logs/a%5Cb", 400, errCheck("BadRequestException")},
		{"no such resource", "/ws/v1/node/nothing", 404, errCheck("NotFoundException")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := webGet(t, n, http.MethodGet, tc.path)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
			var v any
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			for _, c := range tc.checks {
				got := field(v, c.path...)
				if f, ok := c.want.(func(any) bool); ok {
					if !f(got) {
						t.Errorf("%v = %#v", c.path, got)
					}
				} else if got != c.want {
					t.Errorf("%v = %#v, want %#v", c.path, got, c.want)
				}
			}
		})
	}

	// The log files' content, through the REST API and the UI's page.
	for _, tc := range []struct{ path, want string }{
		{"/ws/v1/node/containers/" + doneID + "/logs/stdout", "hello-web\n"},
		{"/ws/v1/node/containers/" + doneID + "/logs/stderr", "oops\n"},
		{"/ws/v1/node/containers/" + runID + "/logs/stdout", "still-here\n"},
		{"/ws/v1/node/containers/" + doneID + "/logs/stdout?size=5", "hello"},
		{"/ws/v1/node/containers/" + doneID + "/logs/stdout?size=-4", "web\n"},
		{"/node/containerlogs/" + doneID + "/alice/stdout", "hello-web\n"},
	} {
		status, h, body := webGet(t, n, http.MethodGet, tc.path)
		if status != 200 || body != tc.want || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
			t.Errorf("GET %s: %d %q (%s), want %q", tc.path, status, body, h.Get("Content-Type"), tc.want)
		}
	}
	status, h, body := webGet(t, n, http.MethodGet, "/node/containerlogs/"+doneID+"/alice")
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, `href="/node/containerlogs/`+doneID+`/alice/stdout"`) {
		t.Errorf("log page: %d %s", status, body)
	}
	if status, _, body := webGet(t, n, http.MethodGet, "/node/containerlogs/"+doneID+"/alice/..%2Fstdout"); status != 400 {
		t.Errorf("log page traversal: %d %s", status, body)
	}
	if status, _, _ := webGet(t, n, http.MethodGet, "/node/containerlogs/"+unknown+"/alice"); status != 404 {
		t.Errorf("log page of an unknown container: %d", status)
	}

	// A symlink a container leaves in its log dir is neither listed nor
	// followed.
	if err := os.Symlink("/etc/passwd", filepath.Join(logDir(n, done), "passwd")); err != nil {
		t.Fatal(err)
	}
	if status, _, body := webGet(t, n, http.MethodGet, "/ws/v1/node/containers/"+doneID+"/logs/passwd"); status != 404 || strings.Contains(body, "root:") {
		t.Errorf("symlinked log: %d %s", status, body)
	}
	if _, _, body := webGet(t, n, http.MethodGet, "/ws/v1/node/containers/"+doneID+"/logs"); strings.Contains(body, "passwd") {
		t.Errorf("symlink listed: %s", body)
	}

	// Read-only: HEAD answers, writes are refused.
	if status, _, body := webGet(t, n, http.MethodHead, "/ws/v1/node/containers/"+doneID+"/logs/stdout"); status != 200 || body != "" {
		t.Errorf("HEAD: %d %q", status, body)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		status, h, body := webGet(t, n, m, "/ws/v1/node/apps/"+appID)
		if status != http.StatusMethodNotAllowed || h.Get("Allow") != "GET, HEAD" || !strings.Contains(body, "NotAllowedException") {
			t.Errorf("%s: %d %q %s", m, status, h.Get("Allow"), body)
		}
	}

	// Once the NM has forgotten a completed container, its logs, which
	// stay on disk, are still served.
	n.mu.Lock()
	n.forgetLocked(n.containers[doneID], time.Now())
	n.mu.Unlock()
	if status, _, _ := webGet(t, n, http.MethodGet, "/ws/v1/node/containers/"+doneID); status != 404 {
		t.Errorf("forgotten container: %d", status)
	}
	if status, _, body := webGet(t, n, http.MethodGet, "/ws/v1/node/containers/"+doneID+"/logs/stdout"); status != 200 || body != "hello-web\n" {
		t.Errorf("forgotten container's stdout: %d %q", status, body)
	}
	if status, _, body := webGet(t, n, http.MethodGet, "/ws/v1/node/containers/"+doneID+"/logs"); status != 200 || !strings.Contains(body, `"fileName":"stdout"`) {
		t.Errorf("forgotten container's log list: %d %s", status, body)
	}
}

// TestWebServerTimeoutsAndShutdown checks the server's limits and that
// Shutdown stops it.
func TestWebServerTimeoutsAndShutdown(t *testing.T) {
	stub := newRMStub(t, 100)
	n := startNM(t, testConfig(t, stub.addr, nil), nil)
	if n.web.ReadHeaderTimeout <= 0 || n.web.ReadTimeout <= 0 || n.web.WriteTimeout <= 0 || n.web.IdleTimeout <= 0 {
		t.Errorf("timeouts %v %v %v %v", n.web.ReadHeaderTimeout, n.web.ReadTimeout, n.web.WriteTimeout, n.web.IdleTimeout)
	}
	addr := n.WebAddr()
	if status, _, _ := webGet(t, n, http.MethodGet, "/ws/v1/node"); status != 200 {
		t.Fatalf("status %d", status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := (&http.Client{Timeout: time.Second}).Get("http://" + addr + "/ws/v1/node"); err == nil {
		t.Error("the web services still answer after Shutdown")
	}
}

// TestWebAddressTakenFallsBackOnlyWhenDefaulted: a second NM on a machine
// whose default web port is taken serves on a free one; one configured
// for a taken port does not start.
func TestWebAddressTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	stub := newRMStub(t, 100)
	cfg := testConfig(t, stub.addr, map[string]string{"yarn.nodemanager.webapp.address": ln.Addr().String()})
	n, err := New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "yarn.nodemanager.webapp.address") {
		t.Errorf("start on a taken, configured web port: %v", err)
	}
	n.Shutdown(context.Background())

	cfg = testConfig(t, stub.addr, map[string]string{"yarn.nodemanager.webapp.address": ln.Addr().String()})
	cfg.WebAddressDefaulted = true
	n2 := startNM(t, cfg, nil)
	if n2.WebAddr() == ln.Addr().String() || n2.httpPort == 0 {
		t.Errorf("web address %s, port %d", n2.WebAddr(), n2.httpPort)
	}
}

func TestWantsXML(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   bool
	}{
		{"", false},
		{"*/*", false},
		{"application/json", false},
		{"application/xml", true},
		{"text/xml", true},
		{"application/json, application/xml", false},
		{"application/json;q=0.5, application/xml", true},
		{"application/xml;q=0.5, application/json", false},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true},
		{"application/xml;q=0", false},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		if got := wantsXML(r); got != tc.want {
			t.Errorf("Accept %q: XML %v, want %v", tc.accept, got, tc.want)
		}
	}
}

// TestWebServicesXML: with Accept: application/xml the answers are
// YARN's XML, the JSON document under its root element.
func TestWebServicesXML(t *testing.T) {
	n, stub, cm := startRegistered(t, nil)
	cid := containerID(1, 1)
	start(t, cm, token(t, n, cid, 256), launch("echo hello-xml", nil, nil))
	stub.completed(t, cid, 10*time.Second)
	id := ContainerIDString(cid)
	get := func(path string) (int, string, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+n.WebAddr()+path, nil)
		req.Header.Set("Accept", "application/xml")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), b
	}

	var apps struct {
		XMLName xml.Name `xml:"apps"`
		App     []struct {
			ID           string   `xml:"id"`
			State        string   `xml:"state"`
			User         string   `xml:"user"`
			ContainerIDs []string `xml:"containerids"`
		} `xml:"app"`
	}
	status, ct, body := get("/ws/v1/node/apps")
	if err := xml.Unmarshal(body, &apps); status != 200 || !strings.HasPrefix(ct, "application/xml") || err != nil ||
		len(apps.App) != 1 || apps.App[0].User != "alice" || len(apps.App[0].ContainerIDs) != 1 || apps.App[0].ContainerIDs[0] != id {
		t.Errorf("apps: %d %s %v %s", status, ct, err, body)
	}
	var info struct {
		XMLName                        xml.Name `xml:"nodeInfo"`
		ID                             string   `xml:"id"`
		TotalPmemAllocatedContainersMB int64    `xml:"totalPmemAllocatedContainersMB"`
		NodeHealthy                    bool     `xml:"nodeHealthy"`
	}
	status, _, body = get("/ws/v1/node/info")
	if err := xml.Unmarshal(body, &info); status != 200 || err != nil || info.ID != n.NodeID() || info.TotalPmemAllocatedContainersMB != 4096 || !info.NodeHealthy {
		t.Errorf("node info: %d %v %s", status, err, body)
	}
	var logs struct {
		XMLName xml.Name `xml:"containerLogsInfoes"`
		Infos   []struct {
			ContainerID string `xml:"containerId"`
			Files       []struct {
				FileName string `xml:"fileName"`
				FileSize string `xml:"fileSize"`
			} `xml:"containerLogInfo"`
		} `xml:"containerLogsInfo"`
	}
	status, _, body = get("/ws/v1/node/containers/" + id + "/logs")
	if err := xml.Unmarshal(body, &logs); status != 200 || err != nil || len(logs.Infos) != 1 || logs.Infos[0].ContainerID != id || len(logs.Infos[0].Files) != 2 {
		t.Errorf("log list: %d %v %s", status, err, body)
	}
	var re struct {
		XMLName       xml.Name `xml:"RemoteException"`
		Exception     string   `xml:"exception"`
		JavaClassName string   `xml:"javaClassName"`
	}
	status, _, body = get("/ws/v1/node/apps/application_1_9999")
	if err := xml.Unmarshal(body, &re); status != 404 || err != nil || re.Exception != "NotFoundException" {
		t.Errorf("error: %d %v %s", status, err, body)
	}
	// Log files stay plain text.
	if status, ct, body := get("/ws/v1/node/containers/" + id + "/logs/stdout"); status != 200 || !strings.HasPrefix(ct, "text/plain") || string(body) != "hello-xml\n" {
		t.Errorf("log file: %d %s %q", status, ct, body)
	}
}
