package rpc

import (
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/internal/hadoopconf"
)

func TestParseACL(t *testing.T) {
	groups := map[string][]string{"alice": {"users"}, "bob": {"wheel", "ops"}, "carol": nil}
	cases := []struct {
		acl   string
		allow []string // of alice, bob, carol
	}{
		{"*", []string{"alice", "bob", "carol"}},
		{" * ", []string{"alice", "bob", "carol"}},
		{"", nil},
		{" ", nil},
		{"alice", []string{"alice"}},
		{"alice,carol", []string{"alice", "carol"}},
		{"carol ops", []string{"bob", "carol"}},
		{" users", []string{"alice"}},
		{" users,ops", []string{"alice", "bob"}},
		{"dave wheel", []string{"bob"}},
		{" , alice", nil}, // a group named alice, which nobody is in
	}
	for _, tc := range cases {
		a := ParseACL(tc.acl)
		var got []string
		for _, u := range []string{"alice", "bob", "carol"} {
			if a.Allows(u, groups[u]) {
				got = append(got, u)
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.allow, ",") {
			t.Errorf("ACL %q allows %v, want %v", tc.acl, got, tc.allow)
		}
	}
}

func policyConf(t *testing.T, xml string) *hadoopconf.Conf {
	t.Helper()
	c := hadoopconf.New(nil)
	if err := c.Load("test.xml", strings.NewReader("<configuration>"+xml+"</configuration>")); err != nil {
		t.Fatal(err)
	}
	return c
}

func prop(k, v string) string {
	return "<property><name>" + k + "</name><value>" + v + "</value></property>"
}

func TestPolicyDecisions(t *testing.T) {
	groups := func(u string) []string {
		return map[string][]string{"alice": {"analysts"}, "bob": {"ops"}, "oozie": {"services"}}[u]
	}
	conf := policyConf(t, prop(KeyAuthorization, "true")+
		prop("security.applicationclient.protocol.acl", "alice,oozie ops")+
		prop("security.applicationclient.protocol.acl.blocked", "mallory")+
		prop("security.resourcetracker.protocol.acl", "yarn")+
		prop("hadoop.proxyuser.oozie.users", "alice")+
		prop("hadoop.proxyuser.oozie.groups", "ops")+
		prop("hadoop.proxyuser.oozie.hosts", "127.0.0.0/8"))
	p, err := PolicyFromConf(conf, groups)
	if err != nil {
		t.Fatal(err)
	}
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	remote := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 40000}
	cases := []struct {
		user, real, auth, protocol string
		from                       net.Addr
		want                       string // "" allowed, else part of the refusal
	}{
		{"alice", "", "SIMPLE", ApplicationClientProtocol, local, ""},
		{"bob", "", "SIMPLE", ApplicationClientProtocol, local, ""}, // by group ops
		{"carol", "", "SIMPLE", ApplicationClientProtocol, local, "User carol (auth:SIMPLE) is not authorized for protocol interface " + ApplicationClientProtocol},
		{"mallory", "", "SIMPLE", ApplicationClientProtocol, local, "not authorized"},
		{"alice", "", "SIMPLE", ResourceTrackerProtocol, local, "not authorized"},
		{"yarn", "", "SIMPLE", ResourceTrackerProtocol, local, ""},
		// Unnamed protocols take the default ACL, "*".
		{"carol", "", "SIMPLE", ApplicationMasterProtocol, local, ""},
		// oozie may act for alice (a user) and bob (group ops) from loopback.
		{"alice", "oozie", "SIMPLE", ApplicationClientProtocol, local, ""},
		{"bob", "oozie", "SIMPLE", ApplicationClientProtocol, local, ""},
		{"carol", "oozie", "SIMPLE", ApplicationClientProtocol, local, "User: oozie is not allowed to impersonate carol"},
		{"alice", "oozie", "SIMPLE", ApplicationClientProtocol, remote, "Unauthorized connection for super-user: oozie from IP 10.1.2.3"},
		{"alice", "bob", "SIMPLE", ApplicationClientProtocol, local, "User: bob is not allowed to impersonate alice"},
		// A token names its user: no impersonation to check.
		{"alice", "bob", "TOKEN", ApplicationClientProtocol, local, ""},
	}
	for _, tc := range cases {
		re := p.authorize(tc.user, tc.real, tc.auth, tc.protocol, tc.from)
		switch {
		case tc.want == "" && re != nil:
			t.Errorf("%s via %q on %s: refused: %v", tc.user, tc.real, tc.protocol, re)
		case tc.want != "" && (re == nil || re.Class != ClassAuthorization || !strings.Contains(re.Message, tc.want)):
			t.Errorf("%s via %q on %s: got %v, want an AuthorizationException saying %q", tc.user, tc.real, tc.protocol, re, tc.want)
		}
	}
	// Authorization off: ACLs are not checked, proxy users still are.
	off, err := PolicyFromConf(policyConf(t, prop("security.applicationclient.protocol.acl", "alice")), groups)
	if err != nil {
		t.Fatal(err)
	}
	if re := off.authorize("carol", "", "SIMPLE", ApplicationClientProtocol, local); re != nil {
		t.Errorf("authorization off, yet carol refused: %v", re)
	}
	if re := off.authorize("carol", "oozie", "SIMPLE", ApplicationClientProtocol, local); re == nil {
		t.Error("authorization off: an undeclared proxy user was let through")
	}
}

func TestPolicyConfErrors(t *testing.T) {
	for _, tc := range []struct{ xml, want string }{
		{prop(KeyAuthorization, "yes"), KeyAuthorization},
		{prop("hadoop.proxyuser.oozie.hosts", "no-such-host.invalid"), "hadoop.proxyuser.oozie.hosts"},
	} {
		if _, err := PolicyFromConf(policyConf(t, tc.xml), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.xml, err, tc.want)
		}
	}
}

// TestPolicyOnTheWire: a refused caller gets Hadoop's FATAL
// AuthorizationException at its first call, an allowed one is served.
func TestPolicyOnTheWire(t *testing.T) {
	p, err := PolicyFromConf(policyConf(t, prop(KeyAuthorization, "true")+prop(KeyDefaultACL, "alice")+
		prop("hadoop.proxyuser.svc.users", "alice")+prop("hadoop.proxyuser.svc.hosts", "*")), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, addr, _ := startServer(t, ServerOptions{Policy: p})
	if got, err := echo(dial(t, addr, ClientOptions{User: "alice"}), "hi"); err != nil || got != "alice:hi" {
		t.Fatalf("alice: %q, %v", got, err)
	}
	if got, err := echo(dial(t, addr, ClientOptions{User: "alice", RealUser: "svc"}), "hi"); err != nil || got != "alice:hi" {
		t.Fatalf("svc acting for alice: %q, %v", got, err)
	}
	for _, o := range []ClientOptions{{User: "bob"}, {User: "bob", RealUser: "svc"}, {User: "alice", RealUser: "bob"}} {
		c, err := Dial(t.Context(), addr, o)
		if err == nil {
			_, err = echo(c, "hi")
			c.Close()
		}
		var re *RemoteError
		if !errors.As(err, &re) || re.Class != ClassAuthorization {
			t.Errorf("%+v: %v, want an AuthorizationException", o, err)
		}
	}
}

func TestServerOptionsFromConf(t *testing.T) {
	o, err := ServerOptionsFromConf(policyConf(t, prop(KeyMaxFrame, "1048576")+prop(KeyMaxConns, "100")+prop(KeyMaxSetupFrame, "4096")+
		prop(KeySetupTimeout, "2500")+prop(KeyMaxConnsPerAddr, "9")+prop(KeyMaxSetupConnsPerAdr, "3")+prop(KeyCapLoopback, "true")+
		prop(KeyIdleTimeout, "30000")), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := ServerOptions{MaxFrame: 1 << 20, MaxConns: 100, MaxSetupFrame: 4096, SetupTimeout: 2500 * time.Millisecond,
		MaxConnsPerAddr: 9, MaxSetupConnsPerAddr: 3, CapLoopback: true, IdleTimeout: 30 * time.Second}
	o.Policy = nil
	if !reflect.DeepEqual(o, want) {
		t.Errorf("options %+v, want %+v", o, want)
	}
	// Unset keys keep the defaults (zero here, filled by the server).
	o, err = ServerOptionsFromConf(policyConf(t, ""), nil)
	if err != nil || o.MaxFrame != 0 || o.CapLoopback || o.Policy == nil {
		t.Errorf("empty config: %+v, %v", o, err)
	}
	for _, tc := range []struct{ xml, want string }{
		{prop(KeyMaxFrame, "0"), KeyMaxFrame + ": 0 must be positive"},
		{prop(KeySetupTimeout, "soon"), KeySetupTimeout},
		{prop(KeyCapLoopback, "maybe"), KeyCapLoopback},
		{prop(KeyMaxFrame, "1000") + prop(KeyMaxSetupFrame, "2000"), KeyMaxSetupFrame},
	} {
		if _, err := ServerOptionsFromConf(policyConf(t, tc.xml), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.xml, err, tc.want)
		}
	}
}
