package webui

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rpc"
)

// xmlRoot is the name of an XML answer's root element, failing the test
// unless the answer is one XML document after YARN's declaration.
func xmlRoot(t *testing.T, body []byte) string {
	t.Helper()
	if !bytes.HasPrefix(body, []byte(xmlHeader)) {
		t.Fatalf("the answer does not start with %s: %s", xmlHeader, body)
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	root := ""
	for {
		tok, err := dec.Token()
		if err != nil {
			if root == "" || err.Error() != "EOF" {
				t.Fatalf("not well-formed XML (%v): %s", err, body)
			}
			return root
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
}

// decodeXMLDocument reads an XML answer into doc, a pointer to a zero
// document of the type the JSON answer has: a one-field document
// (ClusterInfoResponse, AppsResponse, ...) is read from its field's
// element, as YARN writes it; an empty root is the JSON's null.
func decodeXMLDocument(t *testing.T, body []byte, doc any) {
	t.Helper()
	v := reflect.ValueOf(doc).Elem()
	if _, ok := v.Interface().(xmlRooted); ok || v.NumField() != 1 {
		if err := xml.Unmarshal(body, doc); err != nil {
			t.Fatalf("XML does not decode into %T: %v: %s", doc, err, body)
		}
		return
	}
	f := v.Field(0)
	inner := reflect.New(f.Type())
	target := inner.Interface()
	if f.Kind() == reflect.Pointer {
		inner.Elem().Set(reflect.New(f.Type().Elem()))
		target = inner.Elem().Interface()
	}
	if err := xml.Unmarshal(body, target); err != nil {
		t.Fatalf("XML does not decode into %T: %v: %s", target, err, body)
	}
	if f.Kind() == reflect.Pointer && inner.Elem().Elem().IsZero() {
		return // <apps/> is {"apps":null}
	}
	f.Set(inner.Elem())
}

// clusterResources is every /ws/v1/cluster GET of TestShapes and the
// root element YARN gives its XML.
var clusterResources = []struct {
	path string
	doc  func() any
	root string
}{
	{"/ws/v1/cluster", func() any { return &dao.ClusterInfoResponse{} }, "clusterInfo"},
	{"/ws/v1/cluster/info", func() any { return &dao.ClusterInfoResponse{} }, "clusterInfo"},
	{"/ws/v1/cluster/info/", func() any { return &dao.ClusterInfoResponse{} }, "clusterInfo"},
	{"/ws/v1/cluster/metrics", func() any { return &dao.ClusterMetricsResponse{} }, "clusterMetrics"},
	{"/ws/v1/cluster/scheduler", func() any { return &fairSchedulerResponse{} }, "scheduler"},
	{"/ws/v1/cluster/nodes", func() any { return &dao.NodesResponse{} }, "nodes"},
	{"/ws/v1/cluster/nodes?states=lost", func() any { return &dao.NodesResponse{} }, "nodes"},
	{"/ws/v1/cluster/nodes?states=RUNNING,LOST", func() any { return &dao.NodesResponse{} }, "nodes"},
	{"/ws/v1/cluster/nodes?states=DECOMMISSIONED", func() any { return &dao.NodesResponse{} }, "nodes"},
	{"/ws/v1/cluster/nodes/nm2:45454", func() any { return &dao.NodeResponse{} }, "node"},
	{"/ws/v1/cluster/apps", func() any { return &dao.AppsResponse{} }, "apps"},
	{"/ws/v1/cluster/apps?user=nobody", func() any { return &dao.AppsResponse{} }, "apps"},
	{"/ws/v1/cluster/apps?states=running,accepted&limit=1", func() any { return &dao.AppsResponse{} }, "apps"},
	{"/ws/v1/cluster/apps/application_1700000000000_0001", func() any { return &dao.AppResponse{} }, "app"},
	{"/ws/v1/cluster/apps/application_1700000000000_0002", func() any { return &dao.AppResponse{} }, "app"},
	{"/ws/v1/cluster/apps/application_1700000000000_0005", func() any { return &dao.AppResponse{} }, "app"},
	{"/ws/v1/cluster/apps/application_1700000000000_0001/appattempts", func() any { return &dao.AppAttemptsResponse{} }, "appAttempts"},
	{"/ws/v1/cluster/apps/application_1700000000000_0003/appattempts", func() any { return &dao.AppAttemptsResponse{} }, "appAttempts"},
	{"/ws/v1/cluster/apps/application_1700000000000_0001/state", func() any { return &dao.AppState{} }, "appstate"},
	{"/ws/v1/cluster/apps/application_1700000000000_0005/state", func() any { return &dao.AppState{} }, "appstate"},
}

// TestXMLShapes: every /ws/v1/cluster resource answers Accept:
// application/xml with the same document as its JSON, under YARN's root
// element.
func TestXMLShapes(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	for _, tc := range clusterResources {
		t.Run(tc.path, func(t *testing.T) {
			fromJSON := tc.doc()
			a := serve(h, http.MethodGet, tc.path, "")
			decode(t, a, fromJSON)
			x := serve(h, http.MethodGet, tc.path, "", "Accept", "application/xml")
			if x.code != http.StatusOK {
				t.Fatalf("status %d: %s", x.code, x.body)
			}
			if ct := x.contentType(); ct != "application/xml;charset=utf-8" {
				t.Errorf("Content-Type %q, want application/xml;charset=utf-8", ct)
			}
			if v := x.header.Get("Vary"); v != "Accept" {
				t.Errorf("Vary %q, want Accept", v)
			}
			if root := xmlRoot(t, x.body); root != tc.root {
				t.Errorf("root element <%s>, want <%s>: %s", root, tc.root, x.body)
			}
			fromXML := tc.doc()
			decodeXMLDocument(t, x.body, fromXML)
			if d := cmp.Diff(fromJSON, fromXML); d != "" {
				t.Errorf("the XML document differs from the JSON one (-json +xml):\n%s", d)
			}
			// The JSON answer is as it was, whoever asks for it.
			for _, accept := range []string{"application/json", "application/xml;q=0.5, application/json", "*/*"} {
				if b := serve(h, http.MethodGet, tc.path, "", "Accept", accept); !bytes.Equal(b.body, a.body) ||
					b.contentType() != "application/json" {
					t.Errorf("Accept %q: %s %s, want the JSON answer", accept, b.contentType(), b.body)
				}
			}
		})
	}
}

// TestXMLRaw checks YARN's spelling where decoding forgives: the
// scheduler's xsi:type, an empty list, floats with a decimal point.
func TestXMLRaw(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	for _, tc := range []struct{ path, want string }{
		{"/ws/v1/cluster/apps?user=nobody", xmlHeader + `<apps/>`},
		{"/ws/v1/cluster/nodes?states=SHUTDOWN", xmlHeader + `<nodes/>`},
		{"/ws/v1/cluster/apps/application_1700000000000_0004/state", xmlHeader + `<appstate><state>KILLED</state></appstate>`},
	} {
		a := serve(h, http.MethodGet, tc.path, "", "Accept", "application/xml")
		if a.code != http.StatusOK || string(a.body) != tc.want {
			t.Errorf("%s: %d %s, want 200 %s", tc.path, a.code, a.body, tc.want)
		}
	}
	a := serve(h, http.MethodGet, "/ws/v1/cluster/scheduler", "", "Accept", "application/xml")
	for _, want := range []string{
		`<scheduler><schedulerInfo xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="fairScheduler"><rootQueue><queueName>root</queueName><weight>1.0</weight>`,
		`<childQueues><queue xsi:type="fairSchedulerLeafQueueInfo"><queueName>root.default</queueName>`,
	} {
		if !strings.Contains(string(a.body), want) {
			t.Errorf("the scheduler lacks %s: %s", want, a.body)
		}
	}
	if n := strings.Count(string(a.body), "xmlns:xsi"); n != 1 {
		t.Errorf("xsi declared %d times: %s", n, a.body)
	}
	a = serve(h, http.MethodGet, "/ws/v1/cluster/apps", "", "Accept", "application/xml")
	if n := strings.Count(string(a.body), "<app>"); n != 5 || !strings.Contains(string(a.body), "<progress>25.0</progress>") {
		t.Errorf("%d <app> elements (want 5), progress as YARN writes it: %s", n, a.body)
	}
	// HEAD: the headers of the XML answer, no body.
	a = serve(h, http.MethodHead, "/ws/v1/cluster/info", "", "Accept", "application/xml")
	if a.code != http.StatusOK || a.contentType() != contentTypeXML || len(a.body) != 0 {
		t.Errorf("HEAD: %d %q %q", a.code, a.contentType(), a.body)
	}
}

// TestXMLNames: an element is named as the JSON field, in every
// /ws/v1/cluster document, so that the two encodings cannot drift.
func TestXMLNames(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var check func(reflect.Type)
	check = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			jname, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			xname, attr, omit := xmlField(f)
			_, jomit := strings.CutSuffix(f.Tag.Get("json"), ",omitempty")
			if jname != xname || omit != jomit {
				t.Errorf("%s.%s: json %q, xml %q", typ.Name(), f.Name, f.Tag.Get("json"), f.Tag.Get("xml"))
			}
			if attr && xname != "type" {
				t.Errorf("%s.%s: only a type is an attribute (xsi:type)", typ.Name(), f.Name)
			}
			check(f.Type)
		}
	}
	for _, tc := range clusterResources {
		check(reflect.TypeOf(tc.doc()))
	}
	check(reflect.TypeOf(dao.NewApplication{}))
	check(reflect.TypeOf(dao.RemoteExceptionResponse{}))
}

func TestAcceptNegotiation(t *testing.T) {
	for _, tc := range []struct {
		accept []string
		xml    bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"*/*"}, false},
		{[]string{"application/json"}, false},
		{[]string{"application/*"}, false},
		{[]string{"text/html"}, false}, // neither: JSON, as before
		{[]string{"garbage"}, false},
		{[]string{"application/xml"}, true},
		{[]string{"APPLICATION/XML; charset=utf-8"}, true},
		{[]string{"application/json, application/xml"}, false},
		{[]string{"application/xml, application/json"}, false}, // a tie goes to JSON
		{[]string{"application/xml, */*"}, true},               // the more specific range
		{[]string{"application/xml;q=0.5, application/json"}, false},
		{[]string{"application/xml, application/json;q=0.9"}, true},
		{[]string{"application/xml;q=0"}, false},
		{[]string{"application/xml;q=0, */*"}, false},
		{[]string{"*/*, application/json;q=0"}, true}, // JSON refused
		{[]string{"application/json;q=0, application/xml"}, true},
		{[]string{"application/xml;q=x"}, false},
		// A browser: Jersey answers it in XML.
		{[]string{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}, true},
		{[]string{"text/html", "application/xml"}, true}, // several Accept lines
	} {
		r, _ := http.NewRequest(http.MethodGet, "/ws/v1/cluster", nil)
		for _, v := range tc.accept {
			r.Header.Add("Accept", v)
		}
		if got := wantsXML(r); got != tc.xml {
			t.Errorf("Accept %q: XML %v, want %v", tc.accept, got, tc.xml)
		}
	}
}

// TestXMLErrors: under /ws/v1/cluster an error is YARN's XML
// RemoteException when the client asks for XML; Loom's views and the
// rest stay JSON.
func TestXMLErrors(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	for _, tc := range []struct {
		method, path, body string
		status             int
		exception, class   string
	}{
		{http.MethodGet, "/ws/v1/cluster/apps/application_1700000000000_0099", "", http.StatusNotFound,
			"NotFoundException", classNotFound},
		{http.MethodGet, "/ws/v1/cluster/apps/nope", "", http.StatusBadRequest, "BadRequestException", classBadRequest},
		{http.MethodGet, "/ws/v1/cluster/apps?states=SLEEPING", "", http.StatusBadRequest, "BadRequestException", classBadRequest},
		{http.MethodGet, "/ws/v1/cluster/nodes/nm9:1", "", http.StatusNotFound, "NotFoundException", classNotFound},
		{http.MethodGet, "/ws/v1/cluster/nothing", "", http.StatusNotFound, "NotFoundException", classNotFound},
		{http.MethodDelete, "/ws/v1/cluster/apps", "", http.StatusMethodNotAllowed, "NotAllowedException", classNotAllowed},
		{http.MethodPut, "/ws/v1/cluster/apps/application_1700000000000_0001/state", `{"state":"KILLED"}`,
			http.StatusForbidden, "ForbiddenException", classForbidden},
	} {
		a := serve(h, tc.method, tc.path, tc.body, "Accept", "application/xml")
		if a.code != tc.status || a.contentType() != contentTypeXML {
			t.Errorf("%s %s: %d %q, want %d in XML: %s", tc.method, tc.path, a.code, a.contentType(), tc.status, a.body)
			continue
		}
		if root := xmlRoot(t, a.body); root != "RemoteException" {
			t.Errorf("%s %s: root <%s>", tc.method, tc.path, root)
		}
		var e dao.RemoteException
		if err := xml.Unmarshal(a.body, &e); err != nil || e.Exception != tc.exception || e.JavaClassName != tc.class ||
			e.Message == "" {
			t.Errorf("%s %s: %+v (%v): %s", tc.method, tc.path, e, err, a.body)
		}
		// The same error in JSON is unchanged.
		j := serve(h, tc.method, tc.path, tc.body)
		var je dao.RemoteExceptionResponse
		decode(t, j, &je)
		if j.code != tc.status || je.RemoteException != e {
			t.Errorf("%s %s: JSON %d %+v, XML %+v", tc.method, tc.path, j.code, je.RemoteException, e)
		}
	}
	// Loom's views are JSON only, their errors too.
	for _, p := range []string{"/ws/v1/loom/scheduler", "/ws/v1/loom/apps/application_1700000000000_0099/dag", "/ws/v1/nothing"} {
		a := serve(h, http.MethodGet, p, "", "Accept", "application/xml")
		if a.contentType() != "application/json" || !json.Valid(a.body) {
			t.Errorf("%s: %q %s, want JSON", p, a.contentType(), a.body)
		}
	}
}

// TestXMLEscapes: text that XML cannot carry as it is still makes a
// well-formed document.
func TestXMLEscapes(t *testing.T) {
	in := dao.AppResponse{App: dao.App{ID: "application_1_1", Diagnostics: "exit <1> & \"x\"\x00\x1b\n\tend", Name: "ü\U0001F600"}}
	b, err := marshalXML(in)
	if err != nil {
		t.Fatal(err)
	}
	var out dao.App
	if err := xml.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if out.Diagnostics != "exit <1> & \"x\"\uFFFD\uFFFD\n\tend" || out.Name != in.App.Name {
		t.Errorf("diagnostics %q, name %q", out.Diagnostics, out.Name)
	}
}

// TestKillXML: PUT apps/{appid}/state takes YARN's XML body and answers
// in XML, as in Hadoop's documented example.
func TestKillXML(t *testing.T) {
	f := writableBackend()
	h := newTestHandler(f, adminKey, nil)
	path := "/ws/v1/cluster/apps/application_1700000000000_0001/state"
	body := xmlHeader + "\n<appstate>\n  <state>KILLED</state>\n</appstate>\n"
	a := serve(h, http.MethodPut, path+"?user.name=alice", body, "Content-Type", "application/xml", "Accept", "application/xml")
	if a.code != http.StatusAccepted || string(a.body) != xmlHeader+`<appstate><state>KILLED</state></appstate>` ||
		a.contentType() != contentTypeXML {
		t.Fatalf("first PUT: %d %q %s", a.code, a.contentType(), a.body)
	}
	if len(f.kills) != 1 || rpc.AppIDString(f.kills[0].GetApplicationId()) != "application_1700000000000_0001" {
		t.Errorf("kills %v", f.kills)
	}
	// An XML body with a JSON answer, and again: 200.
	a = serve(h, http.MethodPut, path, `<appstate><state>killed</state></appstate>`, "Content-Type", "application/xml; charset=UTF-8")
	if a.code != http.StatusOK || string(a.body) != `{"state":"KILLED"}` {
		t.Errorf("second PUT: %d %s", a.code, a.body)
	}
	for _, tc := range []struct{ body, message string }{
		{`<appstate><state>RUNNING</state></appstate>`, "only 'KILLED' is allowed"},
		{`<appstate></appstate>`, "state is missing"},
		{`<appState><state>KILLED</state></appState>`, "root element is <appState>, want <appstate>"},
		{`<appstate><state>KILLED</state>`, "malformed XML at line 1"},
		{`<appstate><state>KILLED</state></appstate><appstate/>`, "unexpected data after the root element"},
		{`x<appstate/>`, "text before the root element"},
		{``, "the request body is empty"},
		{`<!DOCTYPE appstate [<!ENTITY x SYSTEM "file:///etc/passwd">]><appstate><state>&x;</state></appstate>`, "directive is not taken"},
		{`<?xml version="1.0" encoding="ISO-8859-1"?><appstate/>`, "malformed XML"},
	} {
		a := serve(h, http.MethodPut, "/ws/v1/cluster/apps/application_1700000000000_0003/state", tc.body,
			"Content-Type", "application/xml", "Accept", "application/xml")
		var e dao.RemoteException
		if a.code != http.StatusBadRequest || xml.Unmarshal(a.body, &e) != nil || !strings.Contains(e.Message, tc.message) {
			t.Errorf("%s: %d %s, want a 400 saying %q", tc.body, a.code, a.body, tc.message)
		}
	}
	if len(f.kills) != 1 {
		t.Errorf("a refused body killed an app: %v", f.kills)
	}
	// text/xml is not YARN's, nor a type a page of another site can send
	// without asking first either way: 415.
	a = serve(h, http.MethodPut, path, `<appstate><state>KILLED</state></appstate>`, "Content-Type", "text/xml")
	remoteException(t, a, http.StatusUnsupportedMediaType, "NotSupportedException")
}

func FuzzStateBodyXML(f *testing.F) {
	for _, seed := range []string{`<appstate><state>KILLED</state></appstate>`, xmlHeader + `<appstate><state>killed</state></appstate>`,
		`<appstate><state>RUNNING</state></appstate>`, `<appstate/>`, `<appstate><state/></appstate>`,
		`<a:appstate xmlns:a="x"><a:state>KILLED</a:state></a:appstate>`, `<appstate><state><![CDATA[KILLED]]></state></appstate>`,
		`<appstate><state>KILLED</state></appstate><!-- c -->`, `<appstate>`, `<appstate></state>`, `&amp;`, ``,
		`<!DOCTYPE x><appstate/>`, "<appstate>\xff</appstate>", `<appstate><state>KIL&#76;ED</state></appstate>`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		h := newTestHandler(writableBackend(), adminKey, nil)
		rec := fuzzRequest(h, http.MethodPut, "/ws/v1/cluster/apps/application_1700000000000_0001/state", "", body,
			"Content-Type", "application/xml")
		checkAnswer(t, rec, http.StatusAccepted)
	})
}

// TestNewApplicationXML: POST apps/new-application answers YARN's
// <NewApplication> when asked for XML.
func TestNewApplicationXML(t *testing.T) {
	h := newTestHandler(writableBackend(), adminKey, nil)
	a := serve(h, http.MethodPost, "/ws/v1/cluster/apps/new-application", "", "Accept", "application/xml")
	if a.code != http.StatusOK || a.contentType() != contentTypeXML {
		t.Fatalf("%d %q %s", a.code, a.contentType(), a.body)
	}
	if root := xmlRoot(t, a.body); root != "NewApplication" {
		t.Errorf("root <%s>, want <NewApplication>", root)
	}
	var x dao.NewApplication
	decodeXMLDocument(t, a.body, &x)
	j := serve(h, http.MethodPost, "/ws/v1/cluster/apps/new-application", "")
	var jd dao.NewApplication
	decode(t, j, &jd)
	if !strings.HasPrefix(x.ApplicationID, "application_") || x.ApplicationID == jd.ApplicationID ||
		x.MaximumResourceCapability != jd.MaximumResourceCapability || x.MaximumResourceCapability.Memory == 0 {
		t.Errorf("XML %+v, JSON %+v", x, jd)
	}
}
