package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestNMWebServicesServeAMLogs runs a shell AM on a real `loom nm` whose
// web services are on a free port, and reads the line it printed through
// the NM's REST API, at the HTTP address the RM reports for the node: so
// the port the NM registers is the one it serves on.
func TestNMWebServicesServeAMLogs(t *testing.T) {
	c := startCluster(t, 0)
	dir := filepath.Join(c.dir, "nmweb")
	c.nms = append(c.nms, start(t, "nm-web", "nm", "--rm", c.tracker, "--address", "127.0.0.1:0",
		"-D", "yarn.nodemanager.webapp.address=127.0.0.1:0",
		"--memory-mb", "4096", "--vcores", "4", "--local-dirs", filepath.Join(dir, "local"), "--log-dirs", filepath.Join(dir, "logs")))
	var node *pb.NodeReportProto
	c.waitFor(t, "the NodeManager to register", func() bool {
		resp, err := c.ac.GetClusterNodes(t.Context(), &pb.GetClusterNodesRequestProto{})
		if err != nil || len(resp.GetNodeReports()) != 1 {
			return false
		}
		node = resp.GetNodeReports()[0]
		return true
	})
	httpAddr := node.GetHttpAddress()
	if !strings.HasPrefix(httpAddr, "127.0.0.1:") || strings.HasSuffix(httpAddr, ":0") || strings.HasSuffix(httpAddr, ":8042") {
		t.Fatalf("the RM reports the node's HTTP address as %q, not the free port it bound", httpAddr)
	}

	id := c.submit(t, "nmweb", "echo nmweb-line-from-$CONTAINER_ID; exit 0")
	rep := c.waitState(t, id, pb.YarnApplicationStateProto_FINISHED)
	if rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Fatalf("final status %v (%s)", rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
	atts, err := c.ac.GetApplicationAttempts(t.Context(), &pb.GetApplicationAttemptsRequestProto{ApplicationId: id})
	if err != nil || len(atts.GetApplicationAttempts()) == 0 {
		t.Fatalf("attempts: %v %v", atts, err)
	}
	cid := rpc.ContainerIDString(atts.GetApplicationAttempts()[0].GetAmContainerId())

	get := func(path string) (int, string, string) {
		t.Helper()
		client := &http.Client{Timeout: 10 * time.Second}
		resp, err := client.Get("http://" + httpAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	status, ct, body := get("/ws/v1/node/containers/" + cid + "/logs/stdout")
	if status != 200 || !strings.HasPrefix(ct, "text/plain") || body != "nmweb-line-from-"+cid+"\n" {
		t.Errorf("GET the AM's stdout: %d %s %q", status, ct, body)
	}
	status, _, body = get("/ws/v1/node/containers/" + cid + "/logs")
	var logs []struct {
		ContainerLogInfo []struct {
			FileName, FileSize string
		} `json:"containerLogInfo"`
		ContainerID string `json:"containerId"`
	}
	if err := json.Unmarshal([]byte(body), &logs); status != 200 || err != nil || len(logs) != 1 || logs[0].ContainerID != cid {
		t.Fatalf("log list: %d %v %s", status, err, body)
	}
	sizes := map[string]string{}
	for _, f := range logs[0].ContainerLogInfo {
		sizes[f.FileName] = f.FileSize
	}
	if sizes["stdout"] != fmt.Sprint(len("nmweb-line-from-"+cid+"\n")) {
		t.Errorf("log files %v", sizes)
	}
	// The page the RM's UI links the AM's logs to.
	if status, ct, body := get("/node/containerlogs/" + cid + "/tester"); status != 200 || !strings.HasPrefix(ct, "text/html") || !strings.Contains(body, "stdout") {
		t.Errorf("log page: %d %s %s", status, ct, body)
	}
	var info struct {
		NodeInfo struct {
			ID          string `json:"id"`
			NodeHealthy bool   `json:"nodeHealthy"`
		} `json:"nodeInfo"`
	}
	status, _, body = get("/ws/v1/node/info")
	if err := json.Unmarshal([]byte(body), &info); status != 200 || err != nil ||
		info.NodeInfo.ID != fmt.Sprintf("%s:%d", node.GetNodeId().GetHost(), node.GetNodeId().GetPort()) || !info.NodeInfo.NodeHealthy {
		t.Errorf("node info: %d %v %s", status, err, body)
	}
	if status, _, body := get("/ws/v1/node/containers/" + cid + "/logs/..%2F..%2F..%2Fetc%2Fpasswd"); status != 400 || !strings.Contains(body, "BadRequestException") {
		t.Errorf("traversal: %d %s", status, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, "http://"+httpAddr+"/ws/v1/node/apps", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}
