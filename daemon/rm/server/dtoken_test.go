package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestDelegationTokens: a token issued to ann with renewer oozie
// authenticates ann on the client port (TOKEN auth), as owner; only oozie
// renews it, ann or oozie cancels it, and a cancelled, forged or expired
// token opens nothing.
func TestDelegationTokens(t *testing.T) {
	r := startRM(t, "yarn.resourcemanager.delegation.token.renew-interval=1500")
	ctx := context.Background()
	ann, oozie, eve := clientOf(t, r, "ann"), clientOf(t, r, "oozie"), clientOf(t, r, "eve")
	resp, err := ann.GetDelegationToken(ctx, &hadooppb.GetDelegationTokenRequestProto{Renewer: proto.String("oozie/host1@EXAMPLE.COM")})
	if err != nil {
		t.Fatal(err)
	}
	tok := resp.GetToken()
	if tok.GetKind() != RMDelegationTokenKind || tok.GetService() != advertised(r.Addr("client")) {
		t.Errorf("token kind %q service %q", tok.GetKind(), tok.GetService())
	}
	withToken := func(tk *hadooppb.TokenProto) (rpc.ApplicationClient, func()) {
		cl := rpc.NewClient(r.Addr("client"), rpc.ClientOptions{Token: tk, Retries: -1})
		return rpc.ApplicationClient{C: cl}, func() { cl.Close() }
	}
	// The token authenticates ann: an app submitted on it is hers.
	ac, done := withToken(tok)
	id := submit(t, ac, "default", 1024)
	done()
	if u := report(t, ann, id).GetUser(); u != "ann" {
		t.Errorf("the app submitted with ann's token is %q's", u)
	}

	// Only the renewer renews (by short name).
	if _, err := eve.RenewDelegationToken(ctx, &hadooppb.RenewDelegationTokenRequestProto{Token: tok}); !rpc.IsClass(err, rpc.ClassAccessControl) ||
		!strings.Contains(err.Error(), "eve tries to renew a token") {
		t.Errorf("eve renews: %v", err)
	}
	rr, err := oozie.RenewDelegationToken(ctx, &hadooppb.RenewDelegationTokenRequestProto{Token: tok})
	if err != nil || time.UnixMilli(int64(rr.GetNewExpiryTime())).Before(time.Now()) {
		t.Errorf("oozie renews: %v, %v", rr, err)
	}

	// A forged password opens nothing.
	forged := proto.Clone(tok).(*hadooppb.TokenProto)
	forged.Password = []byte("guessed-password-000")
	ac, done = withToken(forged)
	_, err = ac.GetClusterMetrics(ctx, &pb.GetClusterMetricsRequestProto{})
	done()
	if err == nil {
		t.Error("a forged token was let in")
	}

	// Eve may not cancel; ann may, and then the token is dead.
	if _, err := eve.CancelDelegationToken(ctx, &hadooppb.CancelDelegationTokenRequestProto{Token: tok}); !rpc.IsClass(err, rpc.ClassAccessControl) {
		t.Errorf("eve cancels: %v", err)
	}
	if _, err := ann.CancelDelegationToken(ctx, &hadooppb.CancelDelegationTokenRequestProto{Token: tok}); err != nil {
		t.Fatal(err)
	}
	ac, done = withToken(tok)
	_, err = ac.GetClusterMetrics(ctx, &pb.GetClusterMetricsRequestProto{})
	done()
	if err == nil || !strings.Contains(err.Error(), "can't be found in cache") {
		t.Errorf("the cancelled token: %v", err)
	}

	// A token not renewed within the renew interval (1.5 s here) expires.
	resp, err = ann.GetDelegationToken(ctx, &hadooppb.GetDelegationTokenRequestProto{Renewer: proto.String("oozie")})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1600 * time.Millisecond)
	ac, done = withToken(resp.GetToken())
	_, err = ac.GetClusterMetrics(ctx, &pb.GetClusterMetricsRequestProto{})
	done()
	if err == nil || !strings.Contains(err.Error(), "is expired") {
		t.Errorf("the expired token: %v", err)
	}
	if _, err := ann.GetDelegationToken(ctx, &hadooppb.GetDelegationTokenRequestProto{Renewer: proto.String(" ")}); err == nil || !strings.Contains(err.Error(), "renewer is empty") {
		t.Errorf("no renewer: %v", err)
	}
}

// TestDelegationTokensSurviveARestart: with recovery on, a live token
// works on the next RM on the same store, a cancelled one does not, and
// new tokens are numbered past the old.
func TestDelegationTokensSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	conf := []string{"yarn.resourcemanager.recovery.enabled=true", "loom.store.dir=" + dir}
	ctx := context.Background()
	r1, err := New(testConfig(t, conf...), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := r1.Start(); err != nil {
		t.Fatal(err)
	}
	ann := clientOf(t, r1, "ann")
	kept, err := ann.GetDelegationToken(ctx, &hadooppb.GetDelegationTokenRequestProto{Renewer: proto.String("oozie")})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := ann.GetDelegationToken(ctx, &hadooppb.GetDelegationTokenRequestProto{Renewer: proto.String("oozie")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ann.CancelDelegationToken(ctx, &hadooppb.CancelDelegationTokenRequestProto{Token: cancelled.GetToken()}); err != nil {
		t.Fatal(err)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	r1.Stop(stopCtx)
	cancel()

	r2 := startRM(t, conf...)
	use := func(tok *hadooppb.TokenProto) error {
		cl := rpc.NewClient(r2.Addr("client"), rpc.ClientOptions{Token: tok, Retries: -1})
		defer cl.Close()
		_, err := rpc.ApplicationClient{C: cl}.GetClusterMetrics(ctx, &pb.GetClusterMetricsRequestProto{})
		return err
	}
	if err := use(kept.GetToken()); err != nil {
		t.Errorf("the live token after the restart: %v", err)
	}
	if err := use(cancelled.GetToken()); err == nil {
		t.Error("the cancelled token works after the restart")
	}
	next, err := clientOf(t, r2, "ann").GetDelegationToken(ctx, &hadooppb.GetDelegationTokenRequestProto{Renewer: proto.String("oozie")})
	if err != nil {
		t.Fatal(err)
	}
	var a, b pb.YARNDelegationTokenIdentifierProto
	proto.Unmarshal(kept.GetToken().GetIdentifier(), &a)
	proto.Unmarshal(next.GetToken().GetIdentifier(), &b)
	if b.GetSequenceNumber() <= a.GetSequenceNumber()+1 {
		t.Errorf("the new token's number %d does not follow the old ones (%d, and a cancelled one)", b.GetSequenceNumber(), a.GetSequenceNumber())
	}
}
