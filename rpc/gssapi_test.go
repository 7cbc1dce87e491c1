package rpc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
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
	conf, err := config.Load(kdc.Conf)
	if err != nil {
		t.Fatal(err)
	}
	alice := krbclient.NewWithPassword("alice", kdctest.Realm, "alice-pw", conf, krbclient.DisablePAFXFAST(true))
	if err := alice.Login(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(alice.Destroy)
	krb := &Kerberos{Keytab: kt, Protocol: "rm", Host: "localhost", Realm: kdctest.Realm}

	_, addr, _ := startServer(t, ServerOptions{Kerberos: krb})
	if got, err := echo(dial(t, addr, ClientOptions{Kerberos: alice}), "hi"); err != nil || got != "alice:hi" {
		t.Fatalf("alice with Kerberos: %q, %v", got, err)
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
