package rpc

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/loomrm/loom/rpc/hadooppb"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// validStream is a whole client conversation: preamble, SASL negotiate,
// connection context, a ping and one echo call.
func validStream(t testing.TB) []byte {
	mk := func(id int32, msgs ...proto.Message) []byte {
		h := &hadooppb.RpcRequestHeaderProto{RpcKind: hadooppb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
			CallId: proto.Int32(id), ClientId: []byte("0123456789abcdef"), RetryCount: proto.Int32(-1)}
		b, err := AppendFrame(nil, append([]proto.Message{h}, msgs...)...)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return bytes.Join([][]byte{
		AppendPreamble(nil, Preamble{Version: Version, AuthProtocol: AuthSASL}),
		mk(SASLCallID, &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_NEGOTIATE.Enum()}),
		mk(ConnectionContextCallID, &hadooppb.IpcConnectionContextProto{UserInfo: &hadooppb.UserInformationProto{EffectiveUser: proto.String("f")}}),
		mk(PingCallID),
		mk(0, &hadooppb.RequestHeaderProto{MethodName: proto.String("echo"), DeclaringClassProtocolName: proto.String(echoProtocol),
			ClientProtocolVersion: proto.Uint64(1)}, wrapperspb.String("hi")),
	}, nil)
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 1, 2, 3})
	f.Add([]byte{0x80, 0, 0, 0})
	f.Add([]byte{0, 0, 1})
	f.Add(validStream(f)[7:])
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			frame, err := ReadFrame(r, 1<<16, nil)
			if err != nil {
				return
			}
			if len(frame) > 1<<16 {
				t.Fatalf("frame of %d bytes passed a 65536-byte limit", len(frame))
			}
		}
	})
}

func FuzzParsePreamble(f *testing.F) {
	f.Add([]byte("hrpc\x09\x00\x00"))
	f.Add([]byte("hrpc\x09\x00\xdf"))
	f.Add([]byte("GET / H"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePreamble(data)
		if err == nil && (len(data) != 7 || p.Version != Version) {
			t.Fatalf("accepted %q", data)
		}
	})
}

// FuzzHeaders checks the hand-written header codecs against the
// generated code: whatever the bytes, both agree.
func FuzzHeaders(f *testing.F) {
	s := validStream(f)
	f.Add(s[7+4+1 : 7+4+1+s[7+4]])
	f.Add([]byte{0x08, 0x02, 0x18, 0x41})
	f.Add(appendRequestHeader(nil, -33, nil))
	f.Add(appendMethodHeader(nil, "allocate", "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"))
	f.Add(appendSuccessHeader(nil, 7, []byte{1, 2}, -1, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		partial := proto.UnmarshalOptions{AllowPartial: true}
		var want hadooppb.RpcRequestHeaderProto
		werr := partial.Unmarshal(data, &want)
		got, gerr := parseRequestHeader(data)
		if werr == nil && want.CallId != nil {
			if gerr != nil {
				t.Fatalf("parseRequestHeader(%x) failed (%v) where the generated code reads %v", data, gerr, &want)
			}
			kind := int32(-1)
			if want.RpcKind != nil {
				kind = int32(want.GetRpcKind())
			}
			if got.callID != want.GetCallId() || got.kind != kind || got.op != int32(want.GetRpcOp()) ||
				!bytes.Equal(got.clientID, want.GetClientId()) || got.hasRetry != (want.RetryCount != nil) ||
				got.hasRetry && got.retry != want.GetRetryCount() {
				t.Fatalf("parseRequestHeader(%x) = %+v, generated code reads %v", data, got, &want)
			}
		}
		var wm hadooppb.RequestHeaderProto
		werr = partial.Unmarshal(data, &wm)
		m, p, gerr := parseMethodHeader(data)
		if werr == nil && wm.MethodName != nil && wm.DeclaringClassProtocolName != nil && wm.ClientProtocolVersion != nil {
			if gerr != nil || string(m) != wm.GetMethodName() || string(p) != wm.GetDeclaringClassProtocolName() {
				t.Fatalf("parseMethodHeader(%x) = %q, %q, %v; generated code reads %v", data, m, p, gerr, &wm)
			}
		}
		var wr hadooppb.RpcResponseHeaderProto
		werr = partial.Unmarshal(data, &wr)
		id, status, gerr := parseResponseStatus(data)
		if werr == nil && wr.CallId != nil && wr.Status != nil {
			if gerr != nil || id != int32(wr.GetCallId()) || status != int32(wr.GetStatus()) {
				t.Fatalf("parseResponseStatus(%x) = %d, %d, %v; generated code reads %v", data, id, status, gerr, &wr)
			}
		}
		// What the writers write, the generated code reads back.
		var back hadooppb.RpcRequestHeaderProto
		if err := proto.Unmarshal(appendRequestHeader(nil, got.callID, data), &back); err != nil ||
			back.GetCallId() != got.callID || !bytes.Equal(back.GetClientId(), data) || back.GetRetryCount() != -1 {
			t.Fatalf("appendRequestHeader does not round-trip: %v %v", &back, err)
		}
		var rb hadooppb.RpcResponseHeaderProto
		if err := proto.Unmarshal(appendSuccessHeader(nil, got.callID, data, got.retry, true), &rb); err != nil ||
			int32(rb.GetCallId()) != got.callID || rb.GetStatus() != hadooppb.RpcResponseHeaderProto_SUCCESS ||
			rb.GetRetryCount() != got.retry || !bytes.Equal(rb.GetClientId(), data) {
			t.Fatalf("appendSuccessHeader does not round-trip: %v %v", &rb, err)
		}
		d := appendDelimitedWith(nil, func(b []byte) []byte { return append(b, data...) })
		if msg, rest, err := nextDelimited(d); err != nil || !bytes.Equal(msg, data) || len(rest) != 0 {
			t.Fatalf("appendDelimitedWith(%d bytes) does not round-trip", len(data))
		}
	})
}

// FuzzServerConn feeds a whole byte stream to a server connection: it
// must end the connection, never panic or hang.
func FuzzServerConn(f *testing.F) {
	s := validStream(f)
	f.Add(s)
	f.Add(s[:len(s)-3])
	f.Add(append(s[:7], 0xff, 0xff, 0xff, 0xff))
	f.Add([]byte("hrpc\x09\x00\x00\x00\x00\x00\x01\x00"))
	e := &echoServer{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	close(e.release)
	// A TOKEN auth attempt: its nonce cannot match, but its parsing runs.
	resp, _, _ := digestClient(newDigestServer().challenge(), []byte("id:u"), []byte("pw"))
	h := &hadooppb.RpcRequestHeaderProto{RpcKind: hadooppb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), CallId: proto.Int32(SASLCallID),
		ClientId: []byte("0123456789abcdef"), RetryCount: proto.Int32(-1)}
	initiate, _ := AppendFrame(nil, h, &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_INITIATE.Enum(), Token: resp,
		Auths: []*hadooppb.RpcSaslProto_SaslAuth{{Method: proto.String("TOKEN"), Mechanism: proto.String("DIGEST-MD5")}}})
	v := validStream(f)
	negotiate := 7 + 4 + int(binary.BigEndian.Uint32(v[7:11])) // the preamble and the NEGOTIATE frame
	f.Add(append(v[:negotiate], initiate...))
	// The server offers TOKEN auth, as the RM's scheduler port does.
	srv := NewServer(ServerOptions{IdleTimeout: time.Second, ReadTimeout: time.Second, MaxFrame: 1 << 16, Secrets: testSecrets{[]byte("k")}})
	srv.Register(e.protocol())
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		c := newServerConn(srv, server)
		srv.connWG.Add(1)
		srv.mu.Lock()
		srv.conns[c] = struct{}{}
		srv.mu.Unlock()
		done := make(chan struct{})
		go func() { c.serve(); close(done) }()
		go io.Copy(io.Discard, client)
		client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		client.Write(data)
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("server connection did not end")
		}
	})
}

// FuzzYARNRequests feeds the same bytes to every request decoder of the
// four YARN protocols: none may panic, and what decodes re-encodes
// stably.
func FuzzYARNRequests(f *testing.F) {
	rec := newRecorder()
	var methods []Method
	for _, p := range []Protocol{ApplicationClientService(rec), ApplicationMasterService(rec),
		ResourceTrackerService(rec), ContainerManagementService(rec)} {
		methods = append(methods, p.Methods...)
	}
	for _, m := range []proto.Message{
		&pb.AllocateRequestProto{ResponseId: proto.Int32(3), Ask: []*pb.ResourceRequestProto{{NumContainers: proto.Int32(2),
			Capability: res, LoomAskKind: pb.LoomAskKindProto_LOOM_ALTRUISTIC.Enum()}}},
		&pb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &pb.ApplicationSubmissionContextProto{ApplicationId: appID,
			AmContainerSpec: &pb.ContainerLaunchContextProto{Command: []string{"true"}}}},
		&pb.NodeHeartbeatRequestProto{NodeStatus: &pb.NodeStatusProto{NodeId: nodeID}},
		&pb.StartContainersRequestProto{StartContainerRequest: []*pb.StartContainerRequestProto{{}}},
		&pb.MoveApplicationAcrossQueuesRequestProto{ApplicationId: appID, TargetQueue: proto.String("etl")},
		&pb.UpdateApplicationTimeoutsRequestProto{ApplicationId: appID, ApplicationTimeouts: []*pb.ApplicationUpdateTimeoutMapProto{{
			ApplicationTimeoutType: pb.ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME.Enum(), ExpireTime: proto.String("2030-01-02T03:04:05.000+0000")}}},
		&pb.SignalContainerRequestProto{ContainerId: contID, Command: pb.SignalContainerCommandProto_GRACEFUL_SHUTDOWN.Enum()},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range methods {
			req := m.NewRequest()
			if proto.Unmarshal(data, req) != nil {
				continue
			}
			det := proto.MarshalOptions{Deterministic: true}
			b, err := det.Marshal(req)
			if err != nil {
				t.Fatalf("%s: decoded but does not re-encode: %v", m.Name, err)
			}
			// Bytes, not proto.Equal: a NaN progress is never equal to
			// itself.
			again := m.NewRequest()
			if err := proto.Unmarshal(b, again); err != nil {
				t.Fatalf("%s: re-encoded request does not decode: %v", m.Name, err)
			}
			if b2, _ := det.Marshal(again); !bytes.Equal(b, b2) {
				t.Fatalf("%s: re-encoding is not stable: %x then %x", m.Name, b, b2)
			}
		}
	})
}
