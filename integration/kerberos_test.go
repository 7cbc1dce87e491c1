package integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/internal/kdctest"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestKerberosOnTheClientPort: with hadoop.security.authentication=
// kerberos the RM's client and tracker ports take Kerberos (SASL GSSAPI)
// from a real MIT KDC and refuse SIMPLE. The NodeManager logs in with its
// keytab; one whose principal names another host, and one without
// Kerberos, are refused. `loom nodes` with the tickets kinit left
// lists the cluster; without tickets it says to run kinit; an app
// submitted with alice's tickets is alice's.
func TestKerberosOnTheClientPort(t *testing.T) {
	kdc := kdctest.Start(t, 0)
	kdc.AddUser("alice", "alice-pw")
	kt := kdc.AddService("rm/localhost")
	krb := []string{"-D", "hadoop.security.authentication=kerberos",
		"-D", "yarn.resourcemanager.principal=rm/localhost@" + kdctest.Realm, "-D", "yarn.resourcemanager.keytab=" + kt}
	c := &cluster{dir: t.TempDir()}
	c.client = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c.scheduler = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c.tracker = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c.web = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c.rm = start(t, "rm", append([]string{"rm", "-D", "yarn.resourcemanager.hostname=127.0.0.1",
		"-D", "yarn.resourcemanager.address=" + c.client, "-D", "yarn.resourcemanager.scheduler.address=" + c.scheduler,
		"-D", "yarn.resourcemanager.resource-tracker.address=" + c.tracker, "-D", "yarn.resourcemanager.webapp.address=" + c.web,
		"-D", "loom.history.dir=" + filepath.Join(c.dir, "history")}, krb...)...)
	// The NodeManager logs in with its own keytab (nm/<its host>); one
	// whose principal names another host is refused.
	t.Setenv("KRB5_CONFIG", kdc.Conf)
	nmKT := kdc.AddService("nm/127.0.0.1")
	c.nms = append(c.nms, c.startNMWith(t, "nm0", append(krb[:2:2], "-D", "yarn.nodemanager.principal=nm/127.0.0.1@"+kdctest.Realm,
		"-D", "yarn.nodemanager.keytab="+nmKT)...))
	impostor := c.startNMWith(t, "nm-impostor", append(krb[:2:2], "-D", "yarn.nodemanager.principal=nm/10.9.9.9@"+kdctest.Realm,
		"-D", "yarn.nodemanager.keytab="+kdc.AddService("nm/10.9.9.9"))...)
	anonymous := c.startNMWith(t, "nm-anonymous")

	alice := kdc.Login("alice", "alice-pw")
	cl := rpc.NewClient(c.client, rpc.ClientOptions{Kerberos: alice, Retries: 20, RetryBackoff: 50 * time.Millisecond})
	t.Cleanup(func() { cl.Close() })
	c.ac = rpc.ApplicationClient{C: cl}
	c.waitFor(t, "the NodeManager to register", func() bool {
		m, err := c.ac.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
		return err == nil && m.GetClusterMetrics().GetNumNodeManagers() == 1
	})

	for _, p := range []struct {
		proc *proc
		want string
	}{
		{impostor, "authenticated with Kerberos as nm/10.9.9.9, whose host is not the node's"},
		{anonymous, "SIMPLE authentication is not enabled"},
	} {
		c.waitFor(t, p.proc.name+" to be refused", func() bool { return strings.Contains(p.proc.out.String(), p.want) })
	}
	if n, _ := c.ac.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{}); n.GetClusterMetrics().GetNumNodeManagers() != 1 {
		t.Errorf("%d NodeManagers registered, want only the one with its own principal", n.GetClusterMetrics().GetNumNodeManagers())
	}

	// SIMPLE is refused with Hadoop's words.
	simple := rpc.NewClient(c.client, rpc.ClientOptions{User: "mallory", Retries: -1})
	_, err := rpc.ApplicationClient{C: simple}.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{})
	simple.Close()
	if !rpc.IsClass(err, rpc.ClassAccessControl) || !strings.Contains(err.Error(), "SIMPLE authentication is not enabled.  Available:[TOKEN, KERBEROS]") {
		t.Errorf("a SIMPLE client: %v", err)
	}

	// The CLI, with the tickets kinit left, and without.
	cc := kdc.Kinit("alice", "alice-pw")
	nodes := func(ccache string) (string, error) {
		cmd := exec.Command(loomBin, append([]string{"nodes", "--rm", c.client}, krb[:2]...)...)
		cmd.Env = append(kdc.Env(), "KRB5CCNAME="+ccache)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := nodes(cc); err != nil || !strings.Contains(out, "RUNNING") {
		t.Errorf("loom nodes with alice's tickets: %v\n%s", err, out)
	}
	if out, err := nodes(filepath.Join(c.dir, "no-tickets")); err == nil || !strings.Contains(out, "run kinit") {
		t.Errorf("loom nodes without tickets: %v\n%s", err, out)
	}

	// A delegation token, got over Kerberos, authenticates alice where
	// she has no tickets (a job's tasks); it cannot get another.
	dt, err := c.ac.GetDelegationToken(context.Background(), &hadooppb.GetDelegationTokenRequestProto{Renewer: proto.String("alice")})
	if err != nil {
		t.Fatal(err)
	}
	tcl := rpc.NewClient(c.client, rpc.ClientOptions{Token: dt.GetToken(), Retries: -1})
	defer tcl.Close()
	tac := rpc.ApplicationClient{C: tcl}
	if _, err := tac.GetClusterMetrics(context.Background(), &pb.GetClusterMetricsRequestProto{}); err != nil {
		t.Errorf("with alice's delegation token: %v", err)
	}
	if _, err := tac.GetDelegationToken(context.Background(), &hadooppb.GetDelegationTokenRequestProto{Renewer: proto.String("alice")}); err == nil ||
		!strings.Contains(err.Error(), "Delegation Token can be issued only with kerberos authentication") {
		t.Errorf("a token from a token: %v", err)
	}

	// An app submitted with alice's tickets is alice's.
	id := c.submit(t, "kerberized", "exec sleep 60")
	if rep := c.report(t, id); rep.GetUser() != "alice" {
		t.Errorf("the app's user is %q, want alice", rep.GetUser())
	}
	if _, err := c.ac.ForceKillApplication(context.Background(), &pb.KillApplicationRequestProto{ApplicationId: id}); err != nil {
		t.Error(err)
	}
}
