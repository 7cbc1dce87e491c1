package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// RM delegation tokens, as YARN's RMDelegationTokenSecretManager makes
// them: a user authenticated with Kerberos (or anyone, without Kerberos,
// as in YARN) gets a token naming it as owner and a renewer; the client
// port takes TOKEN auth (SASL DIGEST-MD5) with it, as the owner, until it
// expires (renew-interval after its issue or last renewal, and never past
// max-lifetime) or is cancelled. Only the renewer renews; the owner or the
// renewer cancels. The identifier is YARN's
// YARNDelegationTokenIdentifierProto; the password the HMAC-SHA1 of it
// under a master key that rolls every key.update-interval.
//
// The tokens live in the RM's memory: an RM restart forgets them (YARN
// keeps them in its state store).

const (
	// RMDelegationTokenKind is YARN's kind for them.
	RMDelegationTokenKind = "RM_DELEGATION_TOKEN"
	dtKeySecret           = "RMDelegationTokenMasterKey"
	dtNextKeySecret       = "RMDelegationTokenNextMasterKey"
)

// dtoken is one issued token's state.
type dtoken struct {
	id      *pb.YARNDelegationTokenIdentifierProto
	expires time.Time
}

// delegationAllowed refuses a token operation on a connection that did
// not authenticate with Kerberos, when Kerberos is on (Hadoop's words).
func (r *RM) delegationAllowed(ctx context.Context, verb string) error {
	if r.cfg.Kerberos == nil {
		return nil
	}
	if ci, ok := rpc.CallFromContext(ctx); ok && ci.Principal != "" {
		return nil
	}
	return rpc.Errorf(rpc.ClassYarnException, "java.io.IOException: Delegation Token can be %s only with kerberos authentication", verb)
}

func (s clientService) GetDelegationToken(ctx context.Context, req *hadooppb.GetDelegationTokenRequestProto) (*hadooppb.GetDelegationTokenResponseProto, error) {
	r := s.r
	if err := r.delegationAllowed(ctx, "issued"); err != nil {
		return nil, err
	}
	renewer := strings.TrimSpace(req.GetRenewer())
	if renewer == "" {
		return nil, rpc.Errorf(rpc.ClassYarnException, "java.io.IOException: Delegation Token renewer is empty")
	}
	renewer, _, _ = strings.Cut(renewer, "@")
	renewer, _, _ = strings.Cut(renewer, "/")
	ci, _ := rpc.CallFromContext(ctx)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.dtKey.newest()
	r.dtSeq++
	id := &pb.YARNDelegationTokenIdentifierProto{Owner: proto.String(ci.User), Renewer: proto.String(renewer),
		IssueDate: proto.Int64(now.UnixMilli()), MaxDate: proto.Int64(now.Add(r.cfg.DTMaxLife).UnixMilli()),
		SequenceNumber: proto.Int32(r.dtSeq), MasterKeyId: k.KeyId}
	if ci.RealUser != "" {
		id.RealUser = proto.String(ci.RealUser)
	}
	raw, err := proto.Marshal(id)
	if err != nil {
		return nil, err
	}
	r.dtokens[r.dtSeq] = &dtoken{id: id, expires: minTime(now.Add(r.cfg.DTRenew), time.UnixMilli(id.GetMaxDate()))}
	r.log.Info().Str("owner", ci.User).Str("renewer", renewer).Int32("seq", r.dtSeq).Msg("delegation token issued")
	return &hadooppb.GetDelegationTokenResponseProto{Token: rpc.SignedToken(raw, k, RMDelegationTokenKind, advertised(r.Addr("client")))}, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// liveToken checks a token's password and that it is live. Callers hold
// mu.
func (r *RM) liveToken(t *hadooppb.TokenProto) (*dtoken, error) {
	var id pb.YARNDelegationTokenIdentifierProto
	if err := proto.Unmarshal(t.GetIdentifier(), &id); err != nil || id.SequenceNumber == nil {
		return nil, rpc.Errorf(rpc.ClassInvalidToken, "not an RM delegation token identifier: %v", err)
	}
	d, ok := r.dtokens[id.GetSequenceNumber()]
	k := r.dtKey.find(id.GetMasterKeyId())
	if !ok || k == nil || !proto.Equal(d.id, &id) || !rpc.TokenPasswordOK(k.GetBytes(), t.GetIdentifier(), t.GetPassword()) {
		return nil, rpc.Errorf(rpc.ClassInvalidToken, "token (owner=%s, renewer=%s, sequenceNumber=%d) can't be found in cache",
			id.GetOwner(), id.GetRenewer(), id.GetSequenceNumber())
	}
	if time.Now().After(d.expires) {
		return nil, rpc.Errorf(rpc.ClassInvalidToken, "token (owner=%s, sequenceNumber=%d) is expired, current time: %d expected renewal time: %d",
			id.GetOwner(), id.GetSequenceNumber(), time.Now().UnixMilli(), d.expires.UnixMilli())
	}
	return d, nil
}

func (s clientService) RenewDelegationToken(ctx context.Context, req *hadooppb.RenewDelegationTokenRequestProto) (*hadooppb.RenewDelegationTokenResponseProto, error) {
	r := s.r
	if err := r.delegationAllowed(ctx, "renewed"); err != nil {
		return nil, err
	}
	ci, _ := rpc.CallFromContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	d, err := r.liveToken(req.GetToken())
	if err != nil {
		return nil, err
	}
	if ci.User != d.id.GetRenewer() {
		return nil, rpc.Errorf(rpc.ClassAccessControl, "%s tries to renew a token (owner=%s, sequenceNumber=%d) with non-matching renewer %s",
			ci.User, d.id.GetOwner(), d.id.GetSequenceNumber(), d.id.GetRenewer())
	}
	d.expires = minTime(time.Now().Add(r.cfg.DTRenew), time.UnixMilli(d.id.GetMaxDate()))
	return &hadooppb.RenewDelegationTokenResponseProto{NewExpiryTime: proto.Uint64(uint64(d.expires.UnixMilli()))}, nil
}

func (s clientService) CancelDelegationToken(ctx context.Context, req *hadooppb.CancelDelegationTokenRequestProto) (*hadooppb.CancelDelegationTokenResponseProto, error) {
	r := s.r
	if err := r.delegationAllowed(ctx, "cancelled"); err != nil {
		return nil, err
	}
	ci, _ := rpc.CallFromContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	d, err := r.liveToken(req.GetToken())
	if err != nil {
		return nil, err
	}
	if ci.User != d.id.GetOwner() && ci.User != d.id.GetRenewer() {
		return nil, rpc.Errorf(rpc.ClassAccessControl, "%s is not authorized to cancel the token (owner=%s, renewer=%s)",
			ci.User, d.id.GetOwner(), d.id.GetRenewer())
	}
	delete(r.dtokens, d.id.GetSequenceNumber())
	return &hadooppb.CancelDelegationTokenResponseProto{}, nil
}

// dtSecrets checks delegation tokens for the client port: a live token
// authenticates its owner.
type dtSecrets struct{ r *RM }

func (s dtSecrets) RetrievePassword(identifier []byte) ([]byte, string, error) {
	r := s.r
	var id pb.YARNDelegationTokenIdentifierProto
	if err := proto.Unmarshal(identifier, &id); err != nil || id.SequenceNumber == nil {
		return nil, "", fmt.Errorf("not an RM delegation token identifier: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.dtKey.find(id.GetMasterKeyId())
	if k == nil {
		return nil, "", fmt.Errorf("token (sequenceNumber=%d): master key %d is not this RM's", id.GetSequenceNumber(), id.GetMasterKeyId())
	}
	pw := rpc.TokenPassword(k.GetBytes(), identifier)
	if _, err := r.liveToken(&hadooppb.TokenProto{Identifier: identifier, Password: pw}); err != nil {
		return nil, "", err
	}
	return pw, id.GetOwner(), nil
}
