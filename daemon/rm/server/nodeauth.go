package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
)

// Nodes prove they belong to the cluster with a secret the RM and every
// NodeManager share (loom.cluster.secret, or better loom.cluster.secret-file).
// A NodeManager authenticates its resource-tracker connection with TOKEN
// auth (SASL DIGEST-MD5, as AMs do with AMRM tokens) using a node token:
// its identifier names the node, "LoomNodeToken:host:port", and its
// password is HMAC-SHA1(secret, identifier), as Hadoop's secret managers
// make passwords. The tracker then takes registerNodeManager,
// nodeHeartbeat and unRegisterNodeManager for a node only on a connection
// that authenticated with that node's token.
//
// Without a secret, nodes are not authenticated (anyone who reaches the
// tracker can register a node) and the RM says so loudly at start; still,
// a node's heartbeats and its unregistration are taken only from the RPC
// client that registered it (see callSession), so a stranger cannot end a
// node's containers with one anonymous call.

// The cluster-secret keys, read by the RM and by every NodeManager.
const (
	keyClusterSecret     = "loom.cluster.secret"
	keyClusterSecretFile = "loom.cluster.secret-file"
	keyNodeMaxMemory     = "loom.resourcemanager.node.maximum-memory-mb"
	keyNodeMaxVCores     = "loom.resourcemanager.node.maximum-vcores"
)

// minSecretLen is the shortest cluster secret taken: anyone who records one
// DIGEST-MD5 exchange can try guesses offline.
const minSecretLen = 16

// nodeTokenPrefix starts a node token's identifier; NodeManagers make the
// same (nm/nodeauth.go), and a test pins both to the same bytes.
const nodeTokenPrefix = "LoomNodeToken:"

func init() {
	Defaults[keyClusterSecret] = ""
	Defaults[keyClusterSecretFile] = ""
	// Above the largest single machines built (about 48 TB and 2,000
	// hardware threads), with room for vcores set above the thread
	// count; a node offering more is a mistake or a lie.
	Defaults[keyNodeMaxMemory] = "67108864" // 64 TB
	Defaults[keyNodeMaxVCores] = "8192"
}

// NodeAuth is how the RM tells its NodeManagers from strangers on the
// resource tracker, and the largest node it believes.
type NodeAuth struct {
	// Secret is the cluster secret; nil when none is set (nodes are then
	// not authenticated).
	Secret []byte
	// SecretKey is the key it came from, for messages.
	SecretKey string
	// MaxNode is the most one node may offer (memory-mb and vcores;
	// loom.resourcemanager.node.maximum-*). A node offering more is told
	// to shut down.
	MaxNode fairness.Vector
}

// loadNodeAuth reads the cluster secret and the node limits.
func loadNodeAuth(c *hadoopconf.Conf) (NodeAuth, error) {
	var a NodeAuth
	var err error
	if a.Secret, a.SecretKey, err = loadClusterSecret(c); err != nil {
		return a, err
	}
	for _, k := range []struct {
		key  string
		kind fairness.Kind
	}{{keyNodeMaxMemory, fairness.Memory}, {keyNodeMaxVCores, fairness.VCores}} {
		v, err := c.Int(k.key)
		if err != nil {
			return a, err
		}
		if v < 1 {
			return a, c.Errorf(k.key, "%d must be positive", v)
		}
		a.MaxNode[k.kind] = float64(v)
	}
	return a, nil
}

// loadClusterSecret reads loom.cluster.secret or the file
// loom.cluster.secret-file names (one of them). The file must not be
// open to every user. Surrounding white space is not part of the secret.
func loadClusterSecret(c *hadoopconf.Conf) ([]byte, string, error) {
	inline, err := c.String(keyClusterSecret)
	if err != nil {
		return nil, "", err
	}
	file, err := c.String(keyClusterSecretFile)
	if err != nil {
		return nil, "", err
	}
	inline, file = strings.TrimSpace(inline), strings.TrimSpace(file)
	var secret []byte
	key := keyClusterSecret
	switch {
	case inline != "" && file != "":
		return nil, "", c.Errorf(keyClusterSecretFile, "%s is set too: set one of them", keyClusterSecret)
	case file != "":
		key = keyClusterSecretFile
		st, err := os.Stat(file)
		if err != nil {
			return nil, "", c.Errorf(key, "%v", err)
		}
		if !st.Mode().IsRegular() {
			return nil, "", c.Errorf(key, "%s is not a regular file", file)
		}
		if perm := st.Mode().Perm(); perm&0o007 != 0 {
			return nil, "", c.Errorf(key, "%s is open to every user (mode %04o): it holds the cluster secret; chmod o-rwx it (600, or 640 for a daemons' group)", file, perm)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, "", c.Errorf(key, "%v", err)
		}
		if secret = bytes.TrimSpace(b); len(secret) == 0 {
			return nil, "", c.Errorf(key, "%s is empty", file)
		}
	case inline != "":
		secret = []byte(inline)
	default:
		return nil, "", nil
	}
	if len(secret) < minSecretLen {
		return nil, "", c.Errorf(key, "the cluster secret is %d bytes: use at least %d random ones (e.g. openssl rand -hex 32)", len(secret), minSecretLen)
	}
	return secret, key, nil
}

// nodeTokenIdentifier is the identifier of node key's token.
func nodeTokenIdentifier(key string) []byte { return []byte(nodeTokenPrefix + key) }

// parseNodeTokenIdentifier returns the node (host:port) a node token
// names.
func parseNodeTokenIdentifier(b []byte) (string, error) {
	rest, ok := bytes.CutPrefix(b, []byte(nodeTokenPrefix))
	if !ok {
		return "", fmt.Errorf("not a Loom node token (its identifier does not start %q)", nodeTokenPrefix)
	}
	host, port, err := net.SplitHostPort(string(rest))
	if p, perr := strconv.Atoi(port); err != nil || perr != nil || host == "" || p <= 0 || p > 65535 {
		return "", fmt.Errorf("the node token names %q, not a node host:port", rest)
	}
	return string(rest), nil
}

// nodeSecrets checks node tokens on the tracker port: any node's token
// made with the cluster secret opens a connection, as that node.
type nodeSecrets struct{ secret []byte }

func (s nodeSecrets) RetrievePassword(identifier []byte) ([]byte, string, error) {
	node, err := parseNodeTokenIdentifier(identifier)
	if err != nil {
		return nil, "", err
	}
	return rpc.TokenPassword(s.secret, identifier), node, nil
}

// trackerSecrets is the secret manager of the tracker port: node tokens
// with a cluster secret, none without (then it warns that nodes are not
// authenticated).
func (r *RM) trackerSecrets() rpc.SecretManager {
	a := r.cfg.NodeAuth
	if len(a.Secret) == 0 {
		r.log.Warn().Str("tracker", r.cfg.TrackerAddr).
			Msg("NODEMANAGERS ARE NOT AUTHENTICATED: neither loom.cluster.secret nor loom.cluster.secret-file is set, " +
				"so anyone who reaches the resource tracker (yarn.resourcemanager.resource-tracker.address) can register a node, " +
				"or register a real node again and end its containers. Set the same cluster secret on the RM and every NodeManager " +
				"(README, Security: nodes)")
		return nil
	}
	r.log.Info().Str("from", a.SecretKey).Msg("NodeManagers authenticate with the cluster secret (node tokens, SASL DIGEST-MD5)")
	return nodeSecrets{a.Secret}
}

// checkNodeCaller refuses a tracker call for node key unless, with a
// cluster secret set, the call's connection authenticated with key's
// node token.
func (r *RM) checkNodeCaller(ctx context.Context, method, key string) error {
	ci, ok := rpc.CallFromContext(ctx)
	if ok && ci.Principal != "" {
		// Kerberos: a NodeManager's principal names its host
		// (nm/<host>), which must be the node's.
		_, host, _ := strings.Cut(ci.Principal, "/")
		nodeHost, _, _ := net.SplitHostPort(key)
		if !strings.EqualFold(host, nodeHost) {
			r.log.Warn().Str("node", key).Str("method", method).Str("principal", ci.Principal).Msg("refused a node call from another host's principal")
			return rpc.Errorf(rpc.ClassAccessControl,
				"%s for node %s is refused: the connection authenticated with Kerberos as %s, whose host is not the node's", method, key, ci.Principal)
		}
		return nil
	}
	if len(r.cfg.NodeAuth.Secret) == 0 {
		return nil
	}
	if !ok || ci.Token == nil {
		user, from := "", ""
		if ok {
			user, from = ci.User, addrString(ci.Remote)
		}
		r.log.Warn().Str("node", key).Str("method", method).Str("from", from).Msg("refused a node call without a node token")
		return rpc.Errorf(rpc.ClassAccessControl,
			"%s for node %s is refused: the connection is not authenticated (SIMPLE auth as %q). This ResourceManager takes node calls only from NodeManagers "+
				"that hold the cluster secret (%s or %s) and authenticate with their node token (TOKEN auth, SASL DIGEST-MD5)",
			method, key, user, keyClusterSecret, keyClusterSecretFile)
	}
	node, err := parseNodeTokenIdentifier(ci.Token)
	if err != nil {
		return rpc.Errorf(rpc.ClassAccessControl, "%s for node %s is refused: the connection's token: %v", method, key, err)
	}
	if node != key {
		r.log.Warn().Str("node", key).Str("method", method).Str("session", node).Str("from", addrString(ci.Remote)).
			Msg("refused a node call on another node's session")
		return rpc.Errorf(rpc.ClassAccessControl,
			"%s for node %s is refused: the connection authenticated as node %s, and a NodeManager may register, heartbeat and unregister only its own node",
			method, key, node)
	}
	return nil
}

// callSession names the RPC client a call comes from: its client id (16
// random bytes, the same on every connection the client makes) and its
// IP address; or, for a client that sends no id, the connection. Without
// a cluster secret, a node's heartbeats and unregistration are taken
// only from the session that registered it.
func callSession(ctx context.Context) string {
	ci, ok := rpc.CallFromContext(ctx)
	if !ok {
		return ""
	}
	remote := addrString(ci.Remote)
	if len(ci.ClientID) == 0 {
		return "conn " + remote
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	return hex.EncodeToString(ci.ClientID) + "@" + host
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// tooLarge says why a node offering capacity is refused, or "" when it is
// not larger than loom.resourcemanager.node.maximum-*.
func (r *RM) tooLarge(key string, capacity fairness.Vector) string {
	max := r.cfg.NodeAuth.MaxNode
	for _, k := range []struct {
		kind      fairness.Kind
		what, key string
	}{{fairness.Memory, "MB of memory", keyNodeMaxMemory}, {fairness.VCores, "vcores", keyNodeMaxVCores}} {
		if max[k.kind] > 0 && capacity[k.kind] > max[k.kind] {
			return fmt.Sprintf("NodeManager from %s offers %.0f %s, more than one node may offer (%s = %.0f): no machine is that large. "+
				"Fix the node's yarn.nodemanager.resource.memory-mb / cpu-vcores, or raise %s on the ResourceManager if it really is",
				key, capacity[k.kind], k.what, k.key, max[k.kind], k.key)
		}
	}
	return ""
}
