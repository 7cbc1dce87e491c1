package nm

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

const testSecret = "0123456789abcdef-nm-test-secret"

// authStub is a resource tracker that, as the RM with a cluster secret
// does, takes TOKEN auth with node tokens and records which token each
// call came with ("" for none).
type authStub struct {
	addr string
	mu   sync.Mutex
	// calls are "method token" lines.
	calls []string
}

func (s *authStub) RetrievePassword(id []byte) ([]byte, string, error) {
	node, ok := bytes.CutPrefix(id, []byte("LoomNodeToken:"))
	if !ok {
		return nil, "", fmt.Errorf("not a node token")
	}
	return rpc.TokenPassword([]byte(testSecret), id), string(node), nil
}

func (s *authStub) record(ctx context.Context, method string) error {
	ci, _ := rpc.CallFromContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, method+" "+string(ci.Token))
	if ci.Token == nil {
		return rpc.Errorf(rpc.ClassAccessControl, "%s is refused: the connection is not authenticated", method)
	}
	return nil
}

func (s *authStub) RegisterNodeManager(ctx context.Context, req *pb.RegisterNodeManagerRequestProto) (*pb.RegisterNodeManagerResponseProto, error) {
	if err := s.record(ctx, "register"); err != nil {
		return nil, err
	}
	return &pb.RegisterNodeManagerResponseProto{NodeAction: pb.NodeActionProto_NORMAL.Enum(), RmIdentifier: proto.Int64(1),
		ContainerTokenMasterKey: testMasterKey, NmTokenMasterKey: testMasterKey}, nil
}

func (s *authStub) NodeHeartbeat(ctx context.Context, req *pb.NodeHeartbeatRequestProto) (*pb.NodeHeartbeatResponseProto, error) {
	if err := s.record(ctx, "heartbeat"); err != nil {
		return nil, err
	}
	return &pb.NodeHeartbeatResponseProto{NodeAction: pb.NodeActionProto_NORMAL.Enum(), NextHeartBeatInterval: proto.Int64(50),
		ResponseId: proto.Int32(req.GetNodeStatus().GetResponseId() + 1)}, nil
}

func (s *authStub) UnRegisterNodeManager(ctx context.Context, req *pb.UnRegisterNodeManagerRequestProto) (*pb.UnRegisterNodeManagerResponseProto, error) {
	if err := s.record(ctx, "unregister"); err != nil {
		return nil, err
	}
	return &pb.UnRegisterNodeManagerResponseProto{}, nil
}

func (s *authStub) calledWith() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func newAuthStub(t *testing.T) *authStub {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &authStub{addr: ln.Addr().String()}
	srv := rpc.NewServer(rpc.ServerOptions{Secrets: s})
	srv.Register(rpc.ResourceTrackerService(s))
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// The node token's bytes are a contract with the RM
// (daemon/rm/server/nodeauth_test.go pins the same).
func TestNodeTokenBytesArePinned(t *testing.T) {
	tok := NodeToken([]byte("0123456789abcdef"), "node1.example.com:8041", "rm:8031")
	if got := string(tok.GetIdentifier()); got != "LoomNodeToken:node1.example.com:8041" {
		t.Errorf("identifier %q", got)
	}
	if got, want := hex.EncodeToString(tok.GetPassword()), "d723653d86f20f0ab1d663e0e4fedffdbf6ae5f7"; got != want {
		t.Errorf("password %s, want %s", got, want)
	}
	if tok.GetKind() != "LoomNodeToken" || tok.GetService() != "rm:8031" {
		t.Errorf("kind %q, service %q", tok.GetKind(), tok.GetService())
	}
}

// With a cluster secret every call to the tracker, the unregistration at
// shutdown too, is on a connection authenticated as this node.
func TestEveryTrackerCallCarriesTheNodeToken(t *testing.T) {
	stub := newAuthStub(t)
	n := startNM(t, testConfig(t, stub.addr, map[string]string{"loom.cluster.secret": testSecret}), nil)
	select {
	case <-n.Registered():
	case <-time.After(10 * time.Second):
		t.Fatalf("the NM did not register: %v", stub.calledWith())
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(stub.calledWith()) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	calls := stub.calledWith()
	want := "LoomNodeToken:" + n.NodeID()
	if len(calls) < 3 || !strings.HasPrefix(calls[0], "register ") || calls[len(calls)-1] != "unregister "+want {
		t.Fatalf("calls %q: want a registration, heartbeats and an unregistration", calls)
	}
	for _, c := range calls {
		if !strings.HasSuffix(c, " "+want) {
			t.Errorf("call %q was not authenticated as %s", c, want)
		}
	}
}

// A wrong secret, or none, is refused by the RM; the NM says which key to
// check and keeps trying.
func TestRefusedCredentialsAreNamed(t *testing.T) {
	for _, c := range []struct {
		secret, want string
	}{
		{"the-wrong-secret-for-this-cluster", "the ResourceManager refused this node's credentials: check that loom.cluster.secret holds the same secret as on the RM"},
		{"", "the ResourceManager refused this node's credentials: this NodeManager has no cluster secret"},
	} {
		stub := newAuthStub(t)
		var logs syncBuffer
		overrides := map[string]string{}
		if c.secret != "" {
			overrides["loom.cluster.secret"] = c.secret
		}
		n := startNM(t, testConfig(t, stub.addr, overrides), &logs)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(logs.String(), c.want) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(logs.String(), c.want) {
			t.Errorf("secret %q: the log does not say %q:\n%s", c.secret, c.want, logs.String())
		}
		select {
		case <-n.Registered():
			t.Errorf("secret %q: registered", c.secret)
		default:
		}
	}
}

func TestClusterSecretConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "secret")
	if err := os.WriteFile(good, []byte("  "+testSecret+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte(testSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o604); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, "127.0.0.1:8031", map[string]string{"loom.cluster.secret-file": good})
	if string(cfg.ClusterSecret) != testSecret || cfg.ClusterSecretKey != "loom.cluster.secret-file" || cfg.ClusterSecretInConf {
		t.Errorf("from the file: %q from %s (in conf %v)", cfg.ClusterSecret, cfg.ClusterSecretKey, cfg.ClusterSecretInConf)
	}
	if cfg := testConfig(t, "127.0.0.1:8031", nil); cfg.ClusterSecret != nil {
		t.Errorf("no secret configured, got %q", cfg.ClusterSecret)
	}

	// Written into yarn-site.xml, the secret works but is flagged: the
	// NM gives containers its config dir.
	c := hadoopconf.New(Defaults)
	if err := c.Load("yarn-site.xml", strings.NewReader(`<configuration><property><name>loom.cluster.secret</name><value>`+testSecret+`</value></property></configuration>`)); err != nil {
		t.Fatal(err)
	}
	if secret, _, inConf, err := loadClusterSecret(c); err != nil || string(secret) != testSecret || !inConf {
		t.Errorf("from yarn-site.xml: %q, in conf %v, %v", secret, inConf, err)
	}

	for _, bad := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"loom.cluster.secret": "short"}, "loom.cluster.secret: the cluster secret is 5 bytes: use at least 16"},
		{map[string]string{"loom.cluster.secret": testSecret, "loom.cluster.secret-file": good}, "loom.cluster.secret-file: loom.cluster.secret is set too"},
		{map[string]string{"loom.cluster.secret-file": open}, "is open to every user (mode 0604)"},
		{map[string]string{"loom.cluster.secret-file": dir}, "is not a regular file"},
	} {
		c := hadoopconf.New(Defaults)
		for k, v := range bad.kv {
			c.Set(k, v)
		}
		if _, _, _, err := loadClusterSecret(c); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: got %v, want %q", bad.kv, err, bad.want)
		}
	}
}
