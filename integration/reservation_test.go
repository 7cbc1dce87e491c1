package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/daemon/webui/dao"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestReservationsOverREST: with the reservation system on, a client
// that speaks only YARN's REST API gets a reservation id, reserves two
// containers for ten minutes, lists it with its allocation, runs an app
// in it to the end, and deletes it; with it off, the same calls say so.
func TestReservationsOverREST(t *testing.T) {
	c := startCluster(t, 1, "-D", "yarn.resourcemanager.reservation-system.enable=true", "-D", "loom.webapp.rest-write.enabled=true")
	w := web{t, "http://" + c.web}
	var nr dao.NewReservation
	w.json("POST", "/ws/v1/cluster/reservation/new-reservation?user.name=ann", "", 200, &nr)
	if !strings.HasPrefix(nr.ReservationID, "reservation_") {
		t.Fatalf("new reservation %+v", nr)
	}
	now := time.Now().UnixMilli()
	sub := fmt.Sprintf(`{"queue": "default", "reservation-id": %q, "reservation-definition": {
	  "arrival": %d, "deadline": %d, "reservation-name": "nightly",
	  "reservation-requests": {"reservation-request-interpreter": 1,
	    "reservation-request": {"duration": 600000, "num-containers": 2, "min-concurrency": 1, "capability": {"memory": 1024, "vCores": 1}}}}}`,
		nr.ReservationID, now, now+3600_000)
	if rep := w.do("POST", "/ws/v1/cluster/reservation/submit?user.name=ann", sub); rep.status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", rep.status, rep.body)
	}
	var list dao.ReservationList
	w.json("GET", "/ws/v1/cluster/reservation/list?queue=default&include-resource-allocations=true", "", 200, &list)
	if len(list.Reservations) != 1 {
		t.Fatalf("list %+v", list)
	}
	got := list.Reservations[0]
	if got.ReservationID != nr.ReservationID || got.User != "ann" || got.Definition.Name != "nightly" || len(got.ResourceAllocations) != 1 ||
		got.ResourceAllocations[0].Resource != (dao.Resource{Memory: 2048, VCores: 2}) ||
		got.ResourceAllocations[0].EndTime-got.ResourceAllocations[0].StartTime != 600_000 {
		t.Errorf("listed %+v", got)
	}
	// An app in the reservation runs to the end.
	id := c.submitWith(t, "in-reservation", "exit 0", func(sc *pb.ApplicationSubmissionContextProto) {
		var ts, n int64
		fmt.Sscanf(strings.ReplaceAll(strings.TrimPrefix(nr.ReservationID, "reservation_"), "_", " "), "%d %d", &ts, &n)
		sc.ReservationId = &pb.ReservationIdProto{ClusterTimestamp: &ts, Id: &n}
	})
	c.waitState(t, id, pb.YarnApplicationStateProto_FINISHED)

	var again dao.NewReservation
	w.json("POST", "/ws/v1/cluster/reservation/new-reservation?user.name=ann", "", 200, &again)
	tooBig := strings.NewReplacer(`"num-containers": 2`, `"num-containers": 99`, nr.ReservationID, again.ReservationID).Replace(sub)
	w.remoteException("POST", "/ws/v1/cluster/reservation/submit?user.name=ann", tooBig, http.StatusServiceUnavailable, "PlanningException")
	if rep := w.do("POST", "/ws/v1/cluster/reservation/delete?user.name=ann", fmt.Sprintf(`{"reservation-id": %q}`, nr.ReservationID)); rep.status != 200 {
		t.Fatalf("delete: %d %s", rep.status, rep.body)
	}
	w.json("GET", "/ws/v1/cluster/reservation/list?queue=default", "", 200, &list)
	if len(list.Reservations) != 0 {
		t.Errorf("after the delete: %+v", list)
	}

	off := startCluster(t, 0, "-D", "loom.webapp.rest-write.enabled=true")
	msg := web{t, "http://" + off.web}.remoteException("POST", "/ws/v1/cluster/reservation/new-reservation", "", http.StatusServiceUnavailable, "YarnException")
	if !strings.Contains(msg, "yarn.resourcemanager.reservation-system.enable") {
		t.Errorf("with the system off: %q", msg)
	}
}
