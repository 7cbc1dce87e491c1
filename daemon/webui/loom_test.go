package webui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/daemon/webui/dao"
)

const altruismPath = "/ws/v1/loom/scheduler/altruism"

func TestAltruismRefused(t *testing.T) {
	f := newFakeBackend()
	h := newTestHandler(f, adminKey, nil)
	for _, tc := range []struct {
		name    string
		headers []string
		message string
	}{
		{"no credential", nil, "the admin credential is missing"},
		{"not bearer", []string{"Authorization", "Basic " + adminKey}, "the admin credential is missing"},
		{"wrong", []string{"Authorization", "Bearer nope"}, "the admin credential is wrong"},
		{"prefix", []string{"Authorization", "Bearer " + adminKey[:5]}, "the admin credential is wrong"},
		{"longer", []string{"Authorization", "Bearer " + adminKey + "x"}, "the admin credential is wrong"},
	} {
		a := serve(h, http.MethodPut, altruismPath+"?user.name=mallory", `{"p":0.1}`, tc.headers...)
		if re := remoteException(t, a, http.StatusForbidden, "ForbiddenException"); !strings.Contains(re.Message, tc.message) {
			t.Errorf("%s: %q", tc.name, re.Message)
		}
	}
	// Refused before the body is read: a bad body is still a 403.
	remoteException(t, serve(h, http.MethodPut, altruismPath, `{"p":`), http.StatusForbidden, "ForbiddenException")
	// With no secret configured, nothing is accepted, not even an empty
	// bearer token.
	open := newTestHandler(f, "", nil)
	for _, auth := range []string{"", "Bearer ", "Bearer " + adminKey} {
		a := serve(open, http.MethodPut, altruismPath, `{"p":0.1}`, "Authorization", auth)
		if re := remoteException(t, a, http.StatusForbidden, "ForbiddenException"); !strings.Contains(re.Message, "no admin credential is configured (set loom.admin.secret)") {
			t.Errorf("empty secret, %q: %q", auth, re.Message)
		}
	}
	if len(f.changes) != 1 || f.sched.PAltruism != 0.8 {
		t.Errorf("a refused change went through: %v", f.changes)
	}
}

func TestAltruismBadBody(t *testing.T) {
	f := newFakeBackend()
	h := newTestHandler(f, adminKey, nil)
	for _, tc := range []struct{ body, message string }{
		{`{"p":1.5}`, "p must be between 0 and 1, got 1.5"},
		{`{"p":-0.1}`, "p must be between 0 and 1, got -0.1"},
		{`{"p":"0.5"}`, "p: expected a number, got string"},
		{`{"p":null}`, "p is missing"},
		{`{}`, "p is missing"},
		{`{"p":0.5`, "malformed JSON"},
		{`0.5`, "the body must be a JSON object, got number"},
		{``, "the request body is empty"},
	} {
		a := serve(h, http.MethodPut, altruismPath, tc.body, "Authorization", "Bearer "+adminKey)
		if re := remoteException(t, a, http.StatusBadRequest, "BadRequestException"); !strings.Contains(re.Message, tc.message) {
			t.Errorf("%s: %q", tc.body, re.Message)
		}
	}
}

func TestAltruismChange(t *testing.T) {
	f := newFakeBackend()
	logs := &syncBuffer{}
	h := newTestHandler(f, adminKey, logs)
	a := serve(h, http.MethodPut, altruismPath+"?user.name=carol", `{"p":0.5}`, "Authorization", "Bearer "+adminKey,
		"Content-Type", "application/json")
	if a.code != http.StatusOK || a.contentType() != "application/json" {
		t.Fatalf("%d %q %s", a.code, a.contentType(), a.body)
	}
	want := dao.Altruism{P: 0.5, Queues: map[string]float64{}, Changes: []dao.AltruismChange{
		{UnixMs: 1700000000000, P: 0.8, Who: "config"},
		{UnixMs: 1700000100000, P: 0.5, Who: "carol from 192.0.2.7"}}}
	var got dao.Altruism
	decode(t, a, &got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("answer (-want +got):\n%s", d)
	}
	// The history is what GET answers, and P(Altruism) 0 is a value.
	serve(h, http.MethodPut, altruismPath, `{"p":0}`, "Authorization", "bearer "+adminKey)
	a = serve(h, http.MethodGet, altruismPath, "")
	decode(t, a, &got)
	want.P = 0
	want.Changes = append(want.Changes, dao.AltruismChange{UnixMs: 1700000100000, P: 0, Who: "dr.who from 192.0.2.7"})
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	if l := logs.String(); !strings.Contains(l, `"message":"P(Altruism) changed"`) || !strings.Contains(l, `"who":"carol from 192.0.2.7"`) ||
		!strings.Contains(l, `"from":0.8`) {
		t.Errorf("log %s", l)
	}

	// A queue's override: set, listed, then cleared; the scheduler view
	// says what each queue's apps are told.
	serve(h, http.MethodPut, altruismPath, `{"p":0.9,"queue":"etl"}`, "Authorization", "Bearer "+adminKey)
	decode(t, serve(h, http.MethodGet, altruismPath, ""), &got)
	if got.P != 0 || !cmp.Equal(got.Queues, map[string]float64{"etl": 0.9}) {
		t.Errorf("after etl's override: p %v, queues %v", got.P, got.Queues)
	}
	var sched dao.Scheduler
	decode(t, serve(h, http.MethodGet, "/ws/v1/loom/scheduler", ""), &sched)
	for _, q := range sched.Queues {
		if want := (q.Name == "etl"); q.Override != want || (want && q.PAltruism != 0.9) || (!want && q.PAltruism != 0) {
			t.Errorf("queue %s: P %v, override %v", q.Name, q.PAltruism, q.Override)
		}
	}
	if a := serve(h, http.MethodPut, altruismPath, `{"queue":"etl","clear":true}`, "Authorization", "Bearer "+adminKey); a.code != http.StatusOK {
		t.Errorf("clear: %d %s", a.code, a.body)
	}
	got = dao.Altruism{} // decoding into a map merges
	decode(t, serve(h, http.MethodGet, altruismPath, ""), &got)
	if len(got.Queues) != 0 {
		t.Errorf("after clearing: queues %v", got.Queues)
	}
	last := got.Changes[len(got.Changes)-1]
	if last.Queue != "etl" || !last.Cleared {
		t.Errorf("last change %+v, want etl cleared", last)
	}
	for _, tc := range []struct{ body, message string }{
		{`{"clear":true}`, "name the queue"},
		{`{"queue":"etl","clear":true,"p":0.5}`, "send p or clear, not both"},
		{`{"queue":"etl"}`, "p is missing"},
		{`{"queue":"etl","p":7}`, "between 0 and 1"},
	} {
		a := serve(h, http.MethodPut, altruismPath, tc.body, "Authorization", "Bearer "+adminKey)
		if re := remoteException(t, a, http.StatusBadRequest, "BadRequestException"); !strings.Contains(re.Message, tc.message) {
			t.Errorf("%s: %q", tc.body, re.Message)
		}
	}
	a = serve(h, http.MethodPut, altruismPath, `{"queue":"nope","p":0.5}`, "Authorization", "Bearer "+adminKey)
	if a.code == http.StatusOK || !strings.Contains(string(a.body), `queue \"nope\" is not in loom.queues`) {
		t.Errorf("unknown queue: %d %s", a.code, a.body)
	}
}

func TestAltruismRefusalLogged(t *testing.T) {
	logs := &syncBuffer{}
	h := newTestHandler(newFakeBackend(), adminKey, logs)
	serve(h, http.MethodPut, altruismPath+"?user.name=mallory", `{"p":0.1}`, "Authorization", "Bearer guess")
	if l := logs.String(); !strings.Contains(l, "P(Altruism) change refused") || !strings.Contains(l, "mallory") || strings.Contains(l, "guess") {
		t.Errorf("log %s", l)
	}
}

func TestMetrics(t *testing.T) {
	a := serve(newTestHandler(newFakeBackend(), adminKey, nil), http.MethodGet, "/metrics", "")
	if a.code != 200 || string(a.body) != "loom_apps_running 1\n" || a.contentType() != "text/plain; version=0.0.4" {
		t.Errorf("%d %q %q", a.code, a.contentType(), a.body)
	}
	h := New(newFakeBackend(), Config{})
	remoteException(t, serve(h, http.MethodGet, "/metrics", ""), http.StatusNotFound, "NotFoundException")
}

// TestPlacementShares: the shares are of the containers whose asks named
// hosts or racks, worked by hand; asks without locality ("any") neither
// dilute them nor, alone, make a 0% node-local.
func TestPlacementShares(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Placements
		want dao.Placements
	}{
		{"nothing granted", Placements{}, dao.Placements{}},
		{"every ask without locality", Placements{Any: 12}, dao.Placements{Any: 12}},
		{"all node-local", Placements{NodeLocal: 5}, dao.Placements{NodeLocal: 5, WithLocality: 5, NodeLocalShare: 1}},
		// 6, 1 and 1 of 8; the 40 any are not in them.
		{"mixed, many any", Placements{NodeLocal: 6, RackLocal: 1, OffSwitch: 1, Any: 40},
			dao.Placements{NodeLocal: 6, RackLocal: 1, OffSwitch: 1, Any: 40, WithLocality: 8,
				NodeLocalShare: 0.75, RackLocalShare: 0.125, OffSwitchShare: 0.125}},
		{"none on its host", Placements{RackLocal: 3, OffSwitch: 1}, dao.Placements{RackLocal: 3, OffSwitch: 1, WithLocality: 4,
			RackLocalShare: 0.75, OffSwitchShare: 0.25}},
	} {
		if d := cmp.Diff(tc.want, placements(tc.in)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}
