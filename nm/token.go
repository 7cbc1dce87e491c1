package nm

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// ContainerTokenKind is the kind of the token that authorises starting a
// container (YARN's ContainerTokenIdentifier.KIND).
const ContainerTokenKind = "ContainerToken"

// NewContainerToken wraps a container token identifier as the RM hands it
// out: the marshalled identifier, kind "ContainerToken", and the NM's
// "host:port" as the service. The password is empty until the RM signs
// its tokens (see verifyContainerTokenPassword).
func NewContainerToken(id *pb.ContainerTokenIdentifierProto, service string) (*hadooppb.TokenProto, error) {
	b, err := proto.Marshal(id)
	if err != nil {
		return nil, err
	}
	return &hadooppb.TokenProto{Identifier: b, Password: []byte{}, Kind: proto.String(ContainerTokenKind),
		Service: proto.String(service)}, nil
}

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

// verifyContainerTokenPassword is where a container token's password is
// checked: YARN's is an HMAC-SHA1 of the identifier under the RM's
// container-token master key, which the RM sends in the registration and
// heartbeat responses (container_token_master_key, kept in
// NodeManager.masterKey).
//
// SECURITY HOOK, NOT YET ENFORCED: Loom's RM does not sign container
// tokens yet, so every password is accepted. Enforcing it belongs to the
// token-security issue; until then any client that can reach the NM's
// port can start containers, as with YARN's SIMPLE auth and no tokens.
func (n *NodeManager) verifyContainerTokenPassword(tok *hadooppb.TokenProto, id *pb.ContainerTokenIdentifierProto) error {
	_ = tok.GetPassword()
	_ = id.GetMasterKeyId()
	return nil
}

// ContainerIDString and ApplicationIDString are YARN's string forms.
var (
	ContainerIDString   = rpc.ContainerIDString
	ApplicationIDString = rpc.AppIDString
)
