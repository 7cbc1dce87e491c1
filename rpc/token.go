package rpc

import (
	"crypto/hmac"
	"crypto/sha1"
	"fmt"

	"google.golang.org/protobuf/proto"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TokenPassword is a token's password as Hadoop's SecretManager makes it:
// the HMAC-SHA1 of the token's identifier bytes under a master key. The
// RM signs container tokens with it, and NodeManagers check them.
func TokenPassword(key, identifier []byte) []byte {
	m := hmac.New(sha1.New, key)
	m.Write(identifier)
	return m.Sum(nil)
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
