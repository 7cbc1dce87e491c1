package server

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

func containerOf(t testing.TB, s *pb.StartContainerRequestProto) *pb.ContainerIdProto {
	var tok pb.ContainerTokenIdentifierProto
	if err := proto.Unmarshal(s.GetContainerToken().GetIdentifier(), &tok); err != nil {
		t.Fatal(err)
	}
	return tok.GetContainerId()
}

// TestAMRMTokenRefusals: one app cannot register, allocate or finish for
// another. Without a token, with a forged one, with one of another key,
// of an attempt that failed or of an app that ended, the scheduler says
// no, and the app the caller aimed at goes on untouched.
func TestAMRMTokenRefusals(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 16384, 16)
	ac := clientOf(t, r, "alice")
	ctx := context.Background()
	victim := submit(t, ac, "default", 1024)
	other := submit(t, ac, "default", 1024)
	nm.beat()
	starts := nm.waitStarts(2)
	victimStart, otherStart := starts[0], starts[1]
	if containerOf(t, victimStart).GetAppAttemptId().GetApplicationId().GetId() != victim.GetId() {
		victimStart, otherStart = otherStart, victimStart
	}
	victimTok := amToken(t, victimStart)
	var vid pb.AMRMTokenIdentifierProto
	proto.Unmarshal(victimTok.GetIdentifier(), &vid)
	victimAttempt := rpc.AttemptIDString(vid.GetAppAttemptId())

	// The victim's own AM registers: its app is RUNNING.
	if _, err := amClient(t, r, victimStart).RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	forged := proto.Clone(victimTok).(*hadooppb.TokenProto)
	forged.Password = rpc.TokenPassword([]byte("a guessed key"), forged.GetIdentifier())
	otherKey := proto.Clone(&vid).(*pb.AMRMTokenIdentifierProto)
	otherKey.KeyId = proto.Int32(r.amrm.cur.GetKeyId() + 1)
	otherKeyID, _ := proto.Marshal(otherKey)
	noAttempt, _ := proto.Marshal(&pb.AMRMTokenIdentifierProto{KeyId: r.amrm.cur.KeyId})
	signed := func(id []byte) *hadooppb.TokenProto {
		return &hadooppb.TokenProto{Identifier: id, Password: rpc.TokenPassword(r.amrm.cur.GetBytes(), id),
			Kind: proto.String(rpc.AMRMTokenKind), Service: victimTok.Service}
	}
	calls := map[string]func(rpc.ApplicationMasterClient) error{
		"register": func(c rpc.ApplicationMasterClient) error {
			_, err := c.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{})
			return err
		},
		"allocate": func(c rpc.ApplicationMasterClient) error {
			_, err := c.Allocate(ctx, &pb.AllocateRequestProto{Ask: []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)},
				ResourceName: proto.String("*"), Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
				NumContainers: proto.Int32(5)}}})
			return err
		},
		"finish": func(c rpc.ApplicationMasterClient) error {
			_, err := c.FinishApplicationMaster(ctx, &pb.FinishApplicationMasterRequestProto{
				FinalApplicationStatus: pb.FinalApplicationStatusProto_APP_FAILED.Enum(), Diagnostics: proto.String("hijacked")})
			return err
		},
	}
	tests := []struct {
		name         string
		opts         rpc.ClientOptions
		class, where string
	}{
		// The old way: SIMPLE auth, the user named as the victim's attempt.
		{"no token, posing as the attempt", rpc.ClientOptions{User: victimAttempt}, rpc.ClassAccessControl,
			"No AMRMToken found for user " + victimAttempt},
		{"no token, SASL", rpc.ClientOptions{User: victimAttempt, SASL: true}, rpc.ClassAccessControl, "No AMRMToken found"},
		{"forged password", rpc.ClientOptions{Token: forged}, rpc.ClassSasl, "Mismatched response"},
		{"another master key", rpc.ClientOptions{Token: signed(otherKeyID)}, rpc.ClassInvalidToken, "is not this RM's"},
		{"no attempt in the token", rpc.ClientOptions{Token: signed(noAttempt)}, rpc.ClassInvalidToken, "not an AMRMTokenIdentifier"},
		{"a container token", rpc.ClientOptions{Token: victimStart.GetContainerToken()}, rpc.ClassInvalidToken, "not an AMRMTokenIdentifier"},
	}
	for _, tc := range tests {
		for name, call := range calls {
			err := call(amClientWith(t, r, tc.opts))
			if err == nil || (tc.class != "" && !rpc.IsClass(err, tc.class)) || !strings.Contains(err.Error(), tc.where) {
				t.Errorf("%s, %s: err %v; want %s naming %q", tc.name, name, err, tc.class, tc.where)
			}
		}
	}
	rep := report(t, ac, victim)
	if rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_RUNNING {
		t.Fatalf("after the refused calls the victim is %v (%s)", rep.GetYarnApplicationState(), rep.GetDiagnostics())
	}
	r.mu.Lock()
	asked := len(r.apps[rm.AppID(victim.GetId())].asks) + len(r.apps[rm.AppID(other.GetId())].asks)
	r.mu.Unlock()
	if asked != 0 {
		t.Errorf("the refused allocates left %d asks", asked)
	}

	// The other app's own token finishes the other app, never the victim.
	if err := calls["register"](amClient(t, r, otherStart)); err != nil {
		t.Fatal(err)
	}
	if err := calls["finish"](amClient(t, r, otherStart)); err != nil {
		t.Fatal(err)
	}
	if st := report(t, ac, other).GetFinalApplicationStatus(); st != pb.FinalApplicationStatusProto_APP_FAILED {
		t.Errorf("the other app, finished with its own token: %v", st)
	}
	if st := report(t, ac, victim).GetYarnApplicationState(); st != pb.YarnApplicationStateProto_RUNNING {
		t.Errorf("the victim, after the other app finished: %v", st)
	}
	// An ended app's token opens no new connection.
	if err := calls["allocate"](amClient(t, r, otherStart)); !rpc.IsClass(err, rpc.ClassInvalidToken) || !strings.Contains(err.Error(), "not a running attempt") {
		t.Errorf("the ended app's token: %v", err)
	}

	// The victim's AM dies: its first attempt's token is dead with it, and
	// attempt 2 gets a token of its own.
	nm.finish(containerOf(t, victimStart), 1)
	nm.beat()
	nm.beat()
	second := nm.waitStarts(3)[2]
	if err := calls["register"](amClient(t, r, victimStart)); !rpc.IsClass(err, rpc.ClassInvalidToken) || !strings.Contains(err.Error(), "Password not found for ApplicationAttempt "+victimAttempt) {
		t.Errorf("attempt 1's token after it failed: %v", err)
	}
	if err := calls["register"](amClient(t, r, second)); err != nil {
		t.Errorf("attempt 2 with its own token: %v", err)
	}
}

// The submitter's own tokens (an HDFS delegation token, say) reach the AM
// beside its AMRM token; tokens that are not Hadoop credentials are
// refused at submission, naming why, and no app is made.
func TestSubmittedCredentials(t *testing.T) {
	r := startRM(t)
	nm := startNM(t, r.Addr("tracker"), 8192, 8)
	ac := clientOf(t, r, "dora")
	ctx := context.Background()
	hdfs := &hadooppb.TokenProto{Identifier: []byte("dt"), Password: []byte("pw"), Kind: proto.String("HDFS_DELEGATION_TOKEN"),
		Service: proto.String("127.0.0.1:8020")}
	submitWith := func(tokens []byte) (*pb.ApplicationIdProto, error) {
		return submitLaunch(t, ac, "default", 1024, &pb.ContainerLaunchContextProto{Command: []string{"true"}, Tokens: tokens})
	}
	bad, err := submitWith([]byte("not credentials"))
	if !rpc.IsClass(err, rpc.ClassYarnException) || !strings.Contains(err.Error(), "the AM container's tokens are not Hadoop credentials: credentials: not Hadoop token storage") {
		t.Errorf("garbage tokens: %v", err)
	}
	if _, err := ac.GetApplicationReport(ctx, &pb.GetApplicationReportRequestProto{ApplicationId: bad}); !rpc.IsClass(err, rpc.ClassApplicationNotFound) {
		t.Errorf("the refused app exists: %v", err)
	}
	creds := &rpc.Credentials{}
	creds.Add(hdfs.GetService(), hdfs)
	if _, err := submitWith(creds.Marshal()); err != nil {
		t.Fatal(err)
	}
	nm.beat()
	got, err := rpc.ParseCredentials(nm.waitStarts(1)[0].GetContainerLaunchContext().GetTokens())
	if err != nil || len(got.Tokens) != 2 || string(got.Find("HDFS_DELEGATION_TOKEN").GetPassword()) != "pw" || got.Find(rpc.AMRMTokenKind) == nil {
		t.Fatalf("the AM's credentials: %+v %v", got, err)
	}
}

// TestAMRMKeyRolls: a rolled key reaches each AM in its next allocate
// reply; both keys open connections until the new one is activated, after
// which the old tokens open none (connections already open go on); the
// keys outlive a restart.
func TestAMRMKeyRolls(t *testing.T) {
	conf := []string{"yarn.resourcemanager.recovery.enabled=true", "loom.store.dir=" + t.TempDir(),
		"yarn.am.liveness-monitor.expiry-interval-ms=1000", "yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs=60"}
	ctx := context.Background()
	r1 := startRM(t, conf...)
	nm := startNM(t, r1.Addr("tracker"), 8192, 8)
	submit(t, clientOf(t, r1, "erin"), "default", 1024)
	nm.beat()
	start := nm.waitStarts(1)[0]
	old := amToken(t, start)
	am := amClient(t, r1, start)
	if _, err := am.RegisterApplicationMaster(ctx, &pb.RegisterApplicationMasterRequestProto{}); err != nil {
		t.Fatal(err)
	}
	respID := int32(0)
	allocate := func(c rpc.ApplicationMasterClient) *hadooppb.TokenProto {
		t.Helper()
		resp, err := c.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(respID)})
		if err != nil {
			t.Fatal(err)
		}
		respID = resp.GetResponseId()
		return resp.GetAmRmToken()
	}
	opens := func(r *RM, tok *hadooppb.TokenProto) error {
		c, err := rpc.Dial(ctx, r.Addr("scheduler"), rpc.ClientOptions{Token: tok})
		if err == nil {
			c.Close()
		}
		return err
	}
	if tok := allocate(am); tok != nil {
		t.Errorf("a token before any roll: %v", tok)
	}
	t0 := r1.amrm.rolled
	// Not yet time: nothing happens.
	if err := rollAMRM(r1, t0.Add(59*time.Second)); err != nil || r1.amrm.next != nil {
		t.Fatalf("a roll before the interval: %v %v", r1.amrm.next, err)
	}
	if err := rollAMRM(r1, t0.Add(60*time.Second)); err != nil {
		t.Fatal(err)
	}
	rolled := allocate(am)
	oldID, _ := rpc.ParseAMRMIdentifier(old.GetIdentifier())
	newID, err := rpc.ParseAMRMIdentifier(rolled.GetIdentifier())
	if err != nil || newID.GetKeyId() == oldID.GetKeyId() || rpc.AttemptIDString(newID.GetAppAttemptId()) != rpc.AttemptIDString(oldID.GetAppAttemptId()) {
		t.Fatalf("after the roll the AM got %v (%v), want a token for the same attempt under a new key", newID, err)
	}
	for name, tok := range map[string]*hadooppb.TokenProto{"old": old, "rolled": rolled} {
		if err := opens(r1, tok); err != nil {
			t.Errorf("before activation the %s token: %v", name, err)
		}
	}
	onNew := amClientWith(t, r1, rpc.ClientOptions{Token: rolled})
	if tok := allocate(onNew); tok != nil {
		t.Errorf("a connection on the new key was sent another token")
	}
	// Activation waits 1.5 AM expiries.
	rollAMRM(r1, t0.Add(61*time.Second))
	if r1.amrm.next == nil {
		t.Fatal("activated before 1.5 AM expiries")
	}
	if err := rollAMRM(r1, t0.Add(61*time.Second+500*time.Millisecond)); err != nil || r1.amrm.next != nil {
		t.Fatalf("not activated: %v", err)
	}
	if err := opens(r1, old); !rpc.IsClass(err, rpc.ClassInvalidToken) || !strings.Contains(err.Error(), "is not this RM's") {
		t.Errorf("the retired key's token: %v", err)
	}
	if err := opens(r1, rolled); err != nil {
		t.Errorf("the rolled token after activation: %v", err)
	}
	if tok := allocate(am); tok != nil { // the old connection goes on
		t.Errorf("after activation the old connection was sent %v", tok)
	}
	stop, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r1.Stop(stop)
	r2 := startRM(t, append(conf, "yarn.resourcemanager.scheduler.address="+r1.Addr("scheduler"))...)
	if err := opens(r2, rolled); err != nil {
		t.Errorf("after a restart the rolled token: %v", err)
	}
	if err := opens(r2, old); err == nil {
		t.Error("after a restart the retired token opens a connection")
	}
}

// rollAMRM rolls r's AMRM key as its monitor would at now.
func rollAMRM(r *RM, now time.Time) error {
	_, err := r.roll(&r.amrm, now)
	return err
}

// Container tokens are signed after the RM's lock is let go; an attempt's
// calls still run one at a time, so replies sent again while others are
// signed carry the same, valid tokens (run with -race).
func TestAllocateSignsTokensOutsideTheLock(t *testing.T) {
	r := startRM(t)
	nm, am := registeredAMOn(t, r, "ivy")
	ctx := context.Background()
	ask := &pb.ResourceRequestProto{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(4)}
	first, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: []*pb.ResourceRequestProto{ask}})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	// Eight calls with the same response id at once: one is served, the
	// others are sent its reply again.
	replies := make([]*pb.AllocateResponseProto, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i], errs[i] = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(first.GetResponseId())})
		}()
	}
	wg.Wait()
	r.mu.Lock()
	key := r.tokenKey.GetBytes()
	r.mu.Unlock()
	for i, resp := range replies {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if resp.GetResponseId() != first.GetResponseId()+1 || len(resp.GetAllocatedContainers()) != 4 {
			t.Fatalf("call %d: response id %d with %d containers, want %d with 4", i, resp.GetResponseId(), len(resp.GetAllocatedContainers()), first.GetResponseId()+1)
		}
		for j, ct := range resp.GetAllocatedContainers() {
			if ct.GetId().GetId() != replies[0].GetAllocatedContainers()[j].GetId().GetId() {
				t.Errorf("call %d got container %d where call 0 got %d", i, ct.GetId().GetId(), replies[0].GetAllocatedContainers()[j].GetId().GetId())
			}
			tok := ct.GetContainerToken()
			id := &pb.ContainerTokenIdentifierProto{}
			if err := proto.Unmarshal(tok.GetIdentifier(), id); err != nil || !rpc.TokenPasswordOK(key, tok.GetIdentifier(), tok.GetPassword()) ||
				id.GetContainerId().GetId() != ct.GetId().GetId() || tok.GetKind() != "ContainerToken" {
				t.Errorf("call %d, container %d: token %v does not check (%v)", i, ct.GetId().GetId(), tok, err)
			}
		}
	}
}

// tokenAttempt remembers what it parsed: asked again and again, for
// tokens of different attempts, past the number it keeps, it names the
// attempt each token's identifier names, and a token it cannot parse is
// refused every time.
func TestTokenAttemptRemembersEachToken(t *testing.T) {
	ident := func(app int32, attempt int32) []byte {
		b, err := proto.Marshal(&pb.AMRMTokenIdentifierProto{KeyId: proto.Int32(7), AppAttemptId: &pb.ApplicationAttemptIdProto{
			ApplicationId: &pb.ApplicationIdProto{Id: proto.Int32(app), ClusterTimestamp: proto.Int64(42)}, AttemptId: proto.Int32(attempt)}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ask := func(token []byte) (*pb.ApplicationAttemptIdProto, error) {
		return tokenAttempt(rpc.WithCall(context.Background(), &rpc.CallInfo{Token: token}))
	}
	for round := range 3 {
		for app := range int32(maxTokenAttempts + 10) {
			attempt := app%3 + 1
			at, err := ask(ident(app, attempt))
			if err != nil {
				t.Fatalf("round %d, app %d: %v", round, app, err)
			}
			if at.GetApplicationId().GetId() != app || at.GetAttemptId() != attempt || at.GetApplicationId().GetClusterTimestamp() != 42 {
				t.Fatalf("round %d: the token of app %d attempt %d names %s", round, app, attempt, rpc.AttemptIDString(at))
			}
		}
		if _, err := ask([]byte("not an identifier")); err == nil || !strings.Contains(err.Error(), "the connection's token") {
			t.Fatalf("round %d: an unparseable token gave %v", round, err)
		}
	}
	if _, err := tokenAttempt(context.Background()); err == nil || !strings.Contains(err.Error(), "No AMRMToken found") {
		t.Fatalf("a call without a token: %v", err)
	}
}

// BenchmarkTokenAttempt: the attempt of an allocate call's token,
// remembered (what tokenAttempt does) against parsed on every call (what
// it did before).
func BenchmarkTokenAttempt(b *testing.B) {
	id, _ := proto.Marshal(&pb.AMRMTokenIdentifierProto{KeyId: proto.Int32(7), AppAttemptId: &pb.ApplicationAttemptIdProto{
		ApplicationId: &pb.ApplicationIdProto{Id: proto.Int32(12), ClusterTimestamp: proto.Int64(1795947657583)}, AttemptId: proto.Int32(1)}})
	ctx := rpc.WithCall(context.Background(), &rpc.CallInfo{Token: id})
	b.Run("remembered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tokenAttempt(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parsed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := rpc.ParseAMRMIdentifier(id); err != nil {
				b.Fatal(err)
			}
		}
	})
}
