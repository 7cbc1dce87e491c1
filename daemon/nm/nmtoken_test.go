package nm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// nmTokenFor is the NMToken the RM would give attempt 1 of app for
// node (host, port), signed with key.
func nmTokenFor(app int32, host string, port int32, key *pb.MasterKeyProto) *hadooppb.TokenProto {
	attempt := containerID(app, 1).GetAppAttemptId()
	id, _ := proto.Marshal(&pb.NMTokenIdentifierProto{AppAttemptId: attempt, AppSubmitter: proto.String("alice"),
		NodeId: &pb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(port)}, KeyId: key.KeyId})
	return rpc.SignedToken(id, key, rpc.NMTokenKind, host)
}

// tokenCM is a container-manager client authenticated with tok, as
// Hadoop's NMClient connects: as the token's attempt.
func tokenCM(t *testing.T, n *NodeManager, tok *hadooppb.TokenProto) rpc.ContainerManagementClient {
	t.Helper()
	user := ""
	if id, err := rpc.ParseNMTokenIdentifier(tok.GetIdentifier()); err == nil {
		user = rpc.AttemptIDString(id.GetAppAttemptId())
	}
	c := rpc.NewClient(n.Addr(), rpc.ClientOptions{User: user, Token: tok, Retries: -1})
	t.Cleanup(func() { c.Close() })
	return rpc.ContainerManagementClient{C: c}
}

func nodePort(n *NodeManager) int32 { return n.nodeID.GetPort() }

// TestContainerManagerTakesNMTokensOnly: by default the container
// manager, as YARN's, serves only callers that authenticate with an
// NMToken for this node under the RM's key, and lets each attempt touch
// only its own application's containers.
func TestContainerManagerTakesNMTokensOnly(t *testing.T) {
	n, stub, _ := startRegistered(t, map[string]string{"loom.nodemanager.simple-auth.enabled": "false"})
	ctx := context.Background()
	port := nodePort(n)
	app1 := tokenCM(t, n, nmTokenFor(1, "127.0.0.1", port, testNMKey))
	cid := containerID(1, 1)
	startReq := func(cid *pb.ContainerIdProto) *pb.StartContainersRequestProto {
		return &pb.StartContainersRequestProto{StartContainerRequest: []*pb.StartContainerRequestProto{{
			ContainerToken: token(t, n, cid, 64), ContainerLaunchContext: launch("exec sleep 30", nil, nil)}}}
	}

	forged := nmTokenFor(1, "127.0.0.1", port, testNMKey)
	forged.Password = []byte("guessed")
	otherKey := &pb.MasterKeyProto{KeyId: proto.Int32(99), Bytes: []byte("not the RM's key")}
	simple := rpc.NewClient(n.Addr(), rpc.ClientOptions{User: "appattempt_1700000000000_0001_000001", Retries: -1})
	defer simple.Close()
	for _, tc := range []struct {
		name        string
		cm          rpc.ContainerManagementClient
		class, text string
	}{
		{"no token (SIMPLE)", rpc.ContainerManagementClient{C: simple}, rpc.ClassAccessControl, "SIMPLE authentication is not enabled.  Available:[TOKEN]"},
		{"a forged password", tokenCM(t, n, forged), "javax.security.sasl.SaslException", ""},
		{"a key the RM never gave", tokenCM(t, n, nmTokenFor(1, "127.0.0.1", port, otherKey)),
			"org.apache.hadoop.security.token.SecretManager$InvalidToken", "seems to have been generated illegally"},
		{"another node's token", tokenCM(t, n, nmTokenFor(1, "127.0.0.1", port+1, testNMKey)),
			"org.apache.hadoop.security.token.SecretManager$InvalidToken", "is not valid for current node manager"},
		{"a container token as the NMToken", tokenCM(t, n, token(t, n, cid, 64)),
			"org.apache.hadoop.security.token.SecretManager$InvalidToken", "not an NMTokenIdentifier"},
	} {
		_, err := tc.cm.StartContainers(ctx, startReq(cid))
		if !rpc.IsClass(err, tc.class) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %v, want %s %q", tc.name, err, tc.class, tc.text)
		}
	}
	if len(n.containers) != 0 {
		t.Fatalf("a refused caller started %d containers", len(n.containers))
	}

	// Another app's NMToken starts nothing of app 1's.
	app2 := tokenCM(t, n, nmTokenFor(2, "127.0.0.1", port, testNMKey))
	resp, err := app2.StartContainers(ctx, startReq(cid))
	want := "Unauthorized request to start container.\nNMToken for application attempt : appattempt_1700000000000_0002_000001 was used for " +
		"starting container with container token issued for application attempt : appattempt_1700000000000_0001_000001"
	if err != nil || len(resp.GetFailedRequests()) != 1 || resp.GetFailedRequests()[0].GetException().GetMessage() != want {
		t.Fatalf("app 2 starting app 1's container: %v %v, want the failure %q", resp, err, want)
	}

	// Its own token starts it; another app may neither read nor stop it.
	if resp, err := app1.StartContainers(ctx, startReq(cid)); err != nil || len(resp.GetSucceededRequests()) != 1 {
		t.Fatalf("app 1 with its own NMToken: %v %v", resp, err)
	}
	ids := []*pb.ContainerIdProto{cid}
	st, err := app2.GetContainerStatuses(ctx, &pb.GetContainerStatusesRequestProto{ContainerId: ids})
	if err != nil || len(st.GetFailedRequests()) != 1 || !strings.Contains(st.GetFailedRequests()[0].GetException().GetMessage(),
		"appattempt_1700000000000_0002_000001 attempted to get status for non-application container : container_1700000000000_0001_01_000001") {
		t.Errorf("app 2 reading app 1's container: %v %v", st, err)
	}
	sp, err := app2.StopContainers(ctx, &pb.StopContainersRequestProto{ContainerId: ids})
	if err != nil || len(sp.GetFailedRequests()) != 1 || !strings.Contains(sp.GetFailedRequests()[0].GetException().GetMessage(),
		"attempted to stop non-application container : container_1700000000000_0001_01_000001") {
		t.Errorf("app 2 stopping app 1's container: %v %v", sp, err)
	}
	if st, err := app1.GetContainerStatuses(ctx, &pb.GetContainerStatusesRequestProto{ContainerId: ids}); err != nil ||
		len(st.GetStatus()) != 1 || st.GetStatus()[0].GetState() == pb.ContainerStateProto_C_COMPLETE {
		t.Fatalf("app 1's container after app 2's stop: %v %v", st, err)
	}

	// The RM rolls its key twice. App 1's token (under the first key)
	// keeps working here, as its attempt started a container with it; a
	// new attempt may not start containers with it.
	for i, k := range []*pb.MasterKeyProto{
		{KeyId: proto.Int32(12), Bytes: []byte("the stub RM's second NMToken key")},
		{KeyId: proto.Int32(13), Bytes: []byte("the stub RM's third NMToken key")},
	} {
		stub.mu.Lock()
		stub.nmTokenKey = k
		stub.mu.Unlock()
		deadline := time.Now().Add(5 * time.Second)
		for {
			n.mu.Lock()
			got := n.nmMasterKey.GetKeyId()
			n.mu.Unlock()
			if got == k.GetKeyId() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("roll %d: the NM did not take the new key from a heartbeat", i+1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	again := tokenCM(t, n, nmTokenFor(1, "127.0.0.1", port, testNMKey))
	if st, err := again.GetContainerStatuses(ctx, &pb.GetContainerStatusesRequestProto{ContainerId: ids}); err != nil || len(st.GetStatus()) != 1 {
		t.Errorf("app 1's first-key token after two rolls: %v %v", st, err)
	}
	stale := tokenCM(t, n, nmTokenFor(3, "127.0.0.1", port, testNMKey))
	if _, err := stale.StartContainers(ctx, startReq(containerID(3, 1))); !rpc.IsClass(err, rpc.ClassInvalidToken) ||
		!strings.Contains(err.Error(), "seems to have been generated illegally") {
		t.Errorf("a new attempt with a key two rolls old: %v", err)
	}
	fresh := tokenCM(t, n, nmTokenFor(3, "127.0.0.1", port, &pb.MasterKeyProto{KeyId: proto.Int32(13), Bytes: []byte("the stub RM's third NMToken key")}))
	if resp, err := fresh.StartContainers(ctx, startReq(containerID(3, 1))); err != nil || len(resp.GetSucceededRequests()) != 1 {
		t.Errorf("a new attempt under the current key: %v %v", resp, err)
	}
}
