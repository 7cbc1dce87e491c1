package nm

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// errNoMasterKey: the NM has not registered yet, so it cannot check a
// token; the caller may try again (YARN's NMNotYetReadyException).
var errNoMasterKey = errors.New("Rejecting new containers as NodeManager has not yet connected with ResourceManager (it has no container-token master key)")

// errNoToken is a start request without a container token, or with an
// empty identifier.
var errNoToken = errors.New("Invalid ContainerToken")

// DecodeContainerToken reads a container token's identifier. It needs the
// container id (with its application attempt) and the submitter; the
// resource may be absent (no memory limit then).
func DecodeContainerToken(tok *hadooppb.TokenProto) (*pb.ContainerTokenIdentifierProto, error) {
	if tok == nil || len(tok.GetIdentifier()) == 0 {
		return nil, errNoToken
	}
	id := &pb.ContainerTokenIdentifierProto{}
	if err := proto.Unmarshal(tok.GetIdentifier(), id); err != nil {
		return nil, fmt.Errorf("Invalid ContainerToken: its identifier is not a ContainerTokenIdentifierProto: %v", err)
	}
	cid := id.GetContainerId()
	if cid == nil || rpc.AppIDOf(cid) == nil || cid.GetAppAttemptId() == nil {
		return nil, errors.New("Invalid ContainerToken: its identifier names no container (containerId with its application attempt)")
	}
	if id.GetAppSubmitter() == "" {
		return nil, fmt.Errorf("Invalid ContainerToken: the identifier of %s names no appSubmitter", ContainerIDString(cid))
	}
	return id, nil
}

// verifyContainerTokenPassword checks that the RM signed a container
// token: its password must be the HMAC-SHA1 of its identifier under the
// RM's container-token master key, which the RM sends in the registration
// and heartbeat responses (container_token_master_key, kept in
// NodeManager.masterKey). A token signed with another key, or by no one,
// starts nothing: the NM starts only the containers the RM granted.
func (n *NodeManager) verifyContainerTokenPassword(tok *hadooppb.TokenProto, id *pb.ContainerTokenIdentifierProto) error {
	n.mu.Lock()
	key := n.masterKey
	n.mu.Unlock()
	cid := ContainerIDString(id.GetContainerId())
	switch {
	case key == nil:
		return errNoMasterKey
	case id.GetMasterKeyId() != key.GetKeyId():
		return fmt.Errorf("Invalid container token for %s: signed with master key %d, but the RM's current key is %d", cid, id.GetMasterKeyId(), key.GetKeyId())
	case !rpc.TokenPasswordOK(key.GetBytes(), tok.GetIdentifier(), tok.GetPassword()):
		return fmt.Errorf("Invalid container token used for starting container %s on %s: its password is not the RM's signature", cid, n.nodeKey)
	}
	return nil
}

// ContainerIDString and ApplicationIDString are YARN's string forms.
var (
	ContainerIDString   = rpc.ContainerIDString
	ApplicationIDString = rpc.AppIDString
)

// NMTokens: the container manager takes TOKEN auth (SASL DIGEST-MD5) with
// the NMToken the RM gave the caller, as YARN's NodeManager does. The
// token names an application attempt and this node, signed with the RM's
// NM-token master key, which the NM gets when it registers and, when the
// RM rolls it, in a heartbeat ahead of its use. Tokens under the current
// key, the one before it, or the key an attempt first started a container
// with here are taken (NMTokenSecretManagerInNM's rules), so a roll does
// not cut off an AM that holds an older token.

// nmTokenSecrets checks NMTokens for the container manager's RPC server.
type nmTokenSecrets struct{ n *NodeManager }

// RetrievePassword gives the password of an NMToken for this node under a
// key the NM knows, and the attempt as the connection's user.
func (s nmTokenSecrets) RetrievePassword(identifier []byte) ([]byte, string, error) {
	n := s.n
	id, err := rpc.ParseNMTokenIdentifier(identifier)
	if err != nil {
		return nil, "", err
	}
	attempt := rpc.AttemptIDString(id.GetAppAttemptId())
	if got := id.GetNodeId(); got.GetHost() != n.nodeID.GetHost() || got.GetPort() != n.nodeID.GetPort() {
		return nil, "", fmt.Errorf("Given NMToken for application : %s is not valid for current node manager.expected : %s found : %s:%d",
			attempt, n.nodeKey, got.GetHost(), got.GetPort())
	}
	n.mu.Lock()
	key := n.nmTokenKeyLocked(attempt, id.GetKeyId())
	n.mu.Unlock()
	if key == nil {
		return nil, "", fmt.Errorf("Given NMToken for application : %s seems to have been generated illegally.", attempt)
	}
	return rpc.TokenPassword(key.GetBytes(), identifier), attempt, nil
}

// nmTokenKeyLocked is the NM-token key with this id that the NM takes
// for attempt, or nil. Callers hold mu.
func (n *NodeManager) nmTokenKeyLocked(attempt string, keyID int32) *pb.MasterKeyProto {
	for _, k := range []*pb.MasterKeyProto{n.attemptKeys[attempt], n.nmPrevKey, n.nmMasterKey} {
		if k != nil && k.GetKeyId() == keyID {
			return k
		}
	}
	return nil
}

// setNMTokenKeyLocked takes a new NM-token master key from the RM; the
// one it replaces is still taken for a while. Callers hold mu.
func (n *NodeManager) setNMTokenKeyLocked(k *pb.MasterKeyProto) {
	if k == nil || k.GetKeyId() == n.nmMasterKey.GetKeyId() && n.nmMasterKey != nil {
		return
	}
	if n.nmMasterKey != nil {
		n.log.Info().Int32("key", k.GetKeyId()).Int32("previous", n.nmMasterKey.GetKeyId()).Msg("rolling the NMToken master key")
	}
	n.nmPrevKey, n.nmMasterKey = n.nmMasterKey, k
}

// callerNMToken is the NMToken the call's connection authenticated with,
// nil on a SIMPLE connection (allowed only with
// loom.nodemanager.simple-auth.enabled).
func callerNMToken(ctx context.Context) (*pb.NMTokenIdentifierProto, error) {
	ci, ok := rpc.CallFromContext(ctx)
	if !ok || ci.Token == nil {
		return nil, nil
	}
	return rpc.ParseNMTokenIdentifier(ci.Token)
}
