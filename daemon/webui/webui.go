package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rpc"
)

// Config is what the web server needs besides its Backend.
type Config struct {
	// AdminSecret is the bearer credential that changes P(Altruism)
	// (loom.admin.secret). Empty refuses every change.
	AdminSecret string
	// Metrics serves /metrics; nil answers 404 there.
	Metrics http.Handler
	Log     zerolog.Logger
	// WhatIf replays the recorded jobs at each P(Altruism) for the
	// operations page (GET /ws/v1/loom/whatif); nil answers
	// "unavailable" there.
	WhatIf WhatIfFunc
	// SchedulerLayout is the layout of /ws/v1/cluster/scheduler:
	// LayoutCapacity (the default, as YARN's default scheduler) or
	// LayoutFair, after the scheduler yarn.resourcemanager.scheduler.class
	// names; dashboards read the layout of the scheduler they expect.
	SchedulerLayout string
	// SchedulerConf is the scheduler's configuration in effect, for GET
	// /ws/v1/cluster/scheduler-conf; nil lists nothing.
	SchedulerConf func() []dao.ConfProperty
	// Logs is where apps' logs are aggregated, for the app pages; nil
	// when aggregation is off.
	Logs *LogsConfig
	// HATransition changes this RM's HA state on an admin's request
	// (PUT /ws/v1/loom/ha/state); nil outside an HA cluster.
	HATransition func(state string) error
}

// defaultUser is Hadoop's static web user, the caller when a request
// names none with user.name (hadoop.http.staticuser.user).
const defaultUser = "dr.who"

// restProtocol is the protocol a REST call carries in its rpc.CallInfo.
const restProtocol = "REST"

const contentTypeJSON = "application/json"

// maxBody bounds a request body: a submission is a few KB.
const maxBody = 1 << 20

// New serves the web port: YARN's REST API under /ws/v1/cluster, Loom's
// views under /ws/v1/loom, the web UI at / and metrics at /metrics.
func New(b Backend, cfg Config) http.Handler {
	return newServer(b, cfg, time.Now).handler()
}

type server struct {
	b      Backend
	cfg    Config
	now    func() time.Time
	whatIf whatIfs
}

func newServer(b Backend, cfg Config, now func() time.Time) *server {
	return &server{b: b, cfg: cfg, now: now}
}

// call is one request being served by the route named route.
type call struct {
	s     *server
	w     http.ResponseWriter
	r     *http.Request
	route string
	// xml is whether the answer is XML: the route speaks it and the
	// client asked for it.
	xml bool
}

// authUserKey carries the user the web server authenticated (SPNEGO).
type authUserKey struct{}

// WithAuthenticatedUser marks a request as made by user, whom the web
// server authenticated (Kerberos SPNEGO): the REST calls act as that user
// and user.name is ignored, as behind Hadoop's AuthenticationFilter.
func WithAuthenticatedUser(r *http.Request, user string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), authUserKey{}, user))
}

// user is the REST caller: the authenticated user, else who user.name
// says (Hadoop's pseudo authentication).
func (c *call) user() string {
	if u, ok := c.r.Context().Value(authUserKey{}).(string); ok && u != "" {
		return u
	}
	if u := c.r.URL.Query().Get("user.name"); u != "" {
		return u
	}
	return defaultUser
}

// ctx carries the caller to the Backend, as the RPC port would.
func (c *call) ctx() context.Context {
	ci := &rpc.CallInfo{User: c.user(), Remote: remoteAddr(c.r), Protocol: restProtocol, Method: c.route}
	// A caller the web server authenticated with Kerberos (SPNEGO) is
	// one the RM may issue delegation tokens to, as on the RPC port.
	if u, ok := c.r.Context().Value(authUserKey{}).(string); ok && u != "" {
		ci.Principal = u
	}
	return rpc.WithCall(c.r.Context(), ci)
}

func (c *call) vars() map[string]string { return mux.Vars(c.r) }

func remoteAddr(r *http.Request) net.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return nil
	}
	return net.TCPAddrFromAddrPort(ap)
}

// remoteIP is the client's address without its port.
func remoteIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// json answers v with status: in JSON, or in XML where the route speaks
// it and the client asked for it.
func (c *call) json(status int, v any) error {
	marshalFn, contentType := marshal, contentTypeJSON
	if c.xml {
		marshalFn, contentType = marshalXML, contentTypeXML
	}
	body, err := marshalFn(v)
	if err != nil {
		return internalError("cannot write the answer: %v", err)
	}
	h := c.w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	c.w.WriteHeader(status)
	if c.r.Method != http.MethodHead {
		_, _ = c.w.Write(body)
	}
	return nil
}

// marshal writes v as JSON, leaving <, > and & as they are (the answers
// are read as JSON, never as HTML).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// url is an absolute URL on this server, for Location headers.
func (c *call) url(path string) string {
	scheme := "http"
	if c.r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.r.Host + path
}

func (s *server) handler() http.Handler {
	r := mux.NewRouter()
	for _, rt := range routes {
		methods := []string{rt.Method}
		if rt.Method == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
		// The path first: a route whose path differs must not touch the
		// router's method-mismatch bookkeeping.
		m := r.Path(rt.Pattern).Methods(methods...)
		if strings.Contains(rt.Pattern, "{appid}") {
			// apps/new-application is a resource of its own, not an app
			// id: a GET there is a 405, as in YARN.
			m = m.MatcherFunc(notNewApplication)
		}
		m.HandlerFunc(
			func(w http.ResponseWriter, req *http.Request) {
				c := &call{s: s, w: w, r: req, route: rt.Name, xml: rt.speaksXML() && wantsXML(req)}
				if rt.speaksXML() {
					w.Header().Add("Vary", "Accept")
				}
				err := c.checkWrite(rt)
				if err == nil {
					err = rt.Handle(c)
				}
				if err != nil {
					we := fromBackend(err)
					if we.status >= 500 {
						s.cfg.Log.Error().Str("route", rt.Name).Str("path", req.URL.Path).Str("error", we.message).Msg("web request failed")
					}
					writeError(w, req, we)
				}
			})
	}
	// Whether a path exists is decided here, by asking the table with
	// each method, rather than by the router's own mismatch tracking.
	unmatched := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, req, noRoute(r, req))
	})
	r.NotFoundHandler, r.MethodNotAllowedHandler = unmatched, unmatched
	return s.middleware(r)
}

func notNewApplication(r *http.Request, _ *mux.RouteMatch) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/ws/v1/cluster/apps/")
	if !ok {
		rest, _ = strings.CutPrefix(r.URL.Path, "/ws/v1/loom/apps/")
	}
	id, _, _ := strings.Cut(rest, "/")
	return id != "new-application"
}

// noRoute is a 405 naming the methods the path takes, or a 404 when it
// takes none.
func noRoute(r *mux.Router, req *http.Request) *webError {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := req.Clone(req.Context())
		probe.Method = m
		var match mux.RouteMatch
		if r.Match(probe, &match) && match.MatchErr == nil && match.Route != nil {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		return notFound("no resource at %s", req.URL.Path)
	}
	return &webError{status: http.StatusMethodNotAllowed, class: classNotAllowed, allow: strings.Join(allow, ", "),
		message: req.Method + " is not allowed on " + req.URL.Path + "; allowed: " + strings.Join(allow, ", ")}
}

// middleware reads /ws paths with or without a trailing slash, as
// YARN does, and turns a panic into a 500 rather than a dropped
// connection.
func (s *server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.cfg.Log.Error().Interface("panic", v).Str("path", r.URL.Path).Msg("web handler panicked")
				writeError(w, r, internalError("the server failed on %s", r.URL.Path))
			}
		}()
		if p := r.URL.Path; strings.HasPrefix(p, "/ws/") && len(p) > len("/ws/") && strings.HasSuffix(p, "/") {
			r.URL.Path = strings.TrimRight(p, "/")
			r.URL.RawPath = ""
		}
		next.ServeHTTP(w, r)
	})
}

// finite keeps NaN and infinities, which JSON cannot carry, out of
// answers.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
