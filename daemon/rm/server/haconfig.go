package server

import (
	"slices"
	"strings"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// HAConfig is RM high availability: several RMs, one active, elected
// through ZooKeeper (yarn.resourcemanager.ha.*).
type HAConfig struct {
	Enabled bool
	// ID is this RM's id (yarn.resourcemanager.ha.id), one of IDs
	// (yarn.resourcemanager.ha.rm-ids).
	ID  string
	IDs []string
	// ClusterID names the cluster in the election's znodes
	// (yarn.resourcemanager.cluster-id); BasePath is where they go
	// (yarn.resourcemanager.ha.automatic-failover.zk-base-path).
	ClusterID, BasePath string
	// Automatic is automatic failover through the ZooKeeper election
	// (yarn.resourcemanager.ha.automatic-failover.enabled, true); off, the
	// RMs start standby and an admin makes one active (loom haadmin).
	Automatic bool
	// Web is each RM's web address by id, for the standby's redirects;
	// Schedulers each RM's scheduler address, for AMs to fail over.
	Web, Schedulers map[string]string
}

// rmAddressKeys are the RM's addresses an rm-id gives its own of.
var rmAddressKeys = []string{"yarn.resourcemanager.address", "yarn.resourcemanager.scheduler.address",
	"yarn.resourcemanager.resource-tracker.address", "yarn.resourcemanager.webapp.address"}

// loadHA reads the HA keys; with HA on, this RM's addresses become those
// its rm-id names (yarn.resourcemanager.address.<id>, ...).
func loadHA(c *hadoopconf.Conf) (HAConfig, error) {
	on, ids, err := c.HAEnabled()
	if err != nil || !on {
		return HAConfig{}, err
	}
	h := HAConfig{Enabled: true, IDs: ids, Web: map[string]string{}, Schedulers: map[string]string{}}
	if h.ID, err = c.String(hadoopconf.KeyHAID); err != nil {
		return h, err
	}
	if h.ID = strings.TrimSpace(h.ID); !slices.Contains(ids, h.ID) {
		return h, c.Errorf(hadoopconf.KeyHAID, "%q is not one of %s %v: say which RM this is (loom rm --ha-id)", h.ID, hadoopconf.KeyHAIDs, ids)
	}
	if h.ClusterID, err = c.String("yarn.resourcemanager.cluster-id"); err != nil || strings.TrimSpace(h.ClusterID) == "" {
		return h, c.Errorf("yarn.resourcemanager.cluster-id", "RM HA needs a cluster id, the same on every RM")
	}
	if h.BasePath, err = c.String("yarn.resourcemanager.ha.automatic-failover.zk-base-path"); err != nil {
		return h, err
	}
	if h.Automatic, err = c.Bool("yarn.resourcemanager.ha.automatic-failover.enabled"); err != nil {
		return h, err
	}
	for _, key := range rmAddressKeys {
		a, err := c.RMAddrOf(key, h.ID)
		if err != nil {
			return h, err
		}
		c.Set(key, a)
	}
	for _, id := range ids {
		a, err := c.RMAddrOf("yarn.resourcemanager.webapp.address", id)
		if err != nil {
			return h, err
		}
		h.Web[id] = a
		if h.Schedulers[id], err = c.RMAddrOf("yarn.resourcemanager.scheduler.address", id); err != nil {
			return h, err
		}
	}
	return h, nil
}
