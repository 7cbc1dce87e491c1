package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/loomrm/loom/rpc/hadooppb"
)

const echoProtocol = "org.loom.test.EchoProtocolPB"

// echoServer serves echoProtocol: "echo" answers "<user>:<value>", "fail"
// returns an application error, "block" waits on release, "panic" panics.
type echoServer struct {
	release chan struct{}
	entered chan struct{}
}

func startServer(t testing.TB, opts ServerOptions) (*Server, string, *echoServer) {
	t.Helper()
	return startServerInline(t, opts)
}

// startServerInline is startServer with the named methods run inline.
func startServerInline(t testing.TB, opts ServerOptions, inline ...string) (*Server, string, *echoServer) {
	t.Helper()
	e := &echoServer{release: make(chan struct{}), entered: make(chan struct{}, 64)}
	s, addr := serveProtocol(t, opts, e.protocol().WithInline(inline...))
	return s, addr, e
}

// serveProtocol serves p on a loopback port until the test ends.
func serveProtocol(t testing.TB, opts ServerOptions, p Protocol) (*Server, string) {
	t.Helper()
	s := NewServer(opts)
	s.Register(p)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return s, ln.Addr().String()
}

func (e *echoServer) protocol() Protocol {
	return Protocol{Name: echoProtocol, Methods: []Method{
		Unary("echo", func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			ci, _ := CallFromContext(ctx)
			return wrapperspb.String(ci.User + ":" + req.GetValue()), nil
		}),
		Unary("fail", func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			if req.GetValue() == "plain" {
				return nil, errors.New("plain failure")
			}
			return nil, Errorf("org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException",
				"Application with id '%s' doesn't exist in RM.", req.GetValue())
		}),
		Unary("block", func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			e.entered <- struct{}{}
			<-e.release
			return req, nil
		}),
		Unary("panic", func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			panic("boom")
		}),
	}}
}

// blockOn calls "block" on c and returns once the handler has entered;
// the channel gets the call's result once e.release is closed.
func (e *echoServer) blockOn(c Caller) chan error {
	blocked := make(chan error, 1)
	go func() {
		var resp wrapperspb.StringValue
		blocked <- c.Call(context.Background(), echoProtocol, "block", wrapperspb.String("first"), &resp)
	}()
	<-e.entered
	return blocked
}

func dial(t testing.TB, addr string, opts ClientOptions) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func echo(c Caller, v string, opts ...CallOption) (string, error) {
	var resp wrapperspb.StringValue
	err := c.Call(context.Background(), echoProtocol, "echo", wrapperspb.String(v), &resp, opts...)
	return resp.GetValue(), err
}

func TestRoundTripCarriesTheUser(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{})
	for _, sasl := range []bool{false, true} {
		c := dial(t, addr, ClientOptions{User: "alice", SASL: sasl})
		for i := range 3 {
			got, err := echo(c, fmt.Sprint(i))
			if want := fmt.Sprintf("alice:%d", i); err != nil || got != want {
				t.Errorf("sasl=%v: echo = %q, %v; want %q", sasl, got, err, want)
			}
		}
	}
}

func TestPipelinedCallsReplyOutOfOrder(t *testing.T) {
	_, addr, e := startServer(t, ServerOptions{})
	c := dial(t, addr, ClientOptions{User: "bob"})
	blocked := e.blockOn(c)
	// The first call is still in its handler; later calls on the same
	// connection must overtake it.
	for i := range 10 {
		if got, err := echo(c, fmt.Sprint(i)); err != nil || got != fmt.Sprintf("bob:%d", i) {
			t.Fatalf("echo behind a blocked call = %q, %v", got, err)
		}
	}
	select {
	case err := <-blocked:
		t.Fatalf("blocked call returned early: %v", err)
	default:
	}
	close(e.release)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentCallersShareOneConnection: 64 goroutines call over one
// connection; each value's length varies from call to call (up to 3 KB),
// so the request frames and reply payloads the client reuses (callBufs)
// come back holding longer, older bytes than the next call writes.
func TestConcurrentCallersShareOneConnection(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{})
	c := dial(t, addr, ClientOptions{User: "u"})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				v := fmt.Sprintf("%d-%d-%s", g, i, strings.Repeat("x", (g*131+i*977)%3000))
				if got, err := echo(c, v); err != nil || got != "u:"+v {
					errs <- fmt.Errorf("echo %s = %q, %v", v, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestErrorsKeepTheConnection(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{ErrorClass: "org.apache.hadoop.yarn.exceptions.YarnException"})
	c := dial(t, addr, ClientOptions{User: "u"})
	var resp wrapperspb.StringValue
	tests := []struct {
		protocol, method, arg string
		class                 string
		code                  ErrorCode
		msg                   string
	}{
		{"org.apache.hadoop.NoSuchPB", "echo", "", ClassNoSuchProtocol, ErrNoSuchProtocol, "Unknown protocol: org.apache.hadoop.NoSuchPB"},
		{echoProtocol, "nope", "", ClassNoSuchMethod, ErrNoSuchMethod, "Unknown method nope called on " + echoProtocol + " protocol."},
		{echoProtocol, "fail", "application_1_0001", "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException", ErrApplication,
			"Application with id 'application_1_0001' doesn't exist in RM."},
		{echoProtocol, "fail", "plain", "org.apache.hadoop.yarn.exceptions.YarnException", ErrApplication, "plain failure"},
		{echoProtocol, "panic", "", ClassServer, ErrServer, "panic failed inside the server: boom"},
	}
	for _, tc := range tests {
		err := c.Call(context.Background(), tc.protocol, tc.method, wrapperspb.String(tc.arg), &resp)
		var re *RemoteError
		if !errors.As(err, &re) {
			t.Fatalf("%s.%s: err = %v, want a RemoteError", tc.protocol, tc.method, err)
		}
		if re.Class != tc.class || re.Code != tc.code || re.Message != tc.msg || re.Fatal {
			t.Errorf("%s.%s: got %+v, want class %s code %v message %q", tc.protocol, tc.method, re, tc.class, tc.code, tc.msg)
		}
		if got, err := echo(c, "after"); err != nil || got != "u:after" {
			t.Errorf("after %s: echo = %q, %v; the connection should survive", tc.method, got, err)
		}
	}
}

// rawConn speaks raw bytes to a server.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// readFatal reads replies until a FATAL one, then checks the connection
// is closed.
func readFatal(t *testing.T, nc net.Conn) *hadooppb.RpcResponseHeaderProto {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	frame, err := ReadFrame(nc, DefaultMaxFrame, nil)
	if err != nil {
		t.Fatalf("no FATAL reply: %v", err)
	}
	var h hadooppb.RpcResponseHeaderProto
	if _, err := unmarshalDelimitedPartial(frame, &h); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("connection still open after FATAL (read: %v)", err)
	}
	return &h
}

func frameOf(parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func delimited(t *testing.T, m proto.Message) []byte {
	b, err := appendDelimited(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHostileInputGetsFatalAndSparesOthers(t *testing.T) {
	srv, addr, _ := startServer(t, ServerOptions{MaxFrame: 1 << 20})
	good := dial(t, addr, ClientOptions{User: "good"})
	pre := AppendPreamble(nil, Preamble{Version: Version})
	hdr := func(id int32, kind hadooppb.RpcKindProto) []byte {
		return delimited(t, &hadooppb.RpcRequestHeaderProto{RpcKind: kind.Enum(), CallId: proto.Int32(id), ClientId: []byte{}})
	}
	ctx := frameOf(hdr(-3, hadooppb.RpcKindProto_RPC_PROTOCOL_BUFFER), delimited(t, &hadooppb.IpcConnectionContextProto{}))
	pb := hadooppb.RpcKindProto_RPC_PROTOCOL_BUFFER
	tests := []struct {
		name  string
		input []byte
		code  ErrorCode
		msg   string
	}{
		{"wrong version", []byte("hrpc\x07\x00\x00"), FatalVersionMismatch, "IPC version 7"},
		{"bad auth", []byte("hrpc\x09\x00\x51"), FatalInvalidHeader, "auth protocol 81"},
		{"not hrpc", []byte("xyzw\x09\x00\x00"), FatalInvalidHeader, "not a Hadoop IPC client"},
		{"length 2^31", append(pre, 0x80, 0, 0, 0), FatalInvalidHeader, "over the 1048576-byte limit"},
		{"length over limit", append(pre, 0, 0x20, 0, 0), FatalInvalidHeader, "frame of 2097152 bytes"},
		{"garbage header", append(pre, frameOf([]byte{0x05, 0xff, 0xff, 0xff, 0xff, 0xff})...), FatalInvalidHeader, "unparseable RpcRequestHeaderProto"},
		{"header past frame", append(pre, frameOf([]byte{0x7f, 0x08})...), FatalInvalidHeader, "runs past the end"},
		{"call before context", append(pre, frameOf(hdr(1, pb))...), FatalInvalidHeader, "call 1 before the connection context"},
		{"writable rpc", bytes.Join([][]byte{pre, ctx, frameOf(hdr(1, hadooppb.RpcKindProto_RPC_WRITABLE))}, nil), FatalUnsupported, "RPC_PROTOCOL_BUFFER only"},
		{"odd call id", bytes.Join([][]byte{pre, ctx, frameOf(hdr(-7, pb))}, nil), FatalInvalidHeader, "call id -7"},
		{"no request header", bytes.Join([][]byte{pre, ctx, frameOf(hdr(1, pb))}, nil), FatalInvalidHeader, "unparseable RequestHeaderProto"},
		{"bad request", bytes.Join([][]byte{pre, ctx, frameOf(hdr(1, pb), delimited(t, &hadooppb.RequestHeaderProto{
			MethodName: proto.String("echo"), DeclaringClassProtocolName: proto.String(echoProtocol), ClientProtocolVersion: proto.Uint64(1)}),
			[]byte{0x03, 0x0a, 0x09, 0x01})}, nil), FatalDeserializing, "cannot decode echo request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc := rawConn(t, addr)
			if _, err := nc.Write(tc.input); err != nil {
				t.Fatal(err)
			}
			h := readFatal(t, nc)
			if h.GetStatus() != hadooppb.RpcResponseHeaderProto_FATAL || h.GetErrorDetail() != tc.code ||
				!strings.Contains(h.GetErrorMsg(), tc.msg) {
				t.Errorf("reply %v %v %q, want FATAL %v containing %q", h.GetStatus(), h.GetErrorDetail(), h.GetErrorMsg(), tc.code, tc.msg)
			}
			if got, err := echo(good, "still"); err != nil || got != "good:still" {
				t.Errorf("the other connection broke: %q, %v", got, err)
			}
		})
	}
	t.Run("http on the ipc port", func(t *testing.T) {
		nc := rawConn(t, addr)
		io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(nc)
		if !strings.Contains(string(b), "HTTP request to a Hadoop IPC port") {
			t.Errorf("reply %q", b)
		}
	})
	t.Run("truncated frame then close", func(t *testing.T) {
		nc := rawConn(t, addr)
		nc.Write(append(pre, 0, 0, 1, 0, 1, 2, 3))
		nc.Close()
	})
	if got, err := echo(good, "end"); err != nil || got != "good:end" {
		t.Errorf("after hostile input: %q, %v", got, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.Conns() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := srv.Conns(); n != 1 {
		t.Errorf("%d connections open, want only the good one", n)
	}
}

func TestTimeoutsCutIdleAndSlowConnections(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{IdleTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond})
	pre := AppendPreamble(nil, Preamble{Version: Version})
	tests := []struct {
		name  string
		input []byte
	}{
		{"silent after connect", nil},
		{"idle after preamble", pre},
		// Slowloris: a frame started and never finished.
		{"half a length", append(pre, 0, 0)},
		{"half a frame", append(pre, 0, 0, 0, 100, 1, 2, 3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc := rawConn(t, addr)
			nc.Write(tc.input)
			start := time.Now()
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := io.ReadAll(nc)
			if took := time.Since(start); err != nil || took > 3*time.Second {
				t.Errorf("connection held for %v (err %v), want it cut after ~300ms", took, err)
			}
		})
	}
	t.Run("a call in flight is not idle", func(t *testing.T) {
		_, addr, e := startServer(t, ServerOptions{IdleTimeout: 100 * time.Millisecond})
		c := dial(t, addr, ClientOptions{})
		go func() { <-e.entered; time.Sleep(500 * time.Millisecond); close(e.release) }()
		var resp wrapperspb.StringValue
		if err := c.Call(context.Background(), echoProtocol, "block", wrapperspb.String("x"), &resp); err != nil || resp.GetValue() != "x" {
			t.Errorf("long call: %q, %v", resp.GetValue(), err)
		}
	})
}

func TestConnectionLimit(t *testing.T) {
	srv, addr, _ := startServer(t, ServerOptions{MaxConns: 2})
	a := dial(t, addr, ClientOptions{User: "a"})
	b := dial(t, addr, ClientOptions{User: "b"})
	for _, c := range []*Conn{a, b} {
		if _, err := echo(c, "x"); err != nil {
			t.Fatal(err)
		}
	}
	nc := rawConn(t, addr)
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := nc.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("third connection: read %d, %v; want it closed", n, err)
	}
	if srv.Refused() != 1 {
		t.Errorf("refused = %d, want 1", srv.Refused())
	}
	if got, err := echo(a, "y"); err != nil || got != "a:y" {
		t.Errorf("existing connection after refusal: %q, %v", got, err)
	}
	b.Close()
	deadline := time.Now().Add(5 * time.Second)
	for srv.Conns() > 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := echo(dial(t, addr, ClientOptions{}), "z"); err != nil {
		t.Errorf("a new connection once below the limit: %v", err)
	}
}

func TestMaxConnsFor(t *testing.T) {
	for _, tc := range []struct {
		files uint64
		want  int
	}{
		{files: 256, want: 1024},            // below the floor
		{files: 1024, want: 1024},           // 768 after the reserve: the floor
		{files: 4096, want: 3840},           // the usual hard limit
		{files: 20000, want: 19744},         // 20,000 less 256
		{files: 1 << 20, want: 1048320},     // 1,048,576 less 256
		{files: 1<<20 + 256, want: 1 << 20}, // the cap exactly
		{files: 1 << 62, want: 1 << 20},     // unlimited
	} {
		if got := maxConnsFor(tc.files); got != tc.want {
			t.Errorf("maxConnsFor(%d) = %d, want %d", tc.files, got, tc.want)
		}
	}
}

// A server with the default limit takes more than 4,096 connections when
// the process may open enough files: each NodeManager of a large cluster
// holds one of its own to the resource tracker.
func TestDefaultConnectionLimitPasses4096(t *testing.T) {
	const conns = 4200
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	if need := uint64(2*conns + 1000); lim.Cur < need {
		// Both ends of each connection are in this process.
		if lim.Max < need {
			t.Skipf("the open-file limit (hard %d) is below the %d this test needs", lim.Max, need)
		}
		old := lim
		lim.Cur = need
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Skip(err)
		}
		t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
	}
	srv, addr, _ := startServer(t, ServerOptions{})
	for i := 0; i < conns; i++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		t.Cleanup(func() { nc.Close() })
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.Conns() < conns && srv.Refused() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got, refused := srv.Conns(), srv.Refused(); got != conns || refused != 0 {
		t.Errorf("server holds %d connections and refused %d, want %d and 0", got, refused, conns)
	}
}

func TestShutdownDrainsCallsInFlight(t *testing.T) {
	srv, addr, e := startServer(t, ServerOptions{})
	c := dial(t, addr, ClientOptions{})
	res := make(chan error, 1)
	go func() {
		var resp wrapperspb.StringValue
		res <- c.Call(context.Background(), echoProtocol, "block", wrapperspb.String("drained"), &resp)
	}()
	<-e.entered
	down := make(chan error, 1)
	go func() { down <- srv.Shutdown(context.Background()) }()
	select {
	case err := <-down:
		t.Fatalf("Shutdown returned with a call in flight: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(e.release)
	if err := <-res; err != nil {
		t.Errorf("call in flight during shutdown: %v", err)
	}
	if err := <-down; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if _, err := Dial(context.Background(), addr, ClientOptions{DialTimeout: time.Second}); err == nil {
		t.Error("dial after shutdown succeeded")
	}
}

func TestShutdownGivesUpAtItsDeadline(t *testing.T) {
	srv, addr, e := startServer(t, ServerOptions{})
	c := dial(t, addr, ClientOptions{})
	go func() {
		var resp wrapperspb.StringValue
		c.Call(context.Background(), echoProtocol, "block", wrapperspb.String("x"), &resp)
	}()
	<-e.entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want the deadline", err)
	}
	close(e.release)
}

// serveAt starts an echo server on a given address, as a restarted
// daemon would.
func serveAt(t *testing.T, addr string, blocking bool) (*Server, net.Listener, *echoServer) {
	t.Helper()
	e := &echoServer{release: make(chan struct{}), entered: make(chan struct{}, 8)}
	if !blocking {
		close(e.release)
	}
	s := NewServer(ServerOptions{})
	s.Register(e.protocol())
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	return s, ln, e
}

func TestClientRetriesIdempotentCallsOnly(t *testing.T) {
	ln0, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln0.Addr().String()
	ln0.Close()
	for _, idem := range []bool{true, false} {
		cl := NewClient(addr, ClientOptions{User: "r", RetryBackoff: 50 * time.Millisecond})
		defer cl.Close()
		srvA, lnA, eA := serveAt(t, addr, true)
		defer close(eA.release)
		var opts []CallOption
		if idem {
			opts = append(opts, Idempotent())
		}
		res := make(chan error, 1)
		go func() {
			var resp wrapperspb.StringValue
			res <- cl.Call(context.Background(), echoProtocol, "block", wrapperspb.String("x"), &resp, opts...)
		}()
		<-eA.entered
		// The server dies with the call in flight; a new one takes its
		// address before the retry.
		srvA.Close()
		lnA.Close()
		srvB, lnB, _ := serveAt(t, addr, false)
		err := <-res
		var ce *ConnError
		if idem && err != nil {
			t.Errorf("idempotent call was not retried: %v", err)
		}
		if !idem && (!errors.As(err, &ce) || !ce.Sent) {
			t.Errorf("non-idempotent call: err = %v, want a ConnError after sending", err)
		}
		// Either way the pool reconnects for the next call.
		if got, err := echo(cl, "next"); err != nil || got != "r:next" {
			t.Errorf("call after reconnecting: %q, %v", got, err)
		}
		srvB.Close()
		lnB.Close()
	}
}

func TestCallHonoursItsContext(t *testing.T) {
	_, addr, e := startServer(t, ServerOptions{})
	defer close(e.release)
	c := dial(t, addr, ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var resp wrapperspb.StringValue
	if err := c.Call(ctx, echoProtocol, "block", wrapperspb.String("x"), &resp); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline", err)
	}
	if got, err := echo(c, "after"); err != nil || !strings.HasSuffix(got, ":after") {
		t.Errorf("after a timed-out call: %q, %v", got, err)
	}
}

// TestInlineMethodsRunOnTheReader: a method marked Inline runs on its
// connection's reading goroutine, so a later call on that connection waits
// for it (unlike TestPipelinedCallsReplyOutOfOrder), while other
// connections go on; a panic inline is still an error reply.
// countingListener counts the writes on the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return countingConn{c, l.writes}, err
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// Replies to inline calls read in one backlog go out together: the reader
// holds each reply while the next call is already read whole, and flushes
// before it waits. Every call is answered, with its own answer.
func TestInlineRepliesToABacklogShareWrites(t *testing.T) {
	e := &echoServer{release: make(chan struct{}), entered: make(chan struct{}, 64)}
	s := NewServer(ServerOptions{})
	s.Register(e.protocol().WithInline("block", "echo"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	go s.Serve(countingListener{ln, &writes})
	t.Cleanup(func() { s.Close() })
	c := dial(t, ln.Addr().String(), ClientOptions{User: "bob"})
	blocked := e.blockOn(c)
	// 20 calls queue behind the blocked one on the same connection.
	const n = 20
	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = echo(c, fmt.Sprint(i))
		}()
	}
	time.Sleep(200 * time.Millisecond) // they reach the server's socket
	before := writes.Load()
	close(e.release)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != fmt.Sprint("bob:", i) {
			t.Fatalf("call %d: %q, %v", i, got[i], errs[i])
		}
	}
	if w := writes.Load() - before; w > n/2 {
		t.Errorf("%d writes for %d replies to a backlog, want them to share", w, n+1)
	} else {
		t.Logf("%d writes for %d replies", w, n+1)
	}
	// Alone, a call is answered at once (nothing held back).
	if v, err := echo(c, "alone"); err != nil || v != "bob:alone" {
		t.Fatalf("a lone call: %q, %v", v, err)
	}
}

func TestInlineMethodsRunOnTheReader(t *testing.T) {
	_, addr, e := startServerInline(t, ServerOptions{}, "block", "panic")
	c := dial(t, addr, ClientOptions{User: "bob"})
	blocked := e.blockOn(c)
	behind := make(chan error, 1)
	go func() {
		_, err := echo(c, "second")
		behind <- err
	}()
	other := dial(t, addr, ClientOptions{User: "eve"})
	if got, err := echo(other, "x"); err != nil || got != "eve:x" {
		t.Fatalf("another connection's echo = %q, %v", got, err)
	}
	select {
	case err := <-behind:
		t.Fatalf("a call behind an inline one on the same connection was answered first (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(e.release)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	if err := <-behind; err != nil {
		t.Fatal(err)
	}
	var resp wrapperspb.StringValue
	if err := c.Call(context.Background(), echoProtocol, "panic", wrapperspb.String("x"), &resp); err == nil || !strings.Contains(err.Error(), "failed inside the server") {
		t.Fatalf("inline panic: %v", err)
	}
	if got, err := echo(c, "after"); err != nil || got != "bob:after" {
		t.Fatalf("echo after an inline panic = %q, %v", got, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("WithInline of a method the protocol lacks did not panic")
		}
	}()
	e.protocol().WithInline("ehco")
}

// TestObserveTimesCalls: ServerOptions.Observe hears of every call a
// handler ran, with its protocol and method, and times it: a "block" call
// held 150 ms by its handler is processing for at least that long, inline
// or not; a call to an unknown method, answered before any handler, is
// not observed.
func TestObserveTimesCalls(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			type seen struct {
				protocol, method  string
				queued, processed time.Duration
			}
			var mu sync.Mutex
			var got []seen
			opts := ServerOptions{Observe: func(protocol, method string, queued, processing time.Duration) {
				mu.Lock()
				got = append(got, seen{protocol, method, queued, processing})
				mu.Unlock()
			}}
			var e *echoServer
			var addr string
			if inline {
				_, addr, e = startServerInline(t, opts, "echo", "block")
			} else {
				_, addr, e = startServer(t, opts)
			}
			c := dial(t, addr, ClientOptions{User: "bob"})
			if _, err := echo(c, "x"); err != nil {
				t.Fatal(err)
			}
			blocked := e.blockOn(c)
			time.Sleep(150 * time.Millisecond)
			close(e.release)
			if err := <-blocked; err != nil {
				t.Fatal(err)
			}
			var resp wrapperspb.StringValue
			if err := c.Call(context.Background(), echoProtocol, "ehco", wrapperspb.String("x"), &resp); err == nil {
				t.Fatal("an unknown method was answered")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 2 || got[0].method != "echo" || got[1].method != "block" {
				t.Fatalf("observed %+v; want echo, then block", got)
			}
			for _, g := range got {
				if g.protocol != echoProtocol || g.queued < 0 || g.processed < 0 {
					t.Errorf("observed %+v", g)
				}
			}
			if got[1].processed < 150*time.Millisecond || got[0].processed > got[1].processed {
				t.Errorf("block processed in %v (echo %v); want at least the 150 ms its handler was held", got[1].processed, got[0].processed)
			}
		})
	}
}

// deadlineCounter counts the deadlines set on the connections it accepts.
type deadlineCounter struct {
	net.Listener
	reads, writes atomic.Int64
}

func (l *deadlineCounter) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countedConn{nc, l}, nil
}

type countedConn struct {
	net.Conn
	l *deadlineCounter
}

func (c countedConn) SetReadDeadline(t time.Time) error {
	c.l.reads.Add(1)
	return c.Conn.SetReadDeadline(t)
}

func (c countedConn) SetWriteDeadline(t time.Time) error {
	c.l.writes.Add(1)
	return c.Conn.SetWriteDeadline(t)
}

// A connection keeps its deadlines while they fall short of the ones
// wanted by under a hundredth of their timeouts: 400 calls in quick
// succession, inline and not, set a handful of deadlines, not three a
// call; and a call that comes after the slack has passed still gets
// them moved (the timeouts themselves: TestTimeoutsCutIdleAndSlowConnections).
func TestDeadlinesAreNotSetForEveryCall(t *testing.T) {
	e := &echoServer{release: make(chan struct{}), entered: make(chan struct{}, 64)}
	s := NewServer(ServerOptions{IdleTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	s.Register(e.protocol().WithInline("echo"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &deadlineCounter{Listener: ln}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	c := dial(t, ln.Addr().String(), ClientOptions{})
	start := time.Now()
	for i := range 400 {
		method := "echo"
		if i%2 == 1 {
			method = "fail"
		}
		var resp wrapperspb.StringValue
		err := c.Call(context.Background(), echoProtocol, method, wrapperspb.String("x"), &resp)
		if (method == "echo") != (err == nil) {
			t.Fatalf("call %d (%s): %v", i, method, err)
		}
	}
	reads, writes := l.reads.Load(), l.writes.Load()
	// A deadline of each kind (the setup's, the idle wait's, a frame's
	// rest, a write) moves at most once a slack (10 s / 100), however busy
	// the machine running the test.
	slacks := int64(time.Since(start)/(100*time.Millisecond)) + 1
	if reads > 4+3*slacks || writes > 2+slacks {
		t.Errorf("400 calls in %v set %d read and %d write deadlines, want at most %d and %d", time.Since(start), reads, writes, 4+3*slacks, 2+slacks)
	}
	time.Sleep(150 * time.Millisecond) // past 10 s / 100
	// The reader moves its deadline before it waits for the next frame:
	// the one after y's.
	for _, v := range []string{"y", "z"} {
		if _, err := echo(c, v); err != nil {
			t.Fatal(err)
		}
	}
	if l.reads.Load() == reads || l.writes.Load() == writes {
		t.Errorf("a call after the slack moved no deadline (reads %d -> %d, writes %d -> %d)", reads, l.reads.Load(), writes, l.writes.Load())
	}
}

// TestExecutorRunsTheCalls: a protocol WithExecutor has every call's
// handler run inside the executor's work, inline methods and dispatched
// ones alike, with the same replies as without (values, application
// errors, a handler's panic); an inline method's request is decoded in
// the work too, so a request that cannot be decoded there still gets the
// precise FATAL reply, and the connection's other calls go on.
func TestExecutorRunsTheCalls(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			e := &echoServer{release: make(chan struct{}), entered: make(chan struct{}, 64)}
			var running, works atomic.Int32
			var outside atomic.Int32 // handlers run outside the work
			p := e.protocol()
			for i := range p.Methods {
				h := p.Methods[i].Handle
				p.Methods[i].Handle = func(ctx context.Context, req proto.Message) (proto.Message, error) {
					if running.Load() == 0 {
						outside.Add(1)
					}
					return h(ctx, req)
				}
			}
			// One goroutine runs all the work, one call at a time.
			queue := make(chan func())
			go func() {
				for f := range queue {
					running.Add(1)
					f()
					running.Add(-1)
				}
			}()
			t.Cleanup(func() { close(queue) })
			p = p.WithExecutor(func(work func()) {
				works.Add(1)
				done := make(chan struct{})
				queue <- func() { work(); close(done) }
				<-done
			})
			if inline {
				p = p.WithInline("echo", "fail", "panic")
			}
			_, addr := serveProtocol(t, ServerOptions{}, p)

			c := dial(t, addr, ClientOptions{User: "ann"})
			for i := range 5 {
				if got, err := echo(c, fmt.Sprint(i)); err != nil || got != fmt.Sprintf("ann:%d", i) {
					t.Fatalf("echo %d = %q, %v", i, got, err)
				}
			}
			var resp wrapperspb.StringValue
			err := c.Call(context.Background(), echoProtocol, "fail", wrapperspb.String("application_1_0001"), &resp)
			var re *RemoteError
			if !errors.As(err, &re) || re.Class != "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException" {
				t.Errorf("fail: %v, want ApplicationNotFoundException", err)
			}
			if err := c.Call(context.Background(), echoProtocol, "panic", wrapperspb.String("x"), &resp); err == nil || !strings.Contains(err.Error(), "failed inside the server") {
				t.Errorf("panic: %v", err)
			}
			if got, err := echo(c, "after"); err != nil || got != "ann:after" {
				t.Errorf("echo after a panic = %q, %v", got, err)
			}
			if n := works.Load(); n != 8 {
				t.Errorf("the executor ran %d calls' work, want 8", n)
			}
			if n := outside.Load(); n != 0 {
				t.Errorf("%d handlers ran outside the executor's work", n)
			}

			pre := AppendPreamble(nil, Preamble{Version: Version})
			hdr := delimited(t, &hadooppb.RpcRequestHeaderProto{RpcKind: hadooppb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), CallId: proto.Int32(1), ClientId: []byte{}})
			ctxHdr := delimited(t, &hadooppb.RpcRequestHeaderProto{RpcKind: hadooppb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), CallId: proto.Int32(-3), ClientId: []byte{}})
			nc := rawConn(t, addr)
			bad := bytes.Join([][]byte{pre, frameOf(ctxHdr, delimited(t, &hadooppb.IpcConnectionContextProto{})),
				frameOf(hdr, delimited(t, &hadooppb.RequestHeaderProto{MethodName: proto.String("echo"),
					DeclaringClassProtocolName: proto.String(echoProtocol), ClientProtocolVersion: proto.Uint64(1)}),
					[]byte{0x03, 0x0a, 0x09, 0x01})}, nil)
			if _, err := nc.Write(bad); err != nil {
				t.Fatal(err)
			}
			h := readFatal(t, nc)
			if h.GetErrorDetail() != FatalDeserializing || !strings.Contains(h.GetErrorMsg(), "cannot decode echo request") {
				t.Errorf("a request that cannot be decoded: %v %q", h.GetErrorDetail(), h.GetErrorMsg())
			}
			if got, err := echo(c, "still"); err != nil || got != "ann:still" {
				t.Errorf("the other connection after the bad request: %q, %v", got, err)
			}
		})
	}
}

// TestExecutorWaitCountsAsQueued: the time a call waits for its executor
// is its queue time for ServerOptions.Observe (Hadoop's RpcQueueTime
// counts the wait for a handler thread), inline or not.
func TestExecutorWaitCountsAsQueued(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			queued := make(chan time.Duration, 1)
			e := &echoServer{release: make(chan struct{}), entered: make(chan struct{}, 64)}
			p := e.protocol().WithExecutor(func(work func()) {
				time.Sleep(100 * time.Millisecond)
				work()
			})
			if inline {
				p = p.WithInline("echo")
			}
			_, addr := serveProtocol(t, ServerOptions{Observe: func(_, _ string, q, _ time.Duration) { queued <- q }}, p)
			if got, err := echo(dial(t, addr, ClientOptions{User: "q"}), "x"); err != nil || got != "q:x" {
				t.Fatalf("echo = %q, %v", got, err)
			}
			if q := <-queued; q < 100*time.Millisecond {
				t.Errorf("queued %v, want at least the executor's 100 ms", q)
			}
		})
	}
}
