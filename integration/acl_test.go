package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestACLs: with yarn.acl.enable, a stranger may not kill another user's
// app, over RPC (loom kill) or REST, nor change P(Altruism) even with the
// admin credential; the owner may kill it, and an admin may tune. REST
// writes are on, so that the ACLs are what refuses.
func TestACLs(t *testing.T) {
	c := startCluster(t, 1, "-D", "yarn.acl.enable=true", "-D", "yarn.admin.acl=ops", "-D", "loom.admin.secret=s3cret",
		"-D", "loom.webapp.rest-write.enabled=true")
	w := web{t, "http://" + c.web}
	var na struct {
		ID string `json:"application-id"`
	}
	w.json("POST", "/ws/v1/cluster/apps/new-application?user.name=ann", "", 200, &na)
	body := fmt.Sprintf(`{"application-id": %q, "application-name": "anns", "am-container-spec": {"commands": {"command": "sleep 60"}},
	  "resource": {"memory": 256, "vCores": 1}}`, na.ID)
	if rep := w.do("POST", "/ws/v1/cluster/apps?user.name=ann", body); rep.status != 202 {
		t.Fatalf("submit as ann: %d %s", rep.status, rep.body)
	}
	kill := func(user string) (string, error) {
		cmd := exec.Command(loomBin, "kill", na.ID, "--rm", c.client)
		cmd.Env = append(os.Environ(), "HADOOP_USER_NAME="+user)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := kill("mallory"); err == nil || !strings.Contains(out, "AccessControlException") || !strings.Contains(out, "User mallory cannot perform operation MODIFY_APP") {
		t.Errorf("loom kill as mallory: %v\n%s", err, out)
	}
	msg := w.remoteException("PUT", "/ws/v1/cluster/apps/"+na.ID+"/state?user.name=mallory", `{"state":"KILLED"}`, 403, "ForbiddenException")
	if !strings.Contains(msg, "mallory") {
		t.Errorf("REST kill as mallory refused with %q", msg)
	}
	w.remoteException("PUT", "/ws/v1/loom/scheduler/altruism?user.name=mallory", `{"p":0.2}`, 403, "ForbiddenException",
		"Authorization", "Bearer s3cret")
	if p := w.metric("loom_p_altruism"); p != 1 {
		t.Errorf("P(Altruism) %v after a non-admin's change, want 1", p)
	}
	w.json("PUT", "/ws/v1/loom/scheduler/altruism?user.name=ops", `{"p":0.2}`, 200, nil, "Authorization", "Bearer s3cret")
	if p := w.metric("loom_p_altruism"); p != 0.2 {
		t.Errorf("P(Altruism) %v after the admin's change, want 0.2", p)
	}
	if out, err := kill("ann"); err != nil || !strings.Contains(out, "KILLED") {
		t.Errorf("loom kill as the owner: %v\n%s", err, out)
	}
}

// TestRESTWritesOffByDefault: an RM with its defaults (SIMPLE auth, ACLs
// off) refuses an anonymous REST submission of an app whose AM command
// would run on a NodeManager, with a 403 RemoteException naming
// loom.webapp.rest-write.enabled. No app is created and the command never
// runs, though the NodeManager runs the next app submitted over RPC.
// New-application and kill over REST are refused too; reads stay open.
func TestRESTWritesOffByDefault(t *testing.T) {
	c := startCluster(t, 1)
	w := web{t, "http://" + c.web}
	ctx := context.Background()
	apps := func() (restApps, rpcApps int) {
		t.Helper()
		var list struct {
			Apps *struct{ App []struct{ ID string } }
		}
		w.json("GET", "/ws/v1/cluster/apps", "", 200, &list)
		if list.Apps != nil {
			restApps = len(list.Apps.App)
		}
		resp, err := c.ac.GetApplications(ctx, &pb.GetApplicationsRequestProto{})
		if err != nil {
			t.Fatal(err)
		}
		return restApps, len(resp.GetApplications())
	}
	if r, p := apps(); r != 0 || p != 0 {
		t.Fatalf("a fresh RM lists %d apps over REST and %d over RPC", r, p)
	}

	// The id is a real one, issued over RPC, so that what refuses the
	// submission is the key and not an unknown id.
	na, err := c.ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
	if err != nil {
		t.Fatal(err)
	}
	id := rpc.AppIDString(na.GetApplicationId())
	ran := filepath.Join(c.dir, "remote-command-ran")
	body := fmt.Sprintf(`{"application-id": %q, "application-name": "x", "am-container-spec": {"commands": {"command": "touch %s"}},
	  "resource": {"memory": 256, "vCores": 1}}`, id, ran)
	for _, path := range []string{"/ws/v1/cluster/apps", "/ws/v1/cluster/apps?user.name=yarn"} {
		msg := w.remoteException("POST", path, body, 403, "ForbiddenException")
		if !strings.Contains(msg, "set loom.webapp.rest-write.enabled=true") || !strings.Contains(msg, "SIMPLE auth") {
			t.Errorf("POST %s refused with %q, which does not say why or how to enable it", path, msg)
		}
	}
	w.remoteException("POST", "/ws/v1/cluster/apps/new-application", "", 403, "ForbiddenException")
	if r, p := apps(); r != 0 || p != 0 {
		t.Fatalf("after the refused submission the RM lists %d apps over REST and %d over RPC, want none", r, p)
	}
	w.remoteException("GET", "/ws/v1/cluster/apps/"+id, "", 404, "NotFoundException")
	var m struct{ ClusterMetrics struct{ AppsSubmitted int } }
	w.json("GET", "/ws/v1/cluster/metrics", "", 200, &m)
	if m.ClusterMetrics.AppsSubmitted != 0 {
		t.Errorf("%d apps submitted, want none", m.ClusterMetrics.AppsSubmitted)
	}

	// An app submitted over RPC runs on the NodeManager; by the time it
	// has, the refused command would have too.
	started := filepath.Join(c.dir, "rpc-app-ran")
	sleeper := c.submit(t, "sleeper", "touch "+started+" && exec sleep 60")
	c.waitFor(t, "the app submitted over RPC to run", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Errorf("the refused submission's command ran (%s: %v)", ran, err)
	}
	if r, p := apps(); r != 1 || p != 1 {
		t.Errorf("the RM lists %d apps over REST and %d over RPC, want the one submitted over RPC", r, p)
	}

	// Kill over REST is refused; the app runs on.
	w.remoteException("PUT", "/ws/v1/cluster/apps/"+rpc.AppIDString(sleeper)+"/state", `{"state":"KILLED"}`, 403, "ForbiddenException")
	if st := c.report(t, sleeper).GetYarnApplicationState(); st == pb.YarnApplicationStateProto_KILLED {
		t.Errorf("an anonymous REST kill killed %s", rpc.AppIDString(sleeper))
	}
}
