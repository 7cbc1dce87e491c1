package rpc

import (
	"crypto/hmac"
	"crypto/sha1"
	"fmt"
	"hash"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TokenPassword is a token's password as Hadoop's SecretManager makes it:
// the HMAC-SHA1 of the token's identifier bytes under a master key. The
// RM signs container tokens with it, and NodeManagers check them.
func TokenPassword(key, identifier []byte) []byte {
	pool := keyedMACs(key)
	m := pool.Get().(hash.Hash)
	m.Write(identifier)
	sum := m.Sum(nil)
	m.Reset()
	pool.Put(m)
	return sum
}

// macPools keeps, for each master key in use, HMACs already keyed with it:
// Reset takes an HMAC back to just after its key, so that a token signed
// does not key a new one (hmac.New hashes the key into two SHA-1 states
// and allocates them: 60% of a token's signing, and the RM signs one for
// every container it grants). Keys roll (every day by default), so the
// pools are dropped once they reach maxMACPools and build up again.
var macPools struct {
	sync.RWMutex
	byKey map[string]*sync.Pool
}

const maxMACPools = 16

// keyedMACs is the pool of HMACs keyed with key.
func keyedMACs(key []byte) *sync.Pool {
	macPools.RLock()
	p, ok := macPools.byKey[string(key)]
	macPools.RUnlock()
	if ok {
		return p
	}
	macPools.Lock()
	defer macPools.Unlock()
	if p, ok := macPools.byKey[string(key)]; ok {
		return p
	}
	if macPools.byKey == nil || len(macPools.byKey) >= maxMACPools {
		macPools.byKey = map[string]*sync.Pool{}
	}
	k := string(key)
	p = &sync.Pool{New: func() any { return hmac.New(sha1.New, []byte(k)) }}
	macPools.byKey[k] = p
	return p
}

// TokenPasswordOK checks a password in constant time.
func TokenPasswordOK(key, identifier, password []byte) bool {
	return hmac.Equal(TokenPassword(key, identifier), password)
}

// ParseAMRMIdentifier decodes an AMRM token's identifier; anything else
// (another kind of token, whose fields this message does not know) is
// refused.
func ParseAMRMIdentifier(b []byte) (*pb.AMRMTokenIdentifierProto, error) {
	id := &pb.AMRMTokenIdentifierProto{}
	err := proto.Unmarshal(b, id)
	if err == nil && (id.AppAttemptId == nil || id.GetAppAttemptId().GetAttemptId() < 1 || id.KeyId == nil ||
		len(id.ProtoReflect().GetUnknown()) > 0 || len(id.GetAppAttemptId().ProtoReflect().GetUnknown()) > 0) {
		err = fmt.Errorf("fields of another message")
	}
	if err != nil {
		return nil, fmt.Errorf("not an AMRMTokenIdentifier (%v)", err)
	}
	return id, nil
}

// NMTokenKind is the kind of the token an AM (or the RM launching an AM)
// authenticates to a NodeManager's ContainerManagementProtocol with
// (YARN's NMTokenIdentifier.KIND).
const NMTokenKind = "NMToken"

// ParseNMTokenIdentifier decodes an NMToken's identifier: it must name an
// application attempt, a node and a key; anything else (another kind of
// token) is refused.
func ParseNMTokenIdentifier(b []byte) (*pb.NMTokenIdentifierProto, error) {
	id := &pb.NMTokenIdentifierProto{}
	err := proto.Unmarshal(b, id)
	if err == nil && (id.AppAttemptId == nil || id.GetAppAttemptId().GetAttemptId() < 1 || id.GetAppAttemptId().GetApplicationId() == nil ||
		id.GetNodeId().GetHost() == "" || id.KeyId == nil || len(id.ProtoReflect().GetUnknown()) > 0) {
		err = fmt.Errorf("fields of another message")
	}
	if err != nil {
		return nil, fmt.Errorf("not an NMTokenIdentifier (%v)", err)
	}
	return id, nil
}

// SignedToken is a token whose password is the HMAC-SHA1 of its
// identifier under key, as Hadoop's secret managers make them.
func SignedToken(identifier []byte, key *pb.MasterKeyProto, kind, service string) *hadooppb.TokenProto {
	return &hadooppb.TokenProto{Identifier: identifier, Password: TokenPassword(key.GetBytes(), identifier),
		Kind: proto.String(kind), Service: proto.String(service)}
}
