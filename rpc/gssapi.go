package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// Kerberos on the RPC ports, as Hadoop's IPC does it
// (hadoop.security.authentication=kerberos): SASL's GSSAPI mechanism
// (RFC 4752) over the Kerberos V5 GSS-API mechanism (RFC 4121). The client
// sends an AP-REQ for the server's principal <protocol>/<host>@REALM in
// its INITIATE; the server checks it against its keytab, then the two
// agree on no security layer (Hadoop's hadoop.rpc.protection
// "authentication") in a pair of wrap tokens. The caller is the ticket's
// client principal, by its short name (DEFAULT auth_to_local).
//
// A client that asks for mutual authentication (Java's GSSAPI client
// does) gets an AP-REP first. Not yet: integrity and privacy layers.

const (
	saslKerberosMethod = "KERBEROS"
	saslGSSAPIMech     = "GSSAPI"
	// saslNoLayer is RFC 4752's "no security layer" bit.
	saslNoLayer = 0x01
)

// Kerberos is a server's Kerberos identity.
type Kerberos struct {
	Keytab *keytab.Keytab
	// Protocol and Host make its principal Protocol/Host@Realm (rm/host,
	// nm/host), as Hadoop's yarn.resourcemanager.principal names it.
	Protocol, Host, Realm string
	// ToLocal maps callers' principals to user names
	// (hadoop.security.auth_to_local); nil is DEFAULT for Realm.
	ToLocal *AuthToLocal
	// MaxClockSkew is how far a client's clock may be from the server's,
	// and how long past its end a ticket is still taken (5 minutes,
	// Kerberos' default, when zero).
	MaxClockSkew time.Duration
}

// shortName is a caller's user name by the auth_to_local rules.
func (k *Kerberos) shortName(name, realm string) (string, error) {
	a := k.ToLocal
	if a == nil {
		a, _ = ParseAuthToLocal("DEFAULT", k.Realm)
	}
	return a.ShortName(name, realm)
}

func (k *Kerberos) principal() string { return k.Protocol + "/" + k.Host }

// gssServer is one connection's GSSAPI exchange on the server.
type gssServer struct {
	key       types.EncryptionKey
	client    string // short name
	principal string // the whole name, without the realm
	realm     string
	// mutual: the AP-REP went out; the client's empty answer comes next,
	// then the layer exchange.
	mutual bool
}

// next takes the client's next SASL RESPONSE: after an AP-REP its empty
// answer, which the layer offer answers; then its choice of layer, which
// ends the exchange (done).
func (g *gssServer) next(token []byte) (reply []byte, done bool, err error) {
	if g.mutual {
		g.mutual = false
		reply, err = g.offer()
		return reply, false, err
	}
	return nil, true, g.respond(token)
}

// offer is the wrap token that offers no security layer, and at most
// 64 KB messages (RFC 4752).
func (g *gssServer) offer() ([]byte, error) {
	offer := make([]byte, 4)
	binary.BigEndian.PutUint32(offer, uint32(saslNoLayer)<<24|0xFFFFFF)
	return wrap(offer, g.key, true)
}

// apRep is the mutual-authentication token for the AP-REQ: the KRB_AP_REP
// carrying the authenticator's time back, encrypted in the session key,
// in GSS-API framing (RFC 1964 token id 0x0200).
func apRep(req *messages.APReq) ([]byte, error) {
	part, err := asn1.Marshal(messages.EncAPRepPart{CTime: req.Authenticator.CTime, Cusec: req.Authenticator.Cusec})
	if err != nil {
		return nil, err
	}
	part = asn1tools.AddASNAppTag(part, asnAppTag.EncAPRepPart)
	key := req.Ticket.DecryptedEncPart.Key
	enc, err := crypto.GetEncryptedData(part, key, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, err
	}
	rep, err := asn1.Marshal(messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: enc})
	if err != nil {
		return nil, err
	}
	rep = asn1tools.AddASNAppTag(rep, asnAppTag.APREP)
	oid, err := asn1.Marshal(gssapi.OIDKRB5.OID())
	if err != nil {
		return nil, err
	}
	inner := append(append(oid, 0x02, 0x00), rep...)
	return asn1tools.AddASNAppTag(inner, 0), nil
}

// initiate checks the client's AP-REQ and returns what answers it: the
// AP-REP when the client asks for mutual authentication (Java's GSSAPI
// client does), else straight away the wrap token that offers no
// security layer.
func (k *Kerberos) initiate(token []byte) (*gssServer, []byte, error) {
	var t spnego.KRB5Token
	if err := t.Unmarshal(token); err != nil {
		return nil, nil, fmt.Errorf("not a Kerberos GSS-API token: %v", err)
	}
	if !t.IsAPReq() {
		return nil, nil, errors.New("the GSS-API token is not an AP-REQ")
	}
	skew := k.MaxClockSkew
	if skew <= 0 {
		skew = 5 * time.Minute
	}
	s := service.NewSettings(k.Keytab, service.KeytabPrincipal(k.principal()), service.DecodePAC(false),
		service.MaxClockSkew(skew))
	ok, creds, err := service.VerifyAPREQ(&t.APReq, s)
	if err != nil || !ok {
		return nil, nil, fmt.Errorf("the Kerberos ticket is refused: %v", err)
	}
	short, err := k.shortName(creds.UserName(), creds.Domain())
	if err != nil {
		return nil, nil, err
	}
	g := &gssServer{key: t.APReq.Ticket.DecryptedEncPart.Key, principal: creds.UserName(), realm: creds.Domain(), client: short}
	if sk := t.APReq.Authenticator.SubKey; sk.KeyType != 0 {
		g.key = sk
	}
	if types.IsFlagSet(&t.APReq.APOptions, flags.APOptionMutualRequired) {
		rep, err := apRep(&t.APReq)
		if err != nil {
			return nil, nil, fmt.Errorf("the AP-REP: %v", err)
		}
		g.mutual = true
		return g, rep, nil
	}
	wt, err := g.offer()
	if err != nil {
		return nil, nil, err
	}
	return g, wt, nil
}

// respond checks the client's choice of layer: none, as offered.
func (g *gssServer) respond(token []byte) error {
	payload, err := unwrap(token, g.key, false)
	if err != nil {
		return err
	}
	if len(payload) < 4 {
		return fmt.Errorf("the security layer answer is %d bytes, want at least 4", len(payload))
	}
	if payload[0] != saslNoLayer {
		return fmt.Errorf("the client chose security layer %#x; this server offers none but authentication", payload[0])
	}
	if authz := string(payload[4:]); authz != "" {
		if short, _, _ := strings.Cut(authz, "@"); short != g.client && authz != g.client {
			return fmt.Errorf("the client authenticated as %s asks to act as %s", g.client, authz)
		}
	}
	return nil
}

// wrap makes an RFC 4121 wrap token (integrity only) from the acceptor or
// the initiator.
func wrap(payload []byte, key types.EncryptionKey, acceptor bool) ([]byte, error) {
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, err
	}
	wt := gssapi.WrapToken{EC: uint16(et.GetHMACBitLength() / 8), Payload: payload}
	usage := uint32(keyusage.GSSAPI_INITIATOR_SEAL)
	if acceptor {
		wt.Flags, usage = 0x01, keyusage.GSSAPI_ACCEPTOR_SEAL
	}
	if err := wt.SetCheckSum(key, usage); err != nil {
		return nil, err
	}
	return wt.Marshal()
}

// unwrap checks a wrap token from the other side and returns its payload.
func unwrap(b []byte, key types.EncryptionKey, fromAcceptor bool) ([]byte, error) {
	var wt gssapi.WrapToken
	if err := wt.Unmarshal(b, fromAcceptor); err != nil {
		return nil, fmt.Errorf("not a GSS-API wrap token: %v", err)
	}
	usage := uint32(keyusage.GSSAPI_INITIATOR_SEAL)
	if fromAcceptor {
		usage = keyusage.GSSAPI_ACCEPTOR_SEAL
	}
	if ok, err := wt.Verify(key, usage); !ok || err != nil {
		return nil, fmt.Errorf("the wrap token's checksum does not verify: %v", err)
	}
	return wt.Payload, nil
}

// kerberosInitiate is the client's first GSSAPI token for the service
// protocol/host, and the key its wrap tokens use.
func kerberosInitiate(cl *krbclient.Client, protocol, host string) ([]byte, types.EncryptionKey, error) {
	spn := protocol + "/" + host
	tkt, key, err := cl.GetServiceTicket(spn)
	if err != nil {
		return nil, key, fmt.Errorf("a Kerberos ticket for %s: %v", spn, err)
	}
	t, err := spnego.NewKRB5TokenAPREQ(cl, tkt, key, []int{gssapi.ContextFlagInteg, gssapi.ContextFlagConf}, []int{})
	if err != nil {
		return nil, key, err
	}
	b, err := t.Marshal()
	return b, key, err
}

// kerberosRespond answers the server's layer offer: no security layer,
// acting as the authenticated principal.
func kerberosRespond(offer []byte, key types.EncryptionKey) ([]byte, error) {
	payload, err := unwrap(offer, key, true)
	if err != nil {
		return nil, err
	}
	if len(payload) != 4 || payload[0]&saslNoLayer == 0 {
		return nil, fmt.Errorf("the server offers security layers %#x, without \"none\"", payload)
	}
	return wrap([]byte{saslNoLayer, 0, 0, 0}, key, false)
}

// KeyAuthentication is Hadoop's switch between SIMPLE and Kerberos.
const KeyAuthentication = "hadoop.security.authentication"

// KerberosEnabled reads hadoop.security.authentication: simple (the
// default) or kerberos.
func KerberosEnabled(c *hadoopconf.Conf) (bool, error) {
	if _, set := c.Raw(KeyAuthentication); !set {
		return false, nil
	}
	v, err := c.String(KeyAuthentication)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "simple", "":
		return false, nil
	case "kerberos":
		return true, nil
	}
	return false, c.Errorf(KeyAuthentication, "%q: Loom takes simple or kerberos", v)
}

// ServerKerberos reads a daemon's Kerberos identity from its principal
// and keytab keys (yarn.resourcemanager.principal and .keytab, say), with
// _HOST as host; nil when hadoop.security.authentication is simple.
func ServerKerberos(c *hadoopconf.Conf, principalKey, keytabKey, host string) (*Kerberos, error) {
	on, err := KerberosEnabled(c)
	if err != nil || !on {
		return nil, err
	}
	princ, err := c.String(principalKey)
	if err != nil {
		return nil, err
	}
	if host == "" || host == "0.0.0.0" {
		if host, err = os.Hostname(); err != nil {
			return nil, err
		}
	}
	princ = strings.ReplaceAll(strings.TrimSpace(princ), "_HOST", strings.ToLower(host))
	name, realm, _ := strings.Cut(princ, "@")
	protocol, h, ok := strings.Cut(name, "/")
	if !ok || protocol == "" || h == "" || realm == "" {
		return nil, c.Errorf(principalKey, "%q: with %s=kerberos the daemon's principal is <service>/<host>@<REALM>", princ, KeyAuthentication)
	}
	path, err := c.String(keytabKey)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(path) == "" {
		return nil, c.Errorf(keytabKey, "no keytab for %s", princ)
	}
	kt, err := keytab.Load(path)
	if err != nil {
		return nil, c.Errorf(keytabKey, "%s: %v", path, err)
	}
	for _, e := range kt.Entries {
		if strings.Join(e.Principal.Components, "/") == name && e.Principal.Realm == realm {
			toLocal, err := AuthToLocalFromConf(c, realm)
			if err != nil {
				return nil, err
			}
			return &Kerberos{Keytab: kt, Protocol: protocol, Host: h, Realm: realm, ToLocal: toLocal}, nil
		}
	}
	return nil, c.Errorf(keytabKey, "%s holds no key for %s (%s)", path, princ, principalKey)
}

// KerberosLogin is a client's Kerberos login as kinit leaves it: the
// credential cache at $KRB5CCNAME (else /tmp/krb5cc_<uid>) and the
// configuration at $KRB5_CONFIG (else /etc/krb5.conf).
func KerberosLogin() (*krbclient.Client, error) {
	confPath := os.Getenv("KRB5_CONFIG")
	if confPath == "" {
		confPath = "/etc/krb5.conf"
	}
	conf, err := config.Load(confPath)
	if err != nil {
		return nil, fmt.Errorf("Kerberos configuration %s: %v", confPath, err)
	}
	cc := strings.TrimPrefix(os.Getenv("KRB5CCNAME"), "FILE:")
	if cc == "" {
		cc = fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
	}
	cache, err := credentials.LoadCCache(cc)
	if err != nil {
		return nil, fmt.Errorf("no Kerberos tickets in %s (run kinit): %v", cc, err)
	}
	return krbclient.NewFromCCache(cache, conf, krbclient.DisablePAFXFAST(true))
}

// KerberosKeytabLogin is a daemon's login from its keytab (a NodeManager's
// yarn.nodemanager.principal and .keytab), with the configuration at
// $KRB5_CONFIG (else /etc/krb5.conf).
func KerberosKeytabLogin(principal string, kt *keytab.Keytab) (*krbclient.Client, error) {
	confPath := os.Getenv("KRB5_CONFIG")
	if confPath == "" {
		confPath = "/etc/krb5.conf"
	}
	conf, err := config.Load(confPath)
	if err != nil {
		return nil, fmt.Errorf("Kerberos configuration %s: %v", confPath, err)
	}
	name, realm, _ := strings.Cut(principal, "@")
	cl := krbclient.NewWithKeytab(name, realm, kt, conf, krbclient.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		return nil, fmt.Errorf("Kerberos login as %s: %v", principal, err)
	}
	return cl, nil
}
