package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// The store's configuration keys. Where Hadoop has a key for the same
// setting (hadoop.zk.*, which YARN's ZKRMStateStore reads), Loom's key
// wins and Hadoop's is the fallback, so an existing core-site.xml works.
const (
	// KeyKind picks the backend: local (the default), zookeeper or hdfs.
	KeyKind = "loom.store.kind"
	// KeyDir is the local store's directory; the file is rmstate.db in it.
	KeyDir = "loom.store.dir"
	// KeyZKAddress lists ZooKeeper servers, host:port[,host:port...].
	KeyZKAddress       = "loom.store.zk-address"
	KeyHadoopZKAddress = "hadoop.zk.address"
	// KeyZKRoot is the znode the store lives under.
	KeyZKRoot = "loom.store.zk-root"
	// KeyZKACL is the ACL of the znodes the store creates, as Hadoop
	// writes it: scheme:id:perms[,...], perms from rwcda; @file reads it
	// from a file.
	KeyZKACL       = "loom.store.zk-acl"
	KeyHadoopZKACL = "hadoop.zk.acl"
	// KeyZKAuth is the credentials the session adds, scheme:auth[,...]
	// (e.g. digest:user:password); @file reads them from a file.
	KeyZKAuth       = "loom.store.zk-auth"
	KeyHadoopZKAuth = "hadoop.zk.auth"
	// KeyZKMaxBuffer is the servers' jute.maxbuffer: no request may be
	// larger, so no record may come near it.
	KeyZKMaxBuffer = "loom.store.zk-jute-maxbuffer"
	// KeyTimeout bounds every call to ZooKeeper or HDFS, retries included;
	// for ZooKeeper it is also the session timeout.
	KeyTimeout         = "loom.store.timeout-ms"
	KeyHadoopZKTimeout = "hadoop.zk.timeout-ms"
	// KeyHDFSURI is hdfs://namenode:port/dir (or file:///dir, as YARN's
	// fs.state-store.uri allows).
	KeyHDFSURI = "loom.store.hdfs-uri"
	// KeyHDFSUser is the user the HDFS store acts as; by default
	// $HADOOP_USER_NAME, else the RM's own user.
	KeyHDFSUser = "loom.store.hdfs-user"
)

// The kinds of store.
const (
	KindLocal     = "local"
	KindZooKeeper = "zookeeper"
	KindHDFS      = "hdfs"
)

// Defaults for the keys without a Hadoop fallback.
const (
	DefaultDir       = "/tmp/loom/rmstore"
	DefaultZKACL     = "world:anyone:rwcda"
	DefaultTimeout   = 10 * time.Second
	DefaultMaxBuffer = 0xfffff // ZooKeeper's own default jute.maxbuffer
	defaultHDFSPort  = "8020"
)

// Config says which store to open and how.
type Config struct {
	// Kind is KindLocal (also when empty), KindZooKeeper or KindHDFS.
	Kind string

	// Dir is the local store's directory.
	Dir string
	// LockTimeout bounds the wait for the local file's lock
	// (DefaultLockTimeout if zero).
	LockTimeout time.Duration

	// ZKAddresses are ZooKeeper's servers, host:port each.
	ZKAddresses []string
	// ZKRoot is the store's znode (DefaultZKRoot if empty).
	ZKRoot string
	// ZKACL is the created znodes' ACL in Hadoop's form
	// (DefaultZKACL if empty).
	ZKACL string
	// ZKAuth is the session's credentials in Hadoop's form, if any.
	ZKAuth string
	// ZKMaxBuffer is the servers' jute.maxbuffer (DefaultMaxBuffer if 0).
	ZKMaxBuffer int

	// HDFSURI is hdfs://host:port/dir or file:///dir.
	HDFSURI string
	// HDFSUser is the HDFS user (see KeyHDFSUser).
	HDFSUser string

	// Timeout bounds each remote call, retries included
	// (DefaultTimeout if zero).
	Timeout time.Duration

	// Log gets the store's connection events; the zero Logger drops them.
	Log zerolog.Logger
}

// ConfigError is a setting Open refuses, naming its key.
type ConfigError struct {
	Key, Reason string
}

func (e *ConfigError) Error() string { return e.Key + ": " + e.Reason }

func configErrorf(key, format string, args ...any) error {
	return &ConfigError{Key: key, Reason: fmt.Sprintf(format, args...)}
}

// Open opens the store cfg names. Settings that are missing or wrong are
// *ConfigError naming the key; a backend that cannot be reached is an
// error within cfg.Timeout.
func Open(cfg Config) (Store, error) {
	switch cfg.Kind {
	case "", KindLocal:
		if cfg.Dir == "" {
			return nil, configErrorf(KeyDir, "not set: the local store needs a directory")
		}
		return OpenLocal(cfg.Dir, cfg.LockTimeout)
	case KindZooKeeper:
		return OpenZooKeeper(cfg)
	case KindHDFS:
		return OpenHDFS(cfg)
	}
	return nil, configErrorf(KeyKind, "%q is not a store kind (%s, %s or %s)", cfg.Kind, KindLocal, KindZooKeeper, KindHDFS)
}

func (cfg Config) timeout() time.Duration {
	if cfg.Timeout > 0 {
		return cfg.Timeout
	}
	return DefaultTimeout
}

// LoadConfig reads the store's keys. A key left unset takes its Hadoop
// fallback, then its default. Errors name the key and where it was set.
func LoadConfig(c *hadoopconf.Conf) (Config, error) {
	var cfg Config
	var err error
	var key string
	if cfg.Kind, key, err = confValue(c, KeyKind); err != nil {
		return cfg, err
	}
	switch cfg.Kind {
	case "":
		cfg.Kind = KindLocal
	case KindLocal, KindZooKeeper, KindHDFS:
	default:
		return cfg, c.Errorf(key, "%q is not a store kind (%s, %s or %s)", cfg.Kind, KindLocal, KindZooKeeper, KindHDFS)
	}
	if cfg.Dir, _, err = confValue(c, KeyDir); err != nil {
		return cfg, err
	}
	if cfg.Dir == "" {
		cfg.Dir = DefaultDir
	}
	for _, k := range []string{KeyTimeout, KeyHadoopZKTimeout} {
		if _, ok := c.Raw(k); ok {
			if cfg.Timeout, err = c.PositiveMillis(k); err != nil {
				return cfg, err
			}
			break
		}
	}
	if err := loadZKConfig(c, &cfg); err != nil {
		return cfg, err
	}
	if err := loadHDFSConfig(c, &cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// confValue returns the value of the first of keys that is set, and
// that key (the first if none is).
func confValue(c *hadoopconf.Conf, keys ...string) (value, key string, err error) {
	for _, k := range keys {
		if _, ok := c.Raw(k); ok {
			v, err := c.String(k)
			return strings.TrimSpace(v), k, err
		}
	}
	return "", keys[0], nil
}
