package hadoopconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const site = `<?xml version="1.0"?>
<configuration>
  <property><name>yarn.resourcemanager.hostname</name><value>rm.example</value></property>
  <property>
    <name>yarn.scheduler.maximum-allocation-mb</name>
    <value> 16384 </value>
  </property>
  <property><name>loom.scheduler.p-altruism</name><value>0.5</value></property>
  <property><name>bad.int</name><value>12x</value></property>
  <property><name>loop.a</name><value>${loop.b}</value></property>
  <property><name>loop.b</name><value>${loop.a}</value></property>
  <property><name>home</name><value>${env.LOOM_TEST_HOME}/x</value></property>
</configuration>`

func load(t *testing.T) *Conf {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	c := New(map[string]string{
		"yarn.resourcemanager.hostname":               "0.0.0.0",
		"yarn.resourcemanager.address":                "${yarn.resourcemanager.hostname}:8032",
		"yarn.scheduler.maximum-allocation-mb":        "8192",
		"yarn.nm.liveness-monitor.expiry-interval-ms": "600000",
	})
	if err := c.LoadDir(dir, "core-site.xml", "yarn-site.xml"); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestValuesDefaultsAndExpansion(t *testing.T) {
	t.Setenv("LOOM_TEST_HOME", "/home/loom")
	c := load(t)
	if a, err := c.Addr("yarn.resourcemanager.address"); err != nil || a != "rm.example:8032" {
		t.Errorf("address = %q, %v; want the file's hostname in the default", a, err)
	}
	if n, err := c.Int("yarn.scheduler.maximum-allocation-mb"); err != nil || n != 16384 {
		t.Errorf("max mb = %d, %v", n, err)
	}
	if d, err := c.Millis("yarn.nm.liveness-monitor.expiry-interval-ms"); err != nil || d != 10*time.Minute {
		t.Errorf("expiry = %v, %v", d, err)
	}
	if f, err := c.Float("loom.scheduler.p-altruism"); err != nil || f != 0.5 {
		t.Errorf("p = %v, %v", f, err)
	}
	if s, _ := c.String("home"); s != "/home/loom/x" {
		t.Errorf("env expansion = %q", s)
	}
	if c.Source("yarn.scheduler.maximum-allocation-mb") == "default" || c.Source("yarn.resourcemanager.address") != "default" {
		t.Error("sources are wrong")
	}
	c.Set("yarn.scheduler.maximum-allocation-mb", "4096")
	if n, _ := c.Int("yarn.scheduler.maximum-allocation-mb"); n != 4096 || c.Source("yarn.scheduler.maximum-allocation-mb") != "command line" {
		t.Error("Set did not override")
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	c := load(t)
	tests := []struct {
		err  error
		want string
	}{
		{func() error { _, err := c.Int("bad.int"); return err }(), "yarn-site.xml: bad.int: \"12x\" is not an integer"},
		{func() error { _, err := c.String("loop.a"); return err }(), "loop"},
		{func() error { _, err := c.Bool("bad.int"); return err }(), "bad.int: \"12x\" is not true or false"},
		{func() error { _, err := c.Addr("loom.scheduler.p-altruism"); return err }(), "loom.scheduler.p-altruism: \"0.5\" is not host:port"},
		{func() error { _, err := c.PositiveMillis("yarn.scheduler.maximum-allocation-mb"); return err }(), ""},
	}
	for i, tc := range tests {
		if tc.want == "" {
			if tc.err != nil {
				t.Errorf("%d: unexpected %v", i, tc.err)
			}
			continue
		}
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%d: err = %v, want it to contain %q", i, tc.err, tc.want)
		}
	}
}

func TestBrokenFiles(t *testing.T) {
	tests := []struct{ body, want string }{
		{"<configuration><property><name>a</name><value>1</value></property>", "yarn-site.xml:1: malformed XML"},
		{"<configuration>\n<property><value>1</value></property></configuration>", "property 1 has no <name>"},
		{"<foo/>", "not a Hadoop configuration file"},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(tc.body), 0o644)
		err := New(nil).LoadDir(dir, "yarn-site.xml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.body, err, tc.want)
		}
	}
	if err := New(nil).LoadDir("/nonexistent/conf", "yarn-site.xml"); err == nil {
		t.Error("a missing config dir loaded")
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(site)
	f.Add("<configuration><property><name>a</name><value>${a}</value></property></configuration>")
	f.Fuzz(func(t *testing.T, body string) {
		c := New(nil)
		if err := c.Load("f.xml", strings.NewReader(body)); err != nil {
			return
		}
		for _, k := range c.Keys("") {
			c.String(k)
			c.Int(k)
			c.Addr(k)
		}
	})
}
