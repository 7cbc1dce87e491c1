package nm

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc"
	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

func TestContainerTokenRoundTrip(t *testing.T) {
	id := &pb.ContainerTokenIdentifierProto{ContainerId: containerID(3, 17), NmHostAddr: proto.String("node1:45454"),
		AppSubmitter: proto.String("bob"), Resource: &pb.ResourceProto{Memory: proto.Int64(2048), VirtualCores: proto.Int32(2)},
		ExpiryTimeStamp: proto.Int64(1800000000000), RmIdentifier: proto.Int64(7),
		ContainerType: pb.ContainerTypeProto_APPLICATION_MASTER.Enum(), AllocationTags: []string{"spark"}}
	tok, err := newContainerToken(id, "node1:45454", testMasterKey)
	if err != nil {
		t.Fatal(err)
	}
	if tok.GetKind() != "ContainerToken" || tok.GetService() != "node1:45454" {
		t.Errorf("token %v", tok)
	}
	got, err := DecodeContainerToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	want := proto.CloneOf(id)
	want.MasterKeyId = proto.Int32(7) // the key that signed it
	if !proto.Equal(got, want) {
		t.Errorf("decoded %v, want %v", got, want)
	}
	if !rpc.TokenPasswordOK(testMasterKey.GetBytes(), tok.GetIdentifier(), tok.GetPassword()) {
		t.Errorf("the token's password is not the master key's HMAC of its identifier")
	}
	// YARN's field numbers: containerId 1, nmHostAddr 2, appSubmitter 3,
	// resource 4, expiryTimeStamp 5.
	b, _ := proto.Marshal(&pb.ContainerTokenIdentifierProto{NmHostAddr: proto.String("h:1"), ExpiryTimeStamp: proto.Int64(1)})
	if want := []byte{0x12, 3, 'h', ':', '1', 0x28, 1}; string(b) != string(want) {
		t.Errorf("wire bytes % x, want % x", b, want)
	}
}

func TestIDStrings(t *testing.T) {
	cid := containerID(3, 17)
	if got, want := ContainerIDString(cid), "container_1700000000000_0003_01_000017"; got != want {
		t.Errorf("%s, want %s", got, want)
	}
	cid.Id = proto.Int64(2<<40 | 5)
	if got, want := ContainerIDString(cid), "container_e2_1700000000000_0003_01_000005"; got != want {
		t.Errorf("%s, want %s", got, want)
	}
	// The legacy app_id alone still names the application.
	legacy := &pb.ContainerIdProto{AppId: cid.AppId, Id: proto.Int64(1)}
	if got := ApplicationIDString(rpc.AppIDOf(legacy)); got != "application_1700000000000_0003" {
		t.Errorf("%s", got)
	}
}

// containerTokenKind is the kind of the token that authorises starting a
// container (YARN's ContainerTokenIdentifier.KIND).
const containerTokenKind = "ContainerToken"

// newContainerToken makes a container token as the RM hands it out: the
// marshalled identifier (naming the master key), signed with the master
// key (rpc.TokenPassword), kind "ContainerToken", and the NM's
// "host:port" as the service. Only tests need it: the RM makes its own.
func newContainerToken(id *pb.ContainerTokenIdentifierProto, service string, key *pb.MasterKeyProto) (*hadooppb.TokenProto, error) {
	id = proto.CloneOf(id)
	id.MasterKeyId = proto.Int32(key.GetKeyId())
	b, err := proto.Marshal(id)
	if err != nil {
		return nil, err
	}
	return &hadooppb.TokenProto{Identifier: b, Password: rpc.TokenPassword(key.GetBytes(), b), Kind: proto.String(containerTokenKind),
		Service: proto.String(service)}, nil
}
