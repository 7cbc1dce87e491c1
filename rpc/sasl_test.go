package rpc

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc/hadooppb"
)

// testSecrets knows tokens whose identifier is "id:<user>", signed with key.
type testSecrets struct{ key []byte }

func (s testSecrets) RetrievePassword(id []byte) ([]byte, string, error) {
	user, ok := strings.CutPrefix(string(id), "id:")
	if !ok || user == "revoked" {
		return nil, "", fmt.Errorf("Password not found for %q", id)
	}
	return TokenPassword(s.key, id), user, nil
}

func testToken(key []byte, id string) *hadooppb.TokenProto {
	return &hadooppb.TokenProto{Identifier: []byte(id), Password: TokenPassword(key, []byte(id)),
		Kind: proto.String(AMRMTokenKind), Service: proto.String("127.0.0.1:8030")}
}

// TestTokenAuth: a server with a secret manager takes TOKEN auth (SASL
// DIGEST-MD5) and SIMPLE; a token names the caller, whatever the client
// claims, and a bad token ends the connection with the reason.
func TestTokenAuth(t *testing.T) {
	key := []byte("the master key")
	_, addr, _ := startServer(t, ServerOptions{Secrets: testSecrets{key}})
	tests := []struct {
		name      string
		opts      ClientOptions
		want      string // echo answer
		class, in string // or the refusal
	}{
		{"token", ClientOptions{User: "mallory", Token: testToken(key, "id:appattempt_1_0001_000001")}, "appattempt_1_0001_000001:x", "", ""},
		{"no token: SIMPLE", ClientOptions{User: "alice", SASL: true}, "alice:x", "", ""},
		{"no SASL at all", ClientOptions{User: "alice"}, "alice:x", "", ""},
		{"wrong password", ClientOptions{Token: testToken([]byte("a guessed key"), "id:appattempt_1_0001_000001")}, "",
			ClassSasl, "Mismatched response"},
		{"unknown token", ClientOptions{Token: testToken(key, "id:revoked")}, "", ClassInvalidToken, `Password not found for "id:revoked"`},
		{"not an identifier", ClientOptions{Token: testToken(key, "garbage")}, "", ClassInvalidToken, "Password not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(context.Background(), addr, tc.opts)
			if err == nil {
				defer c.Close()
				var got string
				got, err = echo(c, "x")
				if tc.class == "" && (err != nil || got != tc.want) {
					t.Fatalf("echo = %q, %v; want %q", got, err, tc.want)
				}
			}
			if tc.class == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var re *RemoteError
			if !errors.As(err, &re) || re.Class != tc.class || !strings.Contains(re.Message, tc.in) {
				t.Fatalf("err = %v; want %s naming %q", err, tc.class, tc.in)
			}
		})
	}
}

// A token client of a SIMPLE-only server goes on with SIMPLE, as Java's
// does.
func TestTokenClientOfASimpleServer(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{})
	c := dial(t, addr, ClientOptions{User: "carol", Token: testToken([]byte("k"), "id:x")})
	if got, err := echo(c, "y"); err != nil || got != "carol:y" {
		t.Fatalf("echo = %q, %v", got, err)
	}
}

// saslConn speaks the wire by hand, for what the client never sends.
type saslConn struct {
	t  *testing.T
	nc net.Conn
}

func saslDial(t *testing.T, addr string) *saslConn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write(AppendPreamble(nil, Preamble{Version: Version, AuthProtocol: AuthSASL}))
	return &saslConn{t, nc}
}

func (r *saslConn) send(id int32, m proto.Message) {
	h := &hadooppb.RpcRequestHeaderProto{RpcKind: hadooppb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), CallId: proto.Int32(id),
		ClientId: []byte("0123456789abcdef"), RetryCount: proto.Int32(-1)}
	b, err := AppendFrame(nil, h, m)
	if err != nil {
		r.t.Fatal(err)
	}
	r.nc.Write(b)
}

func (r *saslConn) recv() (*hadooppb.RpcResponseHeaderProto, *hadooppb.RpcSaslProto) {
	frame, err := ReadFrame(r.nc, 1<<20, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	var h hadooppb.RpcResponseHeaderProto
	rest, err := unmarshalDelimitedPartial(frame, &h)
	if err != nil {
		r.t.Fatal(err)
	}
	var s hadooppb.RpcSaslProto
	if h.GetStatus() == hadooppb.RpcResponseHeaderProto_SUCCESS {
		unmarshalDelimitedPartial(rest, &s)
	}
	return &h, &s
}

// The negotiation itself: what the server offers, in Hadoop's order, and
// how it refuses what a Java client would never send.
func TestTokenNegotiationRefusals(t *testing.T) {
	key := []byte("k")
	_, addr, _ := startServer(t, ServerOptions{Secrets: testSecrets{key}})
	negotiate := &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_NEGOTIATE.Enum()}

	r := saslDial(t, addr)
	r.send(SASLCallID, negotiate)
	_, offer := r.recv()
	if offer.GetState() != hadooppb.RpcSaslProto_NEGOTIATE || len(offer.GetAuths()) != 2 ||
		offer.GetAuths()[0].GetMethod() != "TOKEN" || offer.GetAuths()[0].GetMechanism() != "DIGEST-MD5" ||
		offer.GetAuths()[0].GetServerId() != "default" || len(offer.GetAuths()[0].GetChallenge()) == 0 ||
		offer.GetAuths()[1].GetMethod() != "SIMPLE" {
		t.Fatalf("offer = %v; want TOKEN DIGEST-MD5 with a challenge, then SIMPLE", offer)
	}
	ch, err := parseDigestDirectives(offer.GetAuths()[0].GetChallenge())
	if err != nil || ch["realm"] != "default" || ch["qop"] != "auth" || ch["algorithm"] != "md5-sess" || ch["charset"] != "utf-8" {
		t.Fatalf("challenge %q: %v %v", offer.GetAuths()[0].GetChallenge(), ch, err)
	}

	tokenAuth := &hadooppb.RpcSaslProto_SaslAuth{Method: proto.String("TOKEN"), Mechanism: proto.String("DIGEST-MD5")}
	tests := []struct {
		name      string
		negotiate bool
		msgs      []*hadooppb.RpcSaslProto
		want      string
	}{
		{"INITIATE without NEGOTIATE", false, []*hadooppb.RpcSaslProto{{State: hadooppb.RpcSaslProto_INITIATE.Enum(),
			Auths: []*hadooppb.RpcSaslProto_SaslAuth{tokenAuth}, Token: []byte("x")}}, "without NEGOTIATE first"},
		{"two auths", true, []*hadooppb.RpcSaslProto{{State: hadooppb.RpcSaslProto_INITIATE.Enum(),
			Auths: []*hadooppb.RpcSaslProto_SaslAuth{tokenAuth, tokenAuth}}}, "Client mechanism is malformed"},
		{"Kerberos", true, []*hadooppb.RpcSaslProto{{State: hadooppb.RpcSaslProto_INITIATE.Enum(),
			Auths: []*hadooppb.RpcSaslProto_SaslAuth{{Method: proto.String("KERBEROS"), Mechanism: proto.String("GSSAPI")}}}},
			"KERBEROS is not supported"},
		{"other mechanism", true, []*hadooppb.RpcSaslProto{{State: hadooppb.RpcSaslProto_INITIATE.Enum(),
			Auths: []*hadooppb.RpcSaslProto_SaslAuth{{Method: proto.String("TOKEN"), Mechanism: proto.String("PLAIN")}}}},
			`mechanism "PLAIN"`},
		{"garbage response", true, []*hadooppb.RpcSaslProto{{State: hadooppb.RpcSaslProto_INITIATE.Enum(),
			Auths: []*hadooppb.RpcSaslProto_SaslAuth{tokenAuth}, Token: []byte(`username="unterminated`)}}, "unterminated"},
		{"missing directives", true, []*hadooppb.RpcSaslProto{{State: hadooppb.RpcSaslProto_INITIATE.Enum(),
			Auths: []*hadooppb.RpcSaslProto_SaslAuth{tokenAuth}, Token: []byte(`username="aWQ6eA=="`)}}, "no nonce"},
		{"RESPONSE state", true, []*hadooppb.RpcSaslProto{{State: hadooppb.RpcSaslProto_RESPONSE.Enum()}}, "unexpected SASL state RESPONSE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := saslDial(t, addr)
			if tc.negotiate {
				r.send(SASLCallID, negotiate)
				r.recv()
			}
			for _, m := range tc.msgs {
				r.send(SASLCallID, m)
			}
			h, _ := r.recv()
			if h.GetStatus() != hadooppb.RpcResponseHeaderProto_FATAL || h.GetErrorDetail() != hadooppb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED ||
				!strings.Contains(h.GetErrorMsg(), tc.want) {
				t.Fatalf("reply %v; want FATAL_UNAUTHORIZED naming %q", h, tc.want)
			}
		})
	}
}

// A token connection whose context claims another user is refused, as
// Hadoop refuses it.
func TestTokenUserMustMatchTheContext(t *testing.T) {
	key := []byte("k")
	_, addr, _ := startServer(t, ServerOptions{Secrets: testSecrets{key}})
	r := saslDial(t, addr)
	r.send(SASLCallID, &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_NEGOTIATE.Enum()})
	_, offer := r.recv()
	tok := testToken(key, "id:appattempt_1_0001_000001")
	resp, check, err := digestClient(offer.GetAuths()[0].GetChallenge(), tok.GetIdentifier(), tok.GetPassword())
	if err != nil {
		t.Fatal(err)
	}
	r.send(SASLCallID, &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_INITIATE.Enum(), Token: resp,
		Auths: []*hadooppb.RpcSaslProto_SaslAuth{{Method: proto.String("TOKEN"), Mechanism: proto.String("DIGEST-MD5")}}})
	_, ok := r.recv()
	if err := check(ok.GetToken()); ok.GetState() != hadooppb.RpcSaslProto_SUCCESS || err != nil {
		t.Fatalf("after the response: %v %v", ok, err)
	}
	r.send(ConnectionContextCallID, &hadooppb.IpcConnectionContextProto{UserInfo: &hadooppb.UserInformationProto{
		EffectiveUser: proto.String("appattempt_1_0002_000001")}})
	h, _ := r.recv()
	if h.GetErrorDetail() != hadooppb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED || h.GetExceptionClassName() != ClassAccessControl ||
		!strings.Contains(h.GetErrorMsg(), "Authenticated user (appattempt_1_0001_000001) doesn't match what the client claims to be (appattempt_1_0002_000001)") {
		t.Fatalf("reply %v", h)
	}
}

// RFC 2831's own example (section 4), to pin the digest arithmetic.
func TestDigestResponseRFC2831Example(t *testing.T) {
	const user, realm, pw, nonce, cnonce = "chris", "elwood.innosoft.com", "secret", "OA6MG9tEQGm2hh", "OA6MHXh6VqTrRk"
	if got := digestResponse(user, realm, pw, nonce, cnonce, "00000001", "AUTHENTICATE:imap/elwood.innosoft.com"); got != "d388dad90d4bbd760a152321f2143af7" {
		t.Errorf("response = %s", got)
	}
	if got := digestResponse(user, realm, pw, nonce, cnonce, "00000001", ":imap/elwood.innosoft.com"); got != "ea40f60335c427b5527b84dbabcdfffd" {
		t.Errorf("rspauth = %s", got)
	}
}

// The server checks every field a Java client sends, and the client
// checks the server's rspauth.
func TestDigestExchange(t *testing.T) {
	id, pw := []byte("ident"), []byte("pass")
	lookup := func(got []byte) ([]byte, error) {
		if !bytes.Equal(got, id) {
			return nil, fmt.Errorf("unknown %q", got)
		}
		return pw, nil
	}
	s := newDigestServer()
	resp, check, err := digestClient(s.challenge(), id, pw)
	if err != nil {
		t.Fatal(err)
	}
	gotID, rspauth, err := s.verify(resp, lookup)
	if err != nil || !bytes.Equal(gotID, id) {
		t.Fatalf("verify: %q %v", gotID, err)
	}
	if err := check(rspauth); err != nil {
		t.Fatal(err)
	}
	if err := check([]byte("rspauth=00000000000000000000000000000000")); err == nil {
		t.Error("a forged rspauth passed")
	}
	user := base64.StdEncoding.EncodeToString(id)
	tamper := []struct{ from, to, want string }{
		{`digest-uri="/default"`, `digest-uri="hdfs/default"`, "Mismatched URI"},
		{`nc=00000001`, `nc=00000002`, "nonce count"},
		{`realm="default"`, `realm="other"`, `realm "other"`},
		{`qop=auth`, `qop=auth-conf`, "authenticates only"},
		{`username="` + user + `"`, `username="!!"`, "not a base64"},
		{`username="` + user + `"`, `username="` + base64.StdEncoding.EncodeToString([]byte("other")) + `"`, `unknown "other"`},
		{`charset=utf-8`, `charset=latin1`, "charset"},
		{`cnonce=`, `authzid="x",cnonce=`, "authorization id"},
		{`maxbuf=65536`, `maxbuf=65536,maxbuf=1`, "appears twice"},
	}
	for _, tc := range tamper {
		bad := strings.Replace(string(resp), tc.from, tc.to, 1)
		if bad == string(resp) {
			t.Fatalf("%q not in the response %s", tc.from, resp)
		}
		if _, _, err := s.verify([]byte(bad), lookup); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("with %s: err %v; want one naming %q", tc.to, err, tc.want)
		}
	}
	// A response to another server's nonce.
	if _, _, err := newDigestServer().verify(resp, lookup); err == nil || !strings.Contains(err.Error(), "nonce") {
		t.Errorf("replayed to another connection: %v", err)
	}
}

func FuzzDigestDirectives(f *testing.F) {
	s := newDigestServer()
	resp, _, _ := digestClient(s.challenge(), []byte("id"), []byte("pw"))
	f.Add(resp)
	f.Add(s.challenge())
	f.Add([]byte(`a="\"q\\",b=c,,  d = "e"`))
	f.Add([]byte(`x="unterminated`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseDigestDirectives(b)
		if err != nil {
			return
		}
		// What parses is re-encoded and parses the same.
		var parts []string
		for k, v := range d {
			if k == "" || strings.ContainsAny(k, "=,\" \t\r\n") {
				return
			}
			parts = append(parts, k+`="`+quoteDigest(v)+`"`)
		}
		enc := strings.Join(parts, ",")
		if len(enc) > maxDigestDirective {
			return // quoting made it longer than a message may be
		}
		d2, err := parseDigestDirectives([]byte(enc))
		if err != nil || len(d2) != len(d) {
			t.Fatalf("%q re-encoded as %q: %v %v", b, parts, d2, err)
		}
		for k, v := range d {
			if d2[k] != v {
				t.Fatalf("%s: %q became %q", k, v, d2[k])
			}
		}
		// The server's check never panics on it.
		s.verify(b, func([]byte) ([]byte, error) { return []byte("pw"), nil })
	})
}

// A token-only server (a NodeManager's container manager) offers TOKEN
// alone and refuses SIMPLE however it is asked for, with Hadoop's words.
func TestTokenOnlyServer(t *testing.T) {
	key := []byte("k")
	_, addr, _ := startServer(t, ServerOptions{Secrets: testSecrets{key}, TokenOnly: true})
	c := dial(t, addr, ClientOptions{User: "mallory", Token: testToken(key, "id:appattempt_1_0001_000001")})
	if got, err := echo(c, "x"); err != nil || got != "appattempt_1_0001_000001:x" {
		t.Fatalf("with a token: %q %v", got, err)
	}
	const refusal = "SIMPLE authentication is not enabled.  Available:[TOKEN]"
	for _, opts := range []ClientOptions{{User: "alice"}, {User: "alice", SASL: true}} {
		c, err := Dial(context.Background(), addr, opts)
		if err == nil {
			_, err = echo(c, "x")
			c.Close()
		}
		// Without SASL the server refuses with Hadoop's words; with SASL
		// the client sees TOKEN alone offered, and has none.
		if opts.SASL && !strings.Contains(fmt.Sprint(err), "accepts [TOKEN] and this client holds no token") ||
			!opts.SASL && (!IsClass(err, ClassAccessControl) || !strings.Contains(err.Error(), refusal)) {
			t.Errorf("SASL %v without a token: %v, want %q", opts.SASL, err, refusal)
		}
	}
	r := saslDial(t, addr)
	r.send(SASLCallID, &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_NEGOTIATE.Enum()})
	if _, offer := r.recv(); len(offer.GetAuths()) != 1 || offer.GetAuths()[0].GetMethod() != "TOKEN" {
		t.Fatalf("offer = %v; want TOKEN alone", offer)
	}
	r.send(SASLCallID, &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_INITIATE.Enum(),
		Auths: []*hadooppb.RpcSaslProto_SaslAuth{{Method: proto.String("SIMPLE"), Mechanism: proto.String("")}}})
	if h, _ := r.recv(); h.GetErrorDetail() != hadooppb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED || h.GetErrorMsg() != refusal ||
		h.GetExceptionClassName() != ClassAccessControl {
		t.Fatalf("SIMPLE INITIATE: %v; want %s %q", h, ClassAccessControl, refusal)
	}
}
