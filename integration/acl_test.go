package integration

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestACLs: with yarn.acl.enable, a stranger may not kill another user's
// app, over RPC (loom kill) or REST, nor change P(Altruism) even with the
// admin credential; the owner may kill it, and an admin may tune.
func TestACLs(t *testing.T) {
	c := startCluster(t, 1, "-D", "yarn.acl.enable=true", "-D", "yarn.admin.acl=ops", "-D", "loom.admin.secret=s3cret")
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
