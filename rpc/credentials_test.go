package rpc

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc/hadooppb"
)

// Hadoop's WritableUtils.writeVLong, by hand.
func TestVLong(t *testing.T) {
	tests := []struct {
		v    int64
		want []byte
	}{
		{0, []byte{0}},
		{127, []byte{0x7f}},
		{-112, []byte{0x90}},
		{128, []byte{0x8f, 0x80}},                 // -113: one positive byte
		{300, []byte{0x8e, 0x01, 0x2c}},           // -114: two bytes
		{-113, []byte{0x87, 0x70}},                // -121: one negative byte, ^-113 = 112
		{1 << 40, []byte{0x8a, 1, 0, 0, 0, 0, 0}}, // -118: six bytes
	}
	for _, tc := range tests {
		got := appendVLong(nil, tc.v)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("appendVLong(%d) = % x, want % x", tc.v, got, tc.want)
		}
		v, n, err := readVLong(got)
		if err != nil || v != tc.v || n != len(got) {
			t.Errorf("readVLong(% x) = %d, %d, %v", got, v, n, err)
		}
	}
}

func TestCredentialsWritableBytes(t *testing.T) {
	c := &Credentials{}
	c.Add("a", &hadooppb.TokenProto{Identifier: []byte("id"), Password: []byte("pw"), Kind: proto.String("K"), Service: proto.String("S")})
	c.Secrets = append(c.Secrets, AliasedSecret{"s", []byte{9}})
	want := []byte("HDTS\x00\x01\x01a\x02id\x02pw\x01K\x01S\x01\x01s\x01\x09")
	if got := c.Marshal(); !bytes.Equal(got, want) {
		t.Fatalf("Marshal = %q, want %q", got, want)
	}
	back, err := ParseCredentials(want)
	if err != nil {
		t.Fatal(err)
	}
	if tok := back.Find("K"); tok == nil || string(tok.GetIdentifier()) != "id" || string(tok.GetPassword()) != "pw" || tok.GetService() != "S" ||
		len(back.Secrets) != 1 || back.Secrets[0].Alias != "s" {
		t.Fatalf("parsed back: %+v", back)
	}
	if back.Find("other") != nil {
		t.Error("found a kind that is not there")
	}
	// Adding under the same alias replaces.
	back.Add("a", &hadooppb.TokenProto{Kind: proto.String("K2")})
	if len(back.Tokens) != 1 || back.Find("K2") == nil {
		t.Errorf("after replacing: %+v", back.Tokens)
	}
}

func TestCredentialsProtobufFormat(t *testing.T) {
	p := &hadooppb.CredentialsProto{Tokens: []*hadooppb.CredentialsKVProto{{Alias: proto.String("svc"),
		Token: &hadooppb.TokenProto{Identifier: []byte("i"), Password: []byte("p"), Kind: proto.String(AMRMTokenKind), Service: proto.String("svc")}}}}
	body, _ := proto.Marshal(p)
	b := append([]byte("HDTS\x01"), protowire.AppendVarint(nil, uint64(len(body)))...)
	b = append(b, body...)
	c, err := ParseCredentials(b)
	if err != nil || c.Find(AMRMTokenKind).GetService() != "svc" {
		t.Fatalf("%+v %v", c, err)
	}
	path := filepath.Join(t.TempDir(), "container_tokens")
	os.WriteFile(path, c.Marshal(), 0o600)
	if f, err := ReadCredentialsFile(path); err != nil || string(f.Find(AMRMTokenKind).GetIdentifier()) != "i" {
		t.Fatalf("from the file: %+v %v", f, err)
	}
}

func TestDamagedCredentials(t *testing.T) {
	good := (&Credentials{Tokens: []AliasedToken{{"a", &hadooppb.TokenProto{Identifier: []byte("id"), Kind: proto.String("K")}}}}).Marshal()
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "no HDTS header"},
		{"not token storage", []byte("<configuration>"), "no HDTS header"},
		{"format 7", []byte("HDTS\x07"), "unknown token storage format 7"},
		{"truncated", good[:len(good)-3], "token kind of 1 bytes, 0 left"},
		{"trailing bytes", append(bytes.Clone(good), 0), "1 bytes after the last secret"},
		{"absurd count", []byte("HDTS\x00\x8c\x7f\xff\xff\xff"), "tokens"},
		{"negative length", []byte("HDTS\x00\x01\x87\x70"), "token alias of -113 bytes"},
		{"protobuf too short", []byte("HDTS\x01\x10ab"), "length is damaged"},
	}
	for _, tc := range tests {
		if _, err := ParseCredentials(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

func FuzzParseCredentials(f *testing.F) {
	c := &Credentials{}
	c.Add("127.0.0.1:8030", &hadooppb.TokenProto{Identifier: []byte{1, 2}, Password: []byte{3}, Kind: proto.String(AMRMTokenKind), Service: proto.String("x")})
	c.Secrets = []AliasedSecret{{"s", []byte("secret")}}
	f.Add(c.Marshal())
	f.Add([]byte("HDTS\x01\x00"))
	f.Add([]byte("HDTS\x00\x8f\x80"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCredentials(b)
		if err != nil {
			return
		}
		// What parses re-encodes to token storage that parses the same.
		again, err := ParseCredentials(c.Marshal())
		if err != nil {
			t.Fatalf("re-encoded %q does not parse: %v", c.Marshal(), err)
		}
		if len(again.Tokens) != len(c.Tokens) || len(again.Secrets) != len(c.Secrets) {
			t.Fatalf("%d tokens %d secrets became %d and %d", len(c.Tokens), len(c.Secrets), len(again.Tokens), len(again.Secrets))
		}
		for i, tok := range c.Tokens {
			if again.Tokens[i].Alias != tok.Alias || !bytes.Equal(again.Tokens[i].Token.GetIdentifier(), tok.Token.GetIdentifier()) ||
				again.Tokens[i].Token.GetKind() != tok.Token.GetKind() {
				t.Fatalf("token %d changed: %v → %v", i, tok, again.Tokens[i])
			}
		}
	})
}

// TestTokenURLString: a token survives its URL string; the form is
// Hadoop's (vint lengths, URL-safe base64 without padding), worked by
// hand for a small token; bad strings are errors.
func TestTokenURLString(t *testing.T) {
	tok := &hadooppb.TokenProto{Identifier: []byte{1, 2}, Password: []byte{0xff}, Kind: proto.String("K"), Service: proto.String("s:1")}
	// 02 01 02 | 01 ff | 01 'K' | 03 's' ':' '1'
	want := base64.RawURLEncoding.EncodeToString([]byte{2, 1, 2, 1, 0xff, 1, 'K', 3, 's', ':', '1'})
	if got := EncodeTokenURLString(tok); got != want {
		t.Errorf("encoded %q, want %q", got, want)
	}
	back, err := DecodeTokenURLString(want + "=")
	if err != nil || !proto.Equal(back, tok) {
		t.Errorf("decoded %v, %v", back, err)
	}
	for _, bad := range []string{"!!", base64.RawURLEncoding.EncodeToString([]byte{5, 1}), base64.RawURLEncoding.EncodeToString([]byte{0, 0, 0, 0, 9})} {
		if _, err := DecodeTokenURLString(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}
