package webui

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loomrm/loom/daemon/webui/dao"
)

// Every body parser and the apps filters take any input: the answer is a
// success or a 400 with a RemoteException, never a 500 or a panic.

func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder, ok ...int) {
	t.Helper()
	for _, code := range ok {
		if rec.Code == code {
			return
		}
	}
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var e dao.RemoteExceptionResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.RemoteException.Exception != "BadRequestException" ||
		e.RemoteException.Message == "" {
		t.Fatalf("a 400 without a BadRequestException: %s (%v)", rec.Body, err)
	}
}

func fuzzRequest(h http.Handler, method, path, query string, body []byte, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(string(body)))
	req.URL.RawQuery = query
	req.RemoteAddr = testRemote
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func FuzzSubmitBody(f *testing.F) {
	for _, seed := range []string{
		submitBody,
		`{"application-id":"application_1700000000000_0006","queue":"default","am-container-spec":{"commands":{"command":"true"}}}`,
		`{"application-id":"application_1700000000000_0006","application-tags":"a","am-container-spec":{"local-resources":{"entry":{"key":"k","value":{"resource":"/x"}}}}}`,
		`{"application-id":"application_1700000000000_0006","am-container-spec":{"local-resources":{"entry":[{"key":"k","value":{"resource":"%zz"}}]}}}`,
		`{"application-id":"application_1700000000000_0006","am-container-spec":{"service-data":{"entry":{"key":"k","value":"AA=="}}}}`,
		`{"application-id":"application_1700000000000_0006","resource":{"memory":9223372036854775807,"vCores":2147483648}}`,
		`{"application-id":"application_1700000000000_0006","priority":2147483648}`,
		`{"application-id":"application_99999999999999999999_1"}`,
		`{"application-id":"application_1_-5"}`,
		`{"application-id":null}`,
		`{"application-id":`, `{`, `[]`, `null`, `""`, `{} x`, "\xff\xfe", `{"application-tags":{"tag":{"a":1}}}`,
		`{"am-container-spec":{"local-resources":{"entry":[null,{}]}},"application-id":"application_1700000000000_0006"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h := newTestHandler(writableBackend(), adminKey, nil)
		fuzzRequest(h, http.MethodPost, "/ws/v1/cluster/apps/new-application", "", nil)
		checkAnswer(t, fuzzRequest(h, http.MethodPost, "/ws/v1/cluster/apps", "", body), http.StatusAccepted)
	})
}

// FuzzSubmitXML: any XML submission is accepted or refused with a
// RemoteException, never a panic or a 5xx.
func FuzzSubmitXML(f *testing.F) {
	for _, seed := range []string{submitBodyXML, "<application-submission-context/>",
		"<application-submission-context><priority>1e9999</priority></application-submission-context>",
		"<application-submission-context><resource><memory>-1</memory></resource></application-submission-context>",
		"<application-submission-context><application-tags><tag><x/></tag></application-tags></application-submission-context>",
		"<application-submission-context><am-container-spec><commands/></am-container-spec></application-submission-context>",
		"<a", "", "<application-submission-context>&bogus;</application-submission-context>"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h := newTestHandler(writableBackend(), adminKey, nil)
		fuzzRequest(h, http.MethodPost, "/ws/v1/cluster/apps/new-application", "", nil)
		checkAnswer(t, fuzzRequest(h, http.MethodPost, "/ws/v1/cluster/apps", "", body, "Content-Type", "application/xml"),
			http.StatusAccepted)
	})
}

func FuzzStateBody(f *testing.F) {
	for _, seed := range []string{`{"state":"KILLED"}`, `{"state":"killed"}`, `{"state":"RUNNING"}`, `{"state":null}`,
		`{"state":1}`, `{}`, `{"state":"KILLED"} {}`, `{"state":`, ``, `[]`, `"KILLED"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h := newTestHandler(writableBackend(), adminKey, nil)
		checkAnswer(t, fuzzRequest(h, http.MethodPut, "/ws/v1/cluster/apps/application_1700000000000_0001/state", "", body),
			http.StatusAccepted)
	})
}

func FuzzAltruismBody(f *testing.F) {
	for _, seed := range []string{`{"p":0.5}`, `{"p":0}`, `{"p":1}`, `{"p":1e-300}`, `{"p":1.0000001}`, `{"p":-0}`,
		`{"p":1e400}`, `{"p":"0.5"}`, `{"p":null}`, `{}`, `{"p":0.5`, `0.5`, ``} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fb := newFakeBackend()
		h := newTestHandler(fb, adminKey, nil)
		rec := fuzzRequest(h, http.MethodPut, altruismPath, "", body, "Authorization", "Bearer "+adminKey)
		checkAnswer(t, rec, http.StatusOK)
		if p := fb.Scheduler().PAltruism; p < 0 || p > 1 {
			t.Fatalf("P(Altruism) set to %v", p)
		}
	})
}

func FuzzAppsQuery(f *testing.F) {
	for _, seed := range []string{"", "states=running,ACCEPTED", "state=KILLED&states=", "states=BOGUS", "limit=2",
		"limit=-1", "limit=99999999999999999999", "startedTimeBegin=1&startedTimeEnd=2", "startedTimeBegin=abc",
		"finishedTimeBegin=5&finishedTimeEnd=4", "finalStatus=SUCCEEDED", "finalStatus=x", "user=alice&queue=root.etl",
		"applicationTypes=loom,,SPARK&applicationTags=%20q5", "%zz=1&states=%", "states=running;limit=1", "user.name=%00"} {
		f.Add(seed)
	}
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	f.Fuzz(func(t *testing.T, query string) {
		checkAnswer(t, fuzzRequest(h, http.MethodGet, "/ws/v1/cluster/apps", query, nil), http.StatusOK)
		checkAnswer(t, fuzzRequest(h, http.MethodGet, "/ws/v1/cluster/nodes", query, nil), http.StatusOK)
	})
}
