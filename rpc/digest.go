package rpc

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// SASL DIGEST-MD5 (RFC 2831) as Hadoop IPC uses it for TOKEN auth: the
// username is the base64 of the token's identifier, the password the
// base64 of its password, the realm "default", the digest-uri "/default"
// (protocol "" and server id "default"), qop "auth" only: the connection
// is authenticated, not wrapped, as with hadoop.rpc.protection's default.

// Hadoop's names for token auth in the SASL negotiation.
const (
	saslTokenMethod    = "TOKEN"
	saslDigestMech     = "DIGEST-MD5"
	saslDefaultRealm   = "default"
	saslDigestURI      = "/" + saslDefaultRealm
	saslSimpleMethod   = "SIMPLE"
	maxDigestDirective = 4096
)

// Java exception classes of failed SASL negotiations.
const (
	ClassSasl         = "javax.security.sasl.SaslException"
	ClassInvalidToken = "org.apache.hadoop.security.token.SecretManager$InvalidToken"
)

// digestServer is the server's half of one DIGEST-MD5 exchange.
type digestServer struct {
	nonce string
}

func newDigestServer() *digestServer {
	var b [24]byte
	rand.Read(b[:])
	return &digestServer{nonce: base64.StdEncoding.EncodeToString(b[:])}
}

// challenge is the server's first (and only) challenge.
func (s *digestServer) challenge() []byte {
	return []byte(fmt.Sprintf(`realm="%s",nonce="%s",qop="auth",charset=utf-8,algorithm=md5-sess`, saslDefaultRealm, s.nonce))
}

// verify checks the client's response. password looks up the password of
// the token whose identifier the username carries. It returns the
// identifier and the rspauth the server answers with.
func (s *digestServer) verify(response []byte, password func(identifier []byte) ([]byte, error)) (identifier, rspauth []byte, err error) {
	d, err := parseDigestDirectives(response)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range []string{"username", "nonce", "cnonce", "nc", "response", "digest-uri"} {
		if _, ok := d[k]; !ok {
			return nil, nil, fmt.Errorf("DIGEST-MD5: digest response format violation: no %s", k)
		}
	}
	if v, ok := d["charset"]; ok && !strings.EqualFold(v, "utf-8") {
		return nil, nil, fmt.Errorf("DIGEST-MD5: digest response format violation: charset %q", v)
	}
	if qop, ok := d["qop"]; ok && qop != "auth" {
		return nil, nil, fmt.Errorf("DIGEST-MD5: qop %q is not offered: this server authenticates only (qop auth)", qop)
	}
	if realm, ok := d["realm"]; ok && realm != saslDefaultRealm {
		return nil, nil, fmt.Errorf("DIGEST-MD5: digest response format violation: realm %q, expecting %q", realm, saslDefaultRealm)
	}
	if d["nonce"] != s.nonce {
		return nil, nil, errors.New("DIGEST-MD5: digest response format violation: mismatched nonce")
	}
	if d["nc"] != "00000001" {
		return nil, nil, fmt.Errorf("DIGEST-MD5: digest response format violation: nonce count %q, expecting 00000001", d["nc"])
	}
	if d["digest-uri"] != saslDigestURI {
		return nil, nil, fmt.Errorf("DIGEST-MD5: digest response format violation. Mismatched URI: %q; expecting: %q", d["digest-uri"], saslDigestURI)
	}
	if _, ok := d["authzid"]; ok {
		return nil, nil, errors.New("DIGEST-MD5: an authorization id is not accepted: the token names the user")
	}
	identifier, err = base64.StdEncoding.DecodeString(d["username"])
	if err != nil {
		return nil, nil, fmt.Errorf("DIGEST-MD5: the username is not a base64 token identifier: %v", err)
	}
	pw, err := password(identifier)
	if err != nil {
		return nil, nil, err
	}
	secret := base64.StdEncoding.EncodeToString(pw)
	want := digestResponse(d["username"], saslDefaultRealm, secret, s.nonce, d["cnonce"], d["nc"], "AUTHENTICATE:"+saslDigestURI)
	if subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(d["response"]))) != 1 {
		return nil, nil, errors.New("DIGEST-MD5: digest response format violation. Mismatched response.")
	}
	rsp := digestResponse(d["username"], saslDefaultRealm, secret, s.nonce, d["cnonce"], d["nc"], ":"+saslDigestURI)
	return identifier, []byte("rspauth=" + rsp), nil
}

// digestResponse is RFC 2831's response-value for md5-sess and qop auth.
func digestResponse(user, realm, password, nonce, cnonce, nc, a2 string) string {
	h := md5.Sum([]byte(user + ":" + realm + ":" + password))
	a1 := append(h[:], ":"+nonce+":"+cnonce...)
	ha1 := md5.Sum(a1)
	ha2 := md5.Sum([]byte(a2))
	kd := md5.Sum([]byte(hex.EncodeToString(ha1[:]) + ":" + nonce + ":" + nc + ":" + cnonce + ":auth:" + hex.EncodeToString(ha2[:])))
	return hex.EncodeToString(kd[:])
}

// digestClient answers a server's DIGEST-MD5 challenge with a token. It
// returns the response and a check of the server's rspauth, so that the
// client knows the server holds the token's secret too.
func digestClient(challenge, identifier, password []byte) (response []byte, check func(rspauth []byte) error, err error) {
	d, err := parseDigestDirectives(challenge)
	if err != nil {
		return nil, nil, err
	}
	if alg := d["algorithm"]; alg != "md5-sess" {
		return nil, nil, fmt.Errorf("DIGEST-MD5: the server's algorithm is %q, not md5-sess", alg)
	}
	if d["nonce"] == "" {
		return nil, nil, errors.New("DIGEST-MD5: the server's challenge has no nonce")
	}
	if qop, ok := d["qop"]; ok && !strings.Contains(","+strings.ReplaceAll(qop, " ", "")+",", ",auth,") {
		return nil, nil, fmt.Errorf("DIGEST-MD5: the server offers qop %q, and this client authenticates only (auth)", qop)
	}
	var cb [24]byte
	rand.Read(cb[:])
	cnonce := base64.StdEncoding.EncodeToString(cb[:])
	user := base64.StdEncoding.EncodeToString(identifier)
	secret := base64.StdEncoding.EncodeToString(password)
	nonce := d["nonce"]
	resp := digestResponse(user, saslDefaultRealm, secret, nonce, cnonce, "00000001", "AUTHENTICATE:"+saslDigestURI)
	out := fmt.Sprintf(`charset=utf-8,username="%s",realm="%s",nonce="%s",nc=00000001,cnonce="%s",digest-uri="%s",maxbuf=65536,response=%s,qop=auth`,
		user, saslDefaultRealm, quoteDigest(nonce), cnonce, saslDigestURI, resp)
	wantRsp := digestResponse(user, saslDefaultRealm, secret, nonce, cnonce, "00000001", ":"+saslDigestURI)
	check = func(rspauth []byte) error {
		got, ok := strings.CutPrefix(string(rspauth), "rspauth=")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(wantRsp)) != 1 {
			return errors.New("DIGEST-MD5: the server's rspauth does not match: it does not know this token's secret")
		}
		return nil
	}
	return []byte(out), check, nil
}

func quoteDigest(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// parseDigestDirectives parses RFC 2831's comma-separated name=value
// list; values may be quoted with backslash escapes. Repeated directives
// are refused, as the RFC asks.
func parseDigestDirectives(b []byte) (map[string]string, error) {
	if len(b) > maxDigestDirective {
		return nil, fmt.Errorf("DIGEST-MD5: a %d-byte message (at most %d)", len(b), maxDigestDirective)
	}
	s := string(b)
	d := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t\r\n,")
		if s == "" {
			return d, nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("DIGEST-MD5: digest format violation: %q has no value", s)
		}
		name := strings.ToLower(strings.TrimSpace(s[:eq]))
		s = strings.TrimLeft(s[eq+1:], " \t")
		var val string
		if strings.HasPrefix(s, `"`) {
			var sb strings.Builder
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				sb.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("DIGEST-MD5: digest format violation: unterminated quoted value of %s", name)
			}
			val, s = sb.String(), s[i+1:]
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			val, s = strings.TrimSpace(s[:end]), s[end:]
		}
		if _, dup := d[name]; dup {
			return nil, fmt.Errorf("DIGEST-MD5: digest format violation: %s appears twice", name)
		}
		d[name] = val
		s = strings.TrimLeft(s, " \t")
		if s != "" && s[0] != ',' {
			return nil, fmt.Errorf("DIGEST-MD5: digest format violation: %q after the value of %s", s, name)
		}
	}
}
