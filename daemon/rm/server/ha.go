package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/rs/zerolog"

	"github.com/loomrm/loom/daemon/rm/store"
	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/rpc"
)

// RM high availability, as YARN's ActiveStandbyElector runs it: every RM
// of the cluster races to create an ephemeral lock znode,
// <base>/<cluster-id>/ActiveStandbyElectorLock; the one that holds it is
// active and leaves a breadcrumb (ActiveBreadCrumb) naming itself; the
// others watch the lock and try again when it goes, that is when the
// active's ZooKeeper session ends (it died, or lost ZooKeeper). A new
// active recovers the apps from the shared ZooKeeper state store, as
// after a restart: NodeManagers register again with their running
// containers and AMs register again and keep theirs. A standby answers
// every RPC with StandbyException, so that clients fail over to the next
// rm-id; its web port says it is standby and sends REST callers to the
// active.
//
// An RM that loses its session stops being active at once, before
// another can take the lock (which needs that session to expire). And an
// old active that has not noticed cannot write: the new one bumps the
// store's epoch, and every write of the ZooKeeper store checks the epoch's
// version in the same multi-op (store.ErrFenced); a fenced RM stops.

const (
	lockNode  = "ActiveStandbyElectorLock"
	crumbNode = "ActiveBreadCrumb"
	// haSession is the election's ZooKeeper session timeout: how long a
	// dead active holds the lock.
	haSession = 5 * time.Second
)

// activeInfo is what the lock and the breadcrumb say of the active.
type activeInfo struct {
	ClusterID string `json:"clusterId"`
	ID        string `json:"rmId"`
	Web       string `json:"web"`
}

// RunHA runs an RM of an HA cluster until ctx ends: standby until the
// election makes it active, then the RM itself (New, Start) until it
// loses the lock, then standby again.
func RunHA(ctx context.Context, cfg Config, log zerolog.Logger) error {
	h := cfg.HA
	log = log.With().Str("rm_id", h.ID).Logger()
	acl, addAuth, err := store.ZKSecurity(cfg.Store)
	if err != nil {
		return fmt.Errorf("RM HA: %w", err)
	}
	conn, events, err := zk.Connect(cfg.Store.ZKAddresses, haSession, zk.WithLogger(haZKLogger{log}))
	if err != nil {
		return fmt.Errorf("RM HA: cannot reach ZooKeeper %v: %v", cfg.Store.ZKAddresses, err)
	}
	defer conn.Close()
	if err := addAuth(conn); err != nil {
		return fmt.Errorf("RM HA: ZooKeeper: %w", err)
	}
	lost := make(chan struct{}, 1)
	go func() {
		for ev := range events {
			if ev.Type == zk.EventSession && (ev.State == zk.StateDisconnected || ev.State == zk.StateExpired) {
				select {
				case lost <- struct{}{}:
				default:
				}
			}
		}
	}()
	dir := path.Join(h.BasePath, h.ClusterID)
	lock, crumb := path.Join(dir, lockNode), path.Join(dir, crumbNode)
	if err := ensurePath(conn, dir, acl); err != nil {
		return fmt.Errorf("RM HA: cannot make %s in ZooKeeper: %v", dir, err)
	}
	me, _ := json.Marshal(activeInfo{ClusterID: h.ClusterID, ID: h.ID, Web: h.Web[h.ID]})
	// Manual mode: an admin's transitionToActive takes the lock (the
	// standby's web port) and says so here; transitionToStandby on the
	// active says so on stepDown.
	manualWon, stepDown := make(chan struct{}, 1), make(chan struct{}, 1)
	cfg.HAZKState = func() string { return zkConnectionState(conn.State()) }
	cfg.HATransition = func(state string) error {
		switch {
		case h.Automatic:
			return errors.New(refuseManual)
		case state == "standby":
			select {
			case stepDown <- struct{}{}:
			default:
			}
			return nil
		case state == "active":
			return fmt.Errorf("ResourceManager %s is active already", h.ID)
		}
		return fmt.Errorf("unknown HA state %q: want active or standby", state)
	}
	take := func() error {
		if _, err := conn.Create(lock, me, zk.FlagEphemeral, acl); err != nil {
			var act activeInfo
			if b, _, gerr := conn.Get(lock); errors.Is(err, zk.ErrNodeExists) && gerr == nil && json.Unmarshal(b, &act) == nil {
				return fmt.Errorf("ResourceManager %s is active: make it standby first", act.ID)
			}
			return fmt.Errorf("cannot take the HA lock %s: %v", lock, err)
		}
		select {
		case manualWon <- struct{}{}:
		default:
		}
		return nil
	}
	for ctx.Err() == nil {
		sb, err := serveStandby(cfg, conn, lock, take, log)
		if err != nil {
			return err
		}
		won := false
		if !h.Automatic {
			log.Info().Msg("standby: waiting for an admin to make this RM active (loom haadmin -transitionToActive " + h.ID + ")")
			drain(manualWon)
			select {
			case <-manualWon:
				won = true
			case <-ctx.Done():
			}
		} else {
			log.Info().Str("lock", lock).Msg("standby: waiting to be elected")
		}
		for !won && ctx.Err() == nil {
			drain(lost)
			_, err := conn.Create(lock, me, zk.FlagEphemeral, acl)
			switch {
			case err == nil:
				won = true
			case errors.Is(err, zk.ErrNodeExists):
				ok, st, ch, err := conn.ExistsW(lock)
				if err == nil && ok && st.EphemeralOwner == conn.SessionID() {
					// Our own lock, left when we stepped down on a
					// disconnection that the session outlived.
					won = true
					break
				}
				if err == nil && ok {
					select {
					case <-ch:
					case <-ctx.Done():
					case <-time.After(haSession):
					}
				}
			default:
				log.Warn().Err(err).Msg("election: cannot create the lock; trying again")
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}
		sb.Close()
		if !won {
			break
		}
		var was activeInfo
		if b, _, err := conn.Get(crumb); err == nil {
			json.Unmarshal(b, &was)
		}
		if _, err := conn.Set(crumb, me, -1); errors.Is(err, zk.ErrNoNode) {
			conn.Create(crumb, me, 0, acl)
		}
		t0 := time.Now()
		log.Info().Str("was", was.ID).Msg("elected active: recovering the cluster's state")
		r, err := New(cfg, log)
		if err == nil {
			err = r.Start()
		}
		if err != nil {
			log.Error().Err(err).Msg("cannot become active; giving the lock up")
			conn.Delete(lock, -1)
			time.Sleep(time.Second)
			continue
		}
		log.Info().Dur("took", time.Since(t0)).Msg("active")
		select {
		case <-ctx.Done():
		case <-lost:
			log.Warn().Msg("lost ZooKeeper: no longer active")
		case <-r.Fenced():
			log.Warn().Msg("fenced out of the state store: no longer active")
		case <-stepDown:
			log.Warn().Msg("made standby by an admin")
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r.Stop(stopCtx)
		cancel()
		conn.Delete(lock, -1)
	}
	return nil
}

func drain(ch chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// ensurePath makes a znode path and its parents.
func ensurePath(conn *zk.Conn, p string, acl []zk.ACL) error {
	cur := ""
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// standbyWeb is a standby's web port: /ws/v1/cluster/info says it is a
// standby; every other path is redirected to the active, as YARN's
// standby does (307, so that a POST stays a POST), or is a 503 when no
// RM is active.
type standbyWeb struct {
	srv  *http.Server
	rpcs []*rpc.Server
}

func (s *standbyWeb) Close() {
	if s.srv != nil {
		// Shutdown, not Close: the answer to the admin call that made
		// this RM active is still being written.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if s.srv.Shutdown(ctx) != nil {
			s.srv.Close()
		}
		cancel()
	}
	for _, r := range s.rpcs {
		r.Close()
	}
}

// refuseManual is YARN's refusal of a manual transition under automatic
// failover.
const refuseManual = "Refusing to manually manage HA state, since it may cause a split-brain scenario or other incorrect state: " +
	"this cluster fails over automatically through ZooKeeper (yarn.resourcemanager.ha.automatic-failover.enabled); stop the active RM to make another one active"

func serveStandby(cfg Config, conn *zk.Conn, lock string, take func() error, log zerolog.Logger) (*standbyWeb, error) {
	ln, err := listenRetry(cfg.WebAddr)
	if err != nil {
		return nil, fmt.Errorf("web address %s (yarn.resourcemanager.webapp.address): %w", cfg.WebAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws/v1/cluster/info", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"clusterInfo":{"state":"STARTED","haState":"STANDBY","rmStateStoreName":"loom ZooKeeper state store","resourceManagerVersion":%q,"haZooKeeperConnectionState":%q}}`,
			Version, zkConnectionState(conn.State()))
	})
	mux.HandleFunc("/ws/v1/loom/ha/state", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			http.Error(w, "PUT {\"state\": \"active\"}", http.StatusMethodNotAllowed)
			return
		}
		if !webui.AdminBearer(r, cfg.AdminSecret) {
			http.Error(w, "the admin credential is missing or wrong: send Authorization: Bearer <loom.admin.secret>", http.StatusForbidden)
			return
		}
		var body struct{ State string }
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1024)).Decode(&body); err != nil {
			http.Error(w, "the body must be {\"state\": \"active\"}: "+err.Error(), http.StatusBadRequest)
			return
		}
		var err error
		switch st := strings.ToLower(strings.TrimSpace(body.State)); {
		case cfg.HA.Automatic:
			err = errors.New(refuseManual)
		case st == "standby":
		case st == "active":
			err = take()
		default:
			err = fmt.Errorf("unknown HA state %q: want active or standby", body.State)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		log.Warn().Str("state", body.State).Msg("HA state change asked by an admin")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var act activeInfo
		if b, _, err := conn.Get(lock); err == nil && json.Unmarshal(b, &act) == nil && act.Web != "" {
			u := *r.URL
			u.Scheme, u.Host = "http", act.Web
			w.Header().Set("Location", u.String())
			w.WriteHeader(http.StatusTemporaryRedirect)
			fmt.Fprintf(w, "This is standby RM %s. The redirect url is: %s\n", cfg.HA.ID, u.String())
			return
		}
		http.Error(w, "This is standby RM "+cfg.HA.ID+"; no ResourceManager is active now", http.StatusServiceUnavailable)
	})
	s := &standbyWeb{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go s.srv.Serve(ln)
	// The RPC ports answer every call with StandbyException, on which
	// Hadoop's failover proxies (and Loom's clients) try the next RM.
	sb := &rpc.RemoteError{Class: rpc.ClassStandby,
		Message: fmt.Sprintf("Operation category is not supported in state standby: this is standby ResourceManager %s", cfg.HA.ID)}
	for _, addr := range []string{cfg.ClientAddr, cfg.SchedulerAddr, cfg.TrackerAddr} {
		l, err := listenRetry(addr)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("standby: %s: %w", addr, err)
		}
		opts := cfg.RPC
		opts.Standby = sb
		srv := rpc.NewServer(opts)
		go srv.Serve(l)
		s.rpcs = append(s.rpcs, srv)
	}
	log.Debug().Str("addr", ln.Addr().String()).Msg("standby web port")
	return s, nil
}

// listenRetry binds an address the previous holder (this process's
// active RM, just stopped) may still be releasing.
func listenRetry(addr string) (net.Listener, error) {
	var err error
	for range 50 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}

// haZKLogger sends go-zookeeper's messages to the RM's log at debug.
type haZKLogger struct{ log zerolog.Logger }

func (l haZKLogger) Printf(format string, args ...any) {
	l.log.Debug().Msgf("zookeeper: "+format, args...)
}

// zkConnectionState names the elector's ZooKeeper connection as YARN's
// ActiveStandbyElector does (its ConnectionState: CONNECTED, DISCONNECTED,
// TERMINATED).
func zkConnectionState(st zk.State) string {
	switch st {
	case zk.StateHasSession, zk.StateConnected:
		return "CONNECTED"
	case zk.StateExpired, zk.StateAuthFailed:
		return "TERMINATED"
	}
	return "DISCONNECTED"
}
