package rpc

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc/hadooppb"
)

// Credentials are Hadoop's token storage: the tokens and secrets a
// process holds. YARN hands them to a container as the
// ContainerLaunchContext's tokens; the NM writes them to the file named
// by HADOOP_TOKEN_FILE_LOCATION, where a Java AM's UserGroupInformation
// finds its AMRM token.
type Credentials struct {
	Tokens  []AliasedToken
	Secrets []AliasedSecret
}

// AliasedToken is a token under its alias (YARN uses the token's service).
type AliasedToken struct {
	Alias string
	Token *hadooppb.TokenProto
}

// AliasedSecret is a secret key under its alias.
type AliasedSecret struct {
	Alias  string
	Secret []byte
}

// The token storage header: "HDTS" and a format byte, 0 for Hadoop's
// Writable encoding (what Credentials.writeTokenStorageToStream writes by
// default) and 1 for a delimited CredentialsProto (Hadoop 3's other
// format).
var credentialsMagic = []byte("HDTS")

const (
	credentialsWritable = 0
	credentialsProtobuf = 1
	// maxCredentialEntries bounds what a parser accepts, so that a
	// damaged count cannot make it allocate without end.
	maxCredentialEntries = 1 << 16
)

// AMRMTokenKind is the kind of the token an AM authenticates to the
// scheduler with.
const AMRMTokenKind = "YARN_AM_RM_TOKEN"

// EnvTokenFile is where a container finds its credentials.
const EnvTokenFile = "HADOOP_TOKEN_FILE_LOCATION"

// Add puts a token under alias, replacing one already there.
func (c *Credentials) Add(alias string, t *hadooppb.TokenProto) {
	for i := range c.Tokens {
		if c.Tokens[i].Alias == alias {
			c.Tokens[i].Token = t
			return
		}
	}
	c.Tokens = append(c.Tokens, AliasedToken{alias, t})
}

// Find returns the first token of the given kind, nil if none.
func (c *Credentials) Find(kind string) *hadooppb.TokenProto {
	for _, t := range c.Tokens {
		if t.Token.GetKind() == kind {
			return t.Token
		}
	}
	return nil
}

// Marshal encodes the credentials in Hadoop's Writable token storage
// format, which every Hadoop version reads.
func (c *Credentials) Marshal() []byte {
	b := append([]byte(nil), credentialsMagic...)
	b = append(b, credentialsWritable)
	b = appendVLong(b, int64(len(c.Tokens)))
	for _, t := range c.Tokens {
		b = appendText(b, []byte(t.Alias))
		b = appendText(b, t.Token.GetIdentifier())
		b = appendText(b, t.Token.GetPassword())
		b = appendText(b, []byte(t.Token.GetKind()))
		b = appendText(b, []byte(t.Token.GetService()))
	}
	b = appendVLong(b, int64(len(c.Secrets)))
	for _, s := range c.Secrets {
		b = appendText(b, []byte(s.Alias))
		b = appendText(b, s.Secret)
	}
	return b
}

// ParseCredentials decodes token storage in either of Hadoop's formats.
// Damaged input gets an error saying where it broke.
func ParseCredentials(b []byte) (*Credentials, error) {
	if len(b) < len(credentialsMagic)+1 || !bytes.Equal(b[:len(credentialsMagic)], credentialsMagic) {
		return nil, errors.New("credentials: not Hadoop token storage (no HDTS header)")
	}
	format, rest := b[len(credentialsMagic)], b[len(credentialsMagic)+1:]
	switch format {
	case credentialsWritable:
		return parseWritableCredentials(rest)
	case credentialsProtobuf:
		n, w := protowire.ConsumeVarint(rest)
		if w < 0 || n > uint64(len(rest)-w) {
			return nil, errors.New("credentials: the CredentialsProto's length is damaged")
		}
		var p hadooppb.CredentialsProto
		if err := proto.Unmarshal(rest[w:w+int(n)], &p); err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		c := &Credentials{}
		for _, kv := range p.GetTokens() {
			if kv.GetToken() == nil {
				return nil, fmt.Errorf("credentials: token %q has no token", kv.GetAlias())
			}
			c.Tokens = append(c.Tokens, AliasedToken{kv.GetAlias(), kv.GetToken()})
		}
		for _, kv := range p.GetSecrets() {
			c.Secrets = append(c.Secrets, AliasedSecret{kv.GetAlias(), kv.GetSecret()})
		}
		return c, nil
	default:
		return nil, fmt.Errorf("credentials: unknown token storage format %d (want 0 or 1)", format)
	}
}

func parseWritableCredentials(b []byte) (*Credentials, error) {
	r := &writableReader{b: b}
	c := &Credentials{}
	n := r.count("tokens")
	for i := 0; i < n && r.err == nil; i++ {
		alias := r.text("token alias")
		t := &hadooppb.TokenProto{Identifier: r.text("token identifier"), Password: r.text("token password")}
		t.Kind = proto.String(string(r.text("token kind")))
		t.Service = proto.String(string(r.text("token service")))
		if r.err == nil {
			c.Tokens = append(c.Tokens, AliasedToken{string(alias), t})
		}
	}
	n = r.count("secrets")
	for i := 0; i < n && r.err == nil; i++ {
		alias := r.text("secret alias")
		secret := r.text("secret")
		if r.err == nil {
			c.Secrets = append(c.Secrets, AliasedSecret{string(alias), secret})
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) > 0 {
		return nil, fmt.Errorf("credentials: %d bytes after the last secret", len(r.b))
	}
	return c, nil
}

// ReadCredentialsFile reads a token file (HADOOP_TOKEN_FILE_LOCATION).
func ReadCredentialsFile(path string) (*Credentials, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseCredentials(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// writableReader reads Hadoop Writables, keeping the first error.
type writableReader struct {
	b   []byte
	err error
}

func (r *writableReader) vlong(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n, err := readVLong(r.b)
	if err != nil {
		r.err = fmt.Errorf("credentials: %s: %w", what, err)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *writableReader) count(what string) int {
	n := r.vlong("the number of " + what)
	if r.err == nil && (n < 0 || n > maxCredentialEntries) {
		r.err = fmt.Errorf("credentials: %d %s", n, what)
	}
	return int(n)
}

func (r *writableReader) text(what string) []byte {
	n := r.vlong(what + "'s length")
	if r.err != nil {
		return nil
	}
	if n < 0 || n > int64(len(r.b)) {
		r.err = fmt.Errorf("credentials: %s of %d bytes, %d left", what, n, len(r.b))
		return nil
	}
	v := bytes.Clone(r.b[:n])
	r.b = r.b[n:]
	return v
}

func appendText(b, s []byte) []byte {
	return append(appendVLong(b, int64(len(s))), s...)
}

// appendVLong encodes v as Hadoop's WritableUtils.writeVLong does: one
// byte for -112..127, else a byte giving sign and length, then the
// value's big-endian bytes.
func appendVLong(b []byte, v int64) []byte {
	if v >= -112 && v <= 127 {
		return append(b, byte(v))
	}
	first := int64(-112)
	if v < 0 {
		v = ^v
		first = -120
	}
	n := 0
	for t := v; t != 0; t >>= 8 {
		n++
	}
	b = append(b, byte(first-int64(n)))
	var be [8]byte
	binary.BigEndian.PutUint64(be[:], uint64(v))
	return append(b, be[8-n:]...)
}

// readVLong decodes appendVLong's encoding.
func readVLong(b []byte) (int64, int, error) {
	if len(b) == 0 {
		return 0, 0, errors.New("truncated")
	}
	first := int8(b[0])
	if first >= -112 {
		return int64(first), 1, nil
	}
	neg := first < -120
	n := int(-112 - int(first))
	if neg {
		n = int(-120 - int(first))
	}
	if len(b) < 1+n {
		return 0, 0, errors.New("truncated")
	}
	var v uint64
	for _, c := range b[1 : 1+n] {
		v = v<<8 | uint64(c)
	}
	if neg {
		return ^int64(v), 1 + n, nil
	}
	return int64(v), 1 + n, nil
}

// EncodeTokenURLString writes a token as Hadoop's
// Token.encodeToUrlString does: its Writable form (identifier, password,
// kind, service, each with its length) in URL-safe base64 without
// padding. It is how REST clients carry delegation tokens.
func EncodeTokenURLString(t *hadooppb.TokenProto) string {
	var b []byte
	b = appendText(b, t.GetIdentifier())
	b = appendText(b, t.GetPassword())
	b = appendText(b, []byte(t.GetKind()))
	b = appendText(b, []byte(t.GetService()))
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeTokenURLString reads EncodeTokenURLString's form (padded or not,
// URL-safe or standard base64, as Hadoop's decoder takes either).
func DecodeTokenURLString(s string) (*hadooppb.TokenProto, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	s = strings.NewReplacer("+", "-", "/", "_").Replace(s)
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("token: not base64: %v", err)
	}
	r := &writableReader{b: b}
	t := &hadooppb.TokenProto{Identifier: r.text("token identifier"), Password: r.text("token password")}
	t.Kind = proto.String(string(r.text("token kind")))
	t.Service = proto.String(string(r.text("token service")))
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) > 0 {
		return nil, fmt.Errorf("token: %d bytes after the service", len(r.b))
	}
	return t, nil
}
