package server

import (
	"context"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/rm"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// The reservation system (yarn.resourcemanager.reservation-system.enable):
// a client asks for capacity over a window ([arrival, deadline], each
// request some containers of a capability for a duration); the RM places
// it at the earliest start where it fits under the reservable share of
// the cluster (loom.reservation.max-share) beside the reservations it
// already holds, and the scheduling core holds it for that window (see
// rm/reservation.go). Apps submitted with its reservation_id share it.
//
// Loom's planner is simpler than YARN's agents: a reservation holds every
// request's containers at once (num_containers x capability, for the
// longest duration), whatever the interpreter, which reserves at least
// what YARN's greedy agent would. Reservations are not kept across an RM
// restart.

const (
	keyReservations    = "yarn.resourcemanager.reservation-system.enable"
	keyReservableShare = "loom.reservation.max-share"

	classPlanning = "org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.PlanningException"
)

// errNoReservations is YARN's answer with the reservation system off.
var errNoReservations = rpc.Errorf(rpc.ClassYarnException, "Reservation is not enabled. Please enable & try again ("+keyReservations+" is false)")

type resvRec struct {
	id          *pb.ReservationIdProto
	name        string // reservation_<cluster ts>_<id>
	queue, user string
	def         *pb.ReservationDefinitionProto
	res         fairness.Vector
	start, end  time.Time
	accepted    time.Time
}

func (s clientService) GetNewReservation(ctx context.Context, _ *pb.GetNewReservationRequestProto) (*pb.GetNewReservationResponseProto, error) {
	r := s.r
	if !r.cfg.Reservations {
		return nil, errNoReservations
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resvSeq++
	id := &pb.ReservationIdProto{ClusterTimestamp: proto.Int64(r.clusterTS), Id: proto.Int64(r.resvSeq)}
	r.resvIssued[r.resvSeq] = true
	return &pb.GetNewReservationResponseProto{ReservationId: id}, nil
}

// plan finds where a definition fits: its resource and window, or YARN's
// PlanningException saying why not. skip is a reservation being updated,
// whose own hold does not count. Callers hold mu.
func (r *RM) plan(def *pb.ReservationDefinitionProto, skip string, now time.Time) (fairness.Vector, time.Time, time.Time, error) {
	var res fairness.Vector
	if def == nil {
		return res, time.Time{}, time.Time{}, rpc.Errorf(rpc.ClassYarnException, "Missing reservation definition. Please try again by specifying a reservation definition.")
	}
	reqs := def.GetReservationRequests().GetReservationResources()
	if len(reqs) == 0 {
		return res, time.Time{}, time.Time{}, rpc.Errorf(rpc.ClassYarnException, "No resources have been specified to reserve. Please try again by specifying the resources to reserve.")
	}
	arrival, deadline := time.UnixMilli(def.GetArrival()), time.UnixMilli(def.GetDeadline())
	if !deadline.After(now) {
		return res, time.Time{}, time.Time{}, rpc.Errorf(rpc.ClassYarnException, "The specified deadline: %d is the past. Please try again with deadline in the future.", def.GetDeadline())
	}
	var dur time.Duration
	any := def.GetReservationRequests().GetInterpreter() == pb.ReservationRequestInterpreterProto_R_ANY
	for i, q := range reqs {
		c, err := rpc.VectorFromResource(q.GetCapability())
		if err != nil {
			return res, time.Time{}, time.Time{}, rpc.Errorf(rpc.ClassYarnException, "Reservation request %d: %v", i, err)
		}
		if c.HasNegative() || c.IsZero() || q.GetNumContainers() <= 0 || q.GetDuration() <= 0 {
			return res, time.Time{}, time.Time{}, rpc.Errorf(rpc.ClassYarnException,
				"Reservation request %d: capability %v, %d containers and a duration of %d ms must all be positive", i, c, q.GetNumContainers(), q.GetDuration())
		}
		if !c.FitsIn(r.cfg.MaxAlloc) {
			return res, time.Time{}, time.Time{}, rpc.Errorf(rpc.ClassYarnException,
				"Reservation request %d: capability %v is above the maximum allocation %v", i, c, r.cfg.MaxAlloc)
		}
		need := c.Scale(float64(q.GetNumContainers()))
		if any {
			// R_ANY: one request will do; Loom takes the first.
			res, dur = need, time.Duration(q.GetDuration())*time.Millisecond
			break
		}
		res = res.Add(need)
		dur = max(dur, time.Duration(q.GetDuration())*time.Millisecond)
	}
	if deadline.Sub(arrival) < dur {
		return res, time.Time{}, time.Time{}, rpc.Errorf(rpc.ClassYarnException,
			"The time difference (%d) between arrival (%d) and deadline (%d) must be greater or equal to the duration (%d). Please try again with a smaller duration or a later deadline.",
			deadline.Sub(arrival).Milliseconds(), def.GetArrival(), def.GetDeadline(), dur.Milliseconds())
	}
	limit := r.core.Capacity().Scale(r.cfg.ReservableShare)
	// The earliest start that fits: now or the arrival, or when one of
	// the reservations held ends.
	starts := []time.Time{maxTime(arrival, now)}
	for name, o := range r.reservations {
		if name != skip && o.end.After(starts[0]) {
			starts = append(starts, o.end)
		}
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for _, s := range starts {
		e := s.Add(dur)
		if e.After(deadline) {
			break
		}
		if r.fits(res, s, e, skip, limit) {
			return res, s, e, nil
		}
	}
	return res, time.Time{}, time.Time{}, rpc.Errorf(classPlanning,
		"The planning algorithm could not find a valid allocation for your request: %v for %v between %s and %s does not fit beside the reservations held under %s=%v of the cluster (%v)",
		res, dur, arrival.Format(time.RFC3339), deadline.Format(time.RFC3339), keyReservableShare, r.cfg.ReservableShare, limit)
}

// fits says whether res over [s, e) stays within limit beside the other
// reservations at every instant (checked where one of them starts).
func (r *RM) fits(res fairness.Vector, s, e time.Time, skip string, limit fairness.Vector) bool {
	points := []time.Time{s}
	for name, o := range r.reservations {
		if name != skip && o.start.After(s) && o.start.Before(e) {
			points = append(points, o.start)
		}
	}
	for _, t := range points {
		held := res
		for name, o := range r.reservations {
			if name != skip && !o.start.After(t) && o.end.After(t) {
				held = held.Add(o.res)
			}
		}
		if !held.FitsIn(limit) {
			return false
		}
	}
	return true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// hold gives the core a reservation's window (the core's clock runs from
// the RM's start). Callers hold mu.
func (r *RM) hold(v *resvRec) error {
	return r.step(rm.ReservationSet{ID: v.name, Resource: v.res, Start: v.start.Sub(r.start), End: v.end.Sub(r.start)})
}

func (s clientService) SubmitReservation(ctx context.Context, req *pb.ReservationSubmissionRequestProto) (*pb.ReservationSubmissionResponseProto, error) {
	r := s.r
	if !r.cfg.Reservations {
		return nil, errNoReservations
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id := req.GetReservationId()
	if id == nil || id.GetClusterTimestamp() != r.clusterTS || !r.resvIssued[id.GetId()] {
		return nil, rpc.Errorf(rpc.ClassYarnException, "The reservation id %s was not issued by this ResourceManager: ask getNewReservation for one first", rpc.ReservationIDString(id))
	}
	name := rpc.ReservationIDString(id)
	if _, ok := r.reservations[name]; ok {
		return nil, rpc.Errorf(rpc.ClassYarnException, "Reservation %s already exists", name)
	}
	queue := strings.TrimPrefix(req.GetQueue(), "root.")
	if _, ok := r.cfg.Queues[queue]; !ok {
		return nil, rpc.Errorf(rpc.ClassYarnException, "The specified queue: %s is not managed by reservation system. Please try again with a valid reservable queue (one of loom.queues).", req.GetQueue())
	}
	now := time.Now()
	res, start, end, err := r.plan(req.GetReservationDefinition(), "", now)
	if err != nil {
		return nil, err
	}
	v := &resvRec{id: id, name: name, queue: queue, user: caller(ctx), def: proto.Clone(req.GetReservationDefinition()).(*pb.ReservationDefinitionProto),
		res: res, start: start, end: end, accepted: now}
	if err := r.hold(v); err != nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "reservation %s: %v", name, err)
	}
	delete(r.resvIssued, id.GetId())
	r.reservations[name] = v
	r.log.Info().Str("reservation", name).Str("queue", queue).Str("user", v.user).Str("resource", res.String()).
		Time("start", start).Time("end", end).Msg("reservation accepted")
	return &pb.ReservationSubmissionResponseProto{}, nil
}

// ownReservation finds a reservation the caller may change: its owner's,
// or any for an admin.
func (r *RM) ownReservation(ctx context.Context, id *pb.ReservationIdProto) (*resvRec, error) {
	name := rpc.ReservationIDString(id)
	v := r.reservations[name]
	if id == nil || v == nil {
		return nil, rpc.Errorf(rpc.ClassYarnException, "The specified reservation with ID: %s is unknown (it was never accepted, was deleted, or has ended)", name)
	}
	if who := caller(ctx); who != v.user && !r.isAdmin(who) {
		return nil, rpc.Errorf(rpc.ClassAccessControl, "User %s cannot change reservation %s of %s", who, name, v.user)
	}
	return v, nil
}

// changeReservation runs change, with mu held, on a reservation the
// caller may change (update, delete).
func (s clientService) changeReservation(ctx context.Context, id *pb.ReservationIdProto, change func(*resvRec) error) error {
	r := s.r
	if !r.cfg.Reservations {
		return errNoReservations
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v, err := r.ownReservation(ctx, id)
	if err != nil {
		return err
	}
	return change(v)
}

func (s clientService) UpdateReservation(ctx context.Context, req *pb.ReservationUpdateRequestProto) (*pb.ReservationUpdateResponseProto, error) {
	r := s.r
	err := s.changeReservation(ctx, req.GetReservationId(), func(v *resvRec) error {
		res, start, end, err := r.plan(req.GetReservationDefinition(), v.name, time.Now())
		if err != nil {
			return err
		}
		v.def, v.res, v.start, v.end = proto.Clone(req.GetReservationDefinition()).(*pb.ReservationDefinitionProto), res, start, end
		if err := r.hold(v); err != nil {
			return rpc.Errorf(rpc.ClassYarnException, "reservation %s: %v", v.name, err)
		}
		r.log.Info().Str("reservation", v.name).Str("resource", res.String()).Time("start", start).Time("end", end).Msg("reservation updated")
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &pb.ReservationUpdateResponseProto{}, nil
}

func (s clientService) DeleteReservation(ctx context.Context, req *pb.ReservationDeleteRequestProto) (*pb.ReservationDeleteResponseProto, error) {
	err := s.changeReservation(ctx, req.GetReservationId(), func(v *resvRec) error {
		s.r.dropReservation(v, "deleted by "+caller(ctx))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &pb.ReservationDeleteResponseProto{}, nil
}

// dropReservation forgets a reservation; its apps join the others.
// Callers hold mu.
func (r *RM) dropReservation(v *resvRec, why string) {
	delete(r.reservations, v.name)
	if err := r.step(rm.ReservationRemoved{ID: v.name}); err != nil {
		r.log.Error().Err(err).Str("reservation", v.name).Msg("core refused the reservation's removal")
	}
	r.log.Info().Str("reservation", v.name).Str("why", why).Msg("reservation ended")
}

// expireReservations forgets the reservations whose window is over.
// Callers hold mu.
func (r *RM) expireReservations(now time.Time) {
	for _, v := range r.reservations {
		if !now.Before(v.end) {
			r.dropReservation(v, "its window is over")
		}
	}
}

func (s clientService) ListReservations(ctx context.Context, req *pb.ReservationListRequestProto) (*pb.ReservationListResponseProto, error) {
	r := s.r
	if !r.cfg.Reservations {
		return nil, errNoReservations
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	queue := strings.TrimPrefix(req.GetQueue(), "root.")
	if queue == "" {
		return nil, rpc.Errorf(rpc.ClassYarnException, "The queue is not specified. Please try again with a valid reservable queue.")
	}
	from, to := req.GetStartTime(), req.GetEndTime()
	if to <= 0 {
		to = 1<<63 - 1
	}
	resp := &pb.ReservationListResponseProto{}
	names := make([]string, 0, len(r.reservations))
	for name := range r.reservations {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := r.reservations[name]
		if v.queue != queue || req.GetReservationId() != "" && req.GetReservationId() != name ||
			v.end.UnixMilli() < from || v.start.UnixMilli() > to {
			continue
		}
		st := &pb.ReservationAllocationStateProto{ReservationDefinition: v.def, StartTime: proto.Int64(v.start.UnixMilli()),
			EndTime: proto.Int64(v.end.UnixMilli()), User: proto.String(v.user), ContainsGangs: proto.Bool(false),
			AcceptanceTime: proto.Int64(v.accepted.UnixMilli()), ReservationId: v.id}
		if req.GetIncludeResourceAllocations() {
			st.AllocationRequests = []*pb.ResourceAllocationRequestProto{{StartTime: proto.Int64(v.start.UnixMilli()),
				EndTime: proto.Int64(v.end.UnixMilli()), Resource: rpc.ResourceFromVector(v.res)}}
		}
		resp.Reservations = append(resp.Reservations, st)
	}
	return resp, nil
}

// reservationOf checks a submission's reservation_id: it must name a
// reservation held in the app's queue. Callers hold mu.
func (r *RM) reservationOf(sc *pb.ApplicationSubmissionContextProto, queue string) (string, error) {
	id := sc.GetReservationId()
	if id == nil {
		return "", nil
	}
	if !r.cfg.Reservations {
		return "", errNoReservations
	}
	name := rpc.ReservationIDString(id)
	v := r.reservations[name]
	if v == nil {
		return "", rpc.Errorf(rpc.ClassYarnException, "Application submitted to reservation %s, which does not exist (never accepted, deleted, or over)", name)
	}
	if v.queue != queue {
		return "", rpc.Errorf(rpc.ClassYarnException, "Application submitted to queue %s with reservation %s, which is held in queue %s", queue, name, v.queue)
	}
	return name, nil
}
