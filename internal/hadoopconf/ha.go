package hadoopconf

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ResourceManager HA keys, as YARN names them.
const (
	KeyHAEnabled = "yarn.resourcemanager.ha.enabled"
	KeyHAIDs     = "yarn.resourcemanager.ha.rm-ids"
	KeyHAID      = "yarn.resourcemanager.ha.id"
)

// rmDefaultPorts are the RM's default ports by address key, for an
// rm-id that gives only yarn.resourcemanager.hostname.<id>.
var rmDefaultPorts = map[string]int{
	"yarn.resourcemanager.address":                  8032,
	"yarn.resourcemanager.scheduler.address":        8030,
	"yarn.resourcemanager.resource-tracker.address": 8031,
	"yarn.resourcemanager.webapp.address":           8088,
	"yarn.resourcemanager.admin.address":            8033,
}

// HAEnabled says whether the configuration runs several RMs
// (yarn.resourcemanager.ha.enabled) and lists their ids.
func (c *Conf) HAEnabled() (bool, []string, error) {
	if v, ok := c.Raw(KeyHAEnabled); !ok || strings.TrimSpace(v) == "" {
		return false, nil, nil
	}
	on, err := c.Bool(KeyHAEnabled)
	if err != nil || !on {
		return false, nil, err
	}
	s, err := c.String(KeyHAIDs)
	if err != nil {
		return false, nil, err
	}
	var ids []string
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) < 2 {
		return false, nil, c.errorf(KeyHAIDs, "RM HA needs at least two rm-ids, got %q", s)
	}
	return true, ids, nil
}

// RMAddrOf is one RM's address for an RM address key (its
// yarn.resourcemanager.address.<id>, or yarn.resourcemanager.hostname.<id>
// with the key's default port), as YARN's HAUtil resolves it.
func (c *Conf) RMAddrOf(key, id string) (string, error) {
	if _, ok := c.Raw(key + "." + id); ok {
		return c.Addr(key + "." + id)
	}
	host, err := c.String("yarn.resourcemanager.hostname." + id)
	if err != nil || host == "" {
		return "", c.errorf(key+"."+id, "RM %s has no address: set %s.%s or yarn.resourcemanager.hostname.%s", id, key, id, id)
	}
	port, ok := rmDefaultPorts[key]
	if !ok {
		return "", fmt.Errorf("%s is not an RM address key", key)
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// RMAddrs is where clients find the RM for an address key: with HA, every
// RM's, in rm-id order, for a client to fail over across; without, the
// one address.
func (c *Conf) RMAddrs(key string) ([]string, error) {
	on, ids, err := c.HAEnabled()
	if err != nil {
		return nil, err
	}
	if !on {
		a, err := c.Addr(key)
		if err != nil {
			return nil, err
		}
		return []string{a}, nil
	}
	var out []string
	for _, id := range ids {
		a, err := c.RMAddrOf(key, id)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
