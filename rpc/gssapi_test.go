package rpc

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/loomrm/loom/internal/kdctest"
)

// TestKerberosWithARealKDC: SASL GSSAPI on the IPC port against a real
// MIT KDC. A client with alice's tickets is served as alice; a SIMPLE
// client is refused with Hadoop's words; a server whose key is not the
// KDC's refuses the ticket; and alice may act for bob only where the
// proxy-user rules say so.
func TestKerberosWithARealKDC(t *testing.T) {
	kdc := kdctest.Start(t, 0)
	kdc.AddUser("alice", "alice-pw")
	kt, err := keytab.Load(kdc.AddService("rm/localhost"))
	if err != nil {
		t.Fatal(err)
	}
	alice := kdc.Login("alice", "alice-pw")
	krb := &Kerberos{Keytab: kt, Protocol: "rm", Host: "localhost", Realm: kdctest.Realm}

	_, addr, _ := startServer(t, ServerOptions{Kerberos: krb})
	if got, err := echo(dial(t, addr, ClientOptions{Kerberos: alice}), "hi"); err != nil || got != "alice:hi" {
		t.Fatalf("alice with Kerberos: %q, %v", got, err)
	}
	// As a Java client names itself: the whole principal.
	if got, err := echo(dial(t, addr, ClientOptions{Kerberos: alice, User: "alice@" + kdctest.Realm}), "hi"); err != nil || got != "alice:hi" {
		t.Fatalf("alice naming herself alice@%s: %q, %v", kdctest.Realm, got, err)
	}
	refused := func(o ClientOptions, class, want string) {
		t.Helper()
		c, err := Dial(t.Context(), addr, o)
		if err == nil {
			_, err = echo(c, "hi")
			c.Close()
		}
		var re *RemoteError
		if !errors.As(err, &re) || re.Class != class || !strings.Contains(re.Message, want) {
			t.Errorf("%+v: %v, want %s saying %q", o, err, class, want)
		}
	}
	refused(ClientOptions{User: "mallory"}, ClassAccessControl, "SIMPLE authentication is not enabled.  Available:[KERBEROS]")
	// A SASL client is not offered SIMPLE at all, and says so.
	if c, err := Dial(t.Context(), addr, ClientOptions{User: "mallory", SASL: true}); err == nil || !strings.Contains(err.Error(), "the server accepts [KERBEROS]") {
		if c != nil {
			c.Close()
		}
		t.Errorf("a SASL client without a ticket: %v", err)
	}
	// alice asks to act as bob: a proxy user, refused without a rule.
	refused(ClientOptions{Kerberos: alice, User: "bob"}, ClassAuthorization, "User: alice is not allowed to impersonate bob")

	// With a rule, alice acts as bob.
	p, err := PolicyFromConf(policyConf(t, prop("hadoop.proxyuser.alice.users", "bob")+prop("hadoop.proxyuser.alice.hosts", "*")), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, addr2, _ := startServer(t, ServerOptions{Kerberos: krb, Policy: p})
	if got, err := echo(dial(t, addr2, ClientOptions{Kerberos: alice, User: "bob"}), "hi"); err != nil || got != "bob:hi" {
		t.Errorf("alice acting for bob: %q, %v", got, err)
	}

	// auth_to_local rules name the caller.
	toLocal, err := ParseAuthToLocal(`RULE:[1:$1@$0](alice@LOOM\.TEST)s/.*/analyst/ DEFAULT`, kdctest.Realm)
	if err != nil {
		t.Fatal(err)
	}
	mapped := *krb
	mapped.ToLocal = toLocal
	_, addr4, _ := startServer(t, ServerOptions{Kerberos: &mapped})
	if got, err := echo(dial(t, addr4, ClientOptions{Kerberos: alice, User: "analyst"}), "hi"); err != nil || got != "analyst:hi" {
		t.Errorf("alice mapped by a rule: %q, %v", got, err)
	}

	// A server whose key for rm/localhost is not the one the KDC holds
	// cannot read the ticket.
	forged := keytab.New()
	if err := forged.AddEntry("rm/localhost", kdctest.Realm, "not-the-key", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	_, addr3, _ := startServer(t, ServerOptions{Kerberos: &Kerberos{Keytab: forged, Protocol: "rm", Host: "localhost", Realm: kdctest.Realm}})
	c, err := Dial(t.Context(), addr3, ClientOptions{Kerberos: alice})
	if err == nil {
		_, err = echo(c, "hi")
		c.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "GSS initiate failed") {
		t.Errorf("a server with the wrong key: %v, want the ticket refused", err)
	}
}

func TestServerKerberosConfig(t *testing.T) {
	kt := keytab.New()
	if err := kt.AddEntry("rm/rm1.example.com", "EXAMPLE.COM", "secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rm.keytab")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	const pk, kk = "yarn.resourcemanager.principal", "yarn.resourcemanager.keytab"
	load := func(xml string) (*Kerberos, error) {
		return ServerKerberos(policyConf(t, xml), pk, kk, "RM1.example.com")
	}
	if k, err := load(""); k != nil || err != nil {
		t.Errorf("SIMPLE: %+v, %v; want no Kerberos", k, err)
	}
	k, err := load(prop(KeyAuthentication, "kerberos") + prop(pk, "rm/_HOST@EXAMPLE.COM") + prop(kk, path))
	if err != nil || k.Protocol != "rm" || k.Host != "rm1.example.com" || k.Realm != "EXAMPLE.COM" {
		t.Fatalf("kerberos: %+v, %v", k, err)
	}
	for _, tc := range []struct{ xml, want string }{
		{prop(KeyAuthentication, "ldap"), KeyAuthentication},
		{prop(KeyAuthentication, "kerberos") + prop(pk, "rm@EXAMPLE.COM") + prop(kk, path), "<service>/<host>@<REALM>"},
		{prop(KeyAuthentication, "kerberos") + prop(pk, "rm/_HOST@EXAMPLE.COM"), "no keytab"},
		{prop(KeyAuthentication, "kerberos") + prop(pk, "rm/_HOST@EXAMPLE.COM") + prop(kk, path+".gone"), kk},
		{prop(KeyAuthentication, "kerberos") + prop(pk, "rm/other@EXAMPLE.COM") + prop(kk, path), "holds no key for rm/other@EXAMPLE.COM"},
	} {
		if _, err := load(tc.xml); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.xml, err, tc.want)
		}
	}
}

// TestJavaKerberosClient: the JDK's GSSAPI SASL client, logged in from a
// keytab as Hadoop's UserGroupInformation logs in and asking for mutual
// authentication as Hadoop's SaslRpcClient does, authenticates to Loom's
// server side with a ticket from a real MIT KDC: Loom's AP-REP and wrap
// tokens satisfy the JDK.
func TestJavaKerberosClient(t *testing.T) {
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Skip("no JDK (javac): make test installs openjdk-17-jdk-headless")
	}
	kdc := kdctest.Start(t, 0)
	userKT := kdc.AddService("javauser")
	kt, err := keytab.Load(kdc.AddService("rm/localhost"))
	if err != nil {
		t.Fatal(err)
	}
	krb := &Kerberos{Keytab: kt, Protocol: "rm", Host: "localhost", Realm: kdctest.Realm}
	dir := t.TempDir()
	if out, err := exec.Command(javac, "-d", dir, filepath.Join("testdata", "java", "GssPeer.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	cmd := exec.Command("java", "-Djava.security.krb5.conf="+kdc.Conf, "-cp", dir, "GssPeer",
		"javauser@"+kdctest.Realm, userKT, "rm", "localhost")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	recv := func() []byte {
		t.Helper()
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the JDK client: %v; stderr: %s", err, stderr.String())
		}
		if l = strings.TrimSpace(l); l == "-" {
			return nil
		}
		b, err := base64.StdEncoding.DecodeString(l)
		if err != nil {
			t.Fatalf("the JDK client said %q; stderr: %s", l, stderr.String())
		}
		return b
	}
	send := func(b []byte) {
		s := "-"
		if len(b) > 0 {
			s = base64.StdEncoding.EncodeToString(b)
		}
		fmt.Fprintln(in, s)
	}
	g, reply, err := krb.initiate(recv())
	if err != nil {
		t.Fatalf("the JDK's AP-REQ: %v", err)
	}
	if !g.mutual {
		t.Error("the JDK asked for no mutual authentication; Hadoop's client does")
	}
	for done := false; !done; {
		send(reply)
		if reply, done, err = g.next(recv()); err != nil {
			t.Fatalf("the JDK's answer: %v; stderr: %s", err, stderr.String())
		}
	}
	if l, _ := r.ReadString('\n'); strings.TrimSpace(l) != "complete" {
		t.Fatalf("the JDK client did not complete: %q; stderr: %s", l, stderr.String())
	}
	if g.client != "javauser" {
		t.Errorf("authenticated %q, want javauser", g.client)
	}
}

// TestExpiredKerberosTicket: an AP-REQ sent twice is a replay, and a
// ticket past its end (a KDC that issues 2-second tickets, a server that
// allows 1 second of skew) is refused.
func TestExpiredKerberosTicket(t *testing.T) {
	kdc := kdctest.Start(t, 2*time.Second)
	kdc.AddUser("alice", "alice-pw")
	kt, err := keytab.Load(kdc.AddService("rm/localhost"))
	if err != nil {
		t.Fatal(err)
	}
	alice := kdc.Login("alice", "alice-pw")
	k := &Kerberos{Keytab: kt, Protocol: "rm", Host: "localhost", Realm: kdctest.Realm, MaxClockSkew: time.Second}
	tok, _, err := kerberosInitiate(alice, "rm", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.initiate(tok); err != nil {
		t.Fatalf("the fresh ticket: %v", err)
	}
	// The same AP-REQ again is a replay.
	if _, _, err := k.initiate(tok); err == nil || !strings.Contains(err.Error(), "replay") {
		t.Errorf("a replayed AP-REQ: %v, want it refused as a replay", err)
	}
	tok, _, err = kerberosInitiate(alice, "rm", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3500 * time.Millisecond) // past its 2 s life and the 1 s skew
	if _, _, err := k.initiate(tok); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("the expired ticket: %v, want it refused", err)
	} else {
		t.Logf("refused: %v", err)
	}
}
