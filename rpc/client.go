package rpc

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc/hadooppb"
)

// Caller makes calls; a single connection (*Conn) and a pool (*Client)
// both are one.
type Caller interface {
	Call(ctx context.Context, protocol, method string, req, resp proto.Message, opts ...CallOption) error
}

// CallOption changes one call.
type CallOption func(*callOpts)

type callOpts struct{ idempotent bool }

// Idempotent marks a call safe to send again when its connection broke
// before the reply came.
func Idempotent() CallOption { return func(o *callOpts) { o.idempotent = true } }

// ClientOptions configure connections. Zero values take the defaults.
type ClientOptions struct {
	// User is the effective user in the connection context (the OS
	// user).
	User string
	// RealUser, when set, is the user acting for User: a proxy user
	// (hadoop.proxyuser.*), as a Java client's UserGroupInformation.
	// createProxyUser sends it.
	RealUser string
	// Protocol is named in the connection context.
	Protocol string
	// ClientID is the 16-byte id sent with every call (random).
	ClientID []byte
	// SASL makes the client negotiate first, as Java clients do.
	SASL bool
	// Token, when set, authenticates the connection with it (SASL
	// DIGEST-MD5, Hadoop's TOKEN auth), as a Java client holding a token
	// for the server does; the token, not User, then names the caller.
	// A server that offers only SIMPLE auth is spoken to with User.
	Token *hadooppb.TokenProto
	// Kerberos, when set, authenticates the connection with the client's
	// Kerberos tickets (SASL GSSAPI) where the server offers KERBEROS, as
	// a Java client logged in to Kerberos does. User, if empty, becomes
	// the principal's short name; another User is asked for as a proxy
	// user.
	Kerberos *krbclient.Client
	// DialTimeout bounds connecting (10 s); CallTimeout bounds a call
	// whose context has no deadline (60 s).
	DialTimeout time.Duration
	CallTimeout time.Duration
	MaxFrame    int
	// Conns is how many connections a Client spreads calls over (1, as
	// Hadoop shares one per server, protocol and user).
	Conns int
	// Retries is how often a Client retries an idempotent call whose
	// connection failed (3; negative for none), backing off from
	// RetryBackoff (100 ms).
	Retries      int
	RetryBackoff time.Duration
	// Failover are the other servers of the same service (RM HA's
	// rm-ids), tried in turn, as Hadoop's ConfiguredRMFailoverProxyProvider
	// does, when the current one cannot be reached or answers
	// StandbyException; the client then retries up to FailoverRetries
	// times (30), backing off from RetryBackoff up to 2 s.
	Failover        []string
	FailoverRetries int
}

func (o *ClientOptions) defaults() {
	if o.User == "" && o.Kerberos == nil {
		o.User = currentUser()
	}
	if len(o.ClientID) == 0 {
		o.ClientID = make([]byte, 16)
		rand.Read(o.ClientID)
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 60 * time.Second
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = DefaultMaxFrame
	}
	if o.Conns <= 0 {
		o.Conns = 1
	}
	if o.Retries < 0 {
		o.Retries = 0
	} else if o.Retries == 0 {
		o.Retries = 3
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 100 * time.Millisecond
	}
}

func currentUser() string {
	if u := os.Getenv("HADOOP_USER_NAME"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "loom"
}

// ConnError is a failure of the connection rather than of the call: the
// server may or may not have run the call, unless Sent is false.
type ConnError struct {
	Addr string
	Sent bool
	Err  error
}

func (e *ConnError) Error() string { return fmt.Sprintf("rpc to %s: %v", e.Addr, e.Err) }
func (e *ConnError) Unwrap() error { return e.Err }

// Conn is one client connection. Calls are pipelined: many may be in
// flight, and replies are matched by call id.
type Conn struct {
	addr string
	opts ClientOptions
	nc   net.Conn

	wmu     sync.Mutex
	bw      *bufio.Writer
	waiting atomic.Int32

	mu      sync.Mutex
	pending map[int32]chan reply
	nextID  int32
	err     error // set once the connection is dead
}

// reply is a call's outcome: the response bytes, or the header of a
// failed call, or a connection error.
type reply struct {
	hdr     *hadooppb.RpcResponseHeaderProto
	payload []byte
	buf     *[]byte // payload's, from callBufs
	err     error
}

// callBufs hold the byte slices a call lives in only briefly: a
// request's frame until it is copied into the connection's writer, and a
// reply's payload until it is decoded (protobuf copies what it keeps).
// A process making thousands of calls a second (an AM, the load
// generator's simulated NMs) would otherwise collect them all.
var callBufs sync.Pool

// poolMax is the largest slice kept in callBufs: a rare huge reply is
// let go rather than held.
const poolMax = 64 << 10

func getBuf(n int) *[]byte {
	p, _ := callBufs.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	if cap(*p) < n {
		*p = make([]byte, 0, max(n, 512))
	}
	*p = (*p)[:0]
	return p
}

func putBuf(p *[]byte) {
	if p != nil && cap(*p) <= poolMax {
		callBufs.Put(p)
	}
}

// clientBuf is a client connection's buffer each way: a client holds
// few connections, each often pipelining many calls.
const clientBuf = 16 << 10

// Dial connects to addr, sends the preamble, negotiates SASL when asked
// and sends the connection context.
func Dial(ctx context.Context, addr string, opts ClientOptions) (*Conn, error) {
	opts.defaults()
	d := net.Dialer{Timeout: opts.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &ConnError{Addr: addr, Err: err}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := &Conn{addr: addr, opts: opts, nc: nc, bw: bufio.NewWriterSize(nc, clientBuf),
		pending: map[int32]chan reply{}}
	if err := c.handshake(ctx); err != nil {
		nc.Close()
		// A server that refused the credentials will refuse them again:
		// that is the call's answer, not a broken connection to retry.
		var re *RemoteError
		if errors.As(err, &re) && re.Code == hadooppb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED {
			return nil, re
		}
		return nil, &ConnError{Addr: addr, Err: err}
	}
	go c.readLoop()
	return c, nil
}

func (c *Conn) handshake(ctx context.Context) error {
	if dl, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(dl)
	} else {
		c.nc.SetDeadline(time.Now().Add(c.opts.DialTimeout))
	}
	defer c.nc.SetDeadline(time.Time{})
	sasl := c.opts.SASL || c.opts.Token != nil || c.opts.Kerberos != nil
	auth := byte(AuthNone)
	if sasl {
		auth = AuthSASL
	}
	b := AppendPreamble(nil, Preamble{Version: Version, AuthProtocol: auth})
	var err error
	tokenAuth := false
	if sasl {
		b, err = AppendFrame(b, c.header(SASLCallID), &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_NEGOTIATE.Enum()})
		if err != nil {
			return err
		}
		s, err := c.saslRoundTrip(b)
		if err != nil {
			return err
		}
		b = b[:0]
		switch s.GetState() {
		case hadooppb.RpcSaslProto_SUCCESS: // a SIMPLE-only server
		case hadooppb.RpcSaslProto_NEGOTIATE:
			if tokenAuth, err = c.chooseAuth(s.GetAuths()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("SASL negotiation: the server answered NEGOTIATE with %v", s.GetState())
		}
	}
	user := c.opts.User
	if user == "" && c.opts.Kerberos != nil {
		user, _, _ = strings.Cut(c.opts.Kerberos.Credentials.UserName(), "/")
	}
	cc := &hadooppb.IpcConnectionContextProto{UserInfo: &hadooppb.UserInformationProto{EffectiveUser: proto.String(user)}}
	if c.opts.RealUser != "" {
		cc.UserInfo.RealUser = proto.String(c.opts.RealUser)
	}
	if tokenAuth {
		// The token named the user; Java clients send none.
		cc.UserInfo = &hadooppb.UserInformationProto{}
	}
	if c.opts.Protocol != "" {
		cc.Protocol = proto.String(c.opts.Protocol)
	}
	if b, err = AppendFrame(b, c.header(ConnectionContextCallID), cc); err != nil {
		return err
	}
	_, err = c.nc.Write(b)
	return err
}

// saslRoundTrip sends a SASL frame (already in b) and reads the answer.
func (c *Conn) saslRoundTrip(b []byte) (*hadooppb.RpcSaslProto, error) {
	if _, err := c.nc.Write(b); err != nil {
		return nil, err
	}
	frame, err := ReadFrame(c.nc, c.opts.MaxFrame, nil)
	if err != nil {
		return nil, fmt.Errorf("SASL negotiation: %w", err)
	}
	var h hadooppb.RpcResponseHeaderProto
	rest, err := unmarshalDelimitedPartial(frame, &h)
	if err != nil {
		return nil, fmt.Errorf("SASL negotiation: %w", err)
	}
	if h.GetStatus() != hadooppb.RpcResponseHeaderProto_SUCCESS {
		return nil, remoteError(&h)
	}
	var s hadooppb.RpcSaslProto
	if _, err := unmarshalDelimitedPartial(rest, &s); err != nil {
		return nil, fmt.Errorf("SASL negotiation: %w", err)
	}
	return &s, nil
}

// chooseAuth picks from the server's offer as Hadoop's SaslRpcClient
// does, in the server's order: TOKEN when this client holds a token,
// SIMPLE otherwise. For TOKEN it answers the challenge and checks the
// server's rspauth.
func (c *Conn) chooseAuth(auths []*hadooppb.RpcSaslProto_SaslAuth) (tokenAuth bool, err error) {
	for _, a := range auths {
		switch {
		case a.GetMethod() == saslSimpleMethod:
			return false, nil
		case a.GetMethod() == saslKerberosMethod && a.GetMechanism() == saslGSSAPIMech && c.opts.Kerberos != nil && c.opts.Token == nil:
			return false, c.kerberosAuth(a)
		case a.GetMethod() == saslTokenMethod && a.GetMechanism() == saslDigestMech && c.opts.Token != nil:
			if len(a.GetChallenge()) == 0 {
				return false, errors.New("SASL negotiation: the server offered TOKEN auth without a DIGEST-MD5 challenge")
			}
			resp, check, err := digestClient(a.GetChallenge(), c.opts.Token.GetIdentifier(), c.opts.Token.GetPassword())
			if err != nil {
				return false, err
			}
			chosen := proto.Clone(a).(*hadooppb.RpcSaslProto_SaslAuth)
			chosen.Challenge = nil
			b, err := AppendFrame(nil, c.header(SASLCallID), &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_INITIATE.Enum(),
				Token: resp, Auths: []*hadooppb.RpcSaslProto_SaslAuth{chosen}})
			if err != nil {
				return false, err
			}
			s, err := c.saslRoundTrip(b)
			if err != nil {
				return false, err
			}
			if s.GetState() != hadooppb.RpcSaslProto_SUCCESS {
				return false, fmt.Errorf("SASL negotiation: the server answered the DIGEST-MD5 response with %v", s.GetState())
			}
			return true, check(s.GetToken())
		}
	}
	var offered []string
	for _, a := range auths {
		offered = append(offered, a.GetMethod())
	}
	if c.opts.Token == nil && c.opts.Kerberos == nil {
		return false, fmt.Errorf("the server accepts %v and this client holds no token or Kerberos ticket for it", offered)
	}
	return false, fmt.Errorf("the server accepts %v: none that Loom's client speaks", offered)
}

// kerberosAuth runs SASL GSSAPI: the AP-REQ for the server's principal,
// then no security layer (see gssapi.go).
func (c *Conn) kerberosAuth(a *hadooppb.RpcSaslProto_SaslAuth) error {
	tok, key, err := kerberosInitiate(c.opts.Kerberos, a.GetProtocol(), a.GetServerId())
	if err != nil {
		return err
	}
	chosen := proto.Clone(a).(*hadooppb.RpcSaslProto_SaslAuth)
	b, err := AppendFrame(nil, c.header(SASLCallID), &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_INITIATE.Enum(),
		Token: tok, Auths: []*hadooppb.RpcSaslProto_SaslAuth{chosen}})
	if err != nil {
		return err
	}
	s, err := c.saslRoundTrip(b)
	if err != nil {
		return err
	}
	if s.GetState() != hadooppb.RpcSaslProto_CHALLENGE {
		return fmt.Errorf("SASL GSSAPI: the server answered the AP-REQ with %v", s.GetState())
	}
	answer, err := kerberosRespond(s.GetToken(), key)
	if err != nil {
		return fmt.Errorf("SASL GSSAPI: %w", err)
	}
	if b, err = AppendFrame(nil, c.header(SASLCallID), &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_RESPONSE.Enum(), Token: answer}); err != nil {
		return err
	}
	if s, err = c.saslRoundTrip(b); err != nil {
		return err
	}
	if s.GetState() != hadooppb.RpcSaslProto_SUCCESS {
		return fmt.Errorf("SASL GSSAPI: the server answered the security layer with %v", s.GetState())
	}
	return nil
}

func (c *Conn) header(id int32) *hadooppb.RpcRequestHeaderProto {
	return &hadooppb.RpcRequestHeaderProto{RpcKind: hadooppb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
		RpcOp: hadooppb.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(), CallId: proto.Int32(id),
		ClientId: c.opts.ClientID, RetryCount: proto.Int32(-1)}
}

// Call sends one call and waits for its reply, decoding it into resp. A
// failed call returns a *RemoteError; a broken connection a *ConnError.
func (c *Conn) Call(ctx context.Context, protocol, method string, req, resp proto.Message, _ ...CallOption) error {
	// Without a deadline the call times out after CallTimeout: a timer,
	// not a derived context, which would register with (and lock) a
	// parent context that thousands of callers share.
	var timeout <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		t := time.NewTimer(c.opts.CallTimeout)
		defer t.Stop()
		timeout = t.C
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return &ConnError{Addr: c.addr, Err: err}
	}
	c.nextID++
	if c.nextID < 0 {
		c.nextID = 0
	}
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()

	size := marshal.Size(req)
	fb := getBuf(4 + 40 + len(c.opts.ClientID) + len(method) + len(protocol) + size)
	frame := (*fb)[:4]
	frame = appendDelimitedWith(frame, func(b []byte) []byte { return appendRequestHeader(b, id, c.opts.ClientID) })
	frame = appendDelimitedWith(frame, func(b []byte) []byte { return appendMethodHeader(b, method, protocol) })
	frame, err := appendSized(frame, req, size)
	if err != nil {
		c.forget(id)
		return fmt.Errorf("encode %s request: %w", method, err)
	}
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	err = c.write(frame)
	*fb = frame
	putBuf(fb)
	if err != nil {
		// The server may have said why it closed the connection (a FATAL
		// reply: no such auth, a frame too large) before the write
		// failed; the read loop fails this call with that reason, or
		// with the write's error shortly (see write).
		select {
		case r := <-ch:
			if r.err != nil {
				return &ConnError{Addr: c.addr, Err: r.err}
			}
		case <-ctx.Done():
		case <-timeout:
		}
		c.forget(id)
		return &ConnError{Addr: c.addr, Err: err}
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return &ConnError{Addr: c.addr, Sent: true, Err: r.err}
		}
		if r.hdr != nil {
			return remoteError(r.hdr)
		}
		_, err := unmarshalDelimited(r.payload, resp)
		putBuf(r.buf)
		if err != nil {
			return fmt.Errorf("decode %s reply: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("%s on %s: %w", method, c.addr, ctx.Err())
	case <-timeout:
		c.forget(id)
		return fmt.Errorf("%s on %s: %w", method, c.addr, context.DeadlineExceeded)
	}
}

func (c *Conn) forget(id int32) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// write sends a frame; the last writer waiting flushes.
func (c *Conn) write(frame []byte) error {
	c.waiting.Add(1)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.waiting.Add(-1)
	if _, err := c.bw.Write(frame); err != nil {
		c.failAfterRead(err)
		return err
	}
	if c.waiting.Load() == 0 {
		if err := c.bw.Flush(); err != nil {
			c.failAfterRead(err)
			return err
		}
	}
	return nil
}

// failAfterRead fails the connection with a write's error unless the read
// loop finds a better reason first: a server that refuses a connection
// replies FATAL and closes, and the write that raced the close should not
// hide why.
func (c *Conn) failAfterRead(err error) {
	time.AfterFunc(200*time.Millisecond, func() { c.fail(err) })
}

func (c *Conn) readLoop() {
	br := bufio.NewReaderSize(c.nc, clientBuf)
	var buf []byte
	for {
		var err error
		buf, err = ReadFrame(br, c.opts.MaxFrame, buf[:0])
		if err != nil {
			c.fail(err)
			return
		}
		hb, rest, err := nextDelimited(buf)
		var id int32
		var status int32
		if err == nil {
			id, status, err = parseResponseStatus(hb)
		}
		if err != nil {
			c.fail(fmt.Errorf("unparseable reply header: %w", err))
			return
		}
		var r reply
		if status != int32(hadooppb.RpcResponseHeaderProto_SUCCESS) {
			// Failures are rare: decode their whole header.
			r.hdr = new(hadooppb.RpcResponseHeaderProto)
			if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(hb, r.hdr); err != nil {
				c.fail(fmt.Errorf("unparseable reply header: %w", err))
				return
			}
			if status == int32(hadooppb.RpcResponseHeaderProto_FATAL) {
				c.fail(remoteError(r.hdr))
				return
			}
		} else {
			r.buf = getBuf(len(rest))
			*r.buf = append(*r.buf, rest...)
			r.payload = *r.buf
		}
		c.mu.Lock()
		ch, ok := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ok {
			ch <- r
		}
	}
}

// fail marks the connection dead and fails every call in flight.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	c.nc.Close()
	for id, ch := range c.pending {
		ch <- reply{err: err}
		delete(c.pending, id)
	}
}

// Err returns why the connection died, or nil while it is alive.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection; calls in flight fail.
func (c *Conn) Close() error {
	c.fail(net.ErrClosed)
	return nil
}

func remoteError(h *hadooppb.RpcResponseHeaderProto) *RemoteError {
	return &RemoteError{Class: h.GetExceptionClassName(), Message: h.GetErrorMsg(), Code: h.GetErrorDetail(),
		Fatal: h.GetStatus() == hadooppb.RpcResponseHeaderProto_FATAL}
}

// Client is a pool of connections to one server (or, with Failover, to
// the one of several that answers). It dials lazily, replaces broken
// connections, and retries idempotent calls whose connection failed.
type Client struct {
	addr  string
	addrs []string // addr first, then Failover
	opts  ClientOptions

	mu    sync.Mutex
	conns []*Conn
	next  atomic.Uint32
}

// NewClient makes a pooled client for addr; it connects on first use.
func NewClient(addr string, opts ClientOptions) *Client {
	opts.defaults()
	if opts.FailoverRetries <= 0 {
		opts.FailoverRetries = 30
	}
	addrs := []string{addr}
	for _, a := range opts.Failover {
		if a != "" && a != addr {
			addrs = append(addrs, a)
		}
	}
	return &Client{addr: addr, addrs: addrs, opts: opts, conns: make([]*Conn, opts.Conns)}
}

// Addr returns the address of the server the client speaks to now.
func (c *Client) Addr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// failover moves to the next server after from, unless another call
// already has: its connections are closed.
func (c *Client) failover(from string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addr != from || len(c.addrs) < 2 {
		return
	}
	i := slices.Index(c.addrs, from)
	c.addr = c.addrs[(i+1)%len(c.addrs)]
	for i, cn := range c.conns {
		if cn != nil {
			cn.Close()
			c.conns[i] = nil
		}
	}
}

func (c *Client) conn(ctx context.Context) (*Conn, error) {
	i := int(c.next.Add(1)) % len(c.conns)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cn := c.conns[i]; cn != nil && cn.Err() == nil {
		return cn, nil
	}
	cn, err := Dial(ctx, c.addr, c.opts)
	if err != nil {
		return nil, err
	}
	c.conns[i] = cn
	return cn, nil
}

// isStandby: the server is a standby of an HA pair; the call was not run.
func isStandby(err error) bool {
	var re *RemoteError
	return errors.As(err, &re) && re.Class == ClassStandby
}

// SetToken replaces the token new connections authenticate with, as when
// the RM rolls an AM's AMRM token; open connections stay as they are.
func (c *Client) SetToken(t *hadooppb.TokenProto) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts.Token = t
}

// Call sends a call over one of the pooled connections.
func (c *Client) Call(ctx context.Context, protocol, method string, req, resp proto.Message, opts ...CallOption) error {
	var o callOpts
	for _, f := range opts {
		f(&o)
	}
	backoff := c.opts.RetryBackoff
	for attempt := 0; ; attempt++ {
		addr := c.Addr()
		cn, err := c.conn(ctx)
		if err == nil {
			err = cn.Call(ctx, protocol, method, req, resp)
		}
		var ce *ConnError
		isConn := errors.As(err, &ce)
		retries := c.opts.Retries
		if len(c.addrs) > 1 {
			// A standby did not run the call; a server that cannot be
			// reached may be the old active: try the next one.
			if isStandby(err) || isConn && (!ce.Sent || o.idempotent) {
				c.failover(addr)
				retries = max(retries, c.opts.FailoverRetries)
			}
		}
		if err == nil || !(isConn || isStandby(err) && len(c.addrs) > 1) || isConn && ce.Sent && !o.idempotent || attempt >= retries {
			return err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return fmt.Errorf("%s on %s: %w (last: %v)", method, addr, ctx.Err(), err)
		}
		backoff = min(backoff*2, max(2*time.Second, c.opts.RetryBackoff))
	}
}

// Close closes every pooled connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, cn := range c.conns {
		if cn != nil {
			cn.Close()
			c.conns[i] = nil
		}
	}
	return nil
}
