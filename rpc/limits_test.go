package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/loomrm/loom/rpc/hadooppb"
)

// The limits on what a peer that has not set up its connection (SASL and
// the connection context) may cost the server: a small frame limit, a
// short setup deadline and a cap per remote address. All over real
// loopback connections.

func frameHeader(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

func TestSetupFrameLimit(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{})
	pre := AppendPreamble(nil, Preamble{Version: Version})
	saslPre := AppendPreamble(nil, Preamble{Version: Version, AuthProtocol: AuthSASL})
	tests := []struct {
		name  string
		input []byte
		msg   string
	}{
		{"60 MB frame after the preamble", append(pre, frameHeader(60<<20)...),
			"frame of 62914560 bytes before the connection is set up is over the 65536-byte limit for SASL and the connection context"},
		{"one byte over 64 KB during SASL", append(saslPre, frameHeader(64<<10+1)...),
			"frame of 65537 bytes before the connection is set up is over the 65536-byte limit"},
		{"over ipc.maximum.data.length", append(pre, frameHeader(DefaultMaxFrame+1)...),
			"frame of 67108865 bytes is over the 67108864-byte limit (ipc.maximum.data.length)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc := rawConn(t, addr)
			if _, err := nc.Write(tc.input); err != nil {
				t.Fatal(err)
			}
			h := readFatal(t, nc)
			if h.GetStatus() != hadooppb.RpcResponseHeaderProto_FATAL || h.GetErrorDetail() != FatalInvalidHeader ||
				h.GetErrorMsg() != tc.msg && !strings.Contains(h.GetErrorMsg(), tc.msg) {
				t.Errorf("reply %v %v %q, want FATAL containing %q", h.GetStatus(), h.GetErrorDetail(), h.GetErrorMsg(), tc.msg)
			}
		})
	}
	t.Run("a set-up connection takes frames up to the normal limit", func(t *testing.T) {
		for _, sasl := range []bool{false, true} {
			c := dial(t, addr, ClientOptions{User: "big", SASL: sasl})
			v := strings.Repeat("x", 1<<20)
			if got, err := echo(c, v); err != nil || got != "big:"+v {
				t.Errorf("sasl=%v: a 1 MB call after setup: %d bytes, %v", sasl, len(got), err)
			}
		}
	})
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConnectionsPerAddressCap(t *testing.T) {
	const limit = 3
	tests := []struct {
		name string
		opts ServerOptions
		// open opens one connection that counts against the limit.
		open func(t *testing.T, addr string) io.Closer
		msg  string
	}{
		{"not set up", ServerOptions{MaxSetupConnsPerAddr: limit, CapLoopback: true},
			func(t *testing.T, addr string) io.Closer {
				nc := rawConn(t, addr)
				nc.Write(AppendPreamble(nil, Preamble{Version: Version}))
				return nc
			},
			"too many connections from 127.0.0.1 that have not sent their connection context (limit 3)"},
		{"set up", ServerOptions{MaxConnsPerAddr: limit, CapLoopback: true},
			func(t *testing.T, addr string) io.Closer {
				c := dial(t, addr, ClientOptions{User: "u"})
				if _, err := echo(c, "x"); err != nil {
					t.Fatal(err)
				}
				return c
			},
			"too many connections from 127.0.0.1 (limit 3)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, addr, _ := startServer(t, tc.opts)
			var open []io.Closer
			for range limit {
				open = append(open, tc.open(t, addr))
			}
			waitFor(t, "the connections", func() bool { return srv.Conns() == limit })

			// The next one is refused with a FATAL reply saying why...
			nc := rawConn(t, addr)
			h := readFatal(t, nc)
			if h.GetStatus() != hadooppb.RpcResponseHeaderProto_FATAL || h.GetExceptionClassName() != ClassServerTooBusy ||
				h.GetErrorMsg() != tc.msg {
				t.Errorf("refusal %v %s %q, want FATAL %s %q", h.GetStatus(), h.GetExceptionClassName(), h.GetErrorMsg(), ClassServerTooBusy, tc.msg)
			}
			// ...which a client's call returns.
			c, err := Dial(context.Background(), addr, ClientOptions{User: "late", Retries: -1})
			if err == nil {
				_, err = echo(c, "y")
				c.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("a client over the limit: %v, want %q", err, tc.msg)
			}
			if srv.Refused() != 2 {
				t.Errorf("refused = %d, want 2", srv.Refused())
			}

			// Once one closes, a new connection is served.
			open[0].Close()
			waitFor(t, "a connection to close", func() bool { return srv.Conns() == limit-1 })
			if got, err := echo(dial(t, addr, ClientOptions{User: "again"}), "z"); err != nil || got != "again:z" {
				t.Errorf("below the limit again: %q, %v", got, err)
			}
		})
	}
	t.Run("loopback is exempt by default", func(t *testing.T) {
		srv, addr, _ := startServer(t, ServerOptions{MaxSetupConnsPerAddr: 2, MaxConnsPerAddr: 2})
		for i := range 6 {
			nc := rawConn(t, addr)
			nc.Write(AppendPreamble(nil, Preamble{Version: Version}))
			c := dial(t, addr, ClientOptions{User: "local"})
			if _, err := echo(c, "x"); err != nil {
				t.Fatalf("connection %d from loopback: %v", i, err)
			}
		}
		if srv.Refused() != 0 {
			t.Errorf("refused = %d, want 0", srv.Refused())
		}
	})
}

func TestSetupTimeout(t *testing.T) {
	const setup = 300 * time.Millisecond
	// The idle and read timeouts are long: only the setup deadline can
	// cut these connections early.
	_, addr, _ := startServer(t, ServerOptions{SetupTimeout: setup, IdleTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second})
	pre := AppendPreamble(nil, Preamble{Version: Version, AuthProtocol: AuthSASL})
	negotiate, err := AppendFrame(nil, &hadooppb.RpcRequestHeaderProto{RpcKind: hadooppb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
		CallId: proto.Int32(SASLCallID), ClientId: []byte{}}, &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_NEGOTIATE.Enum()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// send writes what the peer sends, byte by byte every gap.
		send []byte
		gap  time.Duration
	}{
		{"silent", nil, 0},
		{"preamble only", pre, 0},
		{"after SASL, no context", append(pre, negotiate...), 0},
		// Slowloris: always sending, never done.
		{"a byte every 50 ms", append(pre, frameHeader(1000)...), 50 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc := rawConn(t, addr)
			start := time.Now()
			go func() {
				for _, b := range tc.send {
					if _, err := nc.Write([]byte{b}); err != nil {
						return
					}
					time.Sleep(tc.gap)
				}
			}()
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(nc)
			took := time.Since(start)
			if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) || took > 3*time.Second || took < setup-50*time.Millisecond {
				t.Fatalf("connection held for %v (err %v), want it cut after the %v setup timeout", took, err, setup)
			}
			if !bytes.Contains(got, []byte("the connection was not set up (SASL and the connection context) within 300ms")) {
				t.Errorf("replies %q, want the setup timeout named", got)
			}
		})
	}
	t.Run("a set-up connection outlives the setup timeout", func(t *testing.T) {
		c := dial(t, addr, ClientOptions{User: "slow", SASL: true})
		time.Sleep(3 * setup)
		if got, err := echo(c, "x"); err != nil || got != "slow:x" {
			t.Errorf("after %v idle: %q, %v", 3*setup, got, err)
		}
	})
}

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "connection reset") }

// TestOversizedSetupFramesAllocateNothing: 16 peers that have not set up,
// each announcing a 60 MB frame and sending what it can of it, are
// refused without the server buffering their bytes. (Before the setup
// limit each was buffered up to the 64 MB limit: 16 of them took the RM
// from 205 MB to 1.58 GB.)
func TestOversizedSetupFramesAllocateNothing(t *testing.T) {
	srv, addr, _ := startServer(t, ServerOptions{})
	const peers, announce, send = 16, 60 << 20, 4 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	msgs := make(chan string, peers)
	for range peers {
		nc := rawConn(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			go func() {
				// Write as much of the frame as the server takes.
				chunk := make([]byte, 64<<10)
				nc.Write(append(AppendPreamble(nil, Preamble{Version: Version}), frameHeader(announce)...))
				for sent := 0; sent < send; sent += len(chunk) {
					nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
					if _, err := nc.Write(chunk); err != nil {
						return
					}
				}
			}()
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			frame, err := ReadFrame(nc, DefaultMaxFrame, nil)
			if err != nil {
				msgs <- "no reply: " + err.Error()
				return
			}
			var h hadooppb.RpcResponseHeaderProto
			unmarshalDelimitedPartial(frame, &h)
			msgs <- h.GetErrorMsg()
		}()
	}
	wg.Wait()
	close(msgs)
	runtime.ReadMemStats(&after)
	for m := range msgs {
		if !strings.Contains(m, "frame of 62914560 bytes before the connection is set up is over the 65536-byte limit") {
			t.Errorf("a peer got %q", m)
		}
	}
	waitFor(t, "the refused connections to close", func() bool { return srv.Conns() == 0 })
	// Allocated over the whole exchange, by the server and the 16 test
	// peers together: a few small buffers each, not their frames.
	allocated := int64(after.TotalAlloc - before.TotalAlloc)
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d peers announcing %d MB each: %.1f MB allocated, heap grew %.1f MB", peers, announce>>20,
		float64(allocated)/(1<<20), float64(growth)/(1<<20))
	if allocated > 8<<20 {
		t.Errorf("%.1f MB allocated refusing %d oversized frames, want < 8 MB", float64(allocated)/(1<<20), peers)
	}
	if growth > 8<<20 {
		t.Errorf("heap grew %.1f MB, want < 8 MB", float64(growth)/(1<<20))
	}
}

// The server answers every call a client pipelined behind the connection
// context in the same write, each larger than a third of the server's
// buffer.
func TestCallsPipelinedBehindTheContext(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{})
	nc := rawConn(t, addr)
	b := rawSetup("p")
	for i := range 3 {
		var err error
		b, err = AppendFrame(b, rawHeader(int32(i)), &hadooppb.RequestHeaderProto{MethodName: proto.String("echo"),
			DeclaringClassProtocolName: proto.String(echoProtocol), ClientProtocolVersion: proto.Uint64(1)},
			wrapperspb.String(strings.Repeat("v", 3000)))
		if err != nil {
			t.Fatal(err)
		}
	}
	// All in one write: the context and the calls arrive together.
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for range 3 {
		frame, err := ReadFrame(nc, DefaultMaxFrame, nil)
		if err != nil {
			t.Fatal(err)
		}
		var h hadooppb.RpcResponseHeaderProto
		rest, err := unmarshalDelimitedPartial(frame, &h)
		if err != nil || h.GetStatus() != hadooppb.RpcResponseHeaderProto_SUCCESS {
			t.Fatalf("reply %v %q, %v", h.GetStatus(), h.GetErrorMsg(), err)
		}
		var v wrapperspb.StringValue
		if _, err := unmarshalDelimited(rest, &v); err != nil || v.GetValue() != "p:"+strings.Repeat("v", 3000) {
			t.Fatalf("reply value of %d bytes, %v", len(v.GetValue()), err)
		}
	}
}

// An RM holds a connection per NodeManager and AM: a set-up server
// connection keeps small buffers (serverBuf each way), not the client's.
func TestSetUpConnectionsStaySmall(t *testing.T) {
	const peers = 300
	srv, addr, _ := startServer(t, ServerOptions{})
	setup, err := AppendFrame(rawSetup("p"), rawHeader(0), &hadooppb.RequestHeaderProto{MethodName: proto.String("echo"),
		DeclaringClassProtocolName: proto.String(echoProtocol), ClientProtocolVersion: proto.Uint64(1)}, wrapperspb.String("x"))
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range peers {
		nc := rawConn(t, addr)
		if _, err := nc.Write(setup); err != nil {
			t.Fatal(err)
		}
		// The reply to the call says the connection is set up.
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := ReadFrame(nc, DefaultMaxFrame, nil); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if srv.Conns() != peers {
		t.Fatalf("%d connections open, want %d", srv.Conns(), peers)
	}
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / peers
	t.Logf("%d set-up connections: %d bytes of heap each (the test's side included)", peers, per)
	// Two 4 KB buffers and the connection's state; 16 KB buffers each
	// way would be over 32 KB.
	if per > 20<<10 {
		t.Errorf("%d bytes of heap per set-up connection, want under 20 KB", per)
	}
}

// rawHeader is a call's RPC header as a client writes it.
func rawHeader(id int32) *hadooppb.RpcRequestHeaderProto {
	return &hadooppb.RpcRequestHeaderProto{RpcKind: hadooppb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), CallId: proto.Int32(id),
		ClientId: []byte("0123456789abcdef")}
}

// rawSetup is what a client without SASL sends to set a connection up:
// the preamble and the connection context for user.
func rawSetup(user string) []byte {
	b := AppendPreamble(nil, Preamble{Version: Version})
	b, _ = AppendFrame(b, rawHeader(ConnectionContextCallID), &hadooppb.IpcConnectionContextProto{
		UserInfo: &hadooppb.UserInformationProto{EffectiveUser: proto.String(user)}})
	return b
}
