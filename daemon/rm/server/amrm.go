package server

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// AMRM tokens, as YARN's AMRMTokenSecretManager makes them: each attempt's
// AM gets, at launch, a token naming the attempt, signed with the RM's
// AMRM master key. The scheduler port takes TOKEN auth (SASL DIGEST-MD5)
// with it, and refuses register, allocate and finish on a connection that
// has none, so an app cannot call the scheduler for another.

// The AMRM master keys in the state store: AMs keep their tokens across
// an RM restart.
const (
	amrmKeySecret     = "AMRMTokenMasterKey"
	amrmNextKeySecret = "AMRMTokenNextMasterKey"
)

// The key rolls as YARN's does: every
// yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs a next
// key is made; new tokens are signed with it, and each AM gets one in its
// next allocate reply (am_rm_token), which Hadoop's AMRMClient and Loom's
// AM library take for their next connection. 1.5 AM expiries later every
// live AM has called allocate, so the next key becomes the current one and
// the old one is forgotten: a token under it opens no new connection.
// Connections already open stay authenticated.

// amrmToken is the AMRM token of an attempt. Callers hold mu.
func (r *RM) amrmToken(at *attemptRec) *hadooppb.TokenProto {
	k := r.amrm.newest()
	id, _ := proto.Marshal(&pb.AMRMTokenIdentifierProto{AppAttemptId: at.yid, KeyId: k.KeyId})
	return &hadooppb.TokenProto{Identifier: id, Password: rpc.TokenPassword(k.GetBytes(), id),
		Kind: proto.String(rpc.AMRMTokenKind), Service: proto.String(advertised(r.Addr("scheduler")))}
}

// rolledAMRMToken is a new token for an AM whose connection's token is
// not under the next key, nil otherwise. Callers hold mu.
func (r *RM) rolledAMRMToken(ctx context.Context, at *attemptRec) *hadooppb.TokenProto {
	if r.amrm.next == nil {
		return nil
	}
	if ci, ok := rpc.CallFromContext(ctx); ok {
		if id, err := rpc.ParseAMRMIdentifier(ci.Token); err == nil && id.GetKeyId() == r.amrm.next.GetKeyId() {
			return nil
		}
	}
	return r.amrmToken(at)
}

// amrmSecrets checks AMRM tokens for the scheduler's RPC server.
type amrmSecrets struct{ r *RM }

// RetrievePassword gives the password of a token for a live attempt of
// this RM's master key, and the attempt as the connection's user.
func (s amrmSecrets) RetrievePassword(identifier []byte) ([]byte, string, error) {
	r := s.r
	id, err := rpc.ParseAMRMIdentifier(identifier)
	if err != nil {
		return nil, "", err
	}
	attempt := rpc.AttemptIDString(id.GetAppAttemptId())
	r.mu.Lock()
	defer r.mu.Unlock()
	key := r.amrm.find(id.GetKeyId())
	if key == nil {
		return nil, "", fmt.Errorf("Invalid AMRMToken from %s: master key %d is not this RM's (retired, or another RM's)", attempt, id.GetKeyId())
	}
	a, err := r.appByID(id.GetAppAttemptId().GetApplicationId())
	if err != nil {
		return nil, "", fmt.Errorf("Password not found for ApplicationAttempt %s: its app is unknown", attempt)
	}
	if at := a.current(); at == nil || at.n != id.GetAppAttemptId().GetAttemptId() || a.done() {
		return nil, "", fmt.Errorf("Password not found for ApplicationAttempt %s: it is not a running attempt", attempt)
	}
	return rpc.TokenPassword(key.GetBytes(), identifier), attempt, nil
}

// tokenAttempt is the attempt named by the AMRM token the call's
// connection authenticated with.
func tokenAttempt(ctx context.Context) (*pb.ApplicationAttemptIdProto, error) {
	ci, ok := rpc.CallFromContext(ctx)
	if !ok || ci.Token == nil {
		return nil, rpc.Errorf(rpc.ClassAccessControl,
			"No AMRMToken found for user %s: an AM must authenticate with the AMRM token the RM gave it at launch (in the file named by %s)",
			caller(ctx), rpc.EnvTokenFile)
	}
	tokenAttempts.RLock()
	at, ok := tokenAttempts.m[string(ci.Token)]
	tokenAttempts.RUnlock()
	if ok {
		return at, nil
	}
	id, err := rpc.ParseAMRMIdentifier(ci.Token)
	if err != nil {
		return nil, rpc.Errorf(rpc.ClassAccessControl, "the connection's token: %v", err)
	}
	at = id.GetAppAttemptId()
	tokenAttempts.Lock()
	if tokenAttempts.m == nil || len(tokenAttempts.m) >= maxTokenAttempts {
		tokenAttempts.m = map[string]*pb.ApplicationAttemptIdProto{}
	}
	tokenAttempts.m[string(ci.Token)] = at
	tokenAttempts.Unlock()
	return at, nil
}

// tokenAttempts remembers tokenAttempt's answer for each AMRM token
// identifier it parsed (a function of the bytes alone; the attempt ids
// are only read): an AM's every allocate call parsed its connection's
// token again, 2% of the RM's CPU with 2,000 AMs. It starts afresh once it
// holds maxTokenAttempts, so ended attempts' tokens do not pile up.
var tokenAttempts struct {
	sync.RWMutex
	m map[string]*pb.ApplicationAttemptIdProto
}

const maxTokenAttempts = 1 << 14

// amCredentials adds the attempt's AMRM token to the credentials the
// submitter gave the AM container (checked at submission). Callers hold
// mu.
func (r *RM) amCredentials(at *attemptRec, submitted []byte) []byte {
	creds := &rpc.Credentials{}
	if len(submitted) > 0 {
		if c, err := rpc.ParseCredentials(submitted); err == nil {
			creds = c
		}
	}
	tok := r.amrmToken(at)
	creds.Add(tok.GetService(), tok)
	return creds.Marshal()
}
