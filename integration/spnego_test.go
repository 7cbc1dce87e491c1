package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/jcmturner/gokrb5/v8/spnego"

	"github.com/loomrm/loom/internal/kdctest"
)

// TestSPNEGOWithARealKDC: with hadoop.http.authentication.type=kerberos
// the RM's web port takes only callers with a Kerberos ticket for its
// HTTP/localhost principal, from a real MIT KDC: curl --negotiate (a
// client Loom did not write) and gokrb5's SPNEGO client get in, as the
// principal's short name whatever user.name says; no token or a forged one
// gets 401 Negotiate; and an authenticated caller may submit over REST.
func TestSPNEGOWithARealKDC(t *testing.T) {
	kdc := kdctest.Start(t, 0)
	kdc.AddUser("alice", "alice-pw")
	kt := kdc.AddService("HTTP/localhost")
	c := startCluster(t, 1, "-D", "hadoop.http.authentication.type=kerberos",
		"-D", "hadoop.http.authentication.kerberos.principal=HTTP/localhost@"+kdctest.Realm,
		"-D", "hadoop.http.authentication.kerberos.keytab="+kt)
	base := "http://localhost:" + c.web[strings.LastIndex(c.web, ":")+1:]

	// No token, and a forged one: 401, asking for Negotiate.
	for _, auth := range []string{"", "Negotiate " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x60, 0x82}, 40))} {
		req, _ := http.NewRequest("GET", base+"/ws/v1/cluster/info", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Negotiate") {
			t.Errorf("Authorization %.20q: %d %q, want 401 Negotiate", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	// curl, with alice's tickets from kinit.
	cc := kdc.Kinit("alice", "alice-pw")
	curl := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command("curl", append([]string{"-sS", "--negotiate", "-u", ":", "-o", "-", "-w", "\n%{http_code}"}, args...)...)
		cmd.Env = append(kdc.Env(), "KRB5CCNAME=FILE:"+cc)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		s := strings.TrimSpace(string(out))
		i := strings.LastIndex(s, "\n")
		var code int
		fmt.Sscan(s[i+1:], &code)
		return code, s[:max(i, 0)]
	}
	if code, body := curl(base + "/ws/v1/cluster/info"); code != 200 || !strings.Contains(body, "clusterInfo") {
		t.Fatalf("curl --negotiate: %d %s", code, body)
	}
	code, body := curl("-X", "POST", base+"/ws/v1/cluster/apps/new-application?user.name=mallory")
	var na struct {
		ID string `json:"application-id"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &na) != nil || na.ID == "" {
		t.Fatalf("new-application as alice: %d %s", code, body)
	}
	sub := fmt.Sprintf(`{"application-id": %q, "application-name": "kerberized", "am-container-spec": {"commands": {"command": "true"}},
	  "resource": {"memory": 256, "vCores": 1}}`, na.ID)
	if code, body := curl("-X", "POST", "-H", "Content-Type: application/json", "--data", sub, base+"/ws/v1/cluster/apps?user.name=mallory"); code != 202 {
		t.Fatalf("submission as alice: %d %s", code, body)
	}

	// Delegation tokens over REST, as alice (Kerberos): get one, renew
	// it, cancel it; a cancelled token is not renewed.
	code, body = curl("-X", "POST", "-H", "Content-Type: application/json", "--data", `{"renewer":"alice"}`, base+"/ws/v1/cluster/delegation-token")
	var dt struct {
		Token   string `json:"token"`
		Owner   string `json:"owner"`
		Kind    string `json:"kind"`
		Expires int64  `json:"expiration-time"`
		Max     int64  `json:"max-validity"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &dt) != nil || dt.Token == "" || dt.Owner != "alice" ||
		dt.Kind != "RM_DELEGATION_TOKEN" || dt.Expires <= 0 || dt.Max < dt.Expires {
		t.Fatalf("delegation token: %d %s", code, body)
	}
	code, body = curl("-X", "POST", "-H", "Hadoop-YARN-RM-Delegation-Token: "+dt.Token, base+"/ws/v1/cluster/delegation-token/expiration")
	if code != 200 || !strings.Contains(body, `"expiration-time":`) {
		t.Errorf("renew: %d %s", code, body)
	}
	if code, body = curl("-X", "DELETE", "-H", "Hadoop-YARN-RM-Delegation-Token: "+dt.Token, base+"/ws/v1/cluster/delegation-token"); code != 200 {
		t.Errorf("cancel: %d %s", code, body)
	}
	if code, body = curl("-X", "POST", "-H", "Hadoop-YARN-RM-Delegation-Token: "+dt.Token, base+"/ws/v1/cluster/delegation-token/expiration"); code < 400 {
		t.Errorf("renewing a cancelled token: %d %s", code, body)
	}

	// gokrb5's SPNEGO client, logged in with alice's password.
	resp, err := spnego.NewClient(kdc.Login("alice", "alice-pw"), nil, "HTTP/localhost").Get(base + "/ws/v1/cluster/apps/" + na.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var app struct{ App struct{ User, Name string } }
	if resp.StatusCode != 200 || json.Unmarshal(b, &app) != nil || app.App.User != "alice" || app.App.Name != "kerberized" {
		t.Errorf("the app submitted as alice (user.name=mallory ignored): %d %s", resp.StatusCode, b)
	}
}
