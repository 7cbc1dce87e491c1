package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// restFixture is one endpoint of YARN's REST documentation, written out
// in yarnrest/ (see its README): the fields its answer has and their
// documented types.
type restFixture struct {
	file     string
	Doc      string            `json:"doc"`
	Method   string            `json:"method"`
	Path     string            `json:"path"`
	XMLRoot  string            `json:"xmlRoot"`
	Fields   map[string]string `json:"fields"`
	Optional []string          `json:"optional"`
}

func loadRESTFixtures(t *testing.T) []restFixture {
	t.Helper()
	files, err := filepath.Glob("yarnrest/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in yarnrest/: %v", err)
	}
	var out []restFixture
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fx := restFixture{file: filepath.Base(f)}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for p, typ := range fx.Fields {
			if !slices.Contains([]string{"string", "int", "long", "float", "boolean", "object", "array"}, typ) {
				t.Fatalf("%s: %s has unknown type %q", f, p, typ)
			}
		}
		out = append(out, fx)
	}
	return out
}

// optional reports whether a field, or one above it, may be absent.
func (fx restFixture) optional(path string) bool {
	norm := func(p string) string { return strings.ReplaceAll(p, "[]", "") }
	p := norm(path)
	for _, o := range fx.Optional {
		o = norm(o)
		if p == o || strings.HasPrefix(p, o+".") {
			return true
		}
	}
	return false
}

// sortedFields lists the fixture's fields, parents first.
func (fx restFixture) sortedFields() []string {
	keys := make([]string, 0, len(fx.Fields))
	for k := range fx.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkJSON walks every field of the fixture through a JSON answer: a
// required field must be there (null counts as absent) with its
// documented type; "x[]" is each element of the array x.
func (fx restFixture) checkJSON(body []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return []string{fmt.Sprintf("not JSON: %v: %.200s", err, body)}
	}
	var errs []string
	for _, path := range fx.sortedFields() {
		segs := strings.Split(path, ".")
		nodes := []any{doc}
		for i, seg := range segs {
			name, each := strings.CutSuffix(seg, "[]")
			last := i == len(segs)-1
			var next []any
			for _, n := range nodes {
				m, ok := n.(map[string]any)
				if !ok {
					continue // its parent's type is checked on its own
				}
				v, ok := m[name]
				if !ok || v == nil {
					if !fx.optional(strings.Join(segs[:i+1], ".")) {
						errs = append(errs, fmt.Sprintf("%s: missing", path))
					}
					continue
				}
				if last {
					if msg := jsonTypeError(v, fx.Fields[path]); msg != "" {
						errs = append(errs, fmt.Sprintf("%s: %s", path, msg))
					}
				}
				if each {
					arr, ok := v.([]any)
					if !ok {
						errs = append(errs, fmt.Sprintf("%s: want an array, got %T", strings.Join(segs[:i+1], "."), v))
						continue
					}
					next = append(next, arr...)
				} else {
					next = append(next, v)
				}
			}
			nodes = next
		}
	}
	return dedupe(errs)
}

func jsonTypeError(v any, typ string) string {
	switch typ {
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Sprintf("want a string, got %T %v", v, v)
		}
	case "int", "long":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Sprintf("want an integer, got %T %v", v, v)
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			return fmt.Sprintf("want an integer, got %s", n)
		}
	case "float":
		if _, ok := v.(json.Number); !ok {
			return fmt.Sprintf("want a number, got %T %v", v, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("want a boolean, got %T %v", v, v)
		}
	case "object":
		if _, ok := v.(map[string]any); !ok {
			return fmt.Sprintf("want an object, got %T", v)
		}
	case "array":
		if _, ok := v.([]any); !ok {
			return fmt.Sprintf("want an array, got %T", v)
		}
	}
	return ""
}

// xmlNode is an XML element, read generically.
type xmlNode struct {
	name  string
	attrs map[string]string // by local name
	kids  []*xmlNode
	text  string
}

func parseXMLTree(body []byte) (*xmlNode, error) {
	dec := xml.NewDecoder(bytes.NewReader(body))
	var stack []*xmlNode
	var root *xmlNode
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &xmlNode{name: tk.Name.Local, attrs: map[string]string{}}
			for _, a := range tk.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			} else if root == nil {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tk)
			}
		}
	}
	if root == nil {
		return nil, fmt.Errorf("no root element")
	}
	return root, nil
}

// checkXML walks the fixture's fields through an XML answer: its root is
// xmlRoot, a field is an element (a type may be JAXB's xsi:type
// attribute), an array's elements repeat its name, and leaves parse as
// their type.
func (fx restFixture) checkXML(body []byte) []string {
	root, err := parseXMLTree(body)
	if err != nil {
		return []string{fmt.Sprintf("not XML: %v: %.200s", err, body)}
	}
	if root.name != fx.XMLRoot {
		return []string{fmt.Sprintf("root element <%s>, want <%s>", root.name, fx.XMLRoot)}
	}
	var errs []string
	for _, path := range fx.sortedFields() {
		segs := strings.Split(path, ".")
		start := 0
		if strings.TrimSuffix(segs[0], "[]") == fx.XMLRoot {
			if len(segs) == 1 {
				continue
			}
			start = 1
		}
		nodes := []*xmlNode{root}
		for i := start; i < len(segs); i++ {
			name, _ := strings.CutSuffix(segs[i], "[]")
			last := i == len(segs)-1
			typ := fx.Fields[path]
			var next []*xmlNode
			for _, n := range nodes {
				var found []*xmlNode
				for _, k := range n.kids {
					if k.name == name {
						found = append(found, k)
					}
				}
				if last && name == "type" && len(found) == 0 {
					if _, ok := n.attrs["type"]; ok {
						continue
					}
				}
				if len(found) == 0 {
					// An empty list is no element at all in XML.
					if typ != "array" || !last {
						if !fx.optional(strings.Join(segs[:i+1], ".")) && !(strings.HasSuffix(segs[i], "[]")) {
							errs = append(errs, fmt.Sprintf("%s: no <%s> in <%s>", path, name, n.name))
						}
					}
					continue
				}
				if last {
					for _, f := range found {
						if msg := xmlTypeError(f, typ); msg != "" {
							errs = append(errs, fmt.Sprintf("%s: %s", path, msg))
						}
					}
				}
				next = append(next, found...)
			}
			nodes = next
		}
	}
	return dedupe(errs)
}

func xmlTypeError(n *xmlNode, typ string) string {
	text := strings.TrimSpace(n.text)
	switch typ {
	case "int", "long":
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return fmt.Sprintf("want an integer, got %q", text)
		}
	case "float":
		if _, err := strconv.ParseFloat(text, 64); err != nil {
			return fmt.Sprintf("want a number, got %q", text)
		}
	case "boolean":
		if text != "true" && text != "false" {
			return fmt.Sprintf("want true or false, got %q", text)
		}
	}
	return ""
}

func dedupe(errs []string) []string {
	slices.Sort(errs)
	return slices.Compact(errs)
}

// TestRESTCheckerCatchesMistakes: the checker itself fails a missing
// field, a wrong type, a non-array, and passes what is optional or right.
func TestRESTCheckerCatchesMistakes(t *testing.T) {
	fx := restFixture{XMLRoot: "apps", Fields: map[string]string{
		"apps": "object", "apps.app": "array", "apps.app[].id": "string", "apps.app[].progress": "float",
		"apps.app[].priority": "int", "apps.app[].unmanaged": "boolean", "apps.app[].tags": "string"},
		Optional: []string{"apps.app[].tags"}}
	good := `{"apps":{"app":[{"id":"a","progress":12.5,"priority":0,"unmanaged":false}]}}`
	if errs := fx.checkJSON([]byte(good)); len(errs) != 0 {
		t.Errorf("a conforming answer failed: %v", errs)
	}
	for body, want := range map[string]string{
		`{"apps":{"app":[{"progress":12.5,"priority":0,"unmanaged":false}]}}`:            "apps.app[].id: missing",
		`{"apps":{"app":[{"id":"a","progress":"12.5","priority":0,"unmanaged":false}]}}`: "apps.app[].progress: want a number",
		`{"apps":{"app":[{"id":"a","progress":1,"priority":0.5,"unmanaged":false}]}}`:    "apps.app[].priority: want an integer",
		`{"apps":{"app":{"id":"a"}}}`: "apps.app: want an array",
		`{"apps":{"app":[{"id":"a","progress":1,"priority":0,"unmanaged":"no"}]}}`: "apps.app[].unmanaged: want a boolean",
	} {
		if errs := fx.checkJSON([]byte(body)); !slices.ContainsFunc(errs, func(e string) bool { return strings.HasPrefix(e, want) }) {
			t.Errorf("%s: errors %v, want one starting %q", body, errs, want)
		}
	}
	goodXML := `<?xml version="1.0"?><apps><app><id>a</id><progress>12.5</progress><priority>0</priority><unmanaged>false</unmanaged></app></apps>`
	if errs := fx.checkXML([]byte(goodXML)); len(errs) != 0 {
		t.Errorf("a conforming XML answer failed: %v", errs)
	}
	for body, want := range map[string]string{
		`<apps><app><progress>1</progress><priority>0</priority><unmanaged>true</unmanaged></app></apps>`:           "apps.app[].id: no <id>",
		`<apps><app><id>a</id><progress>x</progress><priority>0</priority><unmanaged>true</unmanaged></app></apps>`: "apps.app[].progress: want a number",
		`<application/>`: "root element <application>",
	} {
		if errs := fx.checkXML([]byte(body)); !slices.ContainsFunc(errs, func(e string) bool { return strings.HasPrefix(e, want) }) {
			t.Errorf("%s: errors %v, want one starting %q", body, errs, want)
		}
	}
}

// TestRESTConformance walks every endpoint documented in yarnrest/
// against a running RM and NodeManager, in JSON and in XML, and checks
// each documented field's name and type. An app runs throughout, so that
// apps, attempts, containers and the NM's resources are not empty.
func TestRESTConformance(t *testing.T) {
	fixtures := loadRESTFixtures(t)
	c := startCluster(t, 1, "-D", "loom.webapp.rest-write.enabled=true", "-D", "yarn.scheduler.minimum-allocation-mb=64")
	fair := startCluster(t, 0, "-D", "yarn.resourcemanager.scheduler.class=org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler")
	// A stock AM registers, asks for a container and starts it, so that
	// the app is RUNNING and has a task and grants to show.
	id := c.submit(t, "conformance", handOverCredentials(c.dir))
	am := stockAMAttempt(t, c, id, 1)
	am.register()
	var granted []*pb.ContainerProto
	c.waitFor(t, "a task container", func() bool {
		granted = append(granted, am.allocate(ask(1, 128)).GetAllocatedContainers()...)
		return len(granted) > 0
	})
	task := granted[0]
	if _, err := am.cm(nodeAddr(task.GetNodeId())).StartContainers(context.Background(), startReq(task, "sleep 60")); err != nil {
		t.Fatal(err)
	}
	rep := c.waitState(t, id, pb.YarnApplicationStateProto_RUNNING)
	app := rpc.AppIDString(id)
	attemptID := rep.GetCurrentApplicationAttemptId()
	at, err := c.ac.GetApplicationAttemptReport(context.Background(), &pb.GetApplicationAttemptReportRequestProto{ApplicationAttemptId: attemptID})
	if err != nil {
		t.Fatal(err)
	}
	nodes := c.nodes(t)
	if len(nodes) != 1 {
		t.Fatalf("nodes %v", nodes)
	}
	nodeID := nodeAddr(nodes[0].GetNodeId())
	nmWeb := "http://" + nodes[0].GetHttpAddress()
	vars := strings.NewReplacer("{appid}", app, "{appattemptid}", rpc.AttemptIDString(attemptID),
		"{containerid}", rpc.ContainerIDString(at.GetApplicationAttemptReport().GetAmContainerId()),
		"{nodeid}", nodeID, "{type}", "LIFETIME")
	// The NM's view of the AM container shows up within a heartbeat or
	// two of the RM's.
	c.waitFor(t, "the NM to list the AM container", func() bool {
		resp, err := http.Get(nmWeb + "/ws/v1/node/containers")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return bytes.Contains(b, []byte(rpc.ContainerIDString(at.GetApplicationAttemptReport().GetAmContainerId())))
	})
	// The NM has measured itself once the monitor has run.
	time.Sleep(3500 * time.Millisecond)

	for _, fx := range fixtures {
		t.Run(fx.file, func(t *testing.T) {
			base := "http://" + c.web
			switch {
			case strings.HasPrefix(fx.Path, "/ws/v1/node"):
				base = nmWeb
			case fx.file == "scheduler-fair.json":
				base = "http://" + fair.web
			}
			path := vars.Replace(fx.Path)
			method, body, status := fx.Method, "", http.StatusOK
			switch {
			case fx.file == "error.json":
				body, status = `{"state":"NOT-A-STATE"}`, http.StatusBadRequest
			case fx.Method != http.MethodGet && fx.Method != http.MethodPost:
				t.Fatalf("%s: no request written for %s", fx.file, fx.Method)
			}
			for _, asXML := range []bool{false, true} {
				req, err := http.NewRequest(method, base+path, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				q := req.URL.Query()
				q.Set("user.name", "tester")
				req.URL.RawQuery = q.Encode()
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				format := "JSON"
				if asXML {
					req.Header.Set("Accept", "application/xml")
					format = "XML"
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != status {
					t.Errorf("%s %s in %s: status %d, want %d: %.300s", method, path, format, resp.StatusCode, status, b)
					continue
				}
				check := fx.checkJSON
				if asXML {
					check = fx.checkXML
				}
				for _, e := range check(b) {
					t.Errorf("%s (%s) in %s: %s", fx.file, fx.Doc, format, e)
				}
			}
		})
	}
}
