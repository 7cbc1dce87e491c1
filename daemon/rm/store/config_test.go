package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rs/zerolog"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// TestOpenNamesTheKey: every setting Open refuses is a *ConfigError with
// the key to fix.
func TestOpenNamesTheKey(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		key  string
	}{
		{"unknown kind", Config{Kind: "leveldb"}, KeyKind},
		{"local without a dir", Config{Kind: KindLocal}, KeyDir},
		{"default kind without a dir", Config{}, KeyDir},
		{"zookeeper without an address", Config{Kind: KindZooKeeper}, KeyZKAddress},
		{"zookeeper address without a port", Config{Kind: KindZooKeeper, ZKAddresses: []string{"zk1"}}, KeyZKAddress},
		{"zookeeper root not absolute", Config{Kind: KindZooKeeper, ZKAddresses: []string{"zk1:2181"}, ZKRoot: "rmstore"}, KeyZKRoot},
		{"zookeeper root in /zookeeper", Config{Kind: KindZooKeeper, ZKAddresses: []string{"zk1:2181"}, ZKRoot: "/zookeeper/x"}, KeyZKRoot},
		{"zookeeper ACL without perms", Config{Kind: KindZooKeeper, ZKAddresses: []string{"zk1:2181"}, ZKACL: "world:anyone"}, KeyZKACL},
		{"zookeeper ACL bad perm", Config{Kind: KindZooKeeper, ZKAddresses: []string{"zk1:2181"}, ZKACL: "world:anyone:rwx"}, KeyZKACL},
		{"zookeeper auth without scheme", Config{Kind: KindZooKeeper, ZKAddresses: []string{"zk1:2181"}, ZKAuth: "secret"}, KeyZKAuth},
		{"hdfs without a URI", Config{Kind: KindHDFS}, KeyHDFSURI},
		{"hdfs URI of another scheme", Config{Kind: KindHDFS, HDFSURI: "s3a://bucket/rmstore"}, KeyHDFSURI},
		{"hdfs URI without a host", Config{Kind: KindHDFS, HDFSURI: "hdfs:///rmstore"}, KeyHDFSURI},
		{"file URI with a relative path", Config{Kind: KindHDFS, HDFSURI: "file:rmstore"}, KeyHDFSURI},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(c.cfg)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != c.key {
				t.Errorf("got %v, want a ConfigError for %s", err, c.key)
			}
			if !strings.HasPrefix(err.Error(), c.key+": ") {
				t.Errorf("%q does not start with the key", err)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	ignoreLog := cmpopts.IgnoreTypes(zerolog.Logger{})
	for _, c := range []struct {
		name string
		set  map[string]string
		want Config
	}{
		{"defaults", nil, Config{Kind: KindLocal, Dir: DefaultDir}},
		{"local", map[string]string{KeyDir: "/var/lib/loom/rm"}, Config{Kind: KindLocal, Dir: "/var/lib/loom/rm"}},
		{"zookeeper from Hadoop's keys", map[string]string{
			KeyKind:            KindZooKeeper,
			KeyHadoopZKAddress: "zk1:2181, zk2:2181",
			KeyHadoopZKTimeout: "15000",
			KeyHadoopZKACL:     "sasl:rm:cdrwa",
			KeyHadoopZKAuth:    "digest:rm:pw",
		}, Config{Kind: KindZooKeeper, Dir: DefaultDir, ZKAddresses: []string{"zk1:2181", "zk2:2181"},
			ZKACL: "sasl:rm:cdrwa", ZKAuth: "digest:rm:pw", Timeout: 15 * time.Second}},
		{"Loom's keys win over Hadoop's", map[string]string{
			KeyKind:            KindZooKeeper,
			KeyZKAddress:       "zk9:2181",
			KeyHadoopZKAddress: "zk1:2181",
			KeyTimeout:         "3000",
			KeyHadoopZKTimeout: "15000",
			KeyZKRoot:          "/loom/rmstore",
			KeyZKMaxBuffer:     "4194304",
		}, Config{Kind: KindZooKeeper, Dir: DefaultDir, ZKAddresses: []string{"zk9:2181"}, ZKRoot: "/loom/rmstore",
			ZKMaxBuffer: 4 << 20, Timeout: 3 * time.Second}},
		{"hdfs", map[string]string{KeyKind: KindHDFS, KeyHDFSURI: "hdfs://nn:8020/loom/rmstore", KeyHDFSUser: "yarn"},
			Config{Kind: KindHDFS, Dir: DefaultDir, HDFSURI: "hdfs://nn:8020/loom/rmstore", HDFSUser: "yarn"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			conf := hadoopconf.New(nil)
			for k, v := range c.set {
				conf.Set(k, v)
			}
			got, err := LoadConfig(conf)
			check(t, "load", err)
			if d := cmp.Diff(c.want, got, ignoreLog); d != "" {
				t.Errorf("config (-want +got):\n%s", d)
			}
		})
	}
}

// TestLoadConfigErrors: a bad value is refused naming its key, Hadoop's
// if that is where it came from.
func TestLoadConfigErrors(t *testing.T) {
	for _, c := range []struct {
		set map[string]string
		key string
	}{
		{map[string]string{KeyKind: "mysql"}, KeyKind},
		{map[string]string{KeyHadoopZKAddress: "zk1"}, KeyHadoopZKAddress},
		{map[string]string{KeyZKAddress: "zk1:99999"}, KeyZKAddress},
		{map[string]string{KeyZKRoot: "/a//b"}, KeyZKRoot},
		{map[string]string{KeyHadoopZKACL: "world:anyone:q"}, KeyHadoopZKACL},
		{map[string]string{KeyZKAuth: "nocolon"}, KeyZKAuth},
		{map[string]string{KeyZKMaxBuffer: "12"}, KeyZKMaxBuffer},
		{map[string]string{KeyHadoopZKTimeout: "0"}, KeyHadoopZKTimeout},
		{map[string]string{KeyTimeout: "soon"}, KeyTimeout},
		{map[string]string{KeyHDFSURI: "ftp://x/y"}, KeyHDFSURI},
	} {
		conf := hadoopconf.New(nil)
		for k, v := range c.set {
			conf.Set(k, v)
		}
		_, err := LoadConfig(conf)
		var he *hadoopconf.Error
		if !errors.As(err, &he) || he.Key != c.key {
			t.Errorf("%v: got %v, want an error for %s", c.set, err, c.key)
		}
	}
}

// TestAuthErrorHidesTheSecret: a credential that does not parse must not
// end up in the RM's log through the error.
func TestAuthErrorHidesTheSecret(t *testing.T) {
	_, err := parseAuth("digest-user-and-password-without-scheme")
	if err == nil || strings.Contains(err.Error(), "password-without") {
		t.Errorf("got %v", err)
	}
}

func TestParseACL(t *testing.T) {
	got, err := parseACL("world:anyone:r, digest:rm:abc/def=:rwcda,ip:10.0.0.1:cd")
	check(t, "parse", err)
	want := []struct {
		perms      int32
		scheme, id string
	}{{1, "world", "anyone"}, {31, "digest", "rm:abc/def="}, {12, "ip", "10.0.0.1"}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i, w := range want {
		if got[i].Perms != w.perms || got[i].Scheme != w.scheme || got[i].ID != w.id {
			t.Errorf("entry %d: got %+v, want %+v", i, got[i], w)
		}
	}
}
