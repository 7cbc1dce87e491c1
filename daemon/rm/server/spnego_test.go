package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/loomrm/loom/internal/hadoopconf"
)

func TestWebAuthConfig(t *testing.T) {
	kt := keytab.New()
	if err := kt.AddEntry("HTTP/rm.example.com", "EXAMPLE.COM", "secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "http.keytab")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(host string, kv ...string) (webAuth, error) {
		c := hadoopconf.New(nil)
		for i := 0; i+1 < len(kv); i += 2 {
			c.Set(kv[i], kv[i+1])
		}
		return loadWebAuth(c, host)
	}
	if a, err := load("rm.example.com"); err != nil || a.kerberos() {
		t.Errorf("default: %+v, %v; want SIMPLE", a, err)
	}
	a, err := load("RM.example.com", keyHTTPAuthType, "kerberos", keyHTTPKeytab, path)
	if err != nil || !a.kerberos() || a.principal != "HTTP/rm.example.com" || a.realm != "EXAMPLE.COM" {
		t.Fatalf("kerberos with HTTP/_HOST: %+v, %v", a, err)
	}
	for _, tc := range []struct{ name, realm, want, err string }{
		{"alice", "EXAMPLE.COM", "alice", ""},
		{"alice/admin", "EXAMPLE.COM", "alice", ""},
		{"mallory", "OTHER.ORG", "", "No rules applied to mallory@OTHER.ORG"},
	} {
		got, err := a.shortName(tc.name, tc.realm)
		if got != tc.want || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s@%s: %q, %v; want %q, %q", tc.name, tc.realm, got, err, tc.want, tc.err)
		}
	}
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{keyHTTPAuthType, "digest"}, keyHTTPAuthType},
		{[]string{keyHTTPAuthType, "kerberos"}, "no keytab"},
		{[]string{keyHTTPAuthType, "kerberos", keyHTTPKeytab, path + ".missing"}, keyHTTPKeytab},
		{[]string{keyHTTPAuthType, "kerberos", keyHTTPKeytab, path, keyHTTPPrincipal, "HTTP/other.example.com@EXAMPLE.COM"}, "holds no key for HTTP/other.example.com"},
		{[]string{keyHTTPAuthType, "kerberos", keyHTTPKeytab, path, keyHTTPPrincipal, "rm/_HOST@EXAMPLE.COM"}, "SPNEGO's principal is HTTP/"},
	} {
		if _, err := load("rm.example.com", tc.kv...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.kv, err, tc.want)
		}
	}
}
