package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
	"google.golang.org/protobuf/proto"
)

// The rest of YARN's RMWebServices: who is asking, container signals,
// node resources, queue access, delegation tokens and reservations.

// getClusterUserInfo is /userinfo: who runs the RM and who asks.
func getClusterUserInfo(c *call) error {
	return c.json(http.StatusOK, dao.ClusterUserInfoResponse{ClusterUserInfo: dao.ClusterUserInfo{
		RMLoginUser: c.s.b.Info().LoginUser, RequestedUser: c.user()}})
}

// signalContainer is POST /containers/{containerid}/signal/{command}: the
// client protocol's signalToContainer, as the caller.
func signalContainer(c *call) error {
	v := c.vars()
	cid, err := parseContainerID(v["containerid"])
	if err != nil {
		return badRequest("Invalid ContainerId: %s", v["containerid"])
	}
	cmd, ok := pb.SignalContainerCommandProto_value[strings.ToUpper(v["command"])]
	if !ok {
		return badRequest("Invalid command: %s; valid commands are OUTPUT_THREAD_DUMP, GRACEFUL_SHUTDOWN, FORCEFUL_SHUTDOWN", v["command"])
	}
	if _, err := c.s.b.SignalToContainer(c.ctx(), &pb.SignalContainerRequestProto{ContainerId: cid,
		Command: pb.SignalContainerCommandProto(cmd).Enum()}); err != nil {
		return err
	}
	c.w.WriteHeader(http.StatusOK)
	return nil
}

// updateNodeResource is POST /nodes/{nodeid}/resource: an admin sets
// what a node offers (YARN's ResourceOptionInfo body).
func updateNodeResource(c *call) error {
	var body dao.ResourceOption
	if err := readBodyOrXML(c, &body, "resourceOption"); err != nil {
		return err
	}
	if body.Resource == nil || body.Resource.Memory <= 0 || body.Resource.VCores <= 0 {
		return badRequest("resource: memory and vCores must be given and positive, got %+v", body.Resource)
	}
	got, err := c.s.b.UpdateNodeResource(c.ctx(), c.vars()["nodeid"],
		fairness.New(float64(body.Resource.Memory), float64(body.Resource.VCores)))
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, dao.ResourceInfoResponse{ResourceInfo: resource(got)})
}

// dumpSchedulerLogs is POST /scheduler/logs: the CapacityScheduler's
// debug dump, which Loom has no use for: every decision is in the
// activities.
func dumpSchedulerLogs(*call) error {
	return badRequest("Only Capacity Scheduler supports dumping scheduler logs; Loom's scheduler keeps its latest " +
		"decisions at /ws/v1/cluster/scheduler/activities and each app's at /ws/v1/cluster/scheduler/app-activities/{appid}")
}

// checkUserAccessToQueue is GET /queues/{queue}/access?user=U&queue-acl-type=T:
// whether U may submit to (or administer) the queue. Only a queue admin
// may ask about someone else, as in YARN.
func checkUserAccessToQueue(c *call) error {
	queue := c.vars()["queue"]
	q := c.r.URL.Query()
	user, aclType := q.Get("user"), strings.ToUpper(q.Get("queue-acl-type"))
	if user == "" {
		return badRequest("user is required: ?user=<name>")
	}
	if aclType == "" {
		aclType = "SUBMIT_APPLICATIONS"
	}
	want, ok := pb.QueueACLProto_value["QACL_"+aclType]
	if !ok {
		return badRequest("Invalid queue-acl-type=%s; valid values are SUBMIT_APPLICATIONS and ADMINISTER_QUEUE", aclType)
	}
	has := func(ctx *call, as string) (map[string][]pb.QueueACLProto, error) {
		cc := *ctx
		r := cc.r.Clone(cc.r.Context())
		qv := r.URL.Query()
		qv.Set("user.name", as)
		r.URL.RawQuery = qv.Encode()
		cc.r = r.WithContext(context.WithValue(r.Context(), authUserKey{}, as))
		resp, err := c.s.b.GetQueueUserAcls(cc.ctx(), &pb.GetQueueUserAclsInfoRequestProto{})
		if err != nil {
			return nil, err
		}
		out := map[string][]pb.QueueACLProto{}
		for _, e := range resp.GetQueueUserAcls() {
			out[e.GetQueueName()] = e.GetUserAcls()
		}
		return out, nil
	}
	mine, err := has(c, c.user())
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(queue, "root.")
	if _, ok := mine[name]; !ok {
		return notFound("queue %s does not exist", queue)
	}
	if !slices.Contains(mine[name], pb.QueueACLProto_QACL_ADMINISTER_QUEUE) {
		return forbidden("User=%s doesn't haven access to queue=%s so it cannot check ACLs for other users.", c.user(), queue)
	}
	theirs, err := has(c, user)
	if err != nil {
		return err
	}
	allowed := slices.Contains(theirs[name], pb.QueueACLProto(want))
	out := dao.QueueACLInfo{Allowed: allowed, User: user}
	if !allowed {
		out.Diagnostics = fmt.Sprintf("User=%s doesn't have access to queue=%s with acl-type=%s", user, queue, aclType)
	}
	return c.json(http.StatusOK, out)
}

// delegationHeader carries the token to renew or cancel, as YARN's.
const delegationHeader = "Hadoop-YARN-RM-Delegation-Token"

// kerberosCaller refuses a delegation-token call that did not come
// through Kerberos (SPNEGO), as YARN does.
func kerberosCaller(c *call) error {
	if u, ok := c.r.Context().Value(authUserKey{}).(string); ok && u != "" {
		return nil
	}
	return forbidden("Delegation token operations can only be carried out on a Kerberos authenticated channel. " +
		"Expected auth type is kerberos, got type null (the web port authenticates with SPNEGO when " +
		"hadoop.http.authentication.type=kerberos)")
}

// postDelegationToken is POST /delegation-token {"renewer": R}: a new
// RM delegation token for the Kerberos caller.
func postDelegationToken(c *call) error {
	if err := kerberosCaller(c); err != nil {
		return err
	}
	var body dao.DelegationToken
	if err := readBodyOrXML(c, &body, "delegation-token"); err != nil {
		return err
	}
	resp, err := c.s.b.GetDelegationToken(c.ctx(), &hadooppb.GetDelegationTokenRequestProto{Renewer: proto.String(body.Renewer)})
	if err != nil {
		return err
	}
	tok := resp.GetToken()
	var id pb.YARNDelegationTokenIdentifierProto
	if err := proto.Unmarshal(tok.GetIdentifier(), &id); err != nil {
		return internalError("the RM issued a token it cannot read: %v", err)
	}
	exp, err := c.s.b.RenewDelegationToken(c.ctx(), &hadooppb.RenewDelegationTokenRequestProto{Token: tok})
	if err != nil {
		// The caller is not its renewer: YARN reports no expiry then.
		exp = &hadooppb.RenewDelegationTokenResponseProto{NewExpiryTime: proto.Uint64(0)}
	}
	return c.json(http.StatusOK, dao.DelegationToken{Token: rpc.EncodeTokenURLString(tok), Renewer: id.GetRenewer(),
		Owner: id.GetOwner(), Kind: tok.GetKind(), NextExpirationTime: int64(exp.GetNewExpiryTime()), MaxValidity: id.GetMaxDate()})
}

// headerToken reads the token a renew or cancel names.
func headerToken(c *call) (*hadooppb.TokenProto, error) {
	s := c.r.Header.Get(delegationHeader)
	if s == "" {
		return nil, badRequest("Header '%s' containing encoded token not found", delegationHeader)
	}
	tok, err := rpc.DecodeTokenURLString(s)
	if err != nil {
		return nil, badRequest("Couldn't decode the %s header: %v", delegationHeader, err)
	}
	return tok, nil
}

// renewDelegationToken is POST /delegation-token/expiration.
func renewDelegationToken(c *call) error {
	if err := kerberosCaller(c); err != nil {
		return err
	}
	tok, err := headerToken(c)
	if err != nil {
		return err
	}
	resp, err := c.s.b.RenewDelegationToken(c.ctx(), &hadooppb.RenewDelegationTokenRequestProto{Token: tok})
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, dao.DelegationToken{NextExpirationTime: int64(resp.GetNewExpiryTime())})
}

// cancelDelegationToken is DELETE /delegation-token.
func cancelDelegationToken(c *call) error {
	if err := kerberosCaller(c); err != nil {
		return err
	}
	tok, err := headerToken(c)
	if err != nil {
		return err
	}
	if _, err := c.s.b.CancelDelegationToken(c.ctx(), &hadooppb.CancelDelegationTokenRequestProto{Token: tok}); err != nil {
		return err
	}
	c.w.WriteHeader(http.StatusOK)
	return nil
}

// reservationBody is a reservation call's failure as YARN's web
// services answer it: the reservation system off (or any YarnException)
// is a 503; access is a 403; a bad body a 400.
func reservationErr(err error) error {
	we := fromBackend(err)
	if we.status == http.StatusInternalServerError {
		we.status = http.StatusServiceUnavailable
	}
	return we
}

// Reservation bodies in XML: these leaves are numbers.
var reservationNumbers = map[string]bool{"arrival": true, "deadline": true, "reservation-request-interpreter": true,
	"duration": true, "num-containers": true, "min-concurrency": true, "memory": true, "vCores": true}

// definitionProto turns the REST definition into the protocol's.
func definitionProto(d *dao.ReservationDefinition) (*pb.ReservationDefinitionProto, error) {
	if d == nil {
		return nil, nil
	}
	reqs, err := decodeList[dao.ReservationRequest]("reservation-definition.reservation-requests.reservation-request", d.Requests.Request)
	if err != nil {
		return nil, err
	}
	interp := pb.ReservationRequestInterpreterProto(d.Requests.Interpreter)
	if _, ok := pb.ReservationRequestInterpreterProto_name[int32(interp)]; !ok {
		return nil, badRequest("reservation-request-interpreter %d: want 0 (ANY), 1 (ALL), 2 (ORDER) or 3 (ORDER_NO_GAP)", d.Requests.Interpreter)
	}
	out := &pb.ReservationDefinitionProto{Arrival: proto.Int64(d.Arrival), Deadline: proto.Int64(d.Deadline),
		ReservationName: proto.String(d.Name), ReservationRequests: &pb.ReservationRequestsProto{Interpreter: interp.Enum()}}
	for _, q := range reqs {
		out.ReservationRequests.ReservationResources = append(out.ReservationRequests.ReservationResources, &pb.ReservationRequestProto{
			Capability:    &pb.ResourceProto{Memory: proto.Int64(q.Capability.Memory), VirtualCores: proto.Int32(int32(q.Capability.VCores))},
			NumContainers: proto.Int32(q.NumContainers), Concurrency: proto.Int32(max(1, q.MinConcurrency)), Duration: proto.Int64(q.Duration)})
	}
	return out, nil
}

// definitionInfo is the protocol's definition as REST writes it.
func definitionInfo(d *pb.ReservationDefinitionProto) dao.ReservationDefinition {
	out := dao.ReservationDefinition{Arrival: d.GetArrival(), Deadline: d.GetDeadline(), Name: d.GetReservationName()}
	out.Requests.Interpreter = int(d.GetReservationRequests().GetInterpreter())
	for _, q := range d.GetReservationRequests().GetReservationResources() {
		out.Requests.Requests = append(out.Requests.Requests, dao.ReservationRequest{Duration: q.GetDuration(), NumContainers: q.GetNumContainers(),
			MinConcurrency: q.GetConcurrency(), Capability: dao.Resource{Memory: q.GetCapability().GetMemory(), VCores: int64(q.GetCapability().GetVirtualCores())}})
	}
	out.Requests.Request, _ = json.Marshal(out.Requests.Requests)
	return out
}

func newReservation(c *call) error {
	resp, err := c.s.b.GetNewReservation(c.ctx(), &pb.GetNewReservationRequestProto{})
	if err != nil {
		return reservationErr(err)
	}
	return c.json(http.StatusOK, dao.NewReservation{ReservationID: rpc.ReservationIDString(resp.GetReservationId())})
}

// readReservationBody reads a submit, update or delete body; root is its
// XML root element.
func readReservationBody(c *call, root string) (*dao.ReservationSubmission, *pb.ReservationIdProto, *pb.ReservationDefinitionProto, error) {
	var body dao.ReservationSubmission
	if err := readJSONOrXML(c, &body, root, reservationNumbers, nil); err != nil {
		return nil, nil, nil, err
	}
	id, err := rpc.ParseReservationID(body.ReservationID)
	if err != nil {
		return nil, nil, nil, badRequest("reservation-id: %v", err)
	}
	def, err := definitionProto(body.Definition)
	return &body, id, def, err
}

func submitReservation(c *call) error {
	body, id, def, err := readReservationBody(c, "reservation-submission-context")
	if err != nil {
		return err
	}
	if _, err := c.s.b.SubmitReservation(c.ctx(), &pb.ReservationSubmissionRequestProto{Queue: proto.String(body.Queue),
		ReservationId: id, ReservationDefinition: def}); err != nil {
		return reservationErr(err)
	}
	c.w.WriteHeader(http.StatusAccepted)
	return nil
}

func updateReservation(c *call) error {
	_, id, def, err := readReservationBody(c, "reservation-update-context")
	if err != nil {
		return err
	}
	if _, err := c.s.b.UpdateReservation(c.ctx(), &pb.ReservationUpdateRequestProto{ReservationId: id, ReservationDefinition: def}); err != nil {
		return reservationErr(err)
	}
	c.w.WriteHeader(http.StatusOK)
	return nil
}

func deleteReservation(c *call) error {
	_, id, _, err := readReservationBody(c, "reservation-delete-context")
	if err != nil {
		return err
	}
	if _, err := c.s.b.DeleteReservation(c.ctx(), &pb.ReservationDeleteRequestProto{ReservationId: id}); err != nil {
		return reservationErr(err)
	}
	c.w.WriteHeader(http.StatusOK)
	return nil
}

// listReservations is GET /reservation/list?queue=&reservation-id=&
// start-time=&end-time=&include-resource-allocations=, YARN's defaults
// for what is left out.
func listReservations(c *call) error {
	q := c.r.URL.Query()
	queue := q.Get("queue")
	if queue == "" {
		queue = "default"
	}
	num := func(k string, def int64) int64 {
		if v, err := strconv.ParseInt(q.Get(k), 10, 64); err == nil {
			return v
		}
		return def
	}
	req := &pb.ReservationListRequestProto{Queue: proto.String(queue), ReservationId: proto.String(q.Get("reservation-id")),
		StartTime: proto.Int64(num("start-time", 0)), EndTime: proto.Int64(num("end-time", -1)),
		IncludeResourceAllocations: proto.Bool(q.Get("include-resource-allocations") == "true")}
	resp, err := c.s.b.ListReservations(c.ctx(), req)
	if err != nil {
		return reservationErr(err)
	}
	out := dao.ReservationList{Reservations: []dao.ReservationInfo{}}
	for _, st := range resp.GetReservations() {
		info := dao.ReservationInfo{AcceptanceTime: st.GetAcceptanceTime(), User: st.GetUser(),
			ReservationID: rpc.ReservationIDString(st.GetReservationId()), Definition: definitionInfo(st.GetReservationDefinition()),
			ResourceAllocations: []dao.ResourceAllocation{}}
		for _, a := range st.GetAllocationRequests() {
			info.ResourceAllocations = append(info.ResourceAllocations, dao.ResourceAllocation{StartTime: a.GetStartTime(), EndTime: a.GetEndTime(),
				Resource: dao.Resource{Memory: a.GetResource().GetMemory(), VCores: int64(a.GetResource().GetVirtualCores())}})
		}
		out.Reservations = append(out.Reservations, info)
	}
	return c.json(http.StatusOK, out)
}
