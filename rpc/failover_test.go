package rpc

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestClientFailsOver: with Failover, a client whose server cannot be
// reached, or answers StandbyException, moves to the next one and the
// call succeeds there; without it the same errors come back at once. A
// non-idempotent call sent to a server that then broke is not retried.
func TestClientFailsOver(t *testing.T) {
	_, live, _ := startServer(t, ServerOptions{})
	// A port where nothing listens: the old active, gone.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	// A standby: every call is refused with StandbyException.
	standby := NewServer(ServerOptions{})
	standby.Register(Protocol{Name: echoProtocol, Methods: []Method{
		Unary("echo", func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			return nil, Errorf(ClassStandby, "Operation category READ is not supported in state standby")
		})}})
	sln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go standby.Serve(sln)
	t.Cleanup(func() { standby.Close() })

	opts := ClientOptions{User: "ann", RetryBackoff: 10 * time.Millisecond, DialTimeout: time.Second}
	for _, order := range [][]string{{dead, live}, {sln.Addr().String(), dead, live}} {
		o := opts
		o.Failover = order[1:]
		c := NewClient(order[0], o)
		var resp wrapperspb.StringValue
		err := c.Call(context.Background(), echoProtocol, "echo", wrapperspb.String("hi"), &resp)
		if err != nil || resp.GetValue() != "ann:hi" || c.Addr() != live {
			t.Errorf("from %v: %q, %v, now on %s; want ann:hi from %s", order, resp.GetValue(), err, c.Addr(), live)
		}
		c.Close()
	}
	// Without failover: the standby's refusal is the answer.
	c := NewClient(sln.Addr().String(), opts)
	defer c.Close()
	var resp wrapperspb.StringValue
	if err := c.Call(context.Background(), echoProtocol, "echo", wrapperspb.String("hi"), &resp); !isStandby(err) ||
		!strings.Contains(err.Error(), "standby") {
		t.Errorf("without failover: %v, want the StandbyException", err)
	}
}
