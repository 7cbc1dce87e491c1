package nm

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/internal/hadoopconf"
)

func TestConfigDefaultsAreYARNs(t *testing.T) {
	c := hadoopconf.New(Defaults)
	cfg, err := LoadConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Address != "0.0.0.0:0" || cfg.TrackerAddress != "0.0.0.0:8031" || cfg.HTTPPort != 8042 {
		t.Errorf("addresses %q, %q, http %d", cfg.Address, cfg.TrackerAddress, cfg.HTTPPort)
	}
	if !cfg.PmemCheck || cfg.MonitorInterval != 3*time.Second || cfg.KillDelay != 250*time.Millisecond {
		t.Errorf("pmem %v, monitor %v, kill delay %v", cfg.PmemCheck, cfg.MonitorInterval, cfg.KillDelay)
	}
	user := os.Getenv("USER")
	if user == "" {
		user = "loom"
	}
	if want := "/tmp/hadoop-" + user + "/nm-local-dir"; len(cfg.LocalDirs) != 1 || cfg.LocalDirs[0] != want {
		t.Errorf("local dirs %v, want %s", cfg.LocalDirs, want)
	}
	if len(cfg.LogDirs) != 1 || !strings.HasSuffix(cfg.LogDirs[0], "/userlogs") {
		t.Errorf("log dirs %v", cfg.LogDirs)
	}
	// -1: detected from the machine.
	if cfg.Resource[fairness.Memory] <= 0 || cfg.Resource[fairness.Memory] > cfg.Physical[fairness.Memory] {
		t.Errorf("detected memory %v MB of %v", cfg.Resource[fairness.Memory], cfg.Physical[fairness.Memory])
	}
	if cfg.Resource[fairness.VCores] != float64(runtime.NumCPU()) || cfg.Resource[fairness.VCores] <= 0 {
		t.Errorf("detected vcores %v", cfg.Resource[fairness.VCores])
	}
	if cfg.Resource[fairness.Disk] != 0 || cfg.Resource[fairness.Network] != 0 {
		t.Errorf("disk and network offered by default: %v", cfg.Resource)
	}
}

func TestConfigFromFilesAndReservedMemory(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "core-site.xml"), []byte(`<configuration>
<property><name>hadoop.tmp.dir</name><value>/data/tmp</value></property></configuration>`), 0o644)
	os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(`<configuration>
<property><name>yarn.nodemanager.hostname</name><value>node7</value></property>
<property><name>yarn.resourcemanager.hostname</name><value>rm1</value></property>
<property><name>yarn.nodemanager.resource.system-reserved-memory-mb</name><value>1024</value></property>
<property><name>yarn.nodemanager.local-dirs</name><value>file:///d1/yarn, /d2/yarn</value></property>
<property><name>loom.nodemanager.resource.network-mbps</name><value>1250</value></property>
</configuration>`), 0o644)
	c := hadoopconf.New(Defaults)
	if err := c.LoadDir(dir, ConfFiles...); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Address != "node7:0" || cfg.TrackerAddress != "rm1:8031" {
		t.Errorf("addresses %q, %q", cfg.Address, cfg.TrackerAddress)
	}
	if got := strings.Join(cfg.LocalDirs, ","); got != "/d1/yarn,/d2/yarn" {
		t.Errorf("local dirs %s", got)
	}
	if cfg.Resource[fairness.Memory] != cfg.Physical[fairness.Memory]-1024 {
		t.Errorf("memory %v with 1024 reserved of %v", cfg.Resource[fairness.Memory], cfg.Physical[fairness.Memory])
	}
	if cfg.Resource[fairness.Network] != 1250 {
		t.Errorf("network %v", cfg.Resource[fairness.Network])
	}
}

func TestBadConfigValuesNameTheKey(t *testing.T) {
	for _, tc := range []struct{ key, value, msg string }{
		{"yarn.nodemanager.resource.memory-mb", "-5", "must be positive, or -1"},
		{"yarn.nodemanager.resource.memory-mb", "0", "must be positive"},
		{"yarn.nodemanager.resource.memory-mb", "lots", "not an integer"},
		{"yarn.nodemanager.resource.cpu-vcores", "-2", "must be positive, or -1"},
		{"loom.nodemanager.resource.disk-mbps", "-1", "must not be negative"},
		{"loom.nodemanager.resource.network-mbps", "fast", "not an integer"},
		{"yarn.nodemanager.container-monitor.interval-ms", "0", "must be positive"},
		{"yarn.nodemanager.sleep-delay-before-sigkill.ms", "-1", "must not be negative"},
		{"yarn.nodemanager.pmem-check-enabled", "maybe", "not true or false"},
		{"yarn.nodemanager.address", "nohost", "not host:port"},
		{"yarn.resourcemanager.resource-tracker.address", "rm:0", "cannot be 0"},
		{"yarn.nodemanager.local-dirs", " , ", "no directory"},
		{"yarn.nodemanager.log-dirs", "hdfs://nn/logs", "only local directories"},
		{"yarn.nodemanager.resource.system-reserved-memory-mb", "999999999", "leaves none"},
	} {
		c := hadoopconf.New(Defaults)
		c.Set(tc.key, tc.value)
		_, err := LoadConfig(c)
		var he *hadoopconf.Error
		if err == nil || !errors.As(err, &he) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s=%q: got %v, want an error with %q", tc.key, tc.value, err, tc.msg)
			continue
		}
		if !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), "command line") && he.Source != "default" {
			t.Errorf("%s=%q: %v does not name the key and its source", tc.key, tc.value, err)
		}
	}
}

func TestContainerMemoryFromThePhysical(t *testing.T) {
	if got := detectContainerMemoryMB(10000, -1); got != 8000 {
		t.Errorf("80%% of 10000 MB = %d", got)
	}
	if got := detectContainerMemoryMB(10000, 3000); got != 7000 {
		t.Errorf("10000 MB less 3000 reserved = %d", got)
	}
}
