package server

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// TestContainerUpdatesAreAnswered: an AM's container update requests get
// an error each, never silence: a live container of its own is "not
// supported", anything else YARN's INVALID_CONTAINER_ID.
func TestContainerUpdatesAreAnswered(t *testing.T) {
	nm, am := registeredAM(t, "uma")
	ctx := context.Background()
	ask := []*pb.ResourceRequestProto{{Priority: &pb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(1)}}
	resp, err := am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: ask})
	if err != nil {
		t.Fatal(err)
	}
	nm.beat()
	resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId())})
	if err != nil || len(resp.GetAllocatedContainers()) != 1 {
		t.Fatalf("%v %v", resp, err)
	}
	mine := resp.GetAllocatedContainers()[0].GetId()
	other := proto.Clone(mine).(*pb.ContainerIdProto)
	other.Id = proto.Int64(999)
	up := func(id *pb.ContainerIdProto) *pb.UpdateContainerRequestProto {
		return &pb.UpdateContainerRequestProto{ContainerVersion: proto.Int32(0), ContainerId: id,
			UpdateType: pb.ContainerUpdateTypeProto_INCREASE_RESOURCE.Enum(), Capability: &pb.ResourceProto{Memory: proto.Int64(2048), VirtualCores: proto.Int32(1)}}
	}
	resp, err = am.Allocate(ctx, &pb.AllocateRequestProto{ResponseId: proto.Int32(resp.GetResponseId()),
		UpdateRequests: []*pb.UpdateContainerRequestProto{up(mine), up(other)}})
	if err != nil {
		t.Fatal(err)
	}
	errs := resp.GetUpdateErrors()
	if len(errs) != 2 || !strings.HasPrefix(errs[0].GetReason(), "UPDATE_NOT_SUPPORTED") || !strings.Contains(errs[0].GetReason(), "INCREASE_RESOURCE") ||
		errs[1].GetReason() != "INVALID_CONTAINER_ID" || !proto.Equal(errs[0].GetUpdateRequest(), up(mine)) || len(resp.GetUpdatedContainers()) != 0 {
		t.Errorf("update errors %v", errs)
	}
}
