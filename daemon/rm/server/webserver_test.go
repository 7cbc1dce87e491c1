package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// startWeb serves a handler that reads the whole body and says how long
// it was, within lim, over real loopback connections.
func startWeb(t *testing.T, lim webLimits) (string, *limitListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "read %d bytes", n)
	})
	srv := newWebServer(h, lim)
	ll := newLimitListener(ln, lim, zerolog.Nop())
	go srv.Serve(ll)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), ll
}

func testWebLimits() webLimits {
	lim := defaultWebLimits
	lim.ReadHeaderTimeout = 300 * time.Millisecond
	lim.ReadTimeout = 500 * time.Millisecond
	lim.WriteTimeout = 2 * time.Second
	lim.IdleTimeout = 2 * time.Second
	return lim
}

func rawWeb(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// TestWebSlowClientsAreCut: a client that sends its request slower than
// the read timeouts allow is cut off, however it trickles.
func TestWebSlowClientsAreCut(t *testing.T) {
	lim := testWebLimits()
	addr, _ := startWeb(t, lim)
	tests := []struct {
		name string
		head string // sent at once
		// trickle is sent a byte every 50 ms after head.
		trickle string
		limit   time.Duration
	}{
		{"headers never finished", "POST /ws/v1/cluster/apps HTTP/1.1\r\nHost: x\r\n", strings.Repeat("X", 100), lim.ReadHeaderTimeout},
		// The slowloris POST: a 1 MB body announced, sent a byte at a time.
		{"1 MB body at a trickle", "POST /ws/v1/cluster/apps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n",
			strings.Repeat("{", 1000), lim.ReadTimeout},
		{"chunked body at a trickle", "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
			strings.Repeat("1\r\na\r\n", 200), lim.ReadTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc := rawWeb(t, addr)
			start := time.Now()
			io.WriteString(nc, tc.head)
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for i := range len(tc.trickle) {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					if _, err := io.WriteString(nc, tc.trickle[i:i+1]); err != nil {
						return
					}
				}
			}()
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			io.ReadAll(nc) // whatever it answers, until it closes
			if took := time.Since(start); took < tc.limit-50*time.Millisecond || took > tc.limit+2*time.Second {
				t.Errorf("connection held %v, want it cut after ~%v", took, tc.limit)
			}
		})
	}
}

func TestWebBodyLimit(t *testing.T) {
	addr, _ := startWeb(t, testWebLimits())
	tests := []struct {
		name   string
		req    string
		status int
		body   string
	}{
		{"declared over the limit", "POST /ws/v1/cluster/apps HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n",
			http.StatusRequestEntityTooLarge, "POST /ws/v1/cluster/apps: the request body of 1048577 bytes is larger than the limit of 1048576 bytes"},
		{"at the limit", "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" + strings.Repeat("a", 1<<20),
			http.StatusOK, "read 1048576 bytes"},
		{"chunked over the limit", "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
			strings.Repeat(fmt.Sprintf("%x\r\n%s\r\n", 64<<10, strings.Repeat("a", 64<<10)), 17) + "0\r\n\r\n",
			http.StatusBadRequest, "http: request body too large"},
		{"headers over 64 KB", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("h", 70<<10) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc := rawWeb(t, addr)
			go io.WriteString(nc, tc.req)
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.body) {
				t.Errorf("%d %q, want %d containing %q", resp.StatusCode, b, tc.status, tc.body)
			}
		})
	}
}

func TestWebConnectionCaps(t *testing.T) {
	tests := []struct {
		name string
		lim  func(*webLimits)
		msg  string
	}{
		{"in all", func(l *webLimits) { l.MaxConns = 3 }, "too many connections to the web port (limit 3)"},
		{"per address", func(l *webLimits) { l.MaxConnsPerAddr = 3; l.CapLoopback = true }, "too many connections from 127.0.0.1 (limit 3)"},
	}
	get := func(nc net.Conn) (*http.Response, string, error) {
		io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			return nil, "", err
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return resp, string(b), err
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lim := testWebLimits()
			tc.lim(&lim)
			addr, ll := startWeb(t, lim)
			var open []net.Conn
			for i := range 3 {
				nc := rawWeb(t, addr)
				if resp, b, err := get(nc); err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("connection %d: %v %q, %v", i, resp, b, err)
				}
				open = append(open, nc) // kept alive
			}
			// The fourth is answered 503 at once, not left waiting.
			start := time.Now()
			resp, b, err := get(rawWeb(t, addr))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
				!strings.Contains(b, `"message":"`+tc.msg+`"`) || !strings.Contains(b, "ServerTooBusyException") {
				t.Errorf("over the cap: %d %q, want 503 saying %q", resp.StatusCode, b, tc.msg)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("the refusal took %v", took)
			}
			// Once one closes, a new connection is served.
			open[0].Close()
			deadline := time.Now().Add(5 * time.Second)
			for ll.Conns() >= 3 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if resp, b, err := get(rawWeb(t, addr)); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("below the cap again: %v %q, %v", resp, b, err)
			}
		})
	}
	t.Run("loopback is exempt from the per-address cap by default", func(t *testing.T) {
		lim := testWebLimits()
		lim.MaxConnsPerAddr = 2
		addr, _ := startWeb(t, lim)
		for i := range 5 {
			if resp, b, err := get(rawWeb(t, addr)); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("connection %d: %v %q, %v", i, resp, b, err)
			}
		}
	})
}

func TestWebLimitKeys(t *testing.T) {
	conf := func(kv ...string) *hadoopconf.Conf {
		c := hadoopconf.New(nil)
		for i := 0; i < len(kv); i += 2 {
			c.Set(kv[i], kv[i+1])
		}
		return c
	}
	k := webLimitKeys
	got, err := loadWebLimits(conf(k.read, "2000", k.body, "4096", k.connsPerAddr, "7", k.loopback, "true"))
	if err != nil {
		t.Fatal(err)
	}
	want := defaultWebLimits
	want.ReadTimeout, want.MaxBody, want.MaxConnsPerAddr, want.CapLoopback = 2*time.Second, 4096, 7, true
	if got != want {
		t.Errorf("limits %+v, want %+v", got, want)
	}
	if got, err := loadWebLimits(conf()); err != nil || got != defaultWebLimits {
		t.Errorf("no keys: %+v, %v; want the defaults", got, err)
	}
	for _, kv := range [][2]string{{k.read, "0"}, {k.idle, "-5"}, {k.conns, "many"}, {k.loopback, "sometimes"}} {
		if _, err := loadWebLimits(conf(kv[0], kv[1])); err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%s: error %v, want one naming the key", kv[0], kv[1], err)
		}
	}
}
