package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestLogAggregation: with yarn.log-aggregation-enable on, two NMs copy
// a finished app's container logs to the remote log dir and remove them
// locally; the app's report says SUCCEEDED; `loom logs` prints them in
// yarn logs's layout, filtered by container and file, with yarn logs's
// one-dash flags; an unknown app is a clear error.
func TestLogAggregation(t *testing.T) {
	remote := filepath.Join(t.TempDir(), "app-logs")
	agg := []string{"-D", "yarn.log-aggregation-enable=true", "-D", "yarn.nodemanager.remote-app-log-dir=" + remote}
	c := startCluster(t, 0, agg...)
	for i := range 2 {
		c.nms = append(c.nms, c.startNMWith(t, "nm"+string(rune('0'+i)), agg...))
	}
	c.waitFor(t, "2 NodeManagers", func() bool { return len(c.nodes(t)) == 2 })
	id := c.submit(t, "logagg", `echo "out of $CONTAINER_ID"; echo "err of $CONTAINER_ID" >&2`)
	rep := c.waitState(t, id, pb.YarnApplicationStateProto_FINISHED)
	app := rpc.AppIDString(id)
	c.waitFor(t, "log aggregation to succeed", func() bool {
		rep = c.report(t, id)
		return rep.GetLogAggregationStatus() == pb.LogAggregationStatusProto_LOG_SUCCEEDED
	})
	am := rpc.ContainerIDString(&pb.ContainerIdProto{AppId: id, AppAttemptId: rep.GetCurrentApplicationAttemptId(), Id: ptr64(1)})

	// The logs left the node they ran on.
	local, _ := filepath.Glob(filepath.Join(c.dir, "nm*", "logs", app))
	if len(local) != 0 {
		t.Errorf("local logs still there after aggregation: %v", local)
	}
	archives, _ := filepath.Glob(filepath.Join(remote, "tester", "logs", app, "*.tar"))
	if len(archives) != 1 {
		t.Fatalf("archives %v, want the AM's node's", archives)
	}

	logs := func(args ...string) (string, error) {
		cmd := exec.Command(loomBin, append(append([]string{"logs", "--rm", c.client}, agg...), args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := logs("-applicationId", app)
	if err != nil {
		t.Fatalf("loom logs: %v\n%s", err, out)
	}
	for _, want := range []string{"Container: " + am + " on 127.0.0.1:", "LogAggregationType: AGGREGATED", "LogType:stdout",
		"out of " + am, "LogType:stderr", "err of " + am, "End of LogType:stderr"} {
		if !strings.Contains(out, want) {
			t.Errorf("loom logs lacks %q:\n%s", want, out)
		}
	}
	out, err = logs("--applicationId="+app, "-containerId", am, "-log_files", "stderr")
	if err != nil || strings.Contains(out, "LogType:stdout") || !strings.Contains(out, "err of "+am) {
		t.Errorf("stderr only: %v\n%s", err, out)
	}
	out, err = logs("-applicationId", app, "-containerId", "container_1_0001_01_000009")
	if err == nil || !strings.Contains(out, "hold nothing that matches") {
		t.Errorf("an unknown container: %v\n%s", err, out)
	}
	out, err = logs("-applicationId", "application_1_0099", "-appOwner", "tester")
	if err == nil || !strings.Contains(out, "no logs of application_1_0099") {
		t.Errorf("an unknown app: %v\n%s", err, out)
	}
	if _, err := os.Stat(remote); err != nil {
		t.Fatal(err)
	}
}

func ptr64(v int64) *int64 { return &v }
