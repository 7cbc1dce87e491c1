// Package kdctest starts a real MIT Kerberos KDC for tests: a throwaway
// realm in a temporary directory, served by Debian's krb5kdc on a free
// loopback port, with principals and keytabs made by kadmin.local. The
// test command (make test) installs krb5-kdc and krb5-admin-server; a test
// that needs a KDC fails, saying so, where they are missing.
package kdctest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
)

// Realm is the test realm.
const Realm = "LOOM.TEST"

// KDC is a running test KDC.
type KDC struct {
	Dir  string
	Port int
	// Conf is its krb5.conf, for clients (KRB5_CONFIG) and gokrb5.
	Conf string
	tb   testing.TB
	env  []string
}

func tool(tb testing.TB, name string) string {
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	tb.Fatalf("%s is missing: the Kerberos tests run a real MIT KDC (Debian's krb5-kdc and krb5-admin-server; `make test` installs them)", name)
	return ""
}

func freePort(tb testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start makes a realm and serves it until the test ends. Tickets live an
// hour unless maxLife says otherwise.
func Start(tb testing.TB, maxLife time.Duration) *KDC {
	tb.Helper()
	if maxLife <= 0 {
		maxLife = time.Hour
	}
	k := &KDC{Dir: tb.TempDir(), Port: freePort(tb), tb: tb}
	k.Conf = filepath.Join(k.Dir, "krb5.conf")
	profile := filepath.Join(k.Dir, "kdc.conf")
	conf := fmt.Sprintf(`[libdefaults]
  default_realm = %[1]s
  dns_lookup_kdc = false
  dns_lookup_realm = false
  rdns = false
  udp_preference_limit = 1
  default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
  default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
  permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
[realms]
  %[1]s = {
    kdc = 127.0.0.1:%[2]d
  }
`, Realm, k.Port)
	kdcConf := fmt.Sprintf(`[kdcdefaults]
  kdc_ports = %[2]d
  kdc_tcp_ports = %[2]d
[realms]
  %[1]s = {
    database_name = %[3]s/principal
    key_stash_file = %[3]s/stash
    acl_file = %[3]s/kadm5.acl
    max_life = %[4]ds
    max_renewable_life = 0
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  }
[logging]
  kdc = FILE:%[3]s/kdc.log
`, Realm, k.Port, k.Dir, int(maxLife.Seconds()))
	for path, body := range map[string]string{k.Conf: conf, profile: kdcConf} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	k.env = append(os.Environ(), "KRB5_CONFIG="+k.Conf, "KRB5_KDC_PROFILE="+profile)
	k.run(tool(tb, "kdb5_util"), "create", "-s", "-r", Realm, "-P", "loom-test-master-key")
	cmd := exec.Command(tool(tb, "krb5kdc"), "-n", "-P", filepath.Join(k.Dir, "kdc.pid"))
	cmd.Env = k.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatalf("krb5kdc: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	tb.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	// Up when it answers on its TCP port.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(k.Port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			tb.Fatalf("krb5kdc exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("krb5kdc did not listen on 127.0.0.1:%d: %s", k.Port, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return k
}

func (k *KDC) run(name string, args ...string) string {
	k.tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = k.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		k.tb.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
	}
	return string(out)
}

func (k *KDC) admin(query string) {
	k.tb.Helper()
	k.run(tool(k.tb, "kadmin.local"), "-r", Realm, "-q", query)
}

// AddUser makes principal name@LOOM.TEST with a password.
func (k *KDC) AddUser(name, password string) {
	k.tb.Helper()
	k.admin(fmt.Sprintf("addprinc -pw %s %s", password, name))
}

// AddService makes principal name@LOOM.TEST (e.g. HTTP/localhost) with a
// random key and returns a keytab holding it.
func (k *KDC) AddService(name string) string {
	k.tb.Helper()
	k.admin("addprinc -randkey " + name)
	kt := filepath.Join(k.Dir, fmt.Sprintf("%x.keytab", name))
	k.admin(fmt.Sprintf("ktadd -k %s %s", kt, name))
	return kt
}

// Kinit gets user's tickets into a fresh credential cache, as a user does
// before running a Kerberos client, and returns its path (KRB5CCNAME).
func (k *KDC) Kinit(user, password string) string {
	k.tb.Helper()
	cc := filepath.Join(k.Dir, "cc-"+user)
	cmd := exec.Command(tool(k.tb, "kinit"), "-c", cc, user)
	cmd.Env = k.env
	cmd.Stdin = bytes.NewBufferString(password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		k.tb.Fatalf("kinit %s: %v\n%s", user, err, out)
	}
	return cc
}

// Env is the environment a Kerberos client uses to reach this KDC.
func (k *KDC) Env() []string { return append([]string{}, k.env...) }

// Login logs user in with gokrb5, as a Go client does, and logs out when
// the test ends.
func (k *KDC) Login(user, password string) *krbclient.Client {
	k.tb.Helper()
	conf, err := config.Load(k.Conf)
	if err != nil {
		k.tb.Fatal(err)
	}
	cl := krbclient.NewWithPassword(user, Realm, password, conf, krbclient.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		k.tb.Fatalf("login as %s: %v", user, err)
	}
	k.tb.Cleanup(cl.Destroy)
	return cl
}
