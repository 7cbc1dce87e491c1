package rpc

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// YARN's string forms of its ids, as `yarn application` prints them.

// AppIDString is application_<cluster timestamp>_<id, 4 digits at least>.
func AppIDString(id *pb.ApplicationIdProto) string {
	return fmt.Sprintf("application_%d_%04d", id.GetClusterTimestamp(), id.GetId())
}

// AttemptIDString is appattempt_<ts>_<app>_<attempt, 6 digits>.
func AttemptIDString(id *pb.ApplicationAttemptIdProto) string {
	a := id.GetApplicationId()
	return fmt.Sprintf("appattempt_%d_%04d_%06d", a.GetClusterTimestamp(), a.GetId(), id.GetAttemptId())
}

// AppIDOf is a container's application: from its attempt, else the
// legacy app_id field.
func AppIDOf(cid *pb.ContainerIdProto) *pb.ApplicationIdProto {
	if a := cid.GetAppAttemptId().GetApplicationId(); a != nil {
		return a
	}
	return cid.GetAppId()
}

// containerIDMask keeps a container id's sequence number; the bits above
// carry the RM's epoch.
const containerIDMask = 1<<40 - 1

// ContainerIDString is YARN's ContainerId.toString():
// container_[e<epoch>_]<cluster ts>_<app, 4 digits>_<attempt, 2 digits>_<id, 6 digits>.
func ContainerIDString(cid *pb.ContainerIdProto) string {
	a := AppIDOf(cid)
	e := ""
	if epoch := cid.GetId() >> 40; epoch > 0 {
		e = fmt.Sprintf("e%d_", epoch)
	}
	return fmt.Sprintf("container_%s%d_%04d_%02d_%06d", e, a.GetClusterTimestamp(), a.GetId(),
		cid.GetAppAttemptId().GetAttemptId(), cid.GetId()&containerIDMask)
}

// ParseAttemptID reads appattempt_<ts>_<app>_<attempt>.
func ParseAttemptID(s string) (*pb.ApplicationAttemptIdProto, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 4 || parts[0] != "appattempt" {
		return nil, fmt.Errorf("%q is not an application attempt id (appattempt_<cluster>_<app>_<attempt>)", s)
	}
	ts, err1 := strconv.ParseInt(parts[1], 10, 64)
	app, err2 := strconv.ParseInt(parts[2], 10, 32)
	att, err3 := strconv.ParseInt(parts[3], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, fmt.Errorf("%q is not an application attempt id (appattempt_<cluster>_<app>_<attempt>)", s)
	}
	return &pb.ApplicationAttemptIdProto{ApplicationId: &pb.ApplicationIdProto{Id: proto.Int32(int32(app)),
		ClusterTimestamp: proto.Int64(ts)}, AttemptId: proto.Int32(int32(att))}, nil
}

// ParseAppID reads application_<ts>_<app>.
func ParseAppID(s string) (*pb.ApplicationIdProto, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 3 || parts[0] != "application" {
		return nil, fmt.Errorf("%q is not an application id (application_<cluster>_<app>)", s)
	}
	ts, err1 := strconv.ParseInt(parts[1], 10, 64)
	app, err2 := strconv.ParseInt(parts[2], 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%q is not an application id (application_<cluster>_<app>)", s)
	}
	return &pb.ApplicationIdProto{Id: proto.Int32(int32(app)), ClusterTimestamp: proto.Int64(ts)}, nil
}

// ReservationIDString is YARN's ReservationId.toString():
// reservation_<cluster timestamp>_<id, 4 digits at least>.
func ReservationIDString(id *pb.ReservationIdProto) string {
	return fmt.Sprintf("reservation_%d_%04d", id.GetClusterTimestamp(), id.GetId())
}

// ParseReservationID reads reservation_<ts>_<id>.
func ParseReservationID(s string) (*pb.ReservationIdProto, error) {
	parts := strings.Split(strings.TrimSpace(s), "_")
	if len(parts) != 3 || parts[0] != "reservation" {
		return nil, fmt.Errorf("%q is not a reservation id (reservation_<cluster timestamp>_<number>)", s)
	}
	ts, err1 := strconv.ParseInt(parts[1], 10, 64)
	n, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%q is not a reservation id (reservation_<cluster timestamp>_<number>)", s)
	}
	return &pb.ReservationIdProto{ClusterTimestamp: proto.Int64(ts), Id: proto.Int64(n)}, nil
}
