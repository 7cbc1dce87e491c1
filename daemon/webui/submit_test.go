package webui

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/loomrm/loom/daemon/webui/dao"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// submitBody is the body of the Hadoop docs' example submission, in
// YARN's JSON, with the one-element lists flattened as Jersey writes
// them.
const submitBody = `{
  "application-id": "application_1700000000000_0006",
  "application-name": "distshell",
  "queue": "etl",
  "priority": 3,
  "am-container-spec": {
    "local-resources": {"entry": [
      {"key": "AppMaster.jar", "value": {"resource": "hdfs://nn:9000/user/eve/AppMaster.jar",
        "type": "FILE", "visibility": "APPLICATION", "size": 43004, "timestamp": 1405452071209}},
      {"key": "lib", "value": {"resource": "file:///opt/lib.tgz", "type": "archive", "visibility": "public"}}
    ]},
    "commands": {"command": "{{JAVA_HOME}}/bin/java -Xmx10m AppMaster 1><LOG_DIR>/AppMaster.stdout"},
    "environment": {"entry": [{"key": "DISTRIBUTEDSHELLSCRIPTLEN", "value": "6"}, {"key": "EMPTY"}]},
    "service-data": {"entry": {"key": "shuffle", "value": "AAEC"}},
    "application-acls": {"entry": [{"key": "VIEW_APP", "value": "eve ops"}]}
  },
  "unmanaged-AM": false,
  "max-app-attempts": 2,
  "resource": {"memory": 1024, "vCores": 1},
  "application-type": "YARN",
  "keep-containers-across-application-attempts": true,
  "application-tags": {"tag": ["nightly", "etl"]},
  "attempt-failures-validity-interval": 3600000
}`

func TestNewApplicationThenSubmit(t *testing.T) {
	f := writableBackend()
	h := newTestHandler(f, adminKey, nil)
	a := serve(h, http.MethodPost, "/ws/v1/cluster/apps/new-application?user.name=eve", "")
	if a.code != http.StatusOK || a.contentType() != "application/json" {
		t.Fatalf("new-application: %d %q %s", a.code, a.contentType(), a.body)
	}
	var na dao.NewApplication
	decode(t, a, &na)
	want := dao.NewApplication{ApplicationID: "application_1700000000000_0006",
		MaximumResourceCapability: dao.Resource{Memory: 8192, VCores: 4}}
	if na != want {
		t.Fatalf("new-application %+v, want %+v", na, want)
	}
	if ci := f.lastCall("GetNewApplication"); ci.User != "eve" || ci.Method != "createNewApplication" {
		t.Errorf("new-application call %+v", ci)
	}

	a = serve(h, http.MethodPost, "/ws/v1/cluster/apps?user.name=eve", submitBody, "Content-Type", "application/json")
	if a.code != http.StatusAccepted {
		t.Fatalf("submit: %d %s", a.code, a.body)
	}
	if loc := a.header.Get("Location"); loc != "http://example.com/ws/v1/cluster/apps/application_1700000000000_0006" {
		t.Errorf("Location %q", loc)
	}
	if len(f.submits) != 1 {
		t.Fatalf("%d submissions reached the RM", len(f.submits))
	}
	wantCtx := &pb.ApplicationSubmissionContextProto{
		ApplicationId:   appIDProto(6),
		ApplicationName: proto.String("distshell"), Queue: proto.String("etl"),
		Priority: &pb.PriorityProto{Priority: proto.Int32(3)},
		AmContainerSpec: &pb.ContainerLaunchContextProto{
			LocalResources: []*pb.StringLocalResourceMapProto{
				{Key: proto.String("AppMaster.jar"), Value: &pb.LocalResourceProto{
					Resource: &pb.URLProto{Scheme: proto.String("hdfs"), Host: proto.String("nn"), Port: proto.Int32(9000),
						File: proto.String("/user/eve/AppMaster.jar")},
					Size: proto.Int64(43004), Timestamp: proto.Int64(1405452071209),
					Type: pb.LocalResourceTypeProto_FILE.Enum(), Visibility: pb.LocalResourceVisibilityProto_APPLICATION.Enum()}},
				{Key: proto.String("lib"), Value: &pb.LocalResourceProto{
					Resource: &pb.URLProto{Scheme: proto.String("file"), File: proto.String("/opt/lib.tgz")},
					Type:     pb.LocalResourceTypeProto_ARCHIVE.Enum(), Visibility: pb.LocalResourceVisibilityProto_PUBLIC.Enum()}},
			},
			Environment: []*pb.StringStringMapProto{
				{Key: proto.String("DISTRIBUTEDSHELLSCRIPTLEN"), Value: proto.String("6")},
				{Key: proto.String("EMPTY"), Value: proto.String("")}},
			Command:     []string{"{{JAVA_HOME}}/bin/java -Xmx10m AppMaster 1><LOG_DIR>/AppMaster.stdout"},
			ServiceData: []*pb.StringBytesMapProto{{Key: proto.String("shuffle"), Value: []byte{0, 1, 2}}},
			Application_ACLs: []*pb.ApplicationACLMapProto{{AccessType: pb.ApplicationAccessTypeProto_APPACCESS_VIEW_APP.Enum(),
				Acl: proto.String("eve ops")}},
		},
		UnmanagedAm: proto.Bool(false), MaxAppAttempts: proto.Int32(2),
		Resource:        &pb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		ApplicationType: proto.String("YARN"), KeepContainersAcrossApplicationAttempts: proto.Bool(true),
		ApplicationTags: []string{"nightly", "etl"}, AttemptFailuresValidityInterval: proto.Int64(3600000),
	}
	if d := cmp.Diff(wantCtx, f.submits[0], protocmp.Transform()); d != "" {
		t.Errorf("submission context (-want +got):\n%s", d)
	}
	if ci := f.lastCall("SubmitApplication"); ci.User != "eve" || ci.Method != "submitApplication" || ci.Protocol != "REST" {
		t.Errorf("submit call %+v", ci)
	}

	// The app is there, as its submitter.
	a = serve(h, http.MethodGet, "/ws/v1/cluster/apps/application_1700000000000_0006", "")
	var app dao.AppResponse
	decode(t, a, &app)
	if app.App.State != "ACCEPTED" || app.App.User != "eve" || app.App.Queue != "etl" || app.App.Name != "distshell" ||
		app.App.ApplicationTags != "nightly,etl" {
		t.Errorf("submitted app %+v", app.App)
	}

	// The same id again: the RM has not issued it any more.
	a = serve(h, http.MethodPost, "/ws/v1/cluster/apps", submitBody)
	if re := remoteException(t, a, http.StatusBadRequest, "BadRequestException"); !strings.Contains(re.Message, "was not issued") {
		t.Errorf("resubmission: %q", re.Message)
	}
}

// TestSubmitMinimal: lists may come as single elements, and the tags as
// a bare list.
func TestSubmitMinimal(t *testing.T) {
	f := writableBackend()
	h := newTestHandler(f, adminKey, nil)
	serve(h, http.MethodPost, "/ws/v1/cluster/apps/new-application", "")
	body := `{"application-id":"application_1700000000000_0006","queue":"default",
		"am-container-spec":{"local-resources":{"entry":{"key":"run.sh","value":{"resource":"/tmp/run.sh"}}},
		"commands":{"command":["sh run.sh","true"]},"environment":{"entry":{"key":"A","value":"1"}}},
		"application-tags":["x"]}`
	if a := serve(h, http.MethodPost, "/ws/v1/cluster/apps", body); a.code != http.StatusAccepted {
		t.Fatalf("%d %s", a.code, a.body)
	}
	sc := f.submits[0]
	lr := sc.GetAmContainerSpec().GetLocalResources()
	if len(lr) != 1 || lr[0].GetKey() != "run.sh" || lr[0].GetValue().GetResource().Scheme != nil ||
		lr[0].GetValue().GetResource().GetFile() != "/tmp/run.sh" || lr[0].GetValue().GetType() != pb.LocalResourceTypeProto_FILE ||
		lr[0].GetValue().GetVisibility() != pb.LocalResourceVisibilityProto_APPLICATION {
		t.Errorf("local resources %v", lr)
	}
	if c := sc.GetAmContainerSpec().GetCommand(); len(c) != 2 || c[0] != "sh run.sh" {
		t.Errorf("commands %q", c)
	}
	if tags := sc.GetApplicationTags(); len(tags) != 1 || tags[0] != "x" {
		t.Errorf("tags %q", tags)
	}
	if sc.ApplicationName != nil || sc.Resource != nil || sc.Priority != nil {
		t.Errorf("fields left out were set: %v", sc)
	}
}

func TestSubmitErrors(t *testing.T) {
	h := newTestHandler(writableBackend(), adminKey, nil)
	for _, tc := range []struct{ body, message string }{
		{``, "the request body is empty"},
		{`{"application-id": "application_1700000000000_0006",}`, "malformed JSON at offset 53: invalid character '}'"},
		{`{"application-id": "application_17`, "malformed JSON: the body ends inside a value at offset"},
		{`{} {}`, "unexpected data after the JSON value at offset 2"},
		{`[1]`, "the body must be a JSON object, got array"},
		{`{}`, "application-id is missing"},
		{`{"application-id": ""}`, "application-id is missing"},
		{`{"application-id": "app_1_2"}`, `application-id: "app_1_2" is not an application id`},
		{`{"application-id": 6}`, "application-id: expected a string, got number at offset 20"},
		{`{"application-id": "application_1700000000000_0006", "resource": {"memory": "1G"}}`,
			"resource.memory: expected an integer, got string"},
		{`{"application-id": "application_1700000000000_0006", "resource": {"memory": 1024, "vCores": -1}}`,
			"resource.vCores must be between 0 and 2147483647, got -1"},
		{`{"application-id": "application_1700000000000_0006", "priority": 1.5}`, "priority: expected an integer (32 bits), got number 1.5"},
		{`{"application-id": "application_1700000000000_0006", "max-app-attempts": -2}`, "max-app-attempts must not be negative"},
		{`{"application-id": "application_1700000000000_0006", "am-container-spec": {"local-resources": {"entry": [{"key": "a", "value": {"resource": "/a"}}, {"key": "b"}]}}}`,
			"am-container-spec.local-resources.entry[1].value is missing"},
		{`{"application-id": "application_1700000000000_0006", "am-container-spec": {"local-resources": {"entry": [{"value": {"resource": "/a"}}]}}}`,
			"am-container-spec.local-resources.entry[0].key is missing"},
		{`{"application-id": "application_1700000000000_0006", "am-container-spec": {"local-resources": {"entry": {"key": "a", "value": {"resource": "/a", "type": "DIR"}}}}}`,
			`am-container-spec.local-resources.entry[0].value.type: "DIR" is not a resource type`},
		{`{"application-id": "application_1700000000000_0006", "am-container-spec": {"local-resources": {"entry": [{"key": "a", "value": {"resource": "/a", "size": "big"}}]}}}`,
			"am-container-spec.local-resources.entry[0].value.size: expected an integer, got string"},
		{`{"application-id": "application_1700000000000_0006", "am-container-spec": {"local-resources": {"entry": [{"key": "a", "value": {"resource": "hdfs://nn:99999/a"}}]}}}`,
			`am-container-spec.local-resources.entry[0].value.resource: "hdfs://nn:99999/a": port "99999" is not a port number`},
		{`{"application-id": "application_1700000000000_0006", "am-container-spec": {"local-resources": {"entry": [{"key": "a", "value": {"visibility": "PUBLIC"}}]}}}`,
			"am-container-spec.local-resources.entry[0].value.resource is missing"},
		{`{"application-id": "application_1700000000000_0006", "am-container-spec": {"environment": {"entry": [{"key": "A", "value": 1}]}}}`,
			"am-container-spec.environment.entry[0].value: expected a string, got number"},
		{`{"application-id": "application_1700000000000_0006", "am-container-spec": {"environment": {"entry": "A=1"}}}`,
			"am-container-spec.environment.entry: expected an object, got string"},
		{`{"application-id": "application_1700000000000_0006", "am-container-spec": {"commands": {"command": [1]}}}`,
			"am-container-spec.commands.command[0]: expected a string, got number"},
		{`{"application-id": "application_1700000000000_0006", "am-container-spec": {"service-data": {"entry": [{"key": "s", "value": "!!"}]}}}`,
			"am-container-spec.service-data.entry[0].value: not base64"},
		{`{"application-id": "application_1700000000000_0006", "am-container-spec": {"application-acls": {"entry": [{"key": "READ", "value": "x"}]}}}`,
			`am-container-spec.application-acls.entry[0].key: "READ" is not an access type`},
		{`{"application-id": "application_1700000000000_0006", "application-tags": {"tag": [1]}}`,
			"application-tags.tag[0]: expected a string, got number"},
		{`{"application-id": "application_1700000000000_0006", "application-tags": 7}`,
			"application-tags: expected a string, got number"},
	} {
		a := serve(h, http.MethodPost, "/ws/v1/cluster/apps", tc.body, "Content-Type", "application/json")
		re := remoteException(t, a, http.StatusBadRequest, "BadRequestException")
		if !strings.Contains(re.Message, tc.message) {
			t.Errorf("%s:\n  message %q\n  does not say %q", tc.body, re.Message, tc.message)
		}
	}
	// XML is read as the same document: an empty one lacks the same id.
	a := serve(h, http.MethodPost, "/ws/v1/cluster/apps", "<application-submission-context/>", "Content-Type", "application/xml")
	if re := remoteException(t, a, http.StatusBadRequest, "BadRequestException"); !strings.Contains(re.Message, "application-id") {
		t.Errorf("XML: %q", re.Message)
	}
	// Only a body sent as JSON is read: no other site's form or script can
	// post one without the browser asking first.
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "json"} {
		a := serve(h, http.MethodPost, "/ws/v1/cluster/apps", submitBody, "Content-Type", ct)
		remoteException(t, a, http.StatusUnsupportedMediaType, "NotSupportedException")
		a = serve(h, http.MethodPut, "/ws/v1/cluster/apps/application_1700000000000_0001/state", `{"state":"KILLED"}`, "Content-Type", ct)
		remoteException(t, a, http.StatusUnsupportedMediaType, "NotSupportedException")
	}
	if a := serve(h, http.MethodGet, "/ws/v1/cluster/apps/application_1700000000000_0001/state", ""); string(a.body) != `{"state":"RUNNING"}` {
		t.Errorf("a refused body changed the app: %s", a.body)
	}
	a = serve(h, http.MethodPost, "/ws/v1/cluster/apps", `{"application-id":"`+strings.Repeat("a", maxBody)+`"}`)
	if re := remoteException(t, a, http.StatusBadRequest, "BadRequestException"); !strings.Contains(re.Message, "larger than 1048576 bytes") {
		t.Errorf("large body: %q", re.Message)
	}
}

// submitBodyXML is submitBody as YARN's XML.
const submitBodyXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<application-submission-context>
  <application-id>application_1700000000000_0006</application-id>
  <application-name>distshell</application-name>
  <queue>etl</queue>
  <priority>3</priority>
  <am-container-spec>
    <local-resources>
      <entry><key>AppMaster.jar</key><value><resource>hdfs://nn:9000/user/eve/AppMaster.jar</resource>
        <type>FILE</type><visibility>APPLICATION</visibility><size>43004</size><timestamp>1405452071209</timestamp></value></entry>
      <entry><key>lib</key><value><resource>file:///opt/lib.tgz</resource><type>archive</type><visibility>public</visibility></value></entry>
    </local-resources>
    <commands><command>{{JAVA_HOME}}/bin/java -Xmx10m AppMaster 1&gt;&lt;LOG_DIR&gt;/AppMaster.stdout</command></commands>
    <environment><entry><key>DISTRIBUTEDSHELLSCRIPTLEN</key><value>6</value></entry><entry><key>EMPTY</key></entry></environment>
    <service-data><entry><key>shuffle</key><value>AAEC</value></entry></service-data>
    <application-acls><entry><key>VIEW_APP</key><value>eve ops</value></entry></application-acls>
  </am-container-spec>
  <unmanaged-AM>false</unmanaged-AM>
  <max-app-attempts>2</max-app-attempts>
  <resource><memory>1024</memory><vCores>1</vCores></resource>
  <application-type>YARN</application-type>
  <keep-containers-across-application-attempts>true</keep-containers-across-application-attempts>
  <application-tags><tag>nightly</tag><tag>etl</tag></application-tags>
  <attempt-failures-validity-interval>3600000</attempt-failures-validity-interval>
</application-submission-context>`

// TestSubmitXML: YARN's XML submission gives the RM the same submission
// context as its JSON; bad XML is a 400 that says what is wrong.
func TestSubmitXML(t *testing.T) {
	submit := func(body, ct string) (*fakeBackend, answer) {
		f := writableBackend()
		h := newTestHandler(f, adminKey, nil)
		if a := serve(h, http.MethodPost, "/ws/v1/cluster/apps/new-application?user.name=eve", ""); a.code != http.StatusOK {
			t.Fatalf("new-application: %d %s", a.code, a.body)
		}
		return f, serve(h, http.MethodPost, "/ws/v1/cluster/apps?user.name=eve", body, "Content-Type", ct)
	}
	fj, aj := submit(submitBody, "application/json")
	fx, ax := submit(submitBodyXML, "application/xml")
	if aj.code != http.StatusAccepted || ax.code != http.StatusAccepted || len(fj.submits) != 1 || len(fx.submits) != 1 {
		t.Fatalf("JSON %d %s, XML %d %s", aj.code, aj.body, ax.code, ax.body)
	}
	if d := cmp.Diff(fj.submits[0], fx.submits[0], protocmp.Transform()); d != "" {
		t.Errorf("the XML submission differs from the JSON one (-json +xml):\n%s", d)
	}
	// One tag and one command are lists of one, as in JSON.
	one := strings.Replace(submitBodyXML, "<tag>etl</tag>", "", 1)
	if f, a := submit(one, "application/xml; charset=utf-8"); a.code != http.StatusAccepted ||
		strings.Join(f.submits[0].GetApplicationTags(), ",") != "nightly" {
		t.Errorf("one tag: %d %s", a.code, a.body)
	}
	for _, tc := range []struct{ body, message string }{
		{strings.Replace(submitBodyXML, "<priority>3</priority>", "<priority>high</priority>", 1), `<priority>: expected a number, got "high"`},
		{strings.Replace(submitBodyXML, "<unmanaged-AM>false</unmanaged-AM>", "<unmanaged-AM>no</unmanaged-AM>", 1), "<unmanaged-AM>: expected true or false"},
		{"<application-submission/>", "root element is <application-submission>, want <application-submission-context>"},
		{`<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><application-submission-context/>`, "directive is not taken"},
		{"<application-submission-context>" + strings.Repeat("<a>", 40) + strings.Repeat("</a>", 40) + "</application-submission-context>", "nests deeper than"},
		{"<application-submission-context><queue>x</queue>", "malformed XML"},
		{strings.Replace(submitBodyXML, "<max-app-attempts>2</max-app-attempts>", "<max-app-attempts>99999999999</max-app-attempts>", 1), "max-app-attempts"},
	} {
		_, a := submit(tc.body, "application/xml")
		re := remoteException(t, a, http.StatusBadRequest, "BadRequestException")
		if !strings.Contains(re.Message, tc.message) {
			t.Errorf("%.80s...: message %q does not say %q", tc.body, re.Message, tc.message)
		}
	}
}
