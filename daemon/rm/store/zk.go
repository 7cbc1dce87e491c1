package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rs/zerolog"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// ZooKeeper keeps the store in a znode tree, as YARN's ZKRMStateStore
// does:
//
//	<root>                          (default /rmstore/ZKRMStateRoot)
//	  RMVersionNode                 "1", the layout's version
//	  EpochNode                     decimal, set by compare-and-swap
//	  RMAppRoot/<app id>            the app's record
//	  RMAppRoot/<app id>/<attempt>  the attempt's record
//	  RMSecretRoot/<name>           a secret
//
// Every znode is created with the configured ACL. Replacing a record is
// a set conditioned on the version just read, and removing an app is one
// multi-op deleting its attempts and itself, so concurrent writers and
// retries never leave a half-removed app or let an old write land over a
// newer one.
//
// Each call to ZooKeeper is retried with backoff while the connection is
// down or the session is being replaced (go-zookeeper opens a new session
// when one expires; the store keeps no ephemeral nodes or watches, so
// nothing is lost with it), and gives up with ErrUnavailable once
// Config.Timeout has passed.
type ZooKeeper struct {
	conn      *zk.Conn
	addrs     string
	root      string
	acl       []zk.ACL
	timeout   time.Duration
	maxBuffer int
	log       zerolog.Logger
	closed    atomic.Bool
	retries   atomic.Int64 // calls repeated after a lost connection or session
	// fence is the epoch node's version after this store's BumpEpoch
	// (-1 before): every write checks it in the same multi-op, so that
	// once another RM has bumped the epoch this one can no longer write
	// (ErrFenced), as YARN fences an old active out of its ZK store.
	fence atomic.Int32
	// bumping counts this store's epoch bumps in flight: a write whose
	// check fails meanwhile may have met its own store's bump.
	bumping atomic.Int32
}

var _ Store = (*ZooKeeper)(nil)

// ZKSecurity is the store's ZooKeeper ACL (loom.store.zk-acl /
// hadoop.zk.acl) and a function that adds its credentials
// (loom.store.zk-auth / hadoop.zk.auth) to a session, for other znodes the
// RM keeps beside its state: RM HA's election lock.
func ZKSecurity(cfg Config) ([]zk.ACL, func(*zk.Conn) error, error) {
	aclText := cfg.ZKACL
	if aclText == "" {
		aclText = DefaultZKACL
	}
	acl, err := parseACL(aclText)
	if err != nil {
		return nil, nil, configErrorf(KeyZKACL, "%v", err)
	}
	auths, err := parseAuth(cfg.ZKAuth)
	if err != nil {
		return nil, nil, configErrorf(KeyZKAuth, "%v", err)
	}
	return acl, func(c *zk.Conn) error {
		for _, a := range auths {
			if err := c.AddAuth(a.scheme, a.auth); err != nil {
				return fmt.Errorf("%s credentials (%s): %w", a.scheme, KeyZKAuth, err)
			}
		}
		return nil
	}, nil
}

// goZKBuffer is the largest request go-zookeeper can encode (its send
// buffer, less the length prefix).
const goZKBuffer = 1536*1024 - 4

// OpenZooKeeper connects to cfg.ZKAddresses and makes the store's tree
// under cfg.ZKRoot if it is not there.
func OpenZooKeeper(cfg Config) (*ZooKeeper, error) {
	if len(cfg.ZKAddresses) == 0 {
		return nil, configErrorf(KeyZKAddress, "not set (nor %s): the zookeeper store needs ZooKeeper's host:port", KeyHadoopZKAddress)
	}
	if _, err := parseZKAddresses(strings.Join(cfg.ZKAddresses, ",")); err != nil {
		return nil, configErrorf(KeyZKAddress, "%v", err)
	}
	root := cfg.ZKRoot
	if root == "" {
		root = DefaultZKRoot
	}
	if err := checkZKRoot(root); err != nil {
		return nil, configErrorf(KeyZKRoot, "%v", err)
	}
	aclText := cfg.ZKACL
	if aclText == "" {
		aclText = DefaultZKACL
	}
	acl, err := parseACL(aclText)
	if err != nil {
		return nil, configErrorf(KeyZKACL, "%v", err)
	}
	auths, err := parseAuth(cfg.ZKAuth)
	if err != nil {
		return nil, configErrorf(KeyZKAuth, "%v", err)
	}
	s := &ZooKeeper{
		addrs:     strings.Join(cfg.ZKAddresses, ","),
		root:      root,
		acl:       acl,
		timeout:   cfg.timeout(),
		maxBuffer: cfg.ZKMaxBuffer,
		log:       cfg.Log,
	}
	s.fence.Store(-1) // no fencing until this store bumps the epoch
	if s.maxBuffer <= 0 {
		s.maxBuffer = DefaultMaxBuffer
	}
	s.maxBuffer = min(s.maxBuffer, goZKBuffer)

	conn, events, err := zk.Connect(cfg.ZKAddresses, s.timeout,
		zk.WithLogger(zkLogger{s.log}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("zookeeper store (%s): %w", s.addrs, err)
	}
	s.conn = conn
	go s.watchSession(events)
	if err := s.awaitSession(); err != nil {
		s.Close()
		return nil, err
	}
	ctx := context.Background()
	for _, a := range auths {
		_, err := zkCall(ctx, s, "add auth "+a.scheme, "", func() (struct{}, error) {
			return struct{}{}, s.conn.AddAuth(a.scheme, a.auth)
		})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("zookeeper store (%s): %s credentials (%s): %w", s.addrs, a.scheme, KeyZKAuth, err)
		}
	}
	if err := s.makeTree(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// awaitSession waits for the first session, so that a wrong address or a
// server that is down is reported by Open rather than by the first write.
func (s *ZooKeeper) awaitSession() error {
	deadline := time.Now().Add(s.timeout)
	for s.conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			return fmt.Errorf("zookeeper store: no session with ZooKeeper at %s within %v (%w): is it running, and is %s right?",
				s.addrs, s.timeout, ErrUnavailable, KeyZKAddress)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// watchSession logs the session's changes; it ends when the connection
// is closed.
func (s *ZooKeeper) watchSession(events <-chan zk.Event) {
	for ev := range events {
		if ev.Type != zk.EventSession {
			continue
		}
		switch ev.State {
		case zk.StateHasSession:
			s.log.Info().Str("zookeeper", ev.Server).Int64("session", s.conn.SessionID()).Msg("store: zookeeper session")
		case zk.StateExpired:
			s.log.Warn().Str("zookeeper", ev.Server).Msg("store: zookeeper session expired; opening a new one")
		case zk.StateDisconnected:
			if !s.closed.Load() {
				s.log.Warn().Str("zookeeper", ev.Server).Msg("store: disconnected from zookeeper; reconnecting")
			}
		}
	}
}

func (s *ZooKeeper) path(parts ...string) string {
	return path.Join(append([]string{s.root}, parts...)...)
}

// makeTree creates the root and its fixed children, and checks the
// layout version of a tree that was there. A tree whose version node is
// there (it was made) but whose apps or secrets znode is gone is refused
// rather than made again empty.
func (s *ZooKeeper) makeTree(ctx context.Context) error {
	p := ""
	for _, c := range strings.Split(strings.TrimPrefix(s.root, "/"), "/") {
		p += "/" + c
		if err := s.ensure(ctx, p); err != nil {
			return err
		}
	}
	vp := s.path(versionNode)
	for {
		data, _, err := s.get(ctx, vp)
		if err == nil {
			if err := checkVersion(fmt.Sprintf("zookeeper store (%s) %s", s.addrs, s.root), data); err != nil {
				return err
			}
			return s.checkWhole(ctx)
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return s.wrap("read", vp, err)
		}
		// A new store: its children first, the version last, so that a
		// version node means the tree was whole.
		for _, c := range []string{appRoot, secretRoot} {
			if err := s.ensure(ctx, s.path(c)); err != nil {
				return err
			}
		}
		err = s.create(ctx, vp, versionBytes())
		if err == nil {
			return nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return s.wrap("create", vp, err)
		}
	}
}

// checkWhole refuses a tree that lost its apps or secrets znode: two
// reads at start.
func (s *ZooKeeper) checkWhole(ctx context.Context) error {
	what := fmt.Sprintf("zookeeper store (%s)", s.addrs)
	for _, c := range []string{appRoot, secretRoot} {
		ok, _, err := s.exists(ctx, s.path(c))
		if err != nil {
			return s.wrap("read", s.path(c), err)
		}
		if !ok {
			return refuseLostRoot(what, s.root, c)
		}
	}
	return nil
}

// ensure creates an empty znode unless it exists.
func (s *ZooKeeper) ensure(ctx context.Context, p string) error {
	ok, _, err := s.exists(ctx, p)
	if err == nil && ok {
		return nil
	}
	if err == nil {
		err = s.create(ctx, p, nil)
	}
	if err == nil || errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return s.wrap("create", p, err)
}

// opContext bounds a whole operation, all its calls, by the timeout.
func (s *ZooKeeper) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// wrap names the store, the call and the znode in an error from a call.
func (s *ZooKeeper) wrap(op, p string, err error) error {
	if err == nil || errors.Is(err, ErrClosed) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrTooLarge) || errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, zk.ErrNoAuth) {
		return fmt.Errorf("zookeeper store (%s): %s %s: %w (check %s and %s)", s.addrs, op, p, err, KeyZKAuth, KeyZKACL)
	}
	return fmt.Errorf("zookeeper store (%s): %s %s: %w", s.addrs, op, p, err)
}

// zkCall runs one ZooKeeper call, retrying it while the connection is
// down or the session is being replaced, until the timeout. f runs in a
// goroutine so that a hung server cannot hold the caller past the
// deadline; an abandoned call may still land later, which is why every
// write the store makes is safe to land late (creates, deletes,
// version-checked sets).
func zkCall[T any](ctx context.Context, s *ZooKeeper, op, p string, f func() (T, error)) (T, error) {
	var zero T
	if s.closed.Load() {
		return zero, ErrClosed
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	backoff := 10 * time.Millisecond
	var last error
	for {
		ch := make(chan result, 1)
		go func() {
			v, err := f()
			ch <- result{v, err}
		}()
		select {
		case r := <-ch:
			if s.closed.Load() {
				return zero, ErrClosed
			}
			if !retryable(r.err) {
				return r.v, r.err
			}
			last = r.err
			s.retries.Add(1)
		case <-ctx.Done():
			return zero, s.gaveUp(ctx, op, p, start, last)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return zero, s.gaveUp(ctx, op, p, start, last)
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func (s *ZooKeeper) gaveUp(ctx context.Context, op, p string, start time.Time, last error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	why := "no reply"
	if last != nil {
		why = last.Error()
	}
	return fmt.Errorf("zookeeper store (%s): %s %s: no answer within %v (%w): %s",
		s.addrs, op, p, time.Since(start).Round(time.Millisecond), ErrUnavailable, why)
}

// retryable says whether a call failed for want of a connection or
// session (worth retrying) rather than because of what it asked.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []error{zk.ErrConnectionClosed, zk.ErrSessionExpired, zk.ErrNoServer, zk.ErrSessionMoved} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// The calls, each one request, each retried by zkCall.

func (s *ZooKeeper) get(ctx context.Context, p string) ([]byte, *zk.Stat, error) {
	type got struct {
		data []byte
		stat *zk.Stat
	}
	g, err := zkCall(ctx, s, "get", p, func() (got, error) {
		d, st, err := s.conn.Get(p)
		return got{d, st}, err
	})
	return g.data, g.stat, err
}

func (s *ZooKeeper) exists(ctx context.Context, p string) (bool, *zk.Stat, error) {
	type got struct {
		ok   bool
		stat *zk.Stat
	}
	g, err := zkCall(ctx, s, "exists", p, func() (got, error) {
		ok, st, err := s.conn.Exists(p)
		return got{ok, st}, err
	})
	return g.ok, g.stat, err
}

func (s *ZooKeeper) children(ctx context.Context, p string) ([]string, error) {
	return zkCall(ctx, s, "children", p, func() ([]string, error) {
		c, _, err := s.conn.Children(p)
		return c, err
	})
}

func (s *ZooKeeper) create(ctx context.Context, p string, data []byte) error {
	_, err := zkCall(ctx, s, "create", p, func() (string, error) {
		return s.conn.Create(p, data, 0, s.acl)
	})
	return err
}

func (s *ZooKeeper) set(ctx context.Context, p string, data []byte, version int32) error {
	_, err := zkCall(ctx, s, "set", p, func() (*zk.Stat, error) {
		return s.conn.Set(p, data, version)
	})
	return err
}

func (s *ZooKeeper) delete(ctx context.Context, p string) error {
	_, err := zkCall(ctx, s, "delete", p, func() (struct{}, error) {
		return struct{}{}, s.conn.Delete(p, -1)
	})
	return err
}

func (s *ZooKeeper) multi(ctx context.Context, p string, ops ...any) error {
	_, err := zkCall(ctx, s, "multi", p, func() ([]zk.MultiResponse, error) {
		return s.conn.Multi(ops...)
	})
	return err
}

// ErrFenced: another ResourceManager has bumped the store's epoch since
// this one did: it is the active now, and this one may not write.
var ErrFenced = errors.New("fenced: another ResourceManager has taken over the state store since this one opened it (its epoch moved on)")

// write runs a write as one multi-op, after a check that the epoch node
// still has the version this store's BumpEpoch left, once it has run: a
// failed check is ErrFenced; the writes' own errors are returned as they
// are, for the caller to tell apart.
func (s *ZooKeeper) write(ctx context.Context, p string, ops ...any) error {
	for range maxConflicts {
		fence := s.fence.Load()
		all := ops
		if fence >= 0 {
			all = append([]any{&zk.CheckVersionRequest{Path: s.path(epochNode), Version: fence}}, ops...)
		}
		resps, err := zkCall(ctx, s, "write", p, func() ([]zk.MultiResponse, error) {
			return s.conn.Multi(all...)
		})
		if err != nil && fence >= 0 && len(resps) > 0 && (errors.Is(resps[0].Error, zk.ErrBadVersion) || errors.Is(resps[0].Error, zk.ErrNoNode)) {
			if s.fence.Load() != fence || s.bumping.Load() > 0 {
				// This store bumped the epoch meanwhile.
				time.Sleep(time.Millisecond)
				continue
			}
			return fmt.Errorf("zookeeper store (%s): %s: %w", s.addrs, p, ErrFenced)
		}
		if err != nil {
			// The failing write's own error, not the multi's.
			for _, r := range resps[min(len(resps), boolInt(fence >= 0)):] {
				if r.Error != nil && !errors.Is(r.Error, zk.ErrAPIError) && !errors.Is(r.Error, zk.ErrUnknown) {
					return r.Error
				}
			}
		}
		return err
	}
	return fmt.Errorf("zookeeper store (%s): write %s: the epoch kept moving under us after %d tries", s.addrs, p, maxConflicts)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// maxConflicts bounds the read-and-write loops below against writers
// that keep changing the same znode.
const maxConflicts = 100

// checkSize refuses a record whose create request would be over the
// servers' jute.maxbuffer: the server would drop the connection rather
// than answer, and every retry would do the same.
func (s *ZooKeeper) checkSize(what, p string, data []byte) error {
	n := s.writeRequestSize(p, data)
	if n <= s.maxBuffer {
		return nil
	}
	most := s.maxBuffer - (n - len(data))
	return fmt.Errorf("zookeeper store (%s): %s: a %d-byte record makes a %d-byte request, over ZooKeeper's jute.maxbuffer of %d bytes (%s); at most %d bytes fit at %s: %w",
		s.addrs, what, len(data), n, s.maxBuffer, KeyZKMaxBuffer, max(most, 0), p, ErrTooLarge)
}

// writeRequestSize is the length of the multi-op a put sends: the create,
// the epoch check before it (once fencing is on) and the multi's headers
// (type, done and error: 9 bytes each, one per op and one to end).
func (s *ZooKeeper) writeRequestSize(p string, data []byte) int {
	return createRequestSize(p, data, s.acl) + 9 + 9 + 9 + 4 + len(s.path(epochNode)) + 4
}

// createRequestSize is the length ZooKeeper checks against jute.maxbuffer
// for a create: the request header and the jute-encoded body.
func createRequestSize(p string, data []byte, acl []zk.ACL) int {
	n := 4 + 4 // xid, opcode
	n += 4 + len(p) + 4 + len(data)
	n += 4 // the ACL vector's length
	for _, a := range acl {
		n += 4 + 4 + len(a.Scheme) + 4 + len(a.ID)
	}
	return n + 4 // flags
}

// put creates or replaces a record; its errors are the calls' own, for
// the caller to tell apart and wrap. A replace is a set conditioned on the
// version read just before, so a late, abandoned set cannot overwrite a
// newer record.
func (s *ZooKeeper) put(ctx context.Context, what, p string, data []byte) error {
	if err := s.checkSize(what, p, data); err != nil {
		return err
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	data = nonNil(data)
	for range maxConflicts {
		ok, stat, err := s.exists(ctx, p)
		if err != nil {
			return err
		}
		if !ok {
			err = s.write(ctx, p, &zk.CreateRequest{Path: p, Data: data, Acl: s.acl})
			if err == nil || !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
			continue
		}
		err = s.write(ctx, p, &zk.SetDataRequest{Path: p, Data: data, Version: stat.Version})
		if err == nil || !(errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode)) {
			return err
		}
	}
	return fmt.Errorf("zookeeper store (%s): put %s %s: still changing under us after %d tries", s.addrs, what, p, maxConflicts)
}

// PutApp implements Store.
func (s *ZooKeeper) PutApp(ctx context.Context, appID string, data []byte) error {
	if err := checkName("app id", appID); err != nil {
		return err
	}
	p := s.path(appRoot, appID)
	err := s.put(ctx, "app "+appID, p, data)
	if errors.Is(err, zk.ErrNoNode) {
		return s.wrap("put app "+appID, p, fmt.Errorf("%s is gone: %w", s.path(appRoot), err))
	}
	return s.wrap("put app "+appID, p, err)
}

// PutAttempt implements Store.
func (s *ZooKeeper) PutAttempt(ctx context.Context, appID, attemptID string, data []byte) error {
	if err := checkAttempt(appID, attemptID); err != nil {
		return err
	}
	p := s.path(appRoot, appID, attemptID)
	err := s.put(ctx, "attempt "+attemptID, p, data)
	if errors.Is(err, zk.ErrNoNode) {
		// The create's parent, the app, is not there.
		return fmt.Errorf("attempt %s: app %s: %w", attemptID, appID, ErrNoApp)
	}
	return s.wrap("put attempt "+attemptID, p, err)
}

// RemoveApp implements Store: one multi-op deletes the attempts and the
// app, so no reader ever sees an app with some of its attempts gone.
func (s *ZooKeeper) RemoveApp(ctx context.Context, appID string) error {
	if err := checkName("app id", appID); err != nil {
		return err
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	p := s.path(appRoot, appID)
	for range maxConflicts {
		kids, err := s.children(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return s.wrap("remove app", p, err)
		}
		ops := make([]any, 0, len(kids)+1)
		for _, k := range kids {
			ops = append(ops, &zk.DeleteRequest{Path: path.Join(p, k), Version: -1})
		}
		ops = append(ops, &zk.DeleteRequest{Path: p, Version: -1})
		err = s.write(ctx, p, ops...)
		// NoNode: removed meanwhile (or by our own earlier try, whose
		// reply was lost); NotEmpty: an attempt was added. Look again.
		if err == nil || !(errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNotEmpty)) {
			return s.wrap("remove app", p, err)
		}
	}
	return fmt.Errorf("zookeeper store (%s): remove app %s: still changing under us after %d tries", s.addrs, p, maxConflicts)
}

// PutSecret implements Store.
func (s *ZooKeeper) PutSecret(ctx context.Context, name string, data []byte) error {
	if err := checkName("secret name", name); err != nil {
		return err
	}
	p := s.path(secretRoot, name)
	return s.wrap("put secret", p, s.put(ctx, "secret "+name, p, data))
}

// RemoveSecret implements Store.
func (s *ZooKeeper) RemoveSecret(ctx context.Context, name string) error {
	if err := checkName("secret name", name); err != nil {
		return err
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	p := s.path(secretRoot, name)
	err := s.write(ctx, p, &zk.DeleteRequest{Path: p, Version: -1})
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return s.wrap("remove secret", p, err)
}

// BumpEpoch implements Store: a set conditioned on the version read, so
// two RMs bumping at once get different epochs.
func (s *ZooKeeper) BumpEpoch(ctx context.Context) (int64, error) {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	s.bumping.Add(1)
	defer s.bumping.Add(-1)
	p := s.path(epochNode)
	for range maxConflicts {
		data, stat, err := s.get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			err = s.create(ctx, p, epochBytes(1))
			if err == nil {
				s.fence.Store(0)
				return 1, nil
			}
			if errors.Is(err, zk.ErrNodeExists) {
				continue
			}
		}
		if err != nil {
			return 0, s.wrap("bump epoch", p, err)
		}
		n, err := parseEpoch(fmt.Sprintf("zookeeper store (%s) %s", s.addrs, p), data)
		if err != nil {
			return 0, err
		}
		err = s.set(ctx, p, epochBytes(n+1), stat.Version)
		if err == nil {
			s.fence.Store(stat.Version + 1)
			return n + 1, nil
		}
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
			return 0, s.wrap("bump epoch", p, err)
		}
	}
	return 0, fmt.Errorf("zookeeper store (%s): bump epoch %s: still changing under us after %d tries", s.addrs, p, maxConflicts)
}

// loadWorkers is how many reads Load keeps in flight: a store of
// thousands of apps is read in pipelined round trips, not one by one.
const loadWorkers = 16

// Load implements Store. Each read is bounded by the timeout on its own,
// so a large store loads however long it takes while a dead server is
// still reported within the timeout.
func (s *ZooKeeper) Load(ctx context.Context) (*State, error) {
	st := newState()
	ep := s.path(epochNode)
	data, _, err := s.get(ctx, ep)
	switch {
	case err == nil:
		if st.Epoch, err = parseEpoch(fmt.Sprintf("zookeeper store (%s) %s", s.addrs, ep), data); err != nil {
			return nil, err
		}
	case !errors.Is(err, zk.ErrNoNode):
		return nil, s.wrap("load", ep, err)
	}

	ap := s.path(appRoot)
	apps, err := s.children(ctx, ap)
	if err != nil {
		return nil, s.wrap("load", ap, err)
	}
	var mu sync.Mutex
	err = forEach(ctx, apps, func(ctx context.Context, id string) error {
		app, ok, err := s.loadApp(ctx, path.Join(ap, id))
		if err != nil || !ok {
			return err
		}
		mu.Lock()
		st.Apps[id] = app
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}

	sp := s.path(secretRoot)
	names, err := s.children(ctx, sp)
	if err != nil {
		return nil, s.wrap("load", sp, err)
	}
	err = forEach(ctx, names, func(ctx context.Context, name string) error {
		data, _, err := s.get(ctx, path.Join(sp, name))
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return s.wrap("load", path.Join(sp, name), err)
		}
		mu.Lock()
		st.Secrets[name] = nonNil(data)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// loadApp reads an app and its attempts; ok is false if it was removed
// while being read.
func (s *ZooKeeper) loadApp(ctx context.Context, p string) (App, bool, error) {
	data, _, err := s.get(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return App{}, false, nil
	}
	if err != nil {
		return App{}, false, s.wrap("load", p, err)
	}
	app := App{Data: nonNil(data), Attempts: map[string][]byte{}}
	kids, err := s.children(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		return App{}, false, nil
	}
	if err != nil {
		return App{}, false, s.wrap("load", p, err)
	}
	for _, k := range kids {
		d, _, err := s.get(ctx, path.Join(p, k))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return App{}, false, s.wrap("load", path.Join(p, k), err)
		}
		app.Attempts[k] = nonNil(d)
	}
	return app, true, nil
}

// forEach runs f over items, loadWorkers at a time, and returns the
// first error (the rest are cancelled).
func forEach(ctx context.Context, items []string, f func(context.Context, string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range min(loadWorkers, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				if err := f(ctx, it); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for _, it := range items {
		select {
		case work <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		// The caller's context ended.
		first = context.Cause(ctx)
	}
	return first
}

// Close implements Store. It ends the session, waiting a few seconds at
// most for a server that is gone.
func (s *ZooKeeper) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.conn.Close()
	return nil
}

// loadZKConfig reads the zookeeper store's keys into cfg.
func loadZKConfig(c *hadoopconf.Conf, cfg *Config) error {
	addrs, key, err := confValue(c, KeyZKAddress, KeyHadoopZKAddress)
	if err != nil {
		return err
	}
	if addrs != "" {
		if cfg.ZKAddresses, err = parseZKAddresses(addrs); err != nil {
			return c.Errorf(key, "%v", err)
		}
	}
	if cfg.ZKRoot, key, err = confValue(c, KeyZKRoot); err != nil {
		return err
	}
	if cfg.ZKRoot != "" {
		if err := checkZKRoot(cfg.ZKRoot); err != nil {
			return c.Errorf(key, "%v", err)
		}
	}
	if cfg.ZKACL, key, err = confValue(c, KeyZKACL, KeyHadoopZKACL); err != nil {
		return err
	}
	if cfg.ZKACL != "" {
		if _, err := parseACL(cfg.ZKACL); err != nil {
			return c.Errorf(key, "%v", err)
		}
	}
	if cfg.ZKAuth, key, err = confValue(c, KeyZKAuth, KeyHadoopZKAuth); err != nil {
		return err
	}
	if cfg.ZKAuth != "" {
		if _, err := parseAuth(cfg.ZKAuth); err != nil {
			return c.Errorf(key, "%v", err)
		}
	}
	if _, ok := c.Raw(KeyZKMaxBuffer); ok {
		n, err := c.Int(KeyZKMaxBuffer)
		if err != nil {
			return err
		}
		if n < 1024 {
			return c.Errorf(KeyZKMaxBuffer, "%d bytes is too small for a request", n)
		}
		cfg.ZKMaxBuffer = int(n)
	}
	return nil
}

// parseZKAddresses reads host:port[,host:port...].
func parseZKAddresses(s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("%q is not host:port", a)
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 || host == "" {
			return nil, fmt.Errorf("%q is not host:port", a)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q names no server", s)
	}
	return out, nil
}

// resolveIndirection reads "@file" values as Hadoop's ZKUtil does, so
// that credentials can stay out of the config files.
func resolveIndirection(s string) (string, error) {
	name, ok := strings.CutPrefix(s, "@")
	if !ok {
		return s, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// checkZKRoot checks a root znode path.
func checkZKRoot(p string) error {
	if !strings.HasPrefix(p, "/") || p == "/" || strings.HasSuffix(p, "/") {
		return fmt.Errorf("%q is not an absolute znode path below / (e.g. %s)", p, DefaultZKRoot)
	}
	parts := strings.Split(p[1:], "/")
	for _, c := range parts {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("%q is not a usable znode path", p)
		}
	}
	if parts[0] == "zookeeper" {
		return fmt.Errorf("%q is under /zookeeper, which ZooKeeper keeps for itself", p)
	}
	return nil
}

// parseACL reads Hadoop's ACL form: scheme:id:perms, comma-separated;
// the id may itself hold colons (digest:user:hash, ip:addr).
func parseACL(s string) ([]zk.ACL, error) {
	s, err := resolveIndirection(s)
	if err != nil {
		return nil, err
	}
	var acl []zk.ACL
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		i, j := strings.IndexByte(e, ':'), strings.LastIndexByte(e, ':')
		if i < 0 || i == j || i == 0 {
			return nil, fmt.Errorf("%q is not scheme:id:perms (e.g. %s)", e, DefaultZKACL)
		}
		var perms int32
		for _, c := range e[j+1:] {
			switch c {
			case 'r':
				perms |= zk.PermRead
			case 'w':
				perms |= zk.PermWrite
			case 'c':
				perms |= zk.PermCreate
			case 'd':
				perms |= zk.PermDelete
			case 'a':
				perms |= zk.PermAdmin
			default:
				return nil, fmt.Errorf("%q: permission %q is not one of r, w, c, d, a", e, c)
			}
		}
		if perms == 0 {
			return nil, fmt.Errorf("%q grants no permission", e)
		}
		acl = append(acl, zk.ACL{Perms: perms, Scheme: e[:i], ID: e[i+1 : j]})
	}
	if len(acl) == 0 {
		return nil, fmt.Errorf("%q has no entry", s)
	}
	return acl, nil
}

type zkAuth struct {
	scheme string
	auth   []byte
}

// parseAuth reads Hadoop's auth form: scheme:auth, comma-separated.
func parseAuth(s string) ([]zkAuth, error) {
	if s == "" {
		return nil, nil
	}
	s, err := resolveIndirection(s)
	if err != nil {
		return nil, err
	}
	var out []zkAuth
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		scheme, auth, ok := strings.Cut(e, ":")
		if !ok || scheme == "" || auth == "" {
			return nil, errors.New("an entry is not scheme:auth (e.g. digest:user:password)")
		}
		out = append(out, zkAuth{scheme, []byte(auth)})
	}
	return out, nil
}

// zkLogger sends go-zookeeper's own messages (each failed dial, each
// reconnect) to the debug level: the store reports what matters.
type zkLogger struct{ log zerolog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug().Msgf("zookeeper: "+format, args...)
}
