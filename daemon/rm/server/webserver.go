package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// webLimits bound what the web port's clients may hold: time to send a
// request, connections, headers and bodies. Found by testing: a POST
// whose 1 MB body came at a byte a second was held open for as long as
// the client liked, and nothing capped the connections.
type webLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers; ReadTimeout
	// the whole request, body included, so that a slow sender (a
	// slowloris) is cut off.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	// WriteTimeout bounds a request from its headers to the end of its
	// response. No endpoint streams or long-polls (the UI polls every
	// 2 s), so every answer, the largest task list included, is well
	// inside it.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection with no request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (Hadoop's HttpServer2:
	// 64 KB).
	MaxHeaderBytes int
	// MaxBody bounds a request body: one declared larger is answered 413
	// before it is read; one sent chunked is cut at the limit.
	MaxBody int64
	// MaxConns refuses connections beyond this many, and MaxConnsPerAddr
	// beyond this many from one remote address (loopback exempt unless
	// CapLoopback), with a 503 saying so.
	MaxConns        int
	MaxConnsPerAddr int
	CapLoopback     bool
}

// defaultWebLimits are the web port's limits.
var defaultWebLimits = webLimits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      60 * time.Second,
	IdleTimeout:       60 * time.Second,
	MaxHeaderBytes:    64 << 10,
	MaxBody:           1 << 20,
	MaxConns:          1024,
	MaxConnsPerAddr:   128,
}

// serveWeb serves h on ln within lim; a zero limit takes the default.
func serveWeb(ln net.Listener, h http.Handler, lim webLimits, log zerolog.Logger) *http.Server {
	lim = lim.withDefaults()
	srv := newWebServer(h, lim)
	go srv.Serve(newLimitListener(ln, lim, log))
	return srv
}

func (l webLimits) withDefaults() webLimits {
	d := defaultWebLimits
	for _, f := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&l.ReadHeaderTimeout, d.ReadHeaderTimeout}, {&l.ReadTimeout, d.ReadTimeout}, {&l.WriteTimeout, d.WriteTimeout}, {&l.IdleTimeout, d.IdleTimeout}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxBody <= 0 {
		l.MaxBody = d.MaxBody
	}
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxConnsPerAddr <= 0 {
		l.MaxConnsPerAddr = d.MaxConnsPerAddr
	}
	return l
}

// webLimitKeys are the keys of the web port's limits
// (loom.webapp.*); unset, a limit keeps its default.
var webLimitKeys = struct {
	readHeader, read, write, idle, body, conns, connsPerAddr, loopback string
}{"loom.webapp.read-header-timeout-ms", "loom.webapp.read-timeout-ms", "loom.webapp.write-timeout-ms", "loom.webapp.idle-timeout-ms",
	"loom.webapp.max-body-bytes", "loom.webapp.max-connections", "loom.webapp.max-connections-per-address", "loom.webapp.limit-loopback"}

// loadWebLimits reads the web port's limits. Every error names its key.
func loadWebLimits(c *hadoopconf.Conf) (webLimits, error) {
	var l webLimits
	var errs []error
	num := func(key string) int64 {
		if _, set := c.Raw(key); !set {
			return 0
		}
		n, err := c.Int(key)
		if err == nil && n <= 0 {
			err = c.Errorf(key, "%d must be positive", n)
		}
		errs = append(errs, err)
		return n
	}
	ms := func(key string) time.Duration { return time.Duration(num(key)) * time.Millisecond }
	k := webLimitKeys
	l.ReadHeaderTimeout, l.ReadTimeout, l.WriteTimeout, l.IdleTimeout = ms(k.readHeader), ms(k.read), ms(k.write), ms(k.idle)
	l.MaxBody, l.MaxConns, l.MaxConnsPerAddr = num(k.body), int(num(k.conns)), int(num(k.connsPerAddr))
	if _, set := c.Raw(k.loopback); set {
		v, err := c.Bool(k.loopback)
		errs = append(errs, err)
		l.CapLoopback = v
	}
	return l.withDefaults(), errors.Join(errs...)
}

// newWebServer makes the web port's server: its timeouts, its header and
// body limits. Serve it on a newLimitListener.
func newWebServer(h http.Handler, lim webLimits) *http.Server {
	return &http.Server{Handler: limitBody(h, lim.MaxBody),
		ReadHeaderTimeout: lim.ReadHeaderTimeout, ReadTimeout: lim.ReadTimeout, WriteTimeout: lim.WriteTimeout,
		IdleTimeout: lim.IdleTimeout, MaxHeaderBytes: lim.MaxHeaderBytes}
}

const classServerTooBusy = "org.apache.hadoop.ipc.ServerTooBusyException"

// remoteException is YARN's error body, as the web port's other errors.
func remoteException(class, simple, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"RemoteException": map[string]string{
		"exception": simple, "javaClassName": class, "message": msg}})
	return b
}

// limitBody answers 413 to a request whose declared body is over max,
// before reading it, and cuts a body sent without a length at max.
func limitBody(h http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			w.Write(remoteException("org.apache.hadoop.yarn.webapp.BadRequestException", "BadRequestException",
				fmt.Sprintf("%s %s: the request body of %d bytes is larger than the limit of %d bytes",
					r.Method, r.URL.Path, r.ContentLength, max)))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		h.ServeHTTP(w, r)
	})
}

// limitListener caps the connections a listener hands out, in all and
// per remote address. A connection over a cap is answered 503 at once,
// saying which limit, and closed; it is not left waiting in the backlog.
type limitListener struct {
	net.Listener
	lim webLimits
	log zerolog.Logger

	mu     sync.Mutex
	n      int
	byAddr map[string]int
	// lastLog and quiet keep a flood of refusals to a log line a second.
	lastLog time.Time
	quiet   int
	// refusing bounds the goroutines writing refusals.
	refusing chan struct{}
}

func newLimitListener(ln net.Listener, lim webLimits, log zerolog.Logger) *limitListener {
	return &limitListener{Listener: ln, lim: lim, log: log, byAddr: map[string]int{}, refusing: make(chan struct{}, 64)}
}

// Accept returns the next connection within the limits.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, loopback := remoteIP(nc.RemoteAddr())
		l.mu.Lock()
		var why string
		switch {
		case l.n >= l.lim.MaxConns:
			why = fmt.Sprintf("too many connections to the web port (limit %d)", l.lim.MaxConns)
		case (!loopback || l.lim.CapLoopback) && l.byAddr[key] >= l.lim.MaxConnsPerAddr:
			why = fmt.Sprintf("too many connections from %s (limit %d)", key, l.lim.MaxConnsPerAddr)
		}
		if why != "" {
			l.logRefusalLocked(key, why)
			l.mu.Unlock()
			l.refuse(nc, why)
			continue
		}
		l.n++
		l.byAddr[key]++
		l.mu.Unlock()
		return &limitedConn{Conn: nc, l: l, key: key}, nil
	}
}

// Conns returns how many connections are open.
func (l *limitListener) Conns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *limitListener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.byAddr[key]--; l.byAddr[key] <= 0 {
		delete(l.byAddr, key)
	}
}

func (l *limitListener) logRefusalLocked(remote, why string) {
	now := time.Now()
	if now.Sub(l.lastLog) < time.Second {
		l.quiet++
		return
	}
	l.log.Warn().Str("remote", remote).Int("also_refused", l.quiet).Msg("web connection refused: " + why)
	l.lastLog, l.quiet = now, 0
}

// refuse answers 503 before reading the request, then gives the client a
// moment to read it before closing, so that it is not lost to a reset.
func (l *limitListener) refuse(nc net.Conn, why string) {
	select {
	case l.refusing <- struct{}{}:
	default:
		nc.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer nc.Close()
		body := remoteException(classServerTooBusy, "ServerTooBusyException", why)
		nc.SetDeadline(time.Now().Add(2 * time.Second))
		_, err := fmt.Fprintf(nc, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"+
			"Connection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		if err != nil {
			return
		}
		if cw, ok := nc.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
			io.Copy(io.Discard, io.LimitReader(nc, 64<<10))
		}
	}()
}

// limitedConn gives its slot back when closed.
type limitedConn struct {
	net.Conn
	l    *limitListener
	key  string
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}

// remoteIP is the address connections are counted by.
func remoteIP(a net.Addr) (string, bool) {
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
