package webui

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loomrm/loom/daemon/webui/dao"
	"github.com/loomrm/loom/rpc"
)

const (
	app1Path = "/ws/v1/cluster/apps/application_1700000000000_0001"
	app2Path = "/ws/v1/cluster/apps/application_1700000000000_0002"
	app3Path = "/ws/v1/cluster/apps/application_1700000000000_0003"
)

var wantContainer2 = dao.Container{ContainerID: "container_1700000000000_0002_01_000001", AllocatedMB: 1024, AllocatedVCores: 1,
	AssignedNodeID: "nm2:45454", StartedTime: clusterTS + 21_000, FinishedTime: clusterTS + 50_000, ElapsedTime: 29_000,
	LogURL:         "http://nm2:8042/node/containerlogs/container_1700000000000_0002_01_000001/bob",
	ContainerState: "COMPLETE", NodeHTTPAddress: "nm2:8042", NodeID: "nm2:45454",
	AllocatedResources: []dao.ResourceEntry{{Key: "memory-mb", Value: 1024}, {Key: "vcores", Value: 1}}}

// moreResources is every GET added for issue 17: its JSON document and
// the root element of its XML.
var moreResources = []struct {
	path string
	doc  func() any
	want any
	root string
}{
	{app2Path + "/appattempts/appattempt_1700000000000_0002_000001", func() any { return &dao.AppAttemptResponse{} },
		&dao.AppAttemptResponse{AppAttempt: dao.AppAttemptInfo{AppAttemptID: "appattempt_1700000000000_0002_000001",
			AppAttemptState: "FINISHED", AMContainerID: "container_1700000000000_0002_01_000001",
			StartedTime: clusterTS + 20_500, FinishedTime: clusterTS + 50_000}}, "appAttempt"},
	{app3Path + "/appattempts/appattempt_1700000000000_0003_000001", func() any { return &dao.AppAttemptResponse{} },
		&dao.AppAttemptResponse{AppAttempt: dao.AppAttemptInfo{AppAttemptID: "appattempt_1700000000000_0003_000001",
			AppAttemptState: "SCHEDULED", StartedTime: clusterTS + 30_500}}, "appAttempt"},
	{app2Path + "/appattempts/appattempt_1700000000000_0002_000001/containers", func() any { return &dao.ContainersResponse{} },
		&dao.ContainersResponse{Containers: dao.ContainerList{Container: []dao.Container{wantContainer2}}}, "containers"},
	{app1Path + "/appattempts/appattempt_1700000000000_0001_000001/containers", func() any { return &dao.ContainersResponse{} },
		&dao.ContainersResponse{Containers: dao.ContainerList{Container: []dao.Container{
			{ContainerID: "container_1700000000000_0001_01_000001", AllocatedMB: 1024, AllocatedVCores: 1, AssignedNodeID: "nm1:45454",
				StartedTime: clusterTS + 11_000, ElapsedTime: 89_000, ContainerState: "RUNNING", NodeHTTPAddress: "nm1:8042", NodeID: "nm1:45454",
				LogURL:             "http://nm1:8042/node/containerlogs/container_1700000000000_0001_01_000001/alice",
				AllocatedResources: []dao.ResourceEntry{{Key: "memory-mb", Value: 1024}, {Key: "vcores", Value: 1}}},
			{ContainerID: "container_1700000000000_0001_01_000008", AllocatedMB: 4096, AllocatedVCores: 1, AssignedNodeID: "nm1:45454",
				ContainerState: "NEW", NodeHTTPAddress: "nm1:8042", NodeID: "nm1:45454",
				LogURL:             "http://nm1:8042/node/containerlogs/container_1700000000000_0001_01_000008/alice",
				AllocatedResources: []dao.ResourceEntry{{Key: "memory-mb", Value: 4096}, {Key: "vcores", Value: 1}}}}}}, "containers"},
	{app2Path + "/appattempts/appattempt_1700000000000_0002_000001/containers/container_1700000000000_0002_01_000001",
		func() any { return &dao.ContainerResponse{} }, &dao.ContainerResponse{Container: wantContainer2}, "container"},
	{app1Path + "/queue", func() any { return &dao.AppQueue{} }, &dao.AppQueue{Queue: "default"}, "appqueue"},
	{app2Path + "/queue", func() any { return &dao.AppQueue{} }, &dao.AppQueue{Queue: "etl"}, "appqueue"},
	{app1Path + "/priority", func() any { return &dao.AppPriority{} }, &dao.AppPriority{Priority: 0}, "applicationpriority"},
	{app1Path + "/timeouts", func() any { return &dao.TimeoutsResponse{} }, &dao.TimeoutsResponse{Timeouts: dao.TimeoutList{
		Timeout: []dao.Timeout{{Type: "LIFETIME", ExpiryTime: "2023-11-14T22:16:40.000+0000", RemainingTimeInSeconds: 3600}}}}, "timeouts"},
	{app3Path + "/timeouts", func() any { return &dao.TimeoutsResponse{} }, &dao.TimeoutsResponse{Timeouts: dao.TimeoutList{
		Timeout: []dao.Timeout{{Type: "LIFETIME", ExpiryTime: "UNLIMITED", RemainingTimeInSeconds: -1}}}}, "timeouts"},
	{app1Path + "/timeouts/LIFETIME", func() any { return &dao.TimeoutResponse{} }, &dao.TimeoutResponse{
		Timeout: dao.Timeout{Type: "LIFETIME", ExpiryTime: "2023-11-14T22:16:40.000+0000", RemainingTimeInSeconds: 3600}}, "timeout"},
	{app3Path + "/timeouts/lifetime", func() any { return &dao.TimeoutResponse{} }, &dao.TimeoutResponse{
		Timeout: dao.Timeout{Type: "LIFETIME", ExpiryTime: "UNLIMITED", RemainingTimeInSeconds: -1}}, "timeout"},
	{"/ws/v1/cluster/appstatistics", func() any { return &dao.AppStatisticsResponse{} }, &dao.AppStatisticsResponse{
		AppStatInfo: dao.AppStatInfo{StatItem: []dao.StatItem{{State: "NEW", Type: "*", Count: 0}, {State: "NEW_SAVING", Type: "*", Count: 0}, {State: "SUBMITTED", Type: "*", Count: 0},
			{State: "ACCEPTED", Type: "*", Count: 1}, {State: "RUNNING", Type: "*", Count: 1}, {State: "FINISHED", Type: "*", Count: 1}, {State: "FAILED", Type: "*", Count: 1}, {State: "KILLED", Type: "*", Count: 1}}}}, "appStatInfo"},
	{"/ws/v1/cluster/appstatistics?states=running,failed,KILLED&applicationTypes=Loom", func() any { return &dao.AppStatisticsResponse{} },
		&dao.AppStatisticsResponse{AppStatInfo: dao.AppStatInfo{StatItem: []dao.StatItem{{State: "RUNNING", Type: "loom", Count: 1}, {State: "FAILED", Type: "loom", Count: 1},
			{State: "KILLED", Type: "loom", Count: 0}}}}, "appStatInfo"},
	{"/ws/v1/cluster/get-node-labels", func() any { return &dao.NodeLabelsInfo{} }, &dao.NodeLabelsInfo{
		NodeLabelInfo: []dao.NodeLabel{{Name: "gpu", Exclusivity: true}, {Name: "ssd"}}}, "nodeLabelsInfo"},
	{"/ws/v1/cluster/get-node-to-labels", func() any { return &dao.NodeToLabelsInfo{} }, &dao.NodeToLabelsInfo{
		NodeToLabels: dao.NodeToLabelsMap{Entry: []dao.NodeToLabelsEntry{{Key: "nm1:45454",
			Value: dao.NodeLabelsInfo{NodeLabelInfo: []dao.NodeLabel{{Name: "gpu", Exclusivity: true}}}}}}}, "nodeToLabelsInfo"},
}

// TestMoreShapes: each new resource answers YARN's document in JSON, and
// the same document under YARN's root element in XML.
func TestMoreShapes(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	for _, tc := range moreResources {
		t.Run(tc.path, func(t *testing.T) {
			a := serve(h, http.MethodGet, tc.path, "")
			if a.code != http.StatusOK || a.contentType() != "application/json" {
				t.Fatalf("status %d %s: %s", a.code, a.contentType(), a.body)
			}
			got := tc.doc()
			decode(t, a, got)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("JSON document differs (-want +got):\n%s", d)
			}
			x := serve(h, http.MethodGet, tc.path, "", "Accept", "application/xml")
			if x.code != http.StatusOK || x.contentType() != contentTypeXML {
				t.Fatalf("XML: status %d %s: %s", x.code, x.contentType(), x.body)
			}
			if root := xmlRoot(t, x.body); root != tc.root {
				t.Errorf("root element <%s>, want <%s>: %s", root, tc.root, x.body)
			}
			fromXML := tc.doc()
			decodeXMLDocument(t, x.body, fromXML)
			if d := cmp.Diff(tc.want, fromXML); d != "" {
				t.Errorf("XML document differs (-want +got):\n%s", d)
			}
		})
	}
}

// TestMoreErrors: unknown ids are YARN's 404s, ids that cannot be read
// and bad filters its 400s, in JSON and in XML.
func TestMoreErrors(t *testing.T) {
	h := newTestHandler(newFakeBackend(), adminKey, nil)
	const app99 = "/ws/v1/cluster/apps/application_1700000000000_0099"
	for _, tc := range []struct {
		path      string
		status    int
		exception string
	}{
		{app1Path + "/appattempts/appattempt_1700000000000_0001_000009", 404, "NotFoundException"},
		{app99 + "/appattempts/appattempt_1700000000000_0099_000001", 404, "NotFoundException"},
		{app1Path + "/appattempts/appattempt_bogus", 400, "BadRequestException"},
		{app1Path + "/appattempts/appattempt_1700000000000_0002_000001", 400, "BadRequestException"},
		{app1Path + "/appattempts/appattempt_1700000000000_0001_000009/containers", 404, "NotFoundException"},
		{app99 + "/appattempts/appattempt_1700000000000_0099_000001/containers", 404, "NotFoundException"},
		{app1Path + "/appattempts/appattempt_1700000000000_0001_000001/containers/container_1700000000000_0001_01_000099", 404, "NotFoundException"},
		{app1Path + "/appattempts/appattempt_1700000000000_0001_000001/containers/container_e3_1700000000000_0001_01_000008", 404, "NotFoundException"},
		{app1Path + "/appattempts/appattempt_1700000000000_0001_000001/containers/bogus", 400, "BadRequestException"},
		{app1Path + "/appattempts/appattempt_1700000000000_0001_000001/containers/container_1700000000000_0002_01_000001", 400, "BadRequestException"},
		{app99 + "/queue", 404, "NotFoundException"},
		{"/ws/v1/cluster/apps/bogus/queue", 400, "BadRequestException"},
		{app99 + "/priority", 404, "NotFoundException"},
		{app99 + "/timeouts", 404, "NotFoundException"},
		{app99 + "/timeouts/LIFETIME", 404, "NotFoundException"},
		{app1Path + "/timeouts/FOREVER", 400, "BadRequestException"},
		{"/ws/v1/cluster/appstatistics?states=bogus", 400, "BadRequestException"},
		{"/ws/v1/cluster/appstatistics?applicationTypes=loom,spark", 400, "BadRequestException"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			remoteException(t, serve(h, http.MethodGet, tc.path, ""), tc.status, tc.exception)
			x := serve(h, http.MethodGet, tc.path, "", "Accept", "application/xml")
			if x.code != tc.status || x.contentType() != contentTypeXML {
				t.Fatalf("XML: status %d %s, want %d XML: %s", x.code, x.contentType(), tc.status, x.body)
			}
			if root := xmlRoot(t, x.body); root != "RemoteException" {
				t.Errorf("XML error root <%s>: %s", root, x.body)
			}
		})
	}
}

// TestNoNodeLabels: a cluster without labels (every Loom RM) answers
// YARN's empty documents.
func TestNoNodeLabels(t *testing.T) {
	f := newFakeBackend()
	f.noLabels = true
	h := newTestHandler(f, adminKey, nil)
	for _, tc := range []struct{ path, accept, want string }{
		{"/ws/v1/cluster/get-node-labels", "", `{"nodeLabelInfo":[]}`},
		{"/ws/v1/cluster/get-node-labels", "application/xml", xmlHeader + `<nodeLabelsInfo></nodeLabelsInfo>`},
		{"/ws/v1/cluster/get-node-to-labels", "", `{"nodeToLabels":{}}`},
		{"/ws/v1/cluster/get-node-to-labels", "application/xml", xmlHeader + `<nodeToLabelsInfo><nodeToLabels></nodeToLabels></nodeToLabelsInfo>`},
	} {
		a := serve(h, http.MethodGet, tc.path, "", "Accept", tc.accept)
		if a.code != http.StatusOK || string(a.body) != tc.want {
			t.Errorf("%s (Accept %q): %d %s, want %s", tc.path, tc.accept, a.code, a.body, tc.want)
		}
	}
}

func TestParseContainerID(t *testing.T) {
	for _, s := range []string{"container_1700000000000_0001_01_000008", "container_e3_1700000000000_0012_02_1000000"} {
		id, err := parseContainerID(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := rpc.ContainerIDString(id); got != s {
			t.Errorf("%s read back as %s", s, got)
		}
	}
	for _, s := range []string{"", "container", "container_1_2_3", "container_x_1700000000000_0001_01_000008",
		"appattempt_1700000000000_0001_01_000008", "container_1700000000000_0001_01_-1", "container_e_1_2_3_4"} {
		if _, err := parseContainerID(s); err == nil {
			t.Errorf("%q was read as a container id", s)
		}
	}
}
