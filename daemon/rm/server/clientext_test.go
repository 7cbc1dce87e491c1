package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// asUser is a call context for user, for calling handlers directly.
func asUser(user string) context.Context {
	return rpc.WithCall(context.Background(), &rpc.CallInfo{User: user})
}

// wantErr checks err against a want of "" (no error) or "Class: part of
// the message".
func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("%s: %v, want no error", what, err)
		}
		return
	}
	class, msg, _ := strings.Cut(want, ": ")
	if !rpc.IsClass(err, class) || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %v, want %s", what, err, want)
	}
}

// runningApp starts an RM (with conf) and a node, and submits an app of
// ann's whose AM container the node has started. The app's AM container
// lets ben MODIFY_APP.
func runningApp(t *testing.T, conf ...string) (*RM, *testNM, *pb.ApplicationIdProto, *pb.ContainerIdProto) {
	t.Helper()
	r := startRM(t, conf...)
	nm := startNM(t, r.Addr("tracker"), 16384, 16)
	id, err := submitLaunch(t, clientOf(t, r, "ann"), "default", 1024, &pb.ContainerLaunchContextProto{Command: []string{"sleep", "60"},
		Application_ACLs: []*pb.ApplicationACLMapProto{{AccessType: pb.ApplicationAccessTypeProto_APPACCESS_MODIFY_APP.Enum(), Acl: proto.String("ben")}}})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	return r, nm, id, containerOf(t, nm.waitStarts(1)[0])
}

func TestAttemptAndContainerReports(t *testing.T) {
	r, _, id, amCont := runningApp(t)
	ac := clientOf(t, r, "ann")
	ctx := context.Background()
	attempt := func(app *pb.ApplicationIdProto, n int32) *pb.ApplicationAttemptIdProto {
		return &pb.ApplicationAttemptIdProto{ApplicationId: app, AttemptId: proto.Int32(n)}
	}
	other := &pb.ApplicationIdProto{Id: proto.Int32(77), ClusterTimestamp: id.ClusterTimestamp}
	for _, tc := range []struct {
		name    string
		attempt *pb.ApplicationAttemptIdProto
		want    string
	}{
		{"the current attempt", attempt(id, 1), ""},
		{"no such attempt", attempt(id, 2), rpc.ClassApplicationAttemptNotFound + ": ApplicationAttempt with id '" + rpc.AttemptIDString(attempt(id, 2)) + "' doesn't exist in RM."},
		{"attempt 0", attempt(id, 0), rpc.ClassApplicationAttemptNotFound + ": doesn't exist in RM."},
		{"no such app", attempt(other, 1), rpc.ClassApplicationNotFound + ": Application with id '" + rpc.AppIDString(other) + "' doesn't exist in RM."},
	} {
		resp, err := ac.GetApplicationAttemptReport(ctx, &pb.GetApplicationAttemptReportRequestProto{ApplicationAttemptId: tc.attempt})
		wantErr(t, "attempt report: "+tc.name, err, tc.want)
		if err == nil {
			rep := resp.GetApplicationAttemptReport()
			if !proto.Equal(rep.GetApplicationAttemptId(), tc.attempt) || !proto.Equal(rep.GetAmContainerId(), amCont) || rep.GetStartTime() == 0 {
				t.Errorf("attempt report %v: want attempt %v with AM container %v and a start time", rep, tc.attempt, amCont)
			}
		}
	}

	container := func(att *pb.ApplicationAttemptIdProto, n int64) *pb.ContainerIdProto {
		return &pb.ContainerIdProto{AppId: att.GetApplicationId(), AppAttemptId: att, Id: proto.Int64(n)}
	}
	for _, tc := range []struct {
		name string
		cid  *pb.ContainerIdProto
		want string
	}{
		{"the AM container", amCont, ""},
		{"no such container", container(attempt(id, 1), 99), rpc.ClassContainerNotFound + ": Container with id '" + rpc.ContainerIDString(container(attempt(id, 1), 99)) + "' doesn't exist in RM."},
		{"no such attempt", container(attempt(id, 3), 1), rpc.ClassApplicationAttemptNotFound + ": doesn't exist in RM."},
		{"no such app", container(attempt(other, 1), 1), rpc.ClassApplicationNotFound + ": doesn't exist in RM."},
	} {
		resp, err := ac.GetContainerReport(ctx, &pb.GetContainerReportRequestProto{ContainerId: tc.cid})
		wantErr(t, "container report: "+tc.name, err, tc.want)
		if err == nil {
			rep := resp.GetContainerReport()
			if !proto.Equal(rep.GetContainerId(), amCont) || rep.GetContainerState() == pb.ContainerStateProto_C_COMPLETE ||
				rep.GetResource().GetMemory() != 1024 || rep.GetNodeHttpAddress() == "" {
				t.Errorf("container report %v: want the live 1024 MB AM container %v with its node", rep, amCont)
			}
		}
	}
}

func TestFailApplicationAttempt(t *testing.T) {
	for _, tc := range []struct {
		name, conf, user string
		want             string
	}{
		{"ACLs off: anyone", "yarn.acl.enable=false", "mallory", ""},
		{"owner", "yarn.acl.enable=true", "ann", ""},
		{"admin", "yarn.acl.enable=true", "root", ""},
		{"MODIFY_APP ACL", "yarn.acl.enable=true", "ben", ""},
		{"stranger", "yarn.acl.enable=true", "mallory", rpc.ClassAccessControl + ": User mallory cannot perform operation MODIFY_APP on "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, nm, id, _ := runningApp(t, tc.conf, "yarn.admin.acl=root")
			first := &pb.ApplicationAttemptIdProto{ApplicationId: id, AttemptId: proto.Int32(1)}
			_, err := clientService{r}.FailApplicationAttempt(asUser(tc.user), &pb.FailApplicationAttemptRequestProto{ApplicationAttemptId: first})
			wantErr(t, "fail", err, tc.want)
			ac := clientOf(t, r, "ann")
			atts, err := ac.GetApplicationAttempts(context.Background(), &pb.GetApplicationAttemptsRequestProto{ApplicationId: id})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" {
				if n := len(atts.GetApplicationAttempts()); n != 1 {
					t.Errorf("a refused fail left %d attempts, want 1", n)
				}
				return
			}
			got := atts.GetApplicationAttempts()
			if len(got) != 2 || got[0].GetYarnApplicationAttemptState() != pb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED ||
				!strings.Contains(got[0].GetDiagnostics(), "Attempt failed by user "+tc.user) {
				t.Fatalf("attempts after the fail: %v, want attempt 1 FAILED by %s and a second", got, tc.user)
			}
			if rep := report(t, ac, id); rep.GetCurrentApplicationAttemptId().GetAttemptId() != 2 || rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_ACCEPTED {
				t.Errorf("app after the fail: attempt %d, %v; want attempt 2, ACCEPTED", rep.GetCurrentApplicationAttemptId().GetAttemptId(), rep.GetYarnApplicationState())
			}
			// The node is told to stop the failed attempt's AM.
			if clean := nm.beat().GetContainersToCleanup(); len(clean) != 1 {
				t.Errorf("node told to clean up %v, want the first AM container", clean)
			}
			// An attempt that has ended: nothing happens, as in YARN.
			if _, err := (clientService{r}).FailApplicationAttempt(asUser(tc.user), &pb.FailApplicationAttemptRequestProto{ApplicationAttemptId: first}); err != nil {
				t.Errorf("failing the ended attempt again: %v", err)
			}
			// The second failure counts too: max-attempts 2 fails the app.
			second := &pb.ApplicationAttemptIdProto{ApplicationId: id, AttemptId: proto.Int32(2)}
			if _, err := (clientService{r}).FailApplicationAttempt(asUser(tc.user), &pb.FailApplicationAttemptRequestProto{ApplicationAttemptId: second}); err != nil {
				t.Fatal(err)
			}
			if rep := report(t, ac, id); rep.GetYarnApplicationState() != pb.YarnApplicationStateProto_FAILED {
				t.Errorf("app after both attempts failed: %v, want FAILED", rep.GetYarnApplicationState())
			}
			// A finished app: nothing to do.
			if _, err := (clientService{r}).FailApplicationAttempt(asUser(tc.user), &pb.FailApplicationAttemptRequestProto{ApplicationAttemptId: second}); err != nil {
				t.Errorf("failing an attempt of a finished app: %v", err)
			}
		})
	}
	r, _, id, _ := runningApp(t)
	for _, tc := range []struct {
		name    string
		attempt *pb.ApplicationAttemptIdProto
		want    string
	}{
		{"no such attempt", &pb.ApplicationAttemptIdProto{ApplicationId: id, AttemptId: proto.Int32(5)}, rpc.ClassApplicationAttemptNotFound + ": doesn't exist in RM."},
		{"no such app", &pb.ApplicationAttemptIdProto{ApplicationId: &pb.ApplicationIdProto{Id: proto.Int32(9), ClusterTimestamp: proto.Int64(1)},
			AttemptId: proto.Int32(1)}, rpc.ClassApplicationNotFound + ": doesn't exist in RM."},
	} {
		_, err := clientService{r}.FailApplicationAttempt(asUser("ann"), &pb.FailApplicationAttemptRequestProto{ApplicationAttemptId: tc.attempt})
		wantErr(t, tc.name, err, tc.want)
	}
}

func TestQueueUserAcls(t *testing.T) {
	both := []pb.QueueACLProto{pb.QueueACLProto_QACL_SUBMIT_APPLICATIONS, pb.QueueACLProto_QACL_ADMINISTER_QUEUE}
	for _, tc := range []struct {
		name, conf, user string
		want             []pb.QueueACLProto
	}{
		{"ACLs off", "yarn.acl.enable=false", "mallory", both},
		{"admin", "yarn.acl.enable=true", "root", both},
		{"not an admin", "yarn.acl.enable=true", "mallory", both[:1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRM(t, tc.conf, "yarn.admin.acl=root")
			resp, err := clientOf(t, r, tc.user).GetQueueUserAcls(context.Background(), &pb.GetQueueUserAclsInfoRequestProto{})
			if err != nil {
				t.Fatal(err)
			}
			var queues []string
			for _, q := range resp.GetQueueUserAcls() {
				queues = append(queues, q.GetQueueName())
				if !slices.Equal(q.GetUserAcls(), tc.want) {
					t.Errorf("%s: ACLs %v, want %v", q.GetQueueName(), q.GetUserAcls(), tc.want)
				}
			}
			if want := []string{"root", "default", "etl"}; !slices.Equal(queues, want) {
				t.Errorf("queues %v, want %v", queues, want)
			}
		})
	}
}

func TestUpdateApplicationPriority(t *testing.T) {
	r, _, id, _ := runningApp(t, "yarn.acl.enable=true", "yarn.admin.acl=root")
	ac := clientOf(t, r, "ann")
	for _, tc := range []struct {
		name, user string
		priority   int32
		want       int32
		err        string
	}{
		{"above the cluster maximum (0 by default): capped", "ann", 5, 0, ""},
		{"below it", "ann", -3, -3, ""},
		{"by the MODIFY_APP ACL", "ben", -1, -1, ""},
		{"stranger", "mallory", -2, -1, rpc.ClassAccessControl + ": User mallory cannot perform operation MODIFY_APP"},
	} {
		resp, err := clientService{r}.UpdateApplicationPriority(asUser(tc.user), &pb.UpdateApplicationPriorityRequestProto{ApplicationId: id,
			ApplicationPriority: &pb.PriorityProto{Priority: proto.Int32(tc.priority)}})
		wantErr(t, tc.name, err, tc.err)
		if err == nil && resp.GetApplicationPriority().GetPriority() != tc.want {
			t.Errorf("%s: answered priority %d, want %d", tc.name, resp.GetApplicationPriority().GetPriority(), tc.want)
		}
		if got := report(t, ac, id).GetPriority().GetPriority(); got != tc.want {
			t.Errorf("%s: report says priority %d, want %d", tc.name, got, tc.want)
		}
	}
	ac.ForceKillApplication(context.Background(), &pb.KillApplicationRequestProto{ApplicationId: id})
	resp, err := ac.UpdateApplicationPriority(context.Background(), &pb.UpdateApplicationPriorityRequestProto{ApplicationId: id,
		ApplicationPriority: &pb.PriorityProto{Priority: proto.Int32(-5)}})
	if err != nil || resp.GetApplicationPriority().GetPriority() != -1 {
		t.Errorf("a finished app's priority: %v, %v; want it unchanged (-1), as YARN", resp, err)
	}

	// With yarn.cluster.max-application-priority=3, a submission at 5 and
	// an update to 10 are capped at 3; 2 is taken as it is.
	r3 := startRM(t, "yarn.cluster.max-application-priority=3")
	ac3 := clientOf(t, r3, "ann")
	id3, err := submitContext(t, ac3, &pb.ApplicationSubmissionContextProto{Priority: &pb.PriorityProto{Priority: proto.Int32(5)},
		Resource: &pb.ResourceProto{Memory: proto.Int64(512), VirtualCores: proto.Int32(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := report(t, ac3, id3).GetPriority().GetPriority(); got != 3 {
		t.Errorf("submitted at 5 under a maximum of 3: priority %d", got)
	}
	for _, tc := range []struct{ set, want int32 }{{10, 3}, {2, 2}} {
		resp, err := ac3.UpdateApplicationPriority(context.Background(), &pb.UpdateApplicationPriorityRequestProto{ApplicationId: id3,
			ApplicationPriority: &pb.PriorityProto{Priority: proto.Int32(tc.set)}})
		if err != nil || resp.GetApplicationPriority().GetPriority() != tc.want {
			t.Errorf("update to %d: %v %v, want %d", tc.set, resp, err, tc.want)
		}
	}
}

func TestSetApplicationTags(t *testing.T) {
	r, _, id, _ := runningApp(t, "yarn.acl.enable=true", "yarn.admin.acl=root")
	ac := clientOf(t, r, "ann")
	many := make([]string, 11)
	for i := range many {
		many[i] = string(rune('a' + i))
	}
	for _, tc := range []struct {
		name, user string
		tags, want []string
		err        string
	}{
		{"normalised", "ann", []string{"Nightly", " tpch ", "nightly", ""}, []string{"nightly", "tpch"}, ""},
		{"too many", "ann", many, []string{"nightly", "tpch"}, rpc.ClassYarnException + ": Too many applicationTags, a maximum of only 10 are allowed!"},
		{"not ASCII", "ann", []string{"café"}, []string{"nightly", "tpch"}, rpc.ClassYarnException + ": A tag can only have ASCII characters! Invalid tag - café"},
		{"too long", "ann", []string{strings.Repeat("x", 101)}, []string{"nightly", "tpch"}, rpc.ClassYarnException + ": is too long, maximum allowed length of a tag is 100"},
		{"stranger", "mallory", []string{"x"}, []string{"nightly", "tpch"}, rpc.ClassAccessControl + ": User mallory cannot perform operation MODIFY_APP"},
		{"cleared by the admin", "root", nil, nil, ""},
	} {
		resp, err := clientService{r}.SetApplicationTags(asUser(tc.user), &pb.SetApplicationTagsRequestProto{ApplicationId: id, ApplicationTags: tc.tags})
		wantErr(t, tc.name, err, tc.err)
		if err == nil && !slices.Equal(resp.GetApplicationTags(), tc.want) {
			t.Errorf("%s: answered %v, want %v", tc.name, resp.GetApplicationTags(), tc.want)
		}
		if got := report(t, ac, id).GetApplicationTags(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: report's tags %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestUpdateApplicationTimeouts(t *testing.T) {
	r, _, id, _ := runningApp(t)
	lifetime := pb.ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME
	in := func(d time.Duration) string { return time.Now().Add(d).Format(iso8601) }
	for _, tc := range []struct {
		name, expiry string
		want         string
	}{
		{"in an hour", in(time.Hour), ""},
		{"in the past", in(-time.Hour), rpc.ClassYarnException + ": Expire time is less than current time, current-time="},
		{"not ISO 8601", "tomorrow", rpc.ClassYarnException + ": Expire time is not in ISO8601 format. ISO8601 supported format is yyyy-MM-dd'T'HH:mm:ss.SSSZ"},
	} {
		resp, err := clientService{r}.UpdateApplicationTimeouts(asUser("ann"), &pb.UpdateApplicationTimeoutsRequestProto{ApplicationId: id,
			ApplicationTimeouts: []*pb.ApplicationUpdateTimeoutMapProto{{ApplicationTimeoutType: lifetime.Enum(), ExpireTime: proto.String(tc.expiry)}}})
		wantErr(t, tc.name, err, tc.want)
		if err == nil && resp.GetApplicationTimeouts()[0].GetExpireTime() != tc.expiry {
			t.Errorf("%s: answered %v, want the expiry %s", tc.name, resp, tc.expiry)
		}
	}
	_, err := clientService{r}.UpdateApplicationTimeouts(asUser("ann"), &pb.UpdateApplicationTimeoutsRequestProto{ApplicationId: id})
	wantErr(t, "none", err, rpc.ClassYarnException+": At least one ApplicationTimeoutType should be configured for updating timeouts.")
	// Recorded as the app's lifetime: about an hour from now.
	r.mu.Lock()
	ts := r.appTimeouts(r.apps[1], time.Now())
	r.mu.Unlock()
	if left := ts[0].GetApplicationTimeout().GetRemainingTime(); len(ts) != 1 || left < 3590 || left > 3600 {
		t.Errorf("app timeouts %v, want LIFETIME with about 3600 s left", ts)
	}
}

func TestMoveApplicationAcrossQueues(t *testing.T) {
	r, _, id, _ := runningApp(t, "yarn.acl.enable=true", "yarn.admin.acl=root")
	for _, tc := range []struct {
		name, user, queue string
		want              string
	}{
		{"same queue", "ann", "root.default", ""},
		{"no such queue", "ann", "gold", rpc.ClassAccessControl + ": User ann cannot submit applications to target queue or the target queue doesn't exist: gold while moving " + rpc.AppIDString(id)},
		{"stranger", "mallory", "etl", rpc.ClassAccessControl + ": User mallory cannot perform operation MODIFY_APP"},
		{"another queue", "ann", "root.etl", ""},
	} {
		_, err := clientService{r}.MoveApplicationAcrossQueues(asUser(tc.user), &pb.MoveApplicationAcrossQueuesRequestProto{ApplicationId: id, TargetQueue: proto.String(tc.queue)})
		wantErr(t, tc.name, err, tc.want)
	}
	// Moved: the report names etl, the scheduler schedules it there (the
	// core's view of its queue: etl's override of P(Altruism) reaches it).
	rep, err := clientService{r}.GetApplicationReport(asUser("ann"), &pb.GetApplicationReportRequestProto{ApplicationId: id})
	if err != nil || rep.GetApplicationReport().GetQueue() != "etl" {
		t.Errorf("after the move: queue %q, %v", rep.GetApplicationReport().GetQueue(), err)
	}
	if err := (webBackend{clientService{r}}).SetAltruism(asUser("root"), webui.AltruismSet{Queue: "etl", P: 0.25}, "test"); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	p, err := r.core.PAltruismOf(r.apps[1].id)
	r.mu.Unlock()
	if err != nil || p != 0.25 {
		t.Errorf("P(Altruism) of the moved app %v, %v; want etl's 0.25", p, err)
	}
	clientService{r}.ForceKillApplication(asUser("ann"), &pb.KillApplicationRequestProto{ApplicationId: id})
	_, err = clientService{r}.MoveApplicationAcrossQueues(asUser("ann"), &pb.MoveApplicationAcrossQueuesRequestProto{ApplicationId: id, TargetQueue: proto.String("default")})
	wantErr(t, "killed app", err, rpc.ClassYarnException+": App in KILLED state cannot be moved.")
}

// TestUnsupportedAndEmpty: what Loom cannot do is refused with YARN's
// classes and messages; labels and attributes are YARN's empty answers.
func TestUnsupportedAndEmpty(t *testing.T) {
	r, nm, id, amCont := runningApp(t)
	ac := clientOf(t, r, "ann")
	ctx := context.Background()
	const noRes = rpc.ClassYarnException + ": Reservation is not enabled. Please enable & try again (yarn.resourcemanager.reservation-system.enable is false)"
	absent := &pb.ContainerIdProto{AppAttemptId: amCont.GetAppAttemptId(), Id: proto.Int64(55)}
	for _, tc := range []struct {
		name string
		call func() (proto.Message, error)
		want string
	}{
		{"getNewReservation", func() (proto.Message, error) {
			return ac.GetNewReservation(ctx, &pb.GetNewReservationRequestProto{})
		}, noRes},
		{"submitReservation", func() (proto.Message, error) {
			return ac.SubmitReservation(ctx, &pb.ReservationSubmissionRequestProto{Queue: proto.String("default")})
		}, noRes},
		{"updateReservation", func() (proto.Message, error) {
			return ac.UpdateReservation(ctx, &pb.ReservationUpdateRequestProto{})
		}, noRes},
		{"deleteReservation", func() (proto.Message, error) {
			return ac.DeleteReservation(ctx, &pb.ReservationDeleteRequestProto{})
		}, noRes},
		{"listReservations", func() (proto.Message, error) {
			return ac.ListReservations(ctx, &pb.ReservationListRequestProto{})
		}, noRes},
		{"signalToContainer: running", func() (proto.Message, error) {
			return ac.SignalToContainer(ctx, &pb.SignalContainerRequestProto{ContainerId: amCont, Command: pb.SignalContainerCommandProto_OUTPUT_THREAD_DUMP.Enum()})
		}, ""},
		{"signalToContainer: unknown command", func() (proto.Message, error) {
			return ac.SignalToContainer(ctx, &pb.SignalContainerRequestProto{ContainerId: amCont, Command: pb.SignalContainerCommandProto(99).Enum()})
		}, rpc.ClassYarnException + ": Invalid signal command 99 for container " + rpc.ContainerIDString(amCont)},
		{"signalToContainer: absent", func() (proto.Message, error) {
			return ac.SignalToContainer(ctx, &pb.SignalContainerRequestProto{ContainerId: absent, Command: pb.SignalContainerCommandProto_GRACEFUL_SHUTDOWN.Enum()})
		}, rpc.ClassYarnException + ": Trying to signal an absent container " + rpc.ContainerIDString(absent)},
		{"getNodeToLabels", func() (proto.Message, error) { return ac.GetNodeToLabels(ctx, &pb.GetNodesToLabelsRequestProto{}) }, ""},
		{"getLabelsToNodes", func() (proto.Message, error) {
			return ac.GetLabelsToNodes(ctx, &pb.GetLabelsToNodesRequestProto{NodeLabels: []string{"gpu"}})
		}, ""},
		{"getClusterNodeLabels", func() (proto.Message, error) {
			return ac.GetClusterNodeLabels(ctx, &pb.GetClusterNodeLabelsRequestProto{})
		}, ""},
		{"getClusterNodeAttributes", func() (proto.Message, error) {
			return ac.GetClusterNodeAttributes(ctx, &pb.GetClusterNodeAttributesRequestProto{})
		}, ""},
		{"getAttributesToNodes", func() (proto.Message, error) {
			return ac.GetAttributesToNodes(ctx, &pb.GetAttributesToNodesRequestProto{})
		}, ""},
		{"getNodesToAttributes", func() (proto.Message, error) {
			return ac.GetNodesToAttributes(ctx, &pb.GetNodesToAttributesRequestProto{Hostnames: []string{"127.0.0.1"}})
		}, ""},
	} {
		resp, err := tc.call()
		wantErr(t, tc.name, err, tc.want)
		if err == nil && proto.Size(resp) != 0 {
			t.Errorf("%s: %v, want an empty answer", tc.name, resp)
		}
	}
	// The signal goes to the container's node with its next heartbeat,
	// once.
	if sigs := nm.beat().GetContainersToSignal(); len(sigs) != 1 || !proto.Equal(sigs[0].GetContainerId(), amCont) ||
		sigs[0].GetCommand() != pb.SignalContainerCommandProto_OUTPUT_THREAD_DUMP {
		t.Errorf("the node was sent %v", sigs)
	}
	if sigs := nm.beat().GetContainersToSignal(); len(sigs) != 0 {
		t.Errorf("sent again: %v", sigs)
	}
	_ = id
}

// TestLifetimeKillsTheApp: an app submitted with a LIFETIME of 1 s is
// killed by the RM once it is over, with YARN's diagnostic; one whose
// lifetime is pushed out by updateApplicationTimeouts lives on.
func TestLifetimeKillsTheApp(t *testing.T) {
	r := startRM(t)
	startNM(t, r.Addr("tracker"), 8192, 8)
	ac := clientOf(t, r, "ann")
	ctx := context.Background()
	submitWithLifetime := func(secs int64) *pb.ApplicationIdProto {
		na, err := ac.GetNewApplication(ctx, &pb.GetNewApplicationRequestProto{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ac.SubmitApplication(ctx, &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
			ApplicationId: na.GetApplicationId(), ApplicationName: proto.String("short-lived"), Queue: proto.String("default"),
			Resource:        &pb.ResourceProto{Memory: proto.Int64(512), VirtualCores: proto.Int32(1)},
			AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{"sleep", "60"}},
			ApplicationTimeouts: []*pb.ApplicationTimeoutMapProto{{ApplicationTimeoutType: pb.ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME.Enum(),
				Timeout: proto.Int64(secs)}}}}); err != nil {
			t.Fatal(err)
		}
		return na.GetApplicationId()
	}
	short, long := submitWithLifetime(1), submitWithLifetime(1)
	if _, err := ac.UpdateApplicationTimeouts(ctx, &pb.UpdateApplicationTimeoutsRequestProto{ApplicationId: long,
		ApplicationTimeouts: []*pb.ApplicationUpdateTimeoutMapProto{{ApplicationTimeoutType: pb.ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME.Enum(),
			ExpireTime: proto.String(time.Now().Add(time.Hour).Format(iso8601))}}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for report(t, ac, short).GetYarnApplicationState() != pb.YarnApplicationStateProto_KILLED {
		if time.Now().After(deadline) {
			t.Fatalf("the app outlived its lifetime: %v", report(t, ac, short))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rep := report(t, ac, short); rep.GetDiagnostics() != lifetimeExceeded || rep.GetFinalApplicationStatus() != pb.FinalApplicationStatusProto_APP_KILLED {
		t.Errorf("killed app: %q %v", rep.GetDiagnostics(), rep.GetFinalApplicationStatus())
	}
	if rep := report(t, ac, long); rep.GetYarnApplicationState() == pb.YarnApplicationStateProto_KILLED {
		t.Errorf("the app whose lifetime was extended was killed: %q", rep.GetDiagnostics())
	}
}

// TestGetApplicationsFilters: tags (any of them, case-insensitive),
// name and scope filter as in YARN's ClientRMService.
func TestGetApplicationsFilters(t *testing.T) {
	r := startRM(t, "yarn.acl.enable=true", "yarn.admin.acl=root")
	ann, ben := clientOf(t, r, "ann"), clientOf(t, r, "ben")
	res := &pb.ResourceProto{Memory: proto.Int64(512), VirtualCores: proto.Int32(1)}
	nightly, err := submitContext(t, ann, &pb.ApplicationSubmissionContextProto{ApplicationName: proto.String("etl"),
		ApplicationTags: []string{"Nightly", "etl"}, Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	shared, err := submitLaunch(t, ann, "default", 512, &pb.ContainerLaunchContextProto{Command: []string{"sleep", "100"},
		Application_ACLs: []*pb.ApplicationACLMapProto{{AccessType: pb.ApplicationAccessTypeProto_APPACCESS_VIEW_APP.Enum(), Acl: proto.String("ben")}}})
	if err != nil {
		t.Fatal(err)
	}
	own, err := submitContext(t, ben, &pb.ApplicationSubmissionContextProto{ApplicationName: proto.String("etl"), Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ac rpc.ApplicationClient, req *pb.GetApplicationsRequestProto) []string {
		t.Helper()
		resp, err := ac.GetApplications(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range resp.GetApplications() {
			out = append(out, rpc.AppIDString(a.GetApplicationId()))
		}
		return out
	}
	s := rpc.AppIDString
	for _, tc := range []struct {
		name string
		ac   rpc.ApplicationClient
		req  *pb.GetApplicationsRequestProto
		want []string
	}{
		{"tag nightly", ben, &pb.GetApplicationsRequestProto{ApplicationTags: []string{"NIGHTLY"}}, []string{s(nightly)}},
		{"tag none", ben, &pb.GetApplicationsRequestProto{ApplicationTags: []string{"weekly"}}, nil},
		{"name etl", ben, &pb.GetApplicationsRequestProto{Name: proto.String("etl")}, []string{s(nightly), s(own)}},
		{"ben's own", ben, &pb.GetApplicationsRequestProto{Scope: pb.ApplicationsRequestScopeProto_OWN.Enum()}, []string{s(own)}},
		{"what ben may view", ben, &pb.GetApplicationsRequestProto{Scope: pb.ApplicationsRequestScopeProto_VIEWABLE.Enum()}, []string{s(shared), s(own)}},
		{"all", ben, &pb.GetApplicationsRequestProto{}, []string{s(nightly), s(shared), s(own)}},
	} {
		if got := ids(tc.ac, tc.req); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
