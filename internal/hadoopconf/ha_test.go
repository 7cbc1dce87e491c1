package hadoopconf

import (
	"slices"
	"strings"
	"testing"
)

func TestRMAddrs(t *testing.T) {
	c := New(map[string]string{"yarn.resourcemanager.address": "0.0.0.0:8032"})
	if got, err := c.RMAddrs("yarn.resourcemanager.address"); err != nil || !slices.Equal(got, []string{"0.0.0.0:8032"}) {
		t.Errorf("without HA: %v %v", got, err)
	}
	c.Set(KeyHAEnabled, "true")
	c.Set(KeyHAIDs, "rm1, rm2")
	c.Set("yarn.resourcemanager.address.rm1", "h1:9032")
	c.Set("yarn.resourcemanager.hostname.rm2", "h2")
	got, err := c.RMAddrs("yarn.resourcemanager.address")
	if err != nil || !slices.Equal(got, []string{"h1:9032", "h2:8032"}) {
		t.Errorf("with HA: %v %v, want [h1:9032 h2:8032]", got, err)
	}
	if _, err := c.RMAddrs("yarn.resourcemanager.scheduler.address"); err == nil || !strings.Contains(err.Error(), "rm1 has no address") {
		t.Errorf("rm1 without a scheduler address or hostname: %v", err)
	}
	c.Set(KeyHAIDs, "rm1")
	if _, _, err := c.HAEnabled(); err == nil || !strings.Contains(err.Error(), "at least two") {
		t.Errorf("one rm-id: %v", err)
	}
}
