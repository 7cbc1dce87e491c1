package nm

import (
	"bytes"
	"errors"
	"os"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
)

// A NodeManager proves it belongs to the cluster with the secret it shares
// with the RM (loom.cluster.secret, or better loom.cluster.secret-file, a
// file only the daemons' user reads): it authenticates its connection to
// the resource tracker with a node token, whose identifier names the node
// ("LoomNodeToken:host:port") and whose password is
// HMAC-SHA1(secret, identifier), over TOKEN auth (SASL DIGEST-MD5). The
// secret itself never crosses the wire. The RM's side is
// daemon/rm/server/nodeauth.go; a test in each package pins the same bytes.

const (
	keyClusterSecret     = "loom.cluster.secret"
	keyClusterSecretFile = "loom.cluster.secret-file"
)

// NodeTokenKind is the kind of a node token.
const NodeTokenKind = "LoomNodeToken"

const nodeTokenPrefix = NodeTokenKind + ":"

// minSecretLen is the shortest cluster secret taken, as on the RM.
const minSecretLen = 16

// NodeToken is the token node (host:port) authenticates to the RM's
// resource tracker with, under the cluster secret.
func NodeToken(secret []byte, node, service string) *hadooppb.TokenProto {
	id := []byte(nodeTokenPrefix + node)
	return &hadooppb.TokenProto{Identifier: id, Password: rpc.TokenPassword(secret, id),
		Kind: proto.String(NodeTokenKind), Service: proto.String(service)}
}

// loadClusterSecret reads loom.cluster.secret or the file
// loom.cluster.secret-file names (one of them), as the RM does. It
// returns the key it came from, and whether the secret was written into a
// config file: containers read the NM's config dir (HADOOP_CONF_DIR), so
// that would show the secret to every job.
func loadClusterSecret(c *hadoopconf.Conf) (secret []byte, key string, inConfFile bool, err error) {
	inline, err := c.String(keyClusterSecret)
	if err != nil {
		return nil, "", false, err
	}
	file, err := c.String(keyClusterSecretFile)
	if err != nil {
		return nil, "", false, err
	}
	inline, file = strings.TrimSpace(inline), strings.TrimSpace(file)
	key = keyClusterSecret
	switch {
	case inline != "" && file != "":
		return nil, "", false, c.Errorf(keyClusterSecretFile, "%s is set too: set one of them", keyClusterSecret)
	case file != "":
		key = keyClusterSecretFile
		st, err := os.Stat(file)
		if err != nil {
			return nil, "", false, c.Errorf(key, "%v", err)
		}
		if !st.Mode().IsRegular() {
			return nil, "", false, c.Errorf(key, "%s is not a regular file", file)
		}
		if perm := st.Mode().Perm(); perm&0o007 != 0 {
			return nil, "", false, c.Errorf(key, "%s is open to every user (mode %04o): it holds the cluster secret; chmod o-rwx it (600, or 640 for a daemons' group)", file, perm)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, "", false, c.Errorf(key, "%v", err)
		}
		if secret = bytes.TrimSpace(b); len(secret) == 0 {
			return nil, "", false, c.Errorf(key, "%s is empty", file)
		}
	case inline != "":
		secret = []byte(inline)
		src := c.Source(keyClusterSecret)
		inConfFile = src != "command line" && src != "default"
	default:
		return nil, "", false, nil
	}
	if len(secret) < minSecretLen {
		return nil, "", false, c.Errorf(key, "the cluster secret is %d bytes: use at least %d random ones (e.g. openssl rand -hex 32)", len(secret), minSecretLen)
	}
	return secret, key, inConfFile, nil
}

// nodeToken is this node's token, or nil without a cluster secret.
func (n *NodeManager) nodeToken() *hadooppb.TokenProto {
	if len(n.cfg.ClusterSecret) == 0 {
		return nil
	}
	return NodeToken(n.cfg.ClusterSecret, n.nodeKey, n.cfg.TrackerAddress)
}

// credentialsRefused says whether the RM refused this node's credentials
// (no node token, or one made with another secret), not the registration.
func credentialsRefused(err error) bool {
	var re *rpc.RemoteError
	if !errors.As(err, &re) {
		return false
	}
	switch re.Class {
	case rpc.ClassAccessControl, rpc.ClassSasl, rpc.ClassInvalidToken:
		return true
	}
	return false
}
