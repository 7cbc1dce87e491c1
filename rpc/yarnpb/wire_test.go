package yarnpb_test

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/loomrm/loom/rpc/yarnpb"
)

// The golden bytes below were worked out by hand from the wire format: a
// tag is the varint of field<<3|wiretype (0 varint, 1 fixed64, 2 length-
// delimited), varints are little-endian groups of 7 bits with the high bit
// set on every byte but the last, doubles are 8 little-endian IEEE-754
// bytes. Nothing here is computed by the code under test.

// stockAsk is YARN's classic "5 containers of <2048 MB, 1 vcore> anywhere"
// at priority 1, as a Java AM sends it.
var stockAsk = []byte{
	0x0A, 0x02, 0x08, 0x01, // 1 priority {1 priority: 1}
	0x12, 0x01, '*', // 2 resource_name "*"
	0x1A, 0x05, // 3 capability, 5 bytes:
	0x08, 0x80, 0x10, //   1 memory 2048 = 0b1_0000000_0000000 -> 0x80 0x10
	0x10, 0x01, //   2 virtual_cores 1
	0x20, 0x05, // 4 num_containers 5
	0x28, 0x01, // 5 relax_locality true
}

func stockAskMsg() *yarnpb.ResourceRequestProto {
	return &yarnpb.ResourceRequestProto{
		Priority:     &yarnpb.PriorityProto{Priority: proto.Int32(1)},
		ResourceName: proto.String("*"),
		Capability: &yarnpb.ResourceProto{
			Memory:       proto.Int64(2048),
			VirtualCores: proto.Int32(1),
		},
		NumContainers: proto.Int32(5),
		RelaxLocality: proto.Bool(true),
	}
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestGoldenBytes(t *testing.T) {
	altruistic := stockAskMsg()
	altruistic.LoomAskKind = yarnpb.LoomAskKindProto_LOOM_ALTRUISTIC.Enum()

	full := stockAskMsg()
	full.LoomAskKind = yarnpb.LoomAskKindProto_LOOM_ALTRUISTIC.Enum()
	full.LoomRemainingWork = proto.Float64(2.5)
	full.LoomDemand = &yarnpb.ResourceProto{
		Memory:       proto.Int64(1024),
		VirtualCores: proto.Int32(2),
		ResourceValueMap: []*yarnpb.ResourceInformationProto{
			{Key: proto.String("disk"), Value: proto.Int64(100)},
		},
	}
	full.LoomCriticalPathMs = proto.Int64(1500)

	cases := []struct {
		name string
		msg  proto.Message
		want []byte
	}{
		{
			name: "ApplicationId",
			msg: &yarnpb.ApplicationIdProto{
				Id:               proto.Int32(3),
				ClusterTimestamp: proto.Int64(1700000000000),
			},
			want: []byte{
				0x08, 0x03, // 1 id 3
				// 2 cluster_timestamp 1700000000000 = 0x18BCFE56800,
				// 7-bit groups from the low end: 00 50 15 7F 3C 31.
				0x10, 0x80, 0xD0, 0x95, 0xFF, 0xBC, 0x31,
			},
		},
		{
			name: "stock ResourceRequest",
			msg:  stockAskMsg(),
			want: stockAsk,
		},
		{
			name: "ResourceRequest with loom_ask_kind ALTRUISTIC",
			msg:  altruistic,
			want: cat(stockAsk, []byte{
				// 1000<<3|0 = 8000 = 0x1F40 -> 0xC0 0x3E; value 1.
				0xC0, 0x3E, 0x01,
			}),
		},
		{
			name: "ResourceRequest with every Loom field",
			msg:  full,
			want: cat(stockAsk, []byte{
				0xC0, 0x3E, 0x01, // 1000 loom_ask_kind ALTRUISTIC
				// 1001<<3|1 = 8009 = 0x1F49 -> 0xC9 0x3E; 2.5 = 0x4004000000000000.
				0xC9, 0x3E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x40,
				// 1002<<3|2 = 8018 = 0x1F52 -> 0xD2 0x3E; 15 bytes:
				0xD2, 0x3E, 0x0F,
				0x08, 0x80, 0x08, //   1 memory 1024 -> 0x80 0x08
				0x10, 0x02, //   2 virtual_cores 2
				0x1A, 0x08, //   3 resource_value_map, 8 bytes:
				0x0A, 0x04, 'd', 'i', 's', 'k', //     1 key "disk"
				0x10, 0x64, //     2 value 100
				// 1003<<3|0 = 8024 = 0x1F58 -> 0xD8 0x3E; 1500 = 0x5DC -> 0xDC 0x0B.
				0xD8, 0x3E, 0xDC, 0x0B,
			}),
		},
		{
			name: "AllocateResponse with loom_p_altruism",
			msg: &yarnpb.AllocateResponseProto{
				ResponseId:    proto.Int32(7),
				LoomPAltruism: proto.Float64(0.25),
			},
			want: []byte{
				0x10, 0x07, // 2 response_id 7
				// 1001<<3|1 = 8009 -> 0xC9 0x3E; 0.25 = 0x3FD0000000000000.
				0xC9, 0x3E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xD0, 0x3F,
			},
		},
		{
			name: "AllocateResponse with loom_share and loom_leftover",
			msg: &yarnpb.AllocateResponseProto{
				LoomShare: &yarnpb.ResourceProto{Memory: proto.Int64(4096)},
				LoomLeftover: &yarnpb.ResourceProto{
					VirtualCores: proto.Int32(3),
				},
			},
			want: []byte{
				// 1000<<3|2 = 8002 = 0x1F42 -> 0xC2 0x3E; 3 bytes:
				// 1 memory 4096 = 0b100000_0000000 -> 0x80 0x20.
				0xC2, 0x3E, 0x03, 0x08, 0x80, 0x20,
				// 1002<<3|2 = 8018 -> 0xD2 0x3E; 2 bytes: 2 virtual_cores 3.
				0xD2, 0x3E, 0x02, 0x10, 0x03,
			},
		},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := proto.MarshalOptions{Deterministic: true}.Marshal(tc.msg)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("marshal:\n got % X\nwant % X", got, tc.want)
			}
			// And back: the golden bytes parse to the same message.
			back := tc.msg.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(tc.want, back); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if !proto.Equal(back, tc.msg) {
				t.Fatalf("unmarshal: got %v, want %v", back, tc.msg)
			}
		})
	}
}

// A Java AM never sends loom_ask_kind; its ask must read as DEFAULT, and
// relax_locality keeps YARN's default of true when absent.
func TestStockAskDecodesAsDefault(t *testing.T) {
	var r yarnpb.ResourceRequestProto
	if err := proto.Unmarshal(stockAsk, &r); err != nil {
		t.Fatal(err)
	}
	if r.LoomAskKind != nil {
		t.Fatalf("loom_ask_kind present on a stock ask: %v", r.GetLoomAskKind())
	}
	if got := r.GetLoomAskKind(); got != yarnpb.LoomAskKindProto_LOOM_DEFAULT {
		t.Fatalf("GetLoomAskKind() = %v, want LOOM_DEFAULT", got)
	}
	if r.GetLoomDemand() != nil || r.GetLoomRemainingWork() != 0 || r.GetLoomCriticalPathMs() != 0 {
		t.Fatalf("Loom fields set on a stock ask: %v", &r)
	}
	if r.GetNumContainers() != 5 || r.GetCapability().GetMemory() != 2048 || r.GetResourceName() != "*" {
		t.Fatalf("stock fields misread: %v", &r)
	}

	var bare yarnpb.ResourceRequestProto
	if err := proto.Unmarshal([]byte{0x20, 0x01}, &bare); err != nil {
		t.Fatal(err)
	}
	if !bare.GetRelaxLocality() {
		t.Fatal("relax_locality should default to true")
	}
	if bare.GetAllocationRequestId() != -1 {
		t.Fatalf("allocation_request_id default = %d, want -1", bare.GetAllocationRequestId())
	}
}

// Bytes from a newer peer, with fields this code does not know, parse
// without error; the known fields read right and the unknown ones survive a
// re-marshal untouched.
func TestUnknownHighFieldsAreSkipped(t *testing.T) {
	in := []byte{
		0x08, 0x03, // 1 id 3
		0x80, 0x7D, 0x01, // 2000<<3|0 = 16000 = 0x3E80 -> 0x80 0x7D; value 1
		0x10, 0x2A, // 2 cluster_timestamp 42
		0xE2, 0x5D, 0x01, 'x', // 1500<<3|2 = 12002 = 0x2EE2 -> 0xE2 0x5D; "x"
	}
	var id yarnpb.ApplicationIdProto
	if err := proto.Unmarshal(in, &id); err != nil {
		t.Fatalf("unmarshal with unknown fields: %v", err)
	}
	if id.GetId() != 3 || id.GetClusterTimestamp() != 42 {
		t.Fatalf("known fields misread: %v", &id)
	}
	wantUnknown := []byte{0x80, 0x7D, 0x01, 0xE2, 0x5D, 0x01, 'x'}
	if got := id.ProtoReflect().GetUnknown(); !bytes.Equal(got, wantUnknown) {
		t.Fatalf("unknown fields: got % X, want % X", got, wantUnknown)
	}

	// An ask kind from a future Loom (value 7) is not an error either. Note
	// that protobuf-go treats proto2 enums as open: the getter returns
	// LoomAskKindProto(7), not LOOM_DEFAULT, so a server must treat any kind
	// it does not know as DEFAULT itself. What must never happen is reading
	// it as ALTRUISTIC.
	var r yarnpb.ResourceRequestProto
	if err := proto.Unmarshal(cat(stockAsk, []byte{0xC0, 0x3E, 0x07}), &r); err != nil {
		t.Fatalf("unmarshal with unknown enum value: %v", err)
	}
	if r.GetLoomAskKind() == yarnpb.LoomAskKindProto_LOOM_ALTRUISTIC {
		t.Fatal("an unknown ask kind read as ALTRUISTIC")
	}
	if r.GetNumContainers() != 5 {
		t.Fatalf("stock fields misread next to an unknown ask kind: %v", &r)
	}
}

// A stock peer sees ResourceRequestProto and AllocateResponseProto without
// Loom's fields. Build exactly that schema (ours minus every field >= 1000)
// and check Loom's bytes parse under it with YARN's fields intact.
func TestStockSchemaSkipsLoomFields(t *testing.T) {
	stock := func(fd protoreflect.FileDescriptor) protoreflect.FileDescriptor {
		t.Helper()
		fdp := protodesc.ToFileDescriptorProto(fd)
		for _, m := range fdp.MessageType {
			var keep []*descriptorpb.FieldDescriptorProto
			for _, f := range m.Field {
				if f.GetNumber() < 1000 {
					keep = append(keep, f)
				}
			}
			m.Field = keep
		}
		out, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
		if err != nil {
			t.Fatalf("stock schema for %s: %v", fd.Path(), err)
		}
		return out
	}

	askMD := stock(yarnpb.File_yarn_yarn_protos_proto).Messages().ByName("ResourceRequestProto")
	ask := stockAskMsg()
	ask.LoomAskKind = yarnpb.LoomAskKindProto_LOOM_ALTRUISTIC.Enum()
	ask.LoomDemand = &yarnpb.ResourceProto{Memory: proto.Int64(1)}
	b, err := proto.Marshal(ask)
	if err != nil {
		t.Fatal(err)
	}
	dm := dynamicpb.NewMessage(askMD)
	if err := proto.Unmarshal(b, dm); err != nil {
		t.Fatalf("stock schema rejects a Loom ask: %v", err)
	}
	if got := dm.Get(askMD.Fields().ByName("num_containers")).Int(); got != 5 {
		t.Fatalf("stock schema read num_containers %d, want 5", got)
	}
	if len(dm.GetUnknown()) == 0 {
		t.Fatal("Loom fields should land in the stock message's unknown fields")
	}

	respMD := stock(yarnpb.File_yarn_yarn_service_protos_proto).Messages().ByName("AllocateResponseProto")
	resp := &yarnpb.AllocateResponseProto{
		ResponseId:    proto.Int32(9),
		LoomPAltruism: proto.Float64(0.5),
		LoomShare:     &yarnpb.ResourceProto{Memory: proto.Int64(1)},
		LoomShareGrowth: []*yarnpb.LoomShareStepProto{
			{AfterMs: proto.Int64(20000), Factor: proto.Float64(2)},
		},
	}
	b, err = proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	dr := dynamicpb.NewMessage(respMD)
	if err := proto.Unmarshal(b, dr); err != nil {
		t.Fatalf("stock schema rejects a Loom allocate response: %v", err)
	}
	if got := dr.Get(respMD.Fields().ByName("response_id")).Int(); got != 9 {
		t.Fatalf("stock schema read response_id %d, want 9", got)
	}
}

// Loom's fields live on 1000+ and are all named loom_*; nothing else does.
func TestLoomFieldsAreFenced(t *testing.T) {
	seen := 0
	protoregistry.GlobalFiles.RangeFilesByPackage("hadoop.yarn", func(fd protoreflect.FileDescriptor) bool {
		var walk func(protoreflect.MessageDescriptors)
		walk = func(ms protoreflect.MessageDescriptors) {
			for i := 0; i < ms.Len(); i++ {
				m := ms.Get(i)
				for j := 0; j < m.Fields().Len(); j++ {
					f := m.Fields().Get(j)
					loomName := strings.HasPrefix(string(f.Name()), "loom_")
					high := f.Number() >= 1000
					if loomName != high {
						t.Errorf("%s: field %d %q breaks the Loom fence", m.FullName(), f.Number(), f.Name())
					}
					if loomName {
						seen++
					}
				}
				walk(m.Messages())
			}
		}
		walk(fd.Messages())
		return true
	})
	if seen != 12 {
		t.Errorf("found %d Loom fields, want 12 (4 on the ask, 1 on the allocate request, 6 on the allocate response, 1 on the container)", seen)
	}
}

// The method table a server dispatches on: YARN's method names, each with
// the request and response types the services declare.
func TestMethodTable(t *testing.T) {
	type method struct{ service, name, in, out string }
	want := []method{
		{"ApplicationClientProtocolService", "getNewApplication", "GetNewApplicationRequestProto", "GetNewApplicationResponseProto"},
		{"ApplicationClientProtocolService", "submitApplication", "SubmitApplicationRequestProto", "SubmitApplicationResponseProto"},
		{"ApplicationClientProtocolService", "getApplicationReport", "GetApplicationReportRequestProto", "GetApplicationReportResponseProto"},
		{"ApplicationClientProtocolService", "getApplications", "GetApplicationsRequestProto", "GetApplicationsResponseProto"},
		{"ApplicationClientProtocolService", "forceKillApplication", "KillApplicationRequestProto", "KillApplicationResponseProto"},
		{"ApplicationClientProtocolService", "getClusterMetrics", "GetClusterMetricsRequestProto", "GetClusterMetricsResponseProto"},
		{"ApplicationClientProtocolService", "getClusterNodes", "GetClusterNodesRequestProto", "GetClusterNodesResponseProto"},
		{"ApplicationClientProtocolService", "getApplicationAttempts", "GetApplicationAttemptsRequestProto", "GetApplicationAttemptsResponseProto"},
		{"ApplicationClientProtocolService", "getContainers", "GetContainersRequestProto", "GetContainersResponseProto"},
		{"ApplicationClientProtocolService", "getQueueInfo", "GetQueueInfoRequestProto", "GetQueueInfoResponseProto"},
		{"ApplicationMasterProtocolService", "registerApplicationMaster", "RegisterApplicationMasterRequestProto", "RegisterApplicationMasterResponseProto"},
		{"ApplicationMasterProtocolService", "allocate", "AllocateRequestProto", "AllocateResponseProto"},
		{"ApplicationMasterProtocolService", "finishApplicationMaster", "FinishApplicationMasterRequestProto", "FinishApplicationMasterResponseProto"},
		{"ContainerManagementProtocolService", "startContainers", "StartContainersRequestProto", "StartContainersResponseProto"},
		{"ContainerManagementProtocolService", "stopContainers", "StopContainersRequestProto", "StopContainersResponseProto"},
		{"ContainerManagementProtocolService", "getContainerStatuses", "GetContainerStatusesRequestProto", "GetContainerStatusesResponseProto"},
		{"ResourceTrackerService", "registerNodeManager", "RegisterNodeManagerRequestProto", "RegisterNodeManagerResponseProto"},
		{"ResourceTrackerService", "nodeHeartbeat", "NodeHeartbeatRequestProto", "NodeHeartbeatResponseProto"},
	}
	for _, w := range want {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName("hadoop.yarn." + w.service))
		if err != nil {
			t.Errorf("%s: %v", w.service, err)
			continue
		}
		m := d.(protoreflect.ServiceDescriptor).Methods().ByName(protoreflect.Name(w.name))
		if m == nil {
			t.Errorf("%s has no method %s", w.service, w.name)
			continue
		}
		if got := string(m.Input().FullName()); got != "hadoop.yarn."+w.in {
			t.Errorf("%s.%s takes %s, want %s", w.service, w.name, got, w.in)
		}
		if got := string(m.Output().FullName()); got != "hadoop.yarn."+w.out {
			t.Errorf("%s.%s returns %s, want %s", w.service, w.name, got, w.out)
		}
		// The Go types exist under the same names.
		for _, n := range []string{w.in, w.out} {
			if _, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName("hadoop.yarn." + n)); err != nil {
				t.Errorf("no Go type for %s: %v", n, err)
			}
		}
	}
}

// Spot checks that numbers stock clients rely on are YARN's, read straight
// off the wire rather than from the descriptors.
func TestYarnFieldNumbers(t *testing.T) {
	check := func(name string, m proto.Message, wantNum protowire.Number) {
		t.Helper()
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		num, _, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("%s: bad tag", name)
		}
		if num != wantNum {
			t.Errorf("%s on field %d, want %d", name, num, wantNum)
		}
	}
	check("AllocateRequestProto.scheduling_requests", &yarnpb.AllocateRequestProto{
		SchedulingRequests: []*yarnpb.SchedulingRequestProto{{}},
	}, 10)
	check("AllocateResponseProto.application_priority", &yarnpb.AllocateResponseProto{
		ApplicationPriority: &yarnpb.PriorityProto{},
	}, 13)
	check("ApplicationReportProto.rmClusterId", &yarnpb.ApplicationReportProto{
		RmClusterId: proto.String("c"),
	}, 29)
	check("RegisterNodeManagerRequestProto.http_port", &yarnpb.RegisterNodeManagerRequestProto{
		HttpPort: proto.Int32(8042),
	}, 3)
	check("NodeHeartbeatResponseProto.tokenSequenceNo", &yarnpb.NodeHeartbeatResponseProto{
		TokenSequenceNo: proto.Int64(1),
	}, 19)
	check("GetApplicationsRequestProto.scope", &yarnpb.GetApplicationsRequestProto{
		Scope: yarnpb.ApplicationsRequestScopeProto_OWN.Enum(),
	}, 11)
}
