package workload

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStageInputsInJSON: "inputs" is read, validated, written back and
// copied by Clone.
func TestStageInputsInJSON(t *testing.T) {
	doc := `{"name": "scan-job", "stages": [
	  {"name": "scan", "tasks": 4, "duration_ms": 10, "demand": {"vcores": 1},
	   "inputs": ["hdfs://nn1.example.com:8020/warehouse/lineitem", "/data/dim/part-0", "hdfs:///data/x%20y", "hdfs://prod-ns/t/"]},
	  {"name": "agg", "tasks": 1, "duration_ms": 10, "demand": {"vcores": 1}, "parents": ["scan"]}]}`
	jobs, err := ParseJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"hdfs://nn1.example.com:8020/warehouse/lineitem", "/data/dim/part-0", "hdfs:///data/x%20y", "hdfs://prod-ns/t/"}
	if diff := cmp.Diff(want, jobs[0].Stages[0].Inputs); diff != "" {
		t.Errorf("scan's inputs (-want +got):\n%s", diff)
	}
	if jobs[0].Stages[1].Inputs != nil {
		t.Errorf("agg names no inputs, got %q", jobs[0].Stages[1].Inputs)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, jobs); err != nil {
		t.Fatal(err)
	}
	if strings.Count(buf.String(), `"inputs"`) != 1 {
		t.Errorf("written: %s\nwant one inputs list (agg has none)", buf.String())
	}
	back, err := ParseJSON(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(jobs, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	c := jobs[0].Clone()
	c.Stages[0].Inputs[0] = "/changed"
	if jobs[0].Stages[0].Inputs[0] == "/changed" {
		t.Error("Clone shares the inputs list")
	}
}

func TestCheckInput(t *testing.T) {
	for s, want := range map[string]Input{
		"/a":                  {Path: "/a"},
		"/":                   {Path: "/"},
		"/warehouse/t/":       {Path: "/warehouse/t/"},
		"hdfs://nn:8020/a/b":  {"nn:8020", "/a/b"},
		"hdfs://nn/a":         {"nn", "/a"},
		"hdfs:///a":           {"", "/a"},
		"HDFS://nn:9000/a":    {"nn:9000", "/a"},
		"hdfs://[::1]:8020/a": {"[::1]:8020", "/a"},
		"hdfs://[::1]/a":      {"[::1]", "/a"},
		"/a b/c":              {Path: "/a b/c"},
		"/dir/file.parquet":   {Path: "/dir/file.parquet"},
		"/a%2Fb#1":            {Path: "/a%2Fb#1"}, // as Hadoop's Path: no escapes decoded
		"hdfs://prod-ns/t/":   {"prod-ns", "/t/"},
	} {
		got, err := ParseInput(s)
		if err != nil || got != want {
			t.Errorf("ParseInput(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	tests := []struct{ in, want string }{
		{"", `input "" is empty`},
		{"  ", `input "  " is empty`},
		{"data/x", `input "data/x" is a relative path: HDFS inputs are absolute`},
		{"s3a://bucket/key", `input "s3a://bucket/key": scheme "s3a" is not HDFS`},
		{"file:///tmp/x", `input "file:///tmp/x" is a local file`},
		{"hdfs:data/x", `input "hdfs:data/x" has no absolute path`},
		{"hdfs://nn:8020", `input "hdfs://nn:8020" names no path`},
		{"hdfs://nn:99999/a", `input "hdfs://nn:99999/a": port "99999" is not a port number`},
		{"hdfs://nn:0/a", `port "0" is not a port number`},
		{"hdfs://nn:/a", `the NameNode's port is empty`},
		{"hdfs://nn:80x/a", `port "80x" is not a port number`},
		{"hdfs://:8020/a", `names a port but no NameNode host`},
		{"hdfs://[::1/a", `has no closing ]`},
		{"a:b/c", `scheme "a" is not HDFS`},
		{"hdfs://bob@nn/a", `names a user (bob@)`},
		{"/a?x=1", `has a glob pattern ("?")`},
		{"/logs/*.gz", `has a glob pattern ("*")`},
		{"/logs/{a,b}", `has a glob pattern ("{")`},
		{"/a//b", `has an empty path component (//)`},
		{"/a/../b", `has a ".." component`},
		{"/a/./b", `has a "." component`},
		{"/a/b:c", `component "b:c" has a colon`},
	}
	for _, tc := range tests {
		err := CheckInput(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckInput(%q) = %v, want it to say %q", tc.in, err, tc.want)
		}
	}
}

// TestBadInputFailsValidation: a job naming a bad input is refused, with
// the job, the stage and the input named, and the other problems too.
func TestBadInputFailsValidation(t *testing.T) {
	doc := `{"name": "j", "stages": [{"name": "scan", "tasks": 1, "duration_ms": 5, "demand": {"vcores": 1},
	  "inputs": ["/ok", "gs://b/o", "rel"]}]}`
	_, err := ParseJSON([]byte(doc))
	for _, want := range []string{`job "j": stage "scan": input "gs://b/o": scheme "gs" is not HDFS`,
		`job "j": stage "scan": input "rel" is a relative path`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseJSON = %v, want it to say %q", err, want)
		}
	}
}
