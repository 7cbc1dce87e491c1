package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
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
// Live tokens are kept in the state store with recovery on (as YARN's
// RMStateStore keeps them), so that they outlive an RM restart.

const (
	// RMDelegationTokenKind is YARN's kind for them.
	RMDelegationTokenKind = "RM_DELEGATION_TOKEN"
	dtKeySecret           = "RMDelegationTokenMasterKey"
	dtNextKeySecret       = "RMDelegationTokenNextMasterKey"
	// Each live token is a secret named dtSecretPrefix<sequence number>;
	// dtSeqSecret keeps the last number issued.
	dtSecretPrefix = "RMDelegationToken_"
	dtSeqSecret    = "RMDelegationTokenSequenceNumber"
)

// dtRecord is a token in the state store.
type dtRecord struct {
	ID        []byte `json:"id"` // YARNDelegationTokenIdentifierProto
	ExpiresMs int64  `json:"expires_ms"`
}

// saveToken keeps a token (and the last sequence number) in the state
// store; a failure is logged, and the token lives in memory. Callers
// hold mu.
func (r *RM) saveToken(d *dtoken) {
	if r.store == nil {
		return
	}
	raw, _ := proto.Marshal(d.id)
	rec, _ := json.Marshal(dtRecord{ID: raw, ExpiresMs: d.expires.UnixMilli()})
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err := r.store.PutSecret(ctx, dtSecretPrefix+strconv.Itoa(int(d.id.GetSequenceNumber())), rec)
	if err == nil {
		err = r.store.PutSecret(ctx, dtSeqSecret, []byte(strconv.Itoa(int(r.dtSeq))))
	}
	if err != nil {
		r.log.Error().Err(err).Int32("seq", d.id.GetSequenceNumber()).Msg("state store: could not save a delegation token; an RM restart will forget it")
		r.storeFailed(err)
	}
}

// forgetToken removes a cancelled token from the state store. Callers
// hold mu.
func (r *RM) forgetToken(seq int32) {
	if r.store == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.store.RemoveSecret(ctx, dtSecretPrefix+strconv.Itoa(int(seq))); err != nil {
		r.log.Error().Err(err).Int32("seq", seq).Msg("state store: could not remove a cancelled delegation token")
		r.storeFailed(err)
	}
}

// loadTokens takes back the live tokens from the state store; expired
// ones are dropped.
func (r *RM) loadTokens(secrets map[string][]byte) error {
	if b, ok := secrets[dtSeqSecret]; ok {
		n, err := strconv.Atoi(string(b))
		if err != nil {
			return fmt.Errorf("the delegation token sequence number %q: %v", b, err)
		}
		r.dtSeq = int32(n)
	}
	now := time.Now()
	for name, b := range secrets {
		if !strings.HasPrefix(name, dtSecretPrefix) {
			continue
		}
		var rec dtRecord
		id := &pb.YARNDelegationTokenIdentifierProto{}
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("delegation token %s: %v", name, err)
		}
		if err := proto.Unmarshal(rec.ID, id); err != nil {
			return fmt.Errorf("delegation token %s: %v", name, err)
		}
		if exp := time.UnixMilli(rec.ExpiresMs); exp.After(now) {
			r.dtokens[id.GetSequenceNumber()] = &dtoken{id: id, expires: exp}
		} else {
			r.forgetToken(id.GetSequenceNumber())
		}
		r.dtSeq = max(r.dtSeq, id.GetSequenceNumber())
	}
	return nil
}

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
	d := &dtoken{id: id, expires: minTime(now.Add(r.cfg.DTRenew), time.UnixMilli(id.GetMaxDate()))}
	r.dtokens[r.dtSeq] = d
	r.saveToken(d)
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

// tokenOp starts a renewal or a cancellation: the operation is allowed
// on this connection and the token is live. On success it returns with
// mu held, for the caller to release.
func (r *RM) tokenOp(ctx context.Context, verb string, t *hadooppb.TokenProto) (*dtoken, string, error) {
	if err := r.delegationAllowed(ctx, verb); err != nil {
		return nil, "", err
	}
	ci, _ := rpc.CallFromContext(ctx)
	r.mu.Lock()
	d, err := r.liveToken(t)
	if err != nil {
		r.mu.Unlock()
		return nil, "", err
	}
	return d, ci.User, nil
}

func (s clientService) RenewDelegationToken(ctx context.Context, req *hadooppb.RenewDelegationTokenRequestProto) (*hadooppb.RenewDelegationTokenResponseProto, error) {
	r := s.r
	d, user, err := r.tokenOp(ctx, "renewed", req.GetToken())
	if err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	if user != d.id.GetRenewer() {
		return nil, rpc.Errorf(rpc.ClassAccessControl, "%s tries to renew a token (owner=%s, sequenceNumber=%d) with non-matching renewer %s",
			user, d.id.GetOwner(), d.id.GetSequenceNumber(), d.id.GetRenewer())
	}
	d.expires = minTime(time.Now().Add(r.cfg.DTRenew), time.UnixMilli(d.id.GetMaxDate()))
	r.saveToken(d)
	return &hadooppb.RenewDelegationTokenResponseProto{NewExpiryTime: proto.Uint64(uint64(d.expires.UnixMilli()))}, nil
}

func (s clientService) CancelDelegationToken(ctx context.Context, req *hadooppb.CancelDelegationTokenRequestProto) (*hadooppb.CancelDelegationTokenResponseProto, error) {
	r := s.r
	d, user, err := r.tokenOp(ctx, "cancelled", req.GetToken())
	if err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	if user != d.id.GetOwner() && user != d.id.GetRenewer() {
		return nil, rpc.Errorf(rpc.ClassAccessControl, "%s is not authorized to cancel the token (owner=%s, renewer=%s)",
			user, d.id.GetOwner(), d.id.GetRenewer())
	}
	delete(r.dtokens, d.id.GetSequenceNumber())
	r.forgetToken(d.id.GetSequenceNumber())
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

// sweepTokens forgets the tokens that have expired.
func (r *RM) sweepTokens(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for seq, d := range r.dtokens {
		if now.After(d.expires) {
			delete(r.dtokens, seq)
			r.forgetToken(seq)
		}
	}
}
