package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/go-cmp/cmp"
)

// The ZooKeeper tests run against a real server, at $LOOM_TEST_ZK or
// 127.0.0.1:2181. They fail, rather than skip, when none answers: `make
// test` starts one, and a skipped store test would pass unseen.
const zkHowTo = `run the tests through scripts/test-env.sh, as make test does,
which installs Debian's zookeeper if missing and starts a private server:
    scripts/test-env.sh go test ./daemon/rm/store
or point LOOM_TEST_ZK at a server you have (host:port)`

// zkRun is the znode all of this run's stores live under, so that runs
// never see each other's data; TestMain removes it.
var zkRun = fmt.Sprintf("/loom-store-test-%d-%d", os.Getpid(), time.Now().UnixNano())

// zkTestAuth is what the cleanup adds to its session so it can remove
// the znodes a test created under a digest ACL.
const zkTestAuth = "loom:test-password"

func TestMain(m *testing.M) {
	code := m.Run()
	if c, err := zkRawConn(zkAddr()); err == nil {
		zkDeleteTree(c, zkRun)
		c.Close()
	}
	os.Exit(code)
}

func zkAddr() string {
	if a := os.Getenv("LOOM_TEST_ZK"); a != "" {
		return a
	}
	return "127.0.0.1:2181"
}

var (
	zkOnce sync.Once
	zkErr  error
)

// zkTestAddr returns the test server's address, failing the test with
// how to start one if it does not answer.
func zkTestAddr(t *testing.T) string {
	t.Helper()
	addr := zkAddr()
	zkOnce.Do(func() {
		c, err := zkRawConn(addr)
		if err != nil {
			zkErr = err
			return
		}
		defer c.Close()
		// The run's own root, world-writable, so that a test creating
		// its store under a stricter ACL cannot lock the others out.
		_, err = c.Create(zkRun, nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			zkErr = err
		}
	})
	if zkErr != nil {
		t.Fatalf("no ZooKeeper at %s (LOOM_TEST_ZK): %v\nThe zookeeper store is tested against a real server; %s", addr, zkErr, zkHowTo)
	}
	return addr
}

// zkRawConn is a plain session for the tests' own checks and cleanup.
func zkRawConn(addr string) (*zk.Conn, error) {
	if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err != nil {
		return nil, err
	} else {
		c.Close()
	}
	c, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(zkLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			c.Close()
			return nil, fmt.Errorf("no session within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.AddAuth("digest", []byte(zkTestAuth)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func zkDeleteTree(c *zk.Conn, p string) {
	kids, _, err := c.Children(p)
	if err != nil {
		return
	}
	for _, k := range kids {
		zkDeleteTree(c, p+"/"+k)
	}
	c.Delete(p, -1)
}

// zkTestConfig is a store config with a root of the test's own, removed
// when the test ends.
func zkTestConfig(t *testing.T) Config {
	t.Helper()
	addr := zkTestAddr(t)
	base := zkRun + "/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	t.Cleanup(func() {
		if c, err := zkRawConn(addr); err == nil {
			zkDeleteTree(c, base)
			c.Close()
		}
	})
	return Config{
		Kind:        KindZooKeeper,
		ZKAddresses: []string{addr},
		ZKRoot:      base + "/ZKRMStateRoot",
		Timeout:     5 * time.Second,
	}
}

func openZK(t *testing.T, cfg Config) *ZooKeeper {
	t.Helper()
	s, err := OpenZooKeeper(cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestZKLayout checks the znodes against the documented layout, which
// operators read with zkCli.
func TestZKLayout(t *testing.T) {
	ctx := context.Background()
	cfg := zkTestConfig(t)
	s := openZK(t, cfg)
	check(t, "put app", s.PutApp(ctx, "application_1_0001", []byte("app")))
	check(t, "put attempt", s.PutAttempt(ctx, "application_1_0001", "appattempt_1_0001_000001", []byte("att")))
	check(t, "put secret", s.PutSecret(ctx, "amrm-master-key-1", []byte("key")))
	_, err := s.BumpEpoch(ctx)
	check(t, "bump", err)

	c, err := zkRawConn(zkTestAddr(t))
	check(t, "raw session", err)
	defer c.Close()
	for p, want := range map[string]string{
		cfg.ZKRoot + "/RMVersionNode":                                         "1",
		cfg.ZKRoot + "/EpochNode":                                             "1",
		cfg.ZKRoot + "/RMAppRoot/application_1_0001":                          "app",
		cfg.ZKRoot + "/RMAppRoot/application_1_0001/appattempt_1_0001_000001": "att",
		cfg.ZKRoot + "/RMSecretRoot/amrm-master-key-1":                        "key",
	} {
		got, _, err := c.Get(p)
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q, %v; want %q", p, got, err, want)
		}
	}
	// The default ACL is YARN's: anyone may do anything.
	acl, _, err := c.GetACL(cfg.ZKRoot + "/RMAppRoot/application_1_0001")
	check(t, "get acl", err)
	if d := cmp.Diff(zk.WorldACL(zk.PermAll), acl); d != "" {
		t.Errorf("default ACL (-want +got):\n%s", d)
	}
}

// TestZKACL creates the tree under a digest ACL: the store's session
// authenticates with it, and a session without the credentials is kept
// out.
func TestZKACL(t *testing.T) {
	ctx := context.Background()
	cfg := zkTestConfig(t)
	user, password, _ := strings.Cut(zkTestAuth, ":")
	digest := zk.DigestACL(zk.PermAll, user, password)[0]
	cfg.ZKACL = "digest:" + digest.ID + ":rwcda"
	cfg.ZKAuth = "digest:" + zkTestAuth
	s := openZK(t, cfg)
	app := cfg.ZKRoot + "/RMAppRoot/application_1_0001"
	check(t, "put app", s.PutApp(ctx, "application_1_0001", []byte("secret-ish")))

	authed, err := zkRawConn(zkTestAddr(t))
	check(t, "session with the credentials", err)
	defer authed.Close()
	acl, _, err := authed.GetACL(app)
	check(t, "get acl", err)
	if d := cmp.Diff([]zk.ACL{digest}, acl); d != "" {
		t.Errorf("ACL (-want +got):\n%s", d)
	}
	c, _, err := zk.Connect([]string{zkTestAddr(t)}, 4*time.Second, zk.WithLogger(zkLogger{}), zk.WithLogInfo(false))
	check(t, "connect", err)
	defer c.Close()
	if _, _, err := c.Get(app); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("read without credentials: got %v, want %v", err, zk.ErrNoAuth)
	}
	// Without the credentials, the store cannot open its own tree, and
	// says which keys to look at.
	cfg.ZKAuth = ""
	cfg.Timeout = 2 * time.Second
	_, err = OpenZooKeeper(cfg)
	if !errors.Is(err, zk.ErrNoAuth) || !strings.Contains(err.Error(), KeyZKAuth) {
		t.Errorf("open without credentials: got %v, want ErrNoAuth naming %s", err, KeyZKAuth)
	}
}

// TestZKRecordSize puts the largest record ZooKeeper takes at a path, on
// a real server, and refuses one byte more before sending it (the server
// would drop the connection instead of answering).
func TestZKRecordSize(t *testing.T) {
	ctx := context.Background()
	s := openZK(t, zkTestConfig(t))
	const app = "application_1_0001"
	most := DefaultMaxBuffer - s.writeRequestSize(s.path(appRoot, app), nil)
	check(t, "put the largest record", s.PutApp(ctx, app, make([]byte, most)))
	check(t, "replace it", s.PutApp(ctx, app, make([]byte, most)))
	err := s.PutApp(ctx, app, make([]byte, most+1))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one byte more: got %v, want ErrTooLarge", err)
	}
	for _, want := range []string{fmt.Sprintf("%d-byte record", most+1), "jute.maxbuffer of 1048575", fmt.Sprintf("at most %d bytes", most), KeyZKMaxBuffer} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	st, err := s.Load(ctx)
	check(t, "load", err)
	if n := len(st.Apps[app].Data); n != most {
		t.Errorf("loaded %d bytes, want %d", n, most)
	}
	if err := s.PutSecret(ctx, "big", make([]byte, 2<<20)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("2 MB secret: got %v, want ErrTooLarge", err)
	}
}

// TestZKNoServer opens a store where nothing listens: a quick error that
// names the address.
func TestZKNoServer(t *testing.T) {
	addr := deadAddr(t)
	start := time.Now()
	_, err := OpenZooKeeper(Config{ZKAddresses: []string{addr}, Timeout: time.Second})
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("open took %v with a 1s timeout", el)
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), addr) {
		t.Errorf("got %v, want ErrUnavailable naming %s", err, addr)
	}
}

// TestZKServerGoesAway cuts a live store off from its server (through a
// proxy), first by closing every connection and refusing new ones, then
// by a server that stops answering: each call fails within the timeout,
// and the store works again once the server is back.
func TestZKServerGoesAway(t *testing.T) {
	ctx := context.Background()
	cfg := zkTestConfig(t)
	p := startZKProxy(t, zkTestAddr(t))
	cfg.ZKAddresses = []string{p.addr}
	cfg.Timeout = 2 * time.Second
	s := openZK(t, cfg)
	check(t, "put app", s.PutApp(ctx, "application_1_0001", []byte("before")))

	bounded := func(what string, f func() error) {
		t.Helper()
		start := time.Now()
		err := f()
		el := time.Since(start)
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: got %v, want ErrUnavailable", what, err)
		} else if !strings.Contains(err.Error(), p.addr) {
			t.Errorf("%s: %q does not name the server %s", what, err, p.addr)
		}
		if el > cfg.Timeout+time.Second {
			t.Errorf("%s: took %v with a %v timeout", what, el, cfg.Timeout)
		}
	}

	p.down()
	bounded("put while down", func() error { return s.PutApp(ctx, "application_1_0002", []byte("x")) })
	bounded("load while down", func() error { _, err := s.Load(ctx); return err })
	p.up(t)
	check(t, "put after the server is back", eventually(func() error {
		return s.PutApp(ctx, "application_1_0003", []byte("after"))
	}))

	p.freeze()
	bounded("put while hung", func() error { return s.PutApp(ctx, "application_1_0004", []byte("x")) })
	bounded("bump while hung", func() error { _, err := s.BumpEpoch(ctx); return err })
	p.thaw()
	check(t, "put after the server answers again", eventually(func() error {
		return s.PutApp(ctx, "application_1_0005", []byte("after"))
	}))

	// A write that timed out may or may not have landed; the rest did.
	st, err := s.Load(ctx)
	check(t, "load", err)
	for _, app := range []string{"application_1_0001", "application_1_0003", "application_1_0005"} {
		if _, ok := st.Apps[app]; !ok {
			t.Errorf("%s is missing after the outages", app)
		}
	}
}

// eventually retries f a few times: after an outage, the client takes a
// second or so to reconnect, which a single call's timeout may not cover.
func eventually(f func() error) error {
	var err error
	for range 3 {
		if err = f(); err == nil {
			return nil
		}
	}
	return err
}

// TestZKSessionExpiry ends the store's session from the server's side,
// as an expiry does, and checks the store carries on in a new session.
func TestZKSessionExpiry(t *testing.T) {
	ctx := context.Background()
	cfg := zkTestConfig(t)
	p := startZKProxy(t, zkTestAddr(t))
	cfg.ZKAddresses = []string{p.addr}
	s := openZK(t, cfg)
	check(t, "put app", s.PutApp(ctx, "application_1_0001", []byte("before")))
	id, passwd := p.session()
	if id != s.conn.SessionID() {
		t.Fatalf("proxy saw session %x, the store has %x", id, s.conn.SessionID())
	}
	zkCloseSession(t, zkTestAddr(t), id, passwd)

	// Straight away: the client has yet to notice, or is reconnecting.
	check(t, "put during the expiry", s.PutApp(ctx, "application_1_0002", []byte("during")))
	deadline := time.Now().Add(10 * time.Second)
	for s.conn.SessionID() == id || s.conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("still in session %x (%v) 10s after it was closed", id, s.conn.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("calls retried across the expiry: %d", s.retries.Load())
	check(t, "put in the new session", s.PutApp(ctx, "application_1_0003", []byte("after")))
	n, err := s.BumpEpoch(ctx)
	check(t, "bump", err)
	st, err := s.Load(ctx)
	check(t, "load", err)
	if len(st.Apps) != 3 || st.Epoch != n {
		t.Errorf("after the expiry: %d apps, epoch %d; want 3 apps, epoch %d", len(st.Apps), st.Epoch, n)
	}
}

// zkCloseSession attaches to a session with its id and password and
// closes it, which the server does to the session's own connection too:
// the classic way to expire a session on demand.
func zkCloseSession(t *testing.T, addr string, id int64, passwd []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	check(t, "dial", err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd.
	req := binary.BigEndian.AppendUint32(nil, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 4000)
	req = binary.BigEndian.AppendUint64(req, uint64(id))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	check(t, "send connect", writeFrame(c, req))
	resp, err := readFrame(c)
	check(t, "read connect reply", err)
	if len(resp) < 16 || int64(binary.BigEndian.Uint64(resp[8:16])) != id {
		t.Fatalf("could not attach to session %x: reply %x", id, resp)
	}
	// RequestHeader: xid, type closeSession (-11).
	hdr := binary.BigEndian.AppendUint32(nil, 1)
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(0xfffffff5))
	check(t, "send close", writeFrame(c, hdr))
	_, err = readFrame(c)
	check(t, "read close reply", err)
}

func writeFrame(w io.Writer, b []byte) error {
	_, err := w.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(t, "listen", err)
	addr := l.Addr().String()
	l.Close()
	return addr
}

// zkProxy stands between a store and the real server, so that a test can
// take the server away (down), hang it (freeze), and learn the session
// the server granted.
type zkProxy struct {
	target, addr string

	mu       sync.Mutex
	ln       net.Listener
	conns    []net.Conn
	frozen   bool
	thawed   chan struct{}
	lastID   int64
	lastPass []byte
}

func startZKProxy(t *testing.T, target string) *zkProxy {
	p := &zkProxy{target: target, thawed: make(chan struct{})}
	close(p.thawed)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(t, "listen", err)
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *zkProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.relay(c)
		}
	}()
}

func (p *zkProxy) relay(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // went down meanwhile
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns = append(p.conns, client, server)
	p.mu.Unlock()
	go p.pipe(server, client)
	// The server's first frame is the ConnectResponse: protocolVersion,
	// timeOut, sessionId, passwd.
	first, err := readFrame(server)
	if err == nil && len(first) >= 20 {
		n := binary.BigEndian.Uint32(first[16:20])
		if int(n) <= len(first)-20 {
			p.mu.Lock()
			p.lastID = int64(binary.BigEndian.Uint64(first[8:16]))
			p.lastPass = append([]byte{}, first[20:20+n]...)
			p.mu.Unlock()
		}
	}
	p.hold()
	if err != nil || writeFrame(client, first) != nil {
		client.Close()
		server.Close()
		return
	}
	p.pipe(client, server)
}

// pipe copies src to dst, holding bytes back while the proxy is frozen.
func (p *zkProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.hold()
			if _, err := dst.Write(buf[:n]); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

// hold waits while the proxy is frozen.
func (p *zkProxy) hold() {
	p.mu.Lock()
	ch := p.thawed
	p.mu.Unlock()
	<-ch
}

func (p *zkProxy) session() (int64, []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastID, p.lastPass
}

// down closes the listener and every connection: the server is gone.
func (p *zkProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	if p.frozen {
		p.frozen = false
		close(p.thawed)
	}
}

// up listens again on the same address.
func (p *zkProxy) up(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	check(t, "listen again", err)
	p.serve(ln)
}

// freeze keeps every connection open but passes nothing: a hung server.
func (p *zkProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen = true
		p.thawed = make(chan struct{})
	}
}

func (p *zkProxy) thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		p.frozen = false
		close(p.thawed)
	}
}

// TestZKFencing: once a second RM's store has bumped the epoch, the
// first one's writes of every kind fail with ErrFenced and change
// nothing; the second one's go through.
func TestZKFencing(t *testing.T) {
	ctx := context.Background()
	cfg := zkTestConfig(t)
	old := openZK(t, cfg)
	if _, err := old.BumpEpoch(ctx); err != nil {
		t.Fatal(err)
	}
	check(t, "old active writes", old.PutApp(ctx, "application_1_0001", []byte("v1")))
	check(t, "old active writes a secret", old.PutSecret(ctx, "k", []byte("s1")))
	cur := openZK(t, cfg)
	if _, err := cur.BumpEpoch(ctx); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"put app":       old.PutApp(ctx, "application_1_0001", []byte("v2")),
		"new app":       old.PutApp(ctx, "application_1_0002", []byte("v2")),
		"put attempt":   old.PutAttempt(ctx, "application_1_0001", "appattempt_1_0001_000001", []byte("a")),
		"remove app":    old.RemoveApp(ctx, "application_1_0001"),
		"put secret":    old.PutSecret(ctx, "k", []byte("s2")),
		"remove secret": old.RemoveSecret(ctx, "k"),
	} {
		if !errors.Is(err, ErrFenced) {
			t.Errorf("the fenced store's %s: %v, want ErrFenced", what, err)
		}
	}
	st, err := cur.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a := st.Apps["application_1_0001"]; string(a.Data) != "v1" || len(st.Apps) != 1 || string(st.Secrets["k"]) != "s1" {
		t.Errorf("the fenced writes changed the store: %+v", st)
	}
	check(t, "the new active writes", cur.PutApp(ctx, "application_1_0001", []byte("v3")))
	check(t, "and removes", cur.RemoveSecret(ctx, "k"))
}
