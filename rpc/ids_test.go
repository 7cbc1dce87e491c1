package rpc

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

func TestIDStrings(t *testing.T) {
	app := &pb.ApplicationIdProto{Id: proto.Int32(7), ClusterTimestamp: proto.Int64(1700000000000)}
	att := &pb.ApplicationAttemptIdProto{ApplicationId: app, AttemptId: proto.Int32(2)}
	c := &pb.ContainerIdProto{AppId: app, AppAttemptId: att, Id: proto.Int64(15)}
	tests := []struct{ got, want string }{
		{AppIDString(app), "application_1700000000000_0007"},
		{AttemptIDString(att), "appattempt_1700000000000_0007_000002"},
		{ContainerIDString(c), "container_1700000000000_0007_02_000015"},
		// After an RM restart the epoch rides in the id's high bits.
		{ContainerIDString(&pb.ContainerIdProto{AppAttemptId: att, Id: proto.Int64(1<<40 | 15)}), "container_e1_1700000000000_0007_02_000015"},
		// The legacy app_id field alone still names the app.
		{ContainerIDString(&pb.ContainerIdProto{AppId: app, Id: proto.Int64(3)}), "container_1700000000000_0007_00_000003"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
	back, err := ParseAttemptID("appattempt_1700000000000_0007_000002")
	if err != nil || !proto.Equal(back, att) {
		t.Errorf("ParseAttemptID = %v, %v", back, err)
	}
	if a, err := ParseAppID("application_1700000000000_0007"); err != nil || !proto.Equal(a, app) {
		t.Errorf("ParseAppID = %v, %v", a, err)
	}
	for _, bad := range []string{"alice", "appattempt_x_1_1", "application_1_2_3", ""} {
		if _, err := ParseAttemptID(bad); err == nil || !strings.Contains(err.Error(), "not an application attempt id") {
			t.Errorf("ParseAttemptID(%q) = %v", bad, err)
		}
	}
}
