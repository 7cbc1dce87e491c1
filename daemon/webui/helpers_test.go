package webui

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loomrm/loom/daemon/webui/dao"
)

// testRemote is the client address every test request comes from.
const testRemote = "192.0.2.7:5555"

type answer struct {
	code   int
	header http.Header
	body   []byte
}

func (a answer) contentType() string { return a.header.Get("Content-Type") }

// serve makes one request; headers come as name, value pairs. A POST or
// PUT is sent as application/json unless a header says otherwise.
func serve(h http.Handler, method, target, body string, headers ...string) answer {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, "/", r)
	path, query, _ := strings.Cut(target, "?")
	req.URL.Path, req.URL.RawQuery = path, query
	req.RemoteAddr = testRemote
	if method == http.MethodPost || method == http.MethodPut {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return answer{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// decode reads an answer's JSON into v, failing the test on anything
// but one JSON value.
func decode(t *testing.T, a answer, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(a.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("answer %d %q does not decode into %T: %v", a.code, a.body, v, err)
	}
}

// remoteException reads an error answer, checking its status and class.
func remoteException(t *testing.T, a answer, status int, exception string) dao.RemoteException {
	t.Helper()
	if a.code != status {
		t.Fatalf("status %d, want %d; body %s", a.code, status, a.body)
	}
	if ct := a.contentType(); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var e dao.RemoteExceptionResponse
	decode(t, a, &e)
	classes := map[string]string{
		"BadRequestException":     "org.apache.hadoop.yarn.webapp.BadRequestException",
		"NotFoundException":       "org.apache.hadoop.yarn.webapp.NotFoundException",
		"ForbiddenException":      "org.apache.hadoop.yarn.webapp.ForbiddenException",
		"NotAllowedException":     "javax.ws.rs.NotAllowedException",
		"NotSupportedException":   "javax.ws.rs.NotSupportedException",
		"WebApplicationException": "javax.ws.rs.WebApplicationException",
		"YarnException":           "org.apache.hadoop.yarn.exceptions.YarnException",
	}
	re := e.RemoteException
	if re.Exception != exception || re.JavaClassName != classes[exception] {
		t.Errorf("exception %q (%q), want %q (%q)", re.Exception, re.JavaClassName, exception, classes[exception])
	}
	if re.Message == "" {
		t.Error("the RemoteException has no message")
	}
	return re
}
