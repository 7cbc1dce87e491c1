package server

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestACLs: with yarn.acl.enable, only an app's owner, the users of its
// MODIFY_APP ACL and admins may kill it; only admins may change
// P(Altruism). Without it, anyone may, as in YARN.
func TestACLs(t *testing.T) {
	ctxAs := func(user string) context.Context {
		return rpc.WithCall(context.Background(), &rpc.CallInfo{User: user})
	}
	tests := []struct {
		name      string
		conf      []string
		killer    string
		killed    bool
		tuner     string
		tuneAllow bool
	}{
		{"off: anyone", []string{"yarn.acl.enable=false"}, "mallory", true, "mallory", true},
		{"owner", []string{"yarn.acl.enable=true", "yarn.admin.acl=root"}, "ann", true, "ann", false},
		{"admin", []string{"yarn.acl.enable=true", "yarn.admin.acl=root,ops"}, "ops", true, "ops", true},
		{"modify ACL", []string{"yarn.acl.enable=true", "yarn.admin.acl=root"}, "ben", true, "ben", false},
		{"stranger", []string{"yarn.acl.enable=true", "yarn.admin.acl=root"}, "mallory", false, "mallory", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := startRM(t, tc.conf...)
			ac := clientOf(t, r, "ann")
			na, err := ac.GetNewApplication(context.Background(), &pb.GetNewApplicationRequestProto{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = ac.SubmitApplication(context.Background(), &pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{
				ApplicationId: na.GetApplicationId(), Resource: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
				AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{"true"}, Application_ACLs: []*pb.ApplicationACLMapProto{
					{AccessType: pb.ApplicationAccessTypeProto_APPACCESS_MODIFY_APP.Enum(), Acl: proto.String("ben")}}}}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = clientService{r}.ForceKillApplication(ctxAs(tc.killer), &pb.KillApplicationRequestProto{ApplicationId: na.GetApplicationId()})
			if killed := err == nil; killed != tc.killed {
				t.Errorf("kill by %s: %v, want allowed %v", tc.killer, err, tc.killed)
			}
			if err != nil && !rpc.IsClass(err, rpc.ClassAccessControl) {
				t.Errorf("kill refused with %v, want AccessControlException", err)
			}
			err = webBackend{clientService{r}}.SetAltruism(ctxAs(tc.tuner), webui.AltruismSet{P: 0.5}, tc.tuner)
			if allowed := err == nil; allowed != tc.tuneAllow {
				t.Errorf("P(Altruism) by %s: %v, want allowed %v", tc.tuner, err, tc.tuneAllow)
			}
			if want := map[bool]float64{true: 0.5, false: 1}[tc.tuneAllow]; r.core.PAltruism() != want {
				t.Errorf("P(Altruism) is %v, want %v", r.core.PAltruism(), want)
			}
		})
	}
}
