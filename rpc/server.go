package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/loomrm/loom/rpc/hadooppb"
)

// Method is one method of a protocol: how to make its request message and
// how to serve it.
type Method struct {
	Name       string
	NewRequest func() proto.Message
	Handle     func(ctx context.Context, req proto.Message) (proto.Message, error)
	// Inline runs the call on its connection's reading goroutine instead
	// of handing it to a handler goroutine: for a handler that never waits
	// long (a node heartbeat that only files its report), it saves a
	// goroutine hand-off each way under load. The connection reads its
	// next call once this one is answered, so calls on one connection
	// run one at a time (as a NodeManager sends them anyway).
	Inline bool
	// Exec, when set, runs the call's work: for an inline call its
	// decoding, handling and encoding, for another its handling and
	// encoding (Executor).
	Exec Executor
}

// Executor runs a call's work on a goroutine of its choosing and returns
// once the work has run. It lets a server put some protocols' calls on
// threads of their own, such as threads at a lower OS priority than the
// ones that read the connections, so that under a full CPU another
// protocol's calls (a ResourceManager's node heartbeats) get the cores
// first. The work recovers its handler's panics itself.
type Executor func(work func())

// Unary adapts a typed handler to a Method.
func Unary[Req any, PReq interface {
	*Req
	proto.Message
}, Resp proto.Message](name string, h func(context.Context, PReq) (Resp, error)) Method {
	return Method{
		Name:       name,
		NewRequest: func() proto.Message { return PReq(new(Req)) },
		Handle: func(ctx context.Context, req proto.Message) (proto.Message, error) {
			return h(ctx, req.(PReq))
		},
	}
}

// Protocol is a named set of methods, e.g.
// org.apache.hadoop.yarn.api.ApplicationClientProtocolPB.
type Protocol struct {
	Name    string
	Methods []Method
}

// WithInline returns p with the named methods run inline (Method.Inline).
// It panics on a name p does not have: a typo would silently do nothing.
func (p Protocol) WithInline(names ...string) Protocol {
	p.Methods = slices.Clone(p.Methods)
	for _, n := range names {
		i := slices.IndexFunc(p.Methods, func(m Method) bool { return m.Name == n })
		if i < 0 {
			panic(fmt.Sprintf("rpc: protocol %s has no method %s", p.Name, n))
		}
		p.Methods[i].Inline = true
	}
	return p
}

// WithExecutor returns p with every method's work run by e (Method.Exec).
func (p Protocol) WithExecutor(e Executor) Protocol {
	p.Methods = slices.Clone(p.Methods)
	for i := range p.Methods {
		p.Methods[i].Exec = e
	}
	return p
}

// CallInfo describes the call a handler is serving.
type CallInfo struct {
	// User is the caller: the connection context's effective user, or its
	// real user when no effective user is given. With SIMPLE auth it is
	// who the caller says it is.
	User     string
	RealUser string
	Protocol string
	Method   string
	CallID   int32
	ClientID []byte
	Remote   net.Addr
	// Local is the address the call's connection reached: which one,
	// when the server listens on several (a wildcard listener).
	Local net.Addr
	// Token is the identifier of the token the connection authenticated
	// with (TOKEN auth), nil under SIMPLE auth.
	Token []byte
	// Principal is the Kerberos principal the connection authenticated
	// as, without its realm (nm/host1.example.com), "" without Kerberos.
	Principal string
}

// SecretManager checks the tokens clients authenticate with, as Hadoop's
// SecretManager does.
type SecretManager interface {
	// RetrievePassword returns the password of a token identifier and the
	// user the token authenticates, or an error saying why the token is
	// not valid (it is sent to the client as InvalidToken).
	RetrievePassword(identifier []byte) (password []byte, user string, err error)
}

type callKey struct{}

// CallFromContext returns the call a handler's context belongs to.
func CallFromContext(ctx context.Context) (*CallInfo, bool) {
	c, ok := ctx.Value(callKey{}).(*CallInfo)
	return c, ok
}

// ServerOptions bound what a server accepts. Zero values take the
// defaults.
type ServerOptions struct {
	// Standby, when set, answers every call of every protocol with this
	// error instead of running it: an HA standby's StandbyException, on
	// which Hadoop's failover proxies move to the next server.
	Standby *RemoteError
	// MaxFrame is the largest frame accepted (ipc.maximum.data.length,
	// 64 MB).
	MaxFrame int
	// MaxSetupFrame is the largest frame accepted before the connection
	// is set up: during SASL and up to the connection context, which are
	// a few hundred bytes (64 KB). A larger one is refused FATAL before
	// any of it is read, so that a peer that has not authenticated
	// cannot make the server hold MaxFrame per connection.
	MaxSetupFrame int
	// SetupTimeout bounds the time from accept to the connection
	// context (10 s): a connection that has not set up by then is
	// closed, however slowly it trickles bytes.
	SetupTimeout time.Duration
	// MaxSetupConnsPerAddr refuses a connection from an address that
	// already has this many connections not yet set up (64): what a
	// flood of idle unauthenticated connections needs.
	MaxSetupConnsPerAddr int
	// MaxConnsPerAddr refuses a connection from an address that already
	// holds this many, set up or not (1024).
	MaxConnsPerAddr int
	// CapLoopback applies the two limits per address to loopback
	// addresses too. Without it they are exempt: one machine's own
	// daemons, tools and benchmarks (loom bench load registers 1,000 NMs
	// from 127.0.0.1) are not turned away, and a local user has easier
	// ways to hurt the machine. MaxConns, MaxSetupFrame and SetupTimeout
	// bound loopback peers either way.
	CapLoopback bool
	// IdleTimeout closes a connection with no call in flight that sends
	// nothing for this long (60 s).
	IdleTimeout time.Duration
	// ReadTimeout bounds how long a frame, once started, may take to
	// arrive, so that a slow sender cannot hold a connection (20 s).
	ReadTimeout time.Duration
	// WriteTimeout bounds a reply's write to a slow reader (20 s).
	WriteTimeout time.Duration
	// MaxConns refuses connections beyond this many (defaultMaxConns:
	// the process's open-file limit, less what it keeps for its own
	// files).
	MaxConns int
	// MaxInFlight is how many calls one connection may have in flight
	// before the server stops reading from it (256).
	MaxInFlight int
	// ErrorClass is the Java class of handler errors that are not a
	// *RemoteError (java.io.IOException).
	ErrorClass string
	// Secrets, when set, make the server offer TOKEN auth (SASL
	// DIGEST-MD5) before SIMPLE, as a Hadoop server with a secret
	// manager does; calls on a connection authenticated so carry the
	// token's identifier and run as the token's user.
	Secrets SecretManager
	// TokenOnly refuses SIMPLE auth: only connections that authenticate
	// with a token the secret manager accepts are served, as a Hadoop
	// server whose hadoop.security.authentication is TOKEN (a
	// NodeManager's container manager, which YARN always runs so).
	TokenOnly bool
	// Kerberos, when set, makes the server offer KERBEROS auth (SASL
	// GSSAPI) and refuse SIMPLE, as a Hadoop server whose
	// hadoop.security.authentication is kerberos; calls on a connection
	// authenticated so run as the ticket's principal (see gssapi.go).
	Kerberos *Kerberos
	// Observe, when set, is told of every call a handler ran (not those
	// answered with an error before: unknown protocols and methods,
	// refusals, a standby's answer), as Hadoop's RPC metrics count them:
	// how long the call waited from being read whole to its handler
	// starting (RpcQueueTime) and how long the handler and the reply's
	// encoding took (RpcProcessingTime). It runs on the call's goroutine
	// and must be quick. Time a call spends in the socket before the
	// server reads it is in neither.
	Observe func(protocol, method string, queued, processing time.Duration)
	// Policy, when set, decides each connection once its caller is
	// known: proxy users, and service-level ACLs when authorization is
	// on (see Policy). A refused connection gets a FATAL
	// AuthorizationException, as from a Hadoop server.
	Policy *Policy
	Logger *zerolog.Logger
}

func (o *ServerOptions) defaults() {
	if o.MaxFrame <= 0 {
		o.MaxFrame = DefaultMaxFrame
	}
	if o.MaxSetupFrame <= 0 {
		o.MaxSetupFrame = DefaultMaxSetupFrame
	}
	if o.SetupTimeout <= 0 {
		o.SetupTimeout = 10 * time.Second
	}
	if o.MaxSetupConnsPerAddr <= 0 {
		o.MaxSetupConnsPerAddr = 64
	}
	if o.MaxConnsPerAddr <= 0 {
		o.MaxConnsPerAddr = 1024
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 20 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 20 * time.Second
	}
	if o.MaxConns <= 0 {
		o.MaxConns = defaultMaxConns()
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 256
	}
	if o.ErrorClass == "" {
		o.ErrorClass = ClassIOException
	}
	if o.Logger == nil {
		nop := zerolog.Nop()
		o.Logger = &nop
	}
}

// DefaultMaxSetupFrame is the largest frame before the connection
// context: a SASL message or the context itself.
const DefaultMaxSetupFrame = 64 << 10

// ClassServerTooBusy is Hadoop's refusal of a connection or call the
// server has no room for; clients retry it.
const ClassServerTooBusy = "org.apache.hadoop.ipc.ServerTooBusyException"

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("rpc: server closed")

// Server serves registered protocols over Hadoop IPC.
type Server struct {
	opts      ServerOptions
	log       zerolog.Logger
	protocols map[string]*protocolEntry

	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*serverConn]struct{}
	byAddr    map[string]*addrConns
	closing   bool
	connWG    sync.WaitGroup
	// lastRefusalLog and quietRefusals keep a flood of refusals to one
	// log line a second.
	lastRefusalLog time.Time
	quietRefusals  int

	refused atomic.Int64
	// refusing bounds the goroutines writing refusals.
	refusing chan struct{}
	// work hands calls to idle handler goroutines. They live until the
	// server closes, so their stacks stay grown: a fresh goroutine per
	// call spends much of a short call growing its stack.
	work chan func()
}

// NewServer makes a server with no protocols.
func NewServer(opts ServerOptions) *Server {
	opts.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{opts: opts, log: *opts.Logger, protocols: map[string]*protocolEntry{},
		ctx: ctx, cancel: cancel, listeners: map[net.Listener]struct{}{}, conns: map[*serverConn]struct{}{},
		byAddr: map[string]*addrConns{}, refusing: make(chan struct{}, 64), work: make(chan func())}
}

type protocolEntry struct {
	name    string
	methods map[string]*Method
}

// Register adds a protocol. Register before Serve.
func (s *Server) Register(p Protocol) {
	e := &protocolEntry{name: p.Name, methods: map[string]*Method{}}
	for i := range p.Methods {
		m := p.Methods[i]
		e.methods[m.Name] = &m
	}
	s.protocols[p.Name] = e
}

// ListenAndServe listens on addr and serves until Shutdown.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln until Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) || isTemporary(err) {
				// Out of file descriptors and the like: back off, go on.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn().Err(err).Dur("retry_in", delay).Msg("accept failed")
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		if len(s.conns) >= s.opts.MaxConns {
			s.mu.Unlock()
			s.refused.Add(1)
			s.log.Warn().Str("remote", nc.RemoteAddr().String()).Int("max_conns", s.opts.MaxConns).
				Msg("connection refused: at the connection limit")
			nc.Close()
			continue
		}
		key, loopback := addrKey(nc.RemoteAddr())
		n := s.byAddr[key]
		if n == nil {
			n = &addrConns{}
			s.byAddr[key] = n
		}
		var refusal string
		capped := !loopback || s.opts.CapLoopback
		switch {
		case capped && n.setup >= s.opts.MaxSetupConnsPerAddr:
			refusal = fmt.Sprintf("too many connections from %s that have not sent their connection context (limit %d)",
				key, s.opts.MaxSetupConnsPerAddr)
		case capped && n.all >= s.opts.MaxConnsPerAddr:
			refusal = fmt.Sprintf("too many connections from %s (limit %d)", key, s.opts.MaxConnsPerAddr)
		}
		if refusal != "" {
			s.logRefusalLocked(key, refusal)
			s.mu.Unlock()
			s.refuse(nc, fatal(FatalUnknown, ClassServerTooBusy, "%s", refusal))
			continue
		}
		n.all++
		n.setup++
		c := newServerConn(s, nc)
		c.addr, c.inSetup = key, true
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// addrConns counts one remote address's connections: all of them, and
// those not yet set up (no connection context yet).
type addrConns struct{ all, setup int }

// addrKey is the address connections are counted by: the remote IP.
func addrKey(a net.Addr) (key string, loopback bool) {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String(), ta.IP.IsLoopback()
	}
	s := a.String()
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	ip := net.ParseIP(s)
	return s, ip != nil && ip.IsLoopback()
}

// logRefusalLocked logs a refused connection, at most once a second,
// with how many were refused quietly since. Callers hold mu.
func (s *Server) logRefusalLocked(remote, why string) {
	now := time.Now()
	if now.Sub(s.lastRefusalLog) < time.Second {
		s.quietRefusals++
		return
	}
	s.log.Warn().Str("remote", remote).Int("also_refused", s.quietRefusals).Msg("connection refused: " + why)
	s.lastRefusalLog, s.quietRefusals = now, 0
}

// refusalLinger is how long a refused connection is kept to deliver its
// FATAL reply.
const refusalLinger = 2 * time.Second

// refuse answers a connection it will not serve with a FATAL reply saying
// why, then closes it. The reply goes out before the peer's bytes are
// read, and the peer gets a moment to read it before the close, so that
// it is not lost to a reset; beyond 64 refusals under way at once the
// rest are closed without a word.
func (s *Server) refuse(nc net.Conn, re *RemoteError) {
	s.refused.Add(1)
	select {
	case s.refusing <- struct{}{}:
	default:
		nc.Close()
		return
	}
	go func() {
		defer func() { <-s.refusing }()
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(refusalLinger))
		if _, err := nc.Write(errorFrame(-1, nil, nil, re)); err != nil {
			return
		}
		if cw, ok := nc.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
			io.Copy(io.Discard, io.LimitReader(nc, 64<<10))
		}
	}()
}

// setUp records that a connection sent its connection context, so it no
// longer counts against its address's setup limit.
func (s *Server) setUp(c *serverConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.inSetup {
		c.inSetup = false
		if n := s.byAddr[c.addr]; n != nil {
			n.setup--
		}
	}
}

// Connections need descriptors: MaxConns defaults to the process's
// open-file limit less fdReserve kept for its files, listeners and
// outgoing connections, and to at least minMaxConns. Hadoop's
// ipc.server.max.connections has no limit by default. A fixed 4,096
// turned away the 4,097th NodeManager of a larger cluster, where each NM
// holds a connection of its own to the resource tracker (`loom rm` lifts
// its open-file limit to the hard limit before it serves).
const (
	fdReserve   = 256
	minMaxConns = 1024
	maxMaxConns = 1 << 20
)

func defaultMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 4096
	}
	return maxConnsFor(lim.Cur)
}

// maxConnsFor is the connection limit for an open-file limit.
func maxConnsFor(files uint64) int {
	if files > maxMaxConns+fdReserve {
		return maxMaxConns
	}
	return max(int(files)-fdReserve, minMaxConns)
}

func isTemporary(err error) bool {
	t, ok := err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}

// Conns returns the number of open connections.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Refused returns how many connections the limit turned away.
func (s *Server) Refused() int64 { return s.refused.Load() }

// Shutdown stops accepting, lets every call in flight finish and its reply
// go out, then closes the connections. If ctx ends first the rest are
// closed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.drain()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}

// Close closes every listener and connection at once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.cancel()
	return nil
}

func (s *Server) forget(c *serverConn) {
	s.mu.Lock()
	delete(s.conns, c)
	if n := s.byAddr[c.addr]; n != nil && c.addr != "" {
		n.all--
		if c.inSetup {
			n.setup--
			c.inSetup = false
		}
		if n.all <= 0 {
			delete(s.byAddr, c.addr)
		}
	}
	s.mu.Unlock()
	s.connWG.Done()
}

// serverConn is one client connection. One goroutine reads and decodes
// calls; each call runs in its own goroutine; replies are written under
// wmu, and the last writer waiting flushes, so replies to pipelined calls
// share syscalls.
type serverConn struct {
	s        *Server
	nc       net.Conn
	br       *bufio.Reader
	log      zerolog.Logger
	user     string
	realUser string
	ctxDone  bool // the connection context arrived
	// setupBy is when the connection must have sent its context.
	setupBy time.Time
	// addr is the remote address the connection counts against, and
	// inSetup whether it still counts as not set up; both under s.mu.
	addr    string
	inSetup bool
	// digest is the DIGEST-MD5 exchange under way; token is the
	// identifier of the token the connection authenticated with, and
	// tokenUser the user it names.
	digest    *digestServer
	token     []byte
	tokenUser string
	// gss is the GSSAPI exchange under way; krbUser the principal (short
	// name) it authenticated.
	gss     *gssServer
	krbUser string
	krbName string // the whole principal, without the realm
	krbFull string // and with it
	// authorized is the protocol the Policy let the connection call.
	authorized string

	slots    chan struct{} // calls in flight
	inflight sync.WaitGroup
	draining atomic.Bool

	// rdl and wdl are the read and write deadlines last set (readDeadline,
	// writeDeadline); rdl is the reader's, wdl is under wmu.
	rdl time.Time

	wmu     sync.Mutex
	bw      *bufio.Writer
	werr    error
	wdl     time.Time
	waiting atomic.Int32
	// held says an inline call's reply sits in bw unflushed, because the
	// next call was already read whole (replyInline); the reader flushes
	// it before it waits for more.
	held atomic.Bool
}

// serverBuf is a server connection's buffer each way. Calls and replies
// are mostly well under 1 KB (a heartbeat, an allocate call), and a frame
// larger than the buffer is read and written past it, so a small buffer
// costs larger frames nothing while an RM holds one per NodeManager and
// AM. At 16 KB each way (until 2026-11-29) 5,000 NMs with a connection
// each took the RM's process to 943-961 MiB; at 4 KB, 658-674 MiB, with
// the heartbeat tail within the run-to-run noise (loom bench load
// --nm-conns 0; docs/results/load.md).
const serverBuf = 4 << 10

func newServerConn(s *Server, nc net.Conn) *serverConn {
	return &serverConn{s: s, nc: nc, br: bufio.NewReaderSize(nc, serverBuf), bw: bufio.NewWriterSize(nc, serverBuf),
		slots: make(chan struct{}, s.opts.MaxInFlight), setupBy: time.Now().Add(s.opts.SetupTimeout),
		log: s.log.With().Str("remote", nc.RemoteAddr().String()).Logger()}
}

// deadline is d from now, but no later than the setup deadline while the
// connection is not set up.
func (c *serverConn) deadline(d time.Duration) time.Time {
	t := time.Now().Add(d)
	if !c.ctxDone && c.setupBy.Before(t) {
		return c.setupBy
	}
	return t
}

// setupTimedOut turns a timeout of a connection that did not set up in
// time into a FATAL reply saying so.
func (c *serverConn) setupTimedOut(err error) error {
	if c.ctxDone || !isTimeout(err) || c.draining.Load() || time.Now().Before(c.setupBy) {
		return err
	}
	return c.fatalCall(-1, nil, fatal(FatalUnknown, ClassIPC,
		"the connection was not set up (SASL and the connection context) within %v", c.s.opts.SetupTimeout))
}

// deadlineSlack: a connection keeps the deadline it has, rather than set
// it again, while that deadline falls short of the one wanted by less than
// a deadlineSlack-th of its timeout. Every call set three (two reads and a
// write: 1% of the RM's CPU at 10,000 NMs), each moving a timer; a wait
// allowed 99% of its timeout instead of all of it changes nothing a
// timeout is for.
const deadlineSlack = 100

// readDeadline sets the read deadline to t, for a wait bounded by d,
// unless the one set is no later than t and short of it by less than
// d/deadlineSlack. Only the reading goroutine calls it. (drain's deadline
// is not recorded: it is earlier than any kept, and ends the reads.)
func (c *serverConn) readDeadline(t time.Time, d time.Duration) {
	if !t.Before(c.rdl) && t.Sub(c.rdl) < d/deadlineSlack {
		return
	}
	c.rdl = t
	c.nc.SetReadDeadline(t)
}

// writeDeadline gives the next write the write timeout, as readDeadline
// does. Callers hold wmu.
func (c *serverConn) writeDeadline() {
	d := c.s.opts.WriteTimeout
	t := time.Now().Add(d)
	if !t.Before(c.wdl) && t.Sub(c.wdl) < d/deadlineSlack {
		return
	}
	c.wdl = t
	c.nc.SetWriteDeadline(t)
}

func (c *serverConn) drain() {
	c.draining.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

func (c *serverConn) serve() {
	defer c.s.forget(c)
	defer c.nc.Close()
	err := c.readLoop()
	// Calls already read are answered before the connection closes.
	c.inflight.Wait()
	var re *RemoteError
	switch {
	case errors.As(err, &re):
		c.log.Warn().Str("class", re.Class).Str("reason", re.Message).Msg("connection closed on a fatal error")
	case err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
	default:
		c.log.Debug().Err(err).Msg("connection closed")
	}
}

// fatalCall replies FATAL to callID and ends the connection.
func (c *serverConn) fatalCall(callID int32, clientID []byte, re *RemoteError) error {
	c.inflight.Wait()
	c.reply(c.errorFrame(callID, clientID, nil, re), true)
	return re
}

func (c *serverConn) readLoop() error {
	o := &c.s.opts
	c.readDeadline(c.deadline(o.ReadTimeout), o.ReadTimeout)
	var pre [7]byte
	if _, err := io.ReadFull(c.br, pre[:]); err != nil {
		return c.setupTimedOut(err)
	}
	p, err := ParsePreamble(pre[:])
	if err != nil {
		if string(pre[:4]) == "GET " || string(pre[:4]) == "POST" || string(pre[:4]) == "HEAD" {
			c.nc.SetWriteDeadline(time.Now().Add(o.WriteTimeout))
			io.WriteString(c.nc, httpOnIPCPort)
			return fatal(FatalInvalidHeader, ClassIPC, "an HTTP request on the IPC port")
		}
		code := FatalInvalidHeader
		if [4]byte(pre[:4]) == preambleMagic && p.Version != Version {
			code = FatalVersionMismatch
		}
		return c.fatalCall(-1, nil, fatal(code, ClassIPC, "%v", err))
	}
	if p.AuthProtocol == AuthNone && o.simpleRefused() {
		// A client that does not speak SASL asks for SIMPLE auth.
		return c.fatalCall(-1, nil, fatal(hadooppb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, ClassAccessControl, "%s", o.simpleRefusal()))
	}
	var buf []byte
	defer c.flushHeld()
	for {
		if c.held.Load() && !c.frameBuffered() {
			c.flushHeld()
		}
		if cap(buf) > 1<<20 {
			// Keep no large buffer for the connection's lifetime;
			// decoded messages hold their own copies.
			buf = nil
		}
		if buf, err = c.readFrame(buf); err != nil {
			if c.draining.Load() {
				return nil
			}
			var tl *FrameTooLargeError
			var st *SetupFrameTooLargeError
			if errors.As(err, &tl) || errors.As(err, &st) {
				return c.fatalCall(-1, nil, fatal(FatalInvalidHeader, ClassIPC, "%v", err))
			}
			return c.setupTimedOut(err)
		}
		hb, rest, err := nextDelimited(buf)
		var h requestHeader
		if err == nil {
			h, err = parseRequestHeader(hb)
		}
		if err != nil {
			return c.fatalCall(-1, nil, fatal(FatalInvalidHeader, ClassIPC, "unparseable RpcRequestHeaderProto: %v", err))
		}
		id := h.callID
		if h.op == int32(hadooppb.RpcRequestHeaderProto_RPC_CLOSE_CONNECTION) {
			return nil
		}
		switch {
		case id == PingCallID:
			continue
		case id == SASLCallID:
			if err := c.sasl(&h, rest); err != nil {
				return err
			}
			continue
		case id == ConnectionContextCallID:
			var cc hadooppb.IpcConnectionContextProto
			if _, err := unmarshalDelimitedPartial(rest, &cc); err != nil {
				return c.fatalCall(id, h.clientID, fatal(FatalDeserializing, ClassIPC, "unparseable IpcConnectionContextProto: %v", err))
			}
			if c.s.opts.simpleRefused() && c.token == nil && c.krbUser == "" {
				return c.fatalCall(id, h.clientID, fatal(hadooppb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, ClassAccessControl, "%s", c.s.opts.simpleRefusal()))
			}
			c.user = cc.GetUserInfo().GetEffectiveUser()
			c.realUser = cc.GetUserInfo().GetRealUser()
			if c.user == "" {
				c.user = c.realUser
			}
			if c.token != nil {
				// The token, not the context, says who the caller is.
				if c.user != "" && c.user != c.tokenUser {
					return c.fatalCall(id, h.clientID, fatal(hadooppb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, ClassAccessControl,
						"Authenticated user (%s) doesn't match what the client claims to be (%s)", c.tokenUser, c.user))
				}
				c.user, c.realUser = c.tokenUser, ""
			}
			if c.krbUser != "" {
				// Kerberos says who the caller is; an effective user other
				// than that is a proxy user, whom the Policy checks.
				// Java clients name themselves by the whole principal
				// (UserGroupInformation.getUserName), Loom's by the short name.
				if c.user == "" || c.user == c.krbUser || c.user == c.krbFull {
					c.user, c.realUser = c.krbUser, ""
				} else {
					c.realUser = c.krbUser
				}
			}
			p := c.s.opts.Policy
			if p == nil && c.krbUser != "" && c.realUser != "" {
				// An authenticated user acting for another needs a
				// proxy-user rule; with none configured, none may.
				p = &Policy{}
			}
			if p != nil {
				if re := p.authorize(c.user, c.realUser, c.authName(), cc.GetProtocol(), c.nc.RemoteAddr()); re != nil {
					c.log.Warn().Str("user", c.user).Str("real_user", c.realUser).Str("protocol", cc.GetProtocol()).Msg(re.Message)
					re.Code, re.Fatal = hadooppb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, true
					return c.fatalCall(id, h.clientID, re)
				}
				c.authorized = cc.GetProtocol()
			}
			c.ctxDone = true
			c.s.setUp(c)
			continue
		case id < 0:
			return c.fatalCall(id, h.clientID, fatal(FatalInvalidHeader, ClassIPC, "call id %d is not a call, ping, SASL or connection context", id))
		case !c.ctxDone:
			return c.fatalCall(id, h.clientID, fatal(FatalInvalidHeader, ClassIPC, "call %d before the connection context", id))
		case h.kind != int32(hadooppb.RpcKindProto_RPC_PROTOCOL_BUFFER):
			kind := "no rpc kind"
			if h.kind >= 0 {
				kind = "rpc kind " + hadooppb.RpcKindProto(h.kind).String()
			}
			return c.fatalCall(id, h.clientID, fatal(FatalUnsupported, ClassIPC, "%s: this server speaks RPC_PROTOCOL_BUFFER only", kind))
		}
		if err := c.call(&h, rest); err != nil {
			return err
		}
	}
}

// authName is how the connection authenticated, as Hadoop names it.
func (c *serverConn) authName() string {
	switch {
	case c.token != nil:
		return "TOKEN"
	case c.krbUser != "":
		return "KERBEROS"
	}
	return "SIMPLE"
}

// simpleRefused says whether SIMPLE auth is refused: tokens only, or
// Kerberos required.
func (o *ServerOptions) simpleRefused() bool { return o.TokenOnly || o.Kerberos != nil }

// simpleRefusal is Hadoop's words for it, naming what the server takes.
func (o *ServerOptions) simpleRefusal() string {
	switch {
	case o.Kerberos != nil && o.Secrets != nil:
		return "SIMPLE authentication is not enabled.  Available:[TOKEN, KERBEROS]"
	case o.Kerberos != nil:
		return "SIMPLE authentication is not enabled.  Available:[KERBEROS]"
	}
	return simpleNotEnabled
}

// simpleNotEnabled is Hadoop's refusal of SIMPLE auth by a server that
// takes tokens only.
const simpleNotEnabled = "SIMPLE authentication is not enabled.  Available:[TOKEN]"

const httpOnIPCPort = "HTTP/1.1 404 Not Found\r\nContent-type: text/plain\r\n\r\n" +
	"It looks like you are making an HTTP request to a Hadoop IPC port. " +
	"This is not the web interface of this daemon.\r\n"

// SetupFrameTooLargeError is a frame, before the connection is set up,
// over the limit for setting up.
type SetupFrameTooLargeError struct{ Length, Max int64 }

func (e *SetupFrameTooLargeError) Error() string {
	return fmt.Sprintf("frame of %d bytes before the connection is set up is over the %d-byte limit "+
		"for SASL and the connection context", e.Length, e.Max)
}

// readFrame waits for the next frame. Waiting for its first byte is
// bounded by the idle timeout, and only while no call is in flight; the
// rest of the frame must come within the read timeout. Until the
// connection is set up both are bounded by the setup deadline too, and a
// frame may be no larger than MaxSetupFrame.
func (c *serverConn) readFrame(buf []byte) ([]byte, error) {
	o := &c.s.opts
	var first byte
	for {
		c.readDeadline(c.deadline(o.IdleTimeout), o.IdleTimeout)
		b, err := c.br.ReadByte()
		if err == nil {
			first = b
			break
		}
		if isTimeout(err) && !c.draining.Load() && len(c.slots) > 0 {
			continue
		}
		if isTimeout(err) && !c.draining.Load() && c.ctxDone {
			return buf, fmt.Errorf("idle for %v: %w", o.IdleTimeout, err)
		}
		return buf, err
	}
	if !c.restBuffered(first) {
		c.readDeadline(c.deadline(o.ReadTimeout), o.ReadTimeout)
	}
	var rest [3]byte
	if _, err := io.ReadFull(c.br, rest[:]); err != nil {
		return buf, err
	}
	n, err := frameLength([4]byte{first, rest[0], rest[1], rest[2]}, o.MaxFrame)
	if err != nil {
		return buf, err
	}
	if !c.ctxDone && n > o.MaxSetupFrame {
		return buf, &SetupFrameTooLargeError{Length: int64(n), Max: int64(o.MaxSetupFrame)}
	}
	return readBody(c.br, n, buf)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// invalidTokenError is a token the secret manager refused.
type invalidTokenError struct{ error }

func (c *serverConn) sasl(h *requestHeader, rest []byte) error {
	var m hadooppb.RpcSaslProto
	if _, err := unmarshalDelimitedPartial(rest, &m); err != nil {
		return c.fatalCall(SASLCallID, h.clientID, fatal(FatalDeserializing, ClassIPC, "unparseable RpcSaslProto: %v", err))
	}
	unauthorized := func(class, format string, args ...any) error {
		return c.fatalCall(SASLCallID, h.clientID, fatal(hadooppb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, class, format, args...))
	}
	if c.ctxDone || c.token != nil {
		return unauthorized(ClassSasl, "SASL %v after the connection was set up", m.GetState())
	}
	reply := &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_SUCCESS.Enum()}
	switch m.GetState() {
	case hadooppb.RpcSaslProto_NEGOTIATE:
		o := c.s.opts
		if o.Secrets != nil || o.Kerberos != nil {
			reply = &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_NEGOTIATE.Enum()}
		}
		if o.Secrets != nil {
			// TOKEN first, with its challenge, to save a round trip, as
			// Hadoop's server does; then KERBEROS, then SIMPLE.
			c.digest = newDigestServer()
			reply.Auths = append(reply.Auths, &hadooppb.RpcSaslProto_SaslAuth{Method: proto.String(saslTokenMethod),
				Mechanism: proto.String(saslDigestMech), Protocol: proto.String(""), ServerId: proto.String(saslDefaultRealm),
				Challenge: c.digest.challenge()})
		}
		if k := o.Kerberos; k != nil {
			reply.Auths = append(reply.Auths, &hadooppb.RpcSaslProto_SaslAuth{Method: proto.String(saslKerberosMethod),
				Mechanism: proto.String(saslGSSAPIMech), Protocol: proto.String(k.Protocol), ServerId: proto.String(k.Host)})
		}
		if reply.GetState() == hadooppb.RpcSaslProto_NEGOTIATE && !o.simpleRefused() {
			reply.Auths = append(reply.Auths, &hadooppb.RpcSaslProto_SaslAuth{Method: proto.String(saslSimpleMethod), Mechanism: proto.String("")})
		}
		// A SIMPLE-only server answers NEGOTIATE with SUCCESS, and the
		// client goes on without SASL, as Hadoop's own server does.
	case hadooppb.RpcSaslProto_INITIATE:
		auths := m.GetAuths()
		if len(auths) != 1 {
			return unauthorized(ClassSasl, "Client mechanism is malformed: %d auths, want 1", len(auths))
		}
		switch method := auths[0].GetMethod(); {
		case method == saslSimpleMethod && c.s.opts.simpleRefused():
			return unauthorized(ClassAccessControl, "%s", c.s.opts.simpleRefusal())
		case method == saslKerberosMethod && c.s.opts.Kerberos != nil:
			if auths[0].GetMechanism() != saslGSSAPIMech {
				return unauthorized(ClassSasl, "KERBEROS auth with mechanism %q: this server speaks GSSAPI", auths[0].GetMechanism())
			}
			g, tok, err := c.s.opts.Kerberos.initiate(m.GetToken())
			if err != nil {
				c.log.Warn().Err(err).Msg("Kerberos authentication failed")
				return unauthorized(ClassSasl, "GSS initiate failed: %v", err)
			}
			c.gss = g
			reply = &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_CHALLENGE.Enum(), Token: tok}
		case method == saslSimpleMethod:
		case method == saslTokenMethod && c.s.opts.Secrets != nil:
			if auths[0].GetMechanism() != saslDigestMech {
				return unauthorized(ClassSasl, "TOKEN auth with mechanism %q: this server speaks DIGEST-MD5", auths[0].GetMechanism())
			}
			if c.digest == nil {
				return unauthorized(ClassSasl, "TOKEN auth without NEGOTIATE first: no challenge was sent")
			}
			var user string
			id, rspauth, err := c.digest.verify(m.GetToken(), func(id []byte) ([]byte, error) {
				pw, u, err := c.s.opts.Secrets.RetrievePassword(id)
				if err != nil {
					return nil, invalidTokenError{err}
				}
				user = u
				return pw, nil
			})
			if err != nil {
				class := ClassSasl
				if errors.As(err, new(invalidTokenError)) {
					class = ClassInvalidToken
				}
				c.log.Warn().Err(err).Msg("token authentication failed")
				return unauthorized(class, "%v", err)
			}
			c.digest, c.token, c.tokenUser = nil, id, user
			reply.Token = rspauth
		default:
			var offers []string
			if c.s.opts.Secrets != nil {
				offers = append(offers, "TOKEN (DIGEST-MD5)")
			}
			if c.s.opts.Kerberos != nil {
				offers = append(offers, "KERBEROS (GSSAPI)")
			} else {
				offers = append(offers, "SIMPLE")
			}
			offer := strings.Join(offers, " and ") + " auth only"
			if c.s.opts.Kerberos == nil {
				offer += " (Kerberos is not configured: " + KeyAuthentication + ")"
			}
			return unauthorized(ClassSasl, "auth method %s is not supported: this server accepts %s", method, offer)
		}
	case hadooppb.RpcSaslProto_RESPONSE:
		if c.gss == nil {
			return unauthorized(ClassSasl, "unexpected SASL state %v: no exchange is under way", m.GetState())
		}
		tok, done, err := c.gss.next(m.GetToken())
		if err != nil {
			c.log.Warn().Err(err).Msg("Kerberos authentication failed")
			return unauthorized(ClassSasl, "GSS wrap: %v", err)
		}
		if done {
			c.krbUser, c.krbName, c.krbFull, c.gss = c.gss.client, c.gss.principal, c.gss.principal+"@"+c.gss.realm, nil
		} else {
			reply = &hadooppb.RpcSaslProto{State: hadooppb.RpcSaslProto_CHALLENGE.Enum(), Token: tok}
		}
	default:
		return unauthorized(ClassSasl, "unexpected SASL state %v", m.GetState())
	}
	hdr := &hadooppb.RpcResponseHeaderProto{CallId: proto.Uint32(wireCallID(SASLCallID)),
		Status: hadooppb.RpcResponseHeaderProto_SUCCESS.Enum(), ServerIpcVersionNum: proto.Uint32(Version)}
	frame, err := AppendFrame(nil, hdr, reply)
	if err != nil {
		return err
	}
	c.reply(frame, false)
	return nil
}

// call decodes a protocol-buffer call and runs it on a handler goroutine.
func (c *serverConn) call(h *requestHeader, rest []byte) error {
	id := h.callID
	retry := h.retryPtr()
	mh, rest, err := nextDelimited(rest)
	var method, protocol []byte
	if err == nil {
		method, protocol, err = parseMethodHeader(mh)
	}
	if err != nil {
		return c.fatalCall(id, h.clientID, fatal(FatalInvalidHeader, ClassIPC, "unparseable RequestHeaderProto: %v", err))
	}
	if sb := c.s.opts.Standby; sb != nil {
		c.reply(c.errorFrame(id, h.clientID, retry, sb), false)
		return nil
	}
	p, ok := c.s.protocols[string(protocol)]
	if !ok {
		c.reply(c.errorFrame(id, h.clientID, retry, &RemoteError{Class: ClassNoSuchProtocol, Code: ErrNoSuchProtocol,
			Message: fmt.Sprintf("Unknown protocol: %s", protocol)}), false)
		return nil
	}
	// Authorised for the connection's protocol; a call on another one is
	// checked on its own.
	if pol := c.s.opts.Policy; pol != nil && pol.Authorization && p.name != c.authorized {
		if re := pol.authorize(c.user, c.realUser, c.authName(), p.name, c.nc.RemoteAddr()); re != nil {
			c.reply(c.errorFrame(id, h.clientID, retry, re), false)
			return nil
		}
	}
	m, ok := p.methods[string(method)]
	if !ok {
		c.reply(c.errorFrame(id, h.clientID, retry, &RemoteError{Class: ClassNoSuchMethod, Code: ErrNoSuchMethod,
			Message: fmt.Sprintf("Unknown method %s called on %s protocol.", method, protocol)}), false)
		return nil
	}
	if m.Inline && m.Exec != nil {
		// The reader waits for the executor, so the frame's buffer
		// stays as it is until the request is decoded. The wait for the
		// executor counts as the call's queue time, as the wait for a
		// handler thread does in Hadoop's RpcQueueTime.
		read := c.readTime()
		var frame []byte
		var err error
		m.Exec(func() {
			var req proto.Message
			if req, err = decodeRequest(m, rest); err == nil {
				frame = c.observedCall(m, c.callInfo(p, m, h), retry, req, read)
			}
		})
		if err != nil {
			return c.fatalCall(id, h.clientID, fatal(FatalDeserializing, ClassIPC, "cannot decode %s request of %s: %v",
				m.Name, p.name, err))
		}
		c.replyInline(frame)
		return nil
	}
	req, err := decodeRequest(m, rest)
	if err != nil {
		return c.fatalCall(id, h.clientID, fatal(FatalDeserializing, ClassIPC, "cannot decode %s request of %s: %v",
			m.Name, p.name, err))
	}
	info := c.callInfo(p, m, h)
	read := c.readTime()
	if m.Inline {
		c.replyInline(c.observedCall(m, info, retry, req, read))
		return nil
	}
	c.slots <- struct{}{}
	c.inflight.Add(1)
	c.s.dispatch(func() {
		defer func() { <-c.slots; c.inflight.Done() }()
		if m.Exec == nil {
			c.reply(c.observedCall(m, info, retry, req, read), false)
			return
		}
		var frame []byte
		m.Exec(func() { frame = c.observedCall(m, info, retry, req, read) })
		c.reply(frame, false)
	})
	return nil
}

// decodeRequest decodes a call's request from the rest of its frame.
func decodeRequest(m *Method, rest []byte) (proto.Message, error) {
	req := m.NewRequest()
	_, err := unmarshalDelimited(rest, req)
	return req, err
}

// callInfo describes a call read on c. The frame buffer is reused for the
// next call: it keeps a copy of the client id.
func (c *serverConn) callInfo(p *protocolEntry, m *Method, h *requestHeader) *CallInfo {
	return &CallInfo{User: c.user, RealUser: c.realUser, Protocol: p.name, Method: m.Name, CallID: h.callID,
		ClientID: bytes.Clone(h.clientID), Remote: c.nc.RemoteAddr(), Local: c.nc.LocalAddr(), Token: c.token, Principal: c.krbName}
}

// readTime is when a call counts as read, for ServerOptions.Observe; zero
// without it.
func (c *serverConn) readTime() time.Time {
	if c.s.opts.Observe == nil {
		return time.Time{}
	}
	return time.Now()
}

// observedCall is runCall, timed for ServerOptions.Observe from read, when
// the call was read whole.
func (c *serverConn) observedCall(m *Method, info *CallInfo, retry *int32, req proto.Message, read time.Time) []byte {
	obs := c.s.opts.Observe
	if obs == nil {
		return c.runCall(m, info, retry, req)
	}
	start := time.Now()
	frame := c.runCall(m, info, retry, req)
	obs(info.Protocol, info.Method, start.Sub(read), time.Since(start))
	return frame
}

func (h *requestHeader) retryPtr() *int32 {
	if !h.hasRetry {
		return nil
	}
	r := h.retry
	return &r
}

// dispatch runs f on an idle handler goroutine, or a new one when all are
// busy, so a slow handler never holds up another call.
func (s *Server) dispatch(f func()) {
	select {
	case s.work <- f:
	default:
		go s.handler(f)
	}
}

func (s *Server) handler(f func()) {
	for {
		f()
		select {
		case f = <-s.work:
		case <-s.ctx.Done():
			return
		}
	}
}

func (c *serverConn) runCall(m *Method, info *CallInfo, retry *int32, req proto.Message) (frame []byte) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error().Interface("panic", r).Str("method", info.Method).Msg("handler panicked")
			frame = c.errorFrame(info.CallID, info.ClientID, retry, &RemoteError{Class: ClassServer, Code: ErrServer,
				Message: fmt.Sprintf("%s failed inside the server: %v", info.Method, r)})
		}
	}()
	resp, err := m.Handle(context.WithValue(c.s.ctx, callKey{}, info), req)
	if err != nil {
		var re *RemoteError
		if !errors.As(err, &re) {
			re = &RemoteError{Class: c.s.opts.ErrorClass, Message: err.Error(), Code: ErrApplication}
		}
		return c.errorFrame(info.CallID, info.ClientID, retry, re)
	}
	r, hasRetry := derefRetry(retry)
	size := marshal.Size(resp)
	frame = make([]byte, 4, 64+len(info.ClientID)+size)
	frame = appendDelimitedWith(frame, func(b []byte) []byte {
		return appendSuccessHeader(b, info.CallID, info.ClientID, r, hasRetry)
	})
	if frame, err = appendSized(frame, resp, size); err != nil {
		return c.errorFrame(info.CallID, info.ClientID, retry, &RemoteError{Class: ClassServer,
			Code: hadooppb.RpcResponseHeaderProto_ERROR_SERIALIZING_RESPONSE, Message: fmt.Sprintf("cannot encode the reply: %v", err)})
	}
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	return frame
}

func derefRetry(r *int32) (int32, bool) {
	if r == nil {
		return 0, false
	}
	return *r, true
}

func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func (c *serverConn) errorFrame(callID int32, clientID []byte, retry *int32, re *RemoteError) []byte {
	return errorFrame(callID, clientID, retry, re)
}

func errorFrame(callID int32, clientID []byte, retry *int32, re *RemoteError) []byte {
	status := hadooppb.RpcResponseHeaderProto_ERROR
	if re.Fatal {
		status = hadooppb.RpcResponseHeaderProto_FATAL
	}
	code := re.Code
	hdr := &hadooppb.RpcResponseHeaderProto{CallId: proto.Uint32(wireCallID(callID)), Status: status.Enum(),
		ServerIpcVersionNum: proto.Uint32(Version), ExceptionClassName: proto.String(re.Class),
		ErrorMsg: proto.String(re.Message), ErrorDetail: code.Enum(), ClientId: nonEmpty(clientID), RetryCount: retry}
	frame, _ := AppendFrame(nil, hdr)
	return frame
}

// reply writes a frame. The last of the writers waiting flushes, so
// pipelined replies share a syscall; a final reply flushes and closes.
func (c *serverConn) reply(frame []byte, final bool) {
	c.waiting.Add(1)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.waiting.Add(-1)
	if c.werr != nil {
		return
	}
	c.writeDeadline()
	_, c.werr = c.bw.Write(frame)
	if c.werr == nil && (final || c.waiting.Load() == 0) {
		c.werr = c.bw.Flush()
	}
	if c.werr != nil || final {
		c.nc.Close()
		if c.werr == nil {
			c.werr = net.ErrClosed
		}
	}
}

// replyInline writes an inline call's reply. When the next call is
// already read whole (a client that pipelines, or a backlog under load)
// the reply waits in the buffer for that call's, and both go out in one
// write: under load a connection's replies share system calls instead
// of each paying its own. Only the reading goroutine calls it.
func (c *serverConn) replyInline(frame []byte) {
	if !c.frameBuffered() {
		c.reply(frame, false)
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return
	}
	c.writeDeadline()
	if _, c.werr = c.bw.Write(frame); c.werr != nil {
		c.nc.Close()
		return
	}
	c.held.Store(true)
}

// flushHeld sends the replies replyInline held back.
func (c *serverConn) flushHeld() {
	if !c.held.Load() {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.held.Swap(false) && c.werr == nil && c.bw.Buffered() > 0 {
		c.writeDeadline()
		if c.werr = c.bw.Flush(); c.werr != nil {
			c.nc.Close()
		}
	}
}

// frameBuffered says whether the reader holds the whole of the next frame
// already, so that reading it will not wait. Only the reading goroutine
// calls it.
func (c *serverConn) frameBuffered() bool {
	n := c.br.Buffered()
	if n < 4 {
		return false
	}
	b, err := c.br.Peek(4)
	return err == nil && int64(n)-4 >= int64(binary.BigEndian.Uint32(b))
}

// restBuffered is frameBuffered once the frame's first byte (first) is
// read: whether the rest of its length and its body are in the buffer.
func (c *serverConn) restBuffered(first byte) bool {
	n := c.br.Buffered()
	if n < 3 {
		return false
	}
	b, err := c.br.Peek(3)
	return err == nil && int64(n)-3 >= int64(binary.BigEndian.Uint32([]byte{first, b[0], b[1], b[2]}))
}

func unmarshalDelimitedPartial(b []byte, m proto.Message) ([]byte, error) {
	msg, rest, err := nextDelimited(b)
	if err != nil {
		return nil, err
	}
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(msg, m); err != nil {
		return nil, err
	}
	return rest, nil
}

// wireCallID is a call id as a reply carries it: unsigned, so call -33
// comes back as 2^32-33.
func wireCallID(id int32) uint32 { return uint32(id) }

// WithCall returns a context that carries call as the call it belongs to,
// so that another front end (the REST API) can run the same handlers as
// the named user.
func WithCall(ctx context.Context, call *CallInfo) context.Context {
	return context.WithValue(ctx, callKey{}, call)
}
