package rpc

import (
	"errors"
	"fmt"
	"net"
	"os/user"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// ClassAuthorization is Hadoop's refusal of a caller by service-level
// authorization or by the proxy-user rules.
const ClassAuthorization = "org.apache.hadoop.security.authorize.AuthorizationException"

// ACL is a Hadoop access control list (AccessControlList): "*" names
// everyone; otherwise users separated by commas, then, after a space,
// groups separated by commas. A value that starts with a space names
// groups only, and an empty one names nobody.
type ACL struct {
	all           bool
	users, groups []string
}

// ParseACL reads an ACL as Hadoop writes it.
func ParseACL(s string) ACL {
	if strings.TrimSpace(s) == "*" {
		return ACL{all: true}
	}
	users, groups, _ := strings.Cut(s, " ")
	return ACL{users: commaList(users), groups: commaList(groups)}
}

func commaList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Allows says whether the ACL names user, or one of its groups.
func (a ACL) Allows(user string, groups []string) bool {
	if a.all || slices.Contains(a.users, user) {
		return true
	}
	for _, g := range groups {
		if slices.Contains(a.groups, g) {
			return true
		}
	}
	return false
}

// Empty says whether the ACL names nobody.
func (a ACL) Empty() bool { return !a.all && len(a.users) == 0 && len(a.groups) == 0 }

// NamesGroups says whether the ACL names any group, so that a check
// needs the caller's groups.
func (a ACL) NamesGroups() bool { return len(a.groups) > 0 }

func (a ACL) String() string {
	if a.all {
		return "*"
	}
	return strings.Join(a.users, ",") + " " + strings.Join(a.groups, ",")
}

// Groups finds a user's groups.
type Groups func(user string) []string

// SystemGroups is Hadoop's default group mapping: the user's groups on
// this machine (its passwd and group databases), cached for five minutes
// as Hadoop caches them (hadoop.security.groups.cache.secs). An unknown
// user has no groups.
func SystemGroups() Groups {
	type entry struct {
		groups []string
		at     time.Time
	}
	var mu sync.Mutex
	cache := map[string]entry{}
	return func(name string) []string {
		mu.Lock()
		defer mu.Unlock()
		if e, ok := cache[name]; ok && time.Since(e.at) < 5*time.Minute {
			return e.groups
		}
		var groups []string
		if u, err := user.Lookup(name); err == nil {
			ids, _ := u.GroupIds()
			for _, id := range ids {
				if g, err := user.LookupGroupId(id); err == nil {
					groups = append(groups, g.Name)
				}
			}
		}
		cache[name] = entry{groups, time.Now()}
		return groups
	}
}

// serviceACLKeys are the hadoop-policy.xml keys of YARN's protocols
// (YarnConfiguration's YARN_SECURITY_SERVICE_AUTHORIZATION_*).
var serviceACLKeys = map[string]string{
	ApplicationClientProtocol:   "security.applicationclient.protocol.acl",
	ApplicationMasterProtocol:   "security.applicationmaster.protocol.acl",
	ResourceTrackerProtocol:     "security.resourcetracker.protocol.acl",
	ContainerManagementProtocol: "security.containermanagement.protocol.acl",
}

// Keys of core-site.xml and hadoop-policy.xml the policy reads.
const (
	KeyAuthorization  = "hadoop.security.authorization"
	KeyDefaultACL     = "security.service.authorization.default.acl"
	KeyDefaultBlocked = "security.service.authorization.default.acl.blocked"
	proxyUserPrefix   = "hadoop.proxyuser."
)

// Policy is who may call what, as a Hadoop server decides at each
// connection: the proxy-user rules (hadoop.proxyuser.<user>.users,
// .groups, .hosts in core-site.xml), always; and, when
// hadoop.security.authorization is true, the service-level ACLs of
// hadoop-policy.xml (security.<protocol>.protocol.acl and its .blocked
// list, with security.service.authorization.default.acl[.blocked] for
// the protocols not named).
type Policy struct {
	Authorization bool
	acls, blocked map[string]ACL
	defaultACL    ACL
	defaultBlock  ACL
	proxies       map[string]proxyRule
	Groups        Groups
}

type proxyRule struct {
	users ACL // users and groups it may impersonate
	hosts []*net.IPNet
	any   bool // any host
}

// PolicyFromConf reads the policy from a config holding core-site.xml and
// hadoop-policy.xml. Every error names its key.
func PolicyFromConf(c *hadoopconf.Conf, groups Groups) (*Policy, error) {
	p := &Policy{acls: map[string]ACL{}, blocked: map[string]ACL{}, proxies: map[string]proxyRule{}, Groups: groups}
	if _, set := c.Raw(KeyAuthorization); set {
		on, err := c.Bool(KeyAuthorization)
		if err != nil {
			return nil, err
		}
		p.Authorization = on
	}
	str := func(key, def string) (string, error) {
		if _, set := c.Raw(key); !set {
			return def, nil
		}
		return c.String(key)
	}
	var err error
	read := func(key, def string) ACL {
		var s string
		if err == nil {
			s, err = str(key, def)
		}
		return ParseACL(s)
	}
	p.defaultACL = read(KeyDefaultACL, "*")
	p.defaultBlock = read(KeyDefaultBlocked, "")
	for proto, key := range serviceACLKeys {
		p.acls[proto] = read(key, p.defaultACL.String())
		p.blocked[proto] = read(key+".blocked", p.defaultBlock.String())
	}
	if err != nil {
		return nil, err
	}
	for _, key := range c.Keys(proxyUserPrefix) {
		rest := strings.TrimPrefix(key, proxyUserPrefix)
		i := strings.LastIndex(rest, ".")
		if i <= 0 {
			continue
		}
		real, what := rest[:i], rest[i+1:]
		v, err := c.String(key)
		if err != nil {
			return nil, err
		}
		r := p.proxies[real]
		switch what {
		case "users":
			u := ParseACL(strings.ReplaceAll(v, " ", ""))
			r.users.all, r.users.users = r.users.all || u.all, u.users
		case "groups":
			g := strings.ReplaceAll(v, " ", "")
			if g == "*" {
				r.users.all = true
			} else {
				r.users.groups = commaList(g)
			}
		case "hosts":
			for _, h := range commaList(v) {
				if h == "*" {
					r.any = true
					continue
				}
				nets, err := hostNets(h)
				if err != nil {
					return nil, c.Errorf(key, "%v", err)
				}
				r.hosts = append(r.hosts, nets...)
			}
		default:
			continue
		}
		p.proxies[real] = r
	}
	return p, nil
}

// hostNets reads one entry of a proxy user's hosts: an IP, a CIDR range,
// or a host name, resolved now as Hadoop's MachineList does.
func hostNets(h string) ([]*net.IPNet, error) {
	if _, n, err := net.ParseCIDR(h); err == nil {
		return []*net.IPNet{n}, nil
	}
	ips := []net.IP{net.ParseIP(h)}
	if ips[0] == nil {
		var err error
		if ips, err = net.LookupIP(h); err != nil {
			return nil, fmt.Errorf("host %q: %v", h, err)
		}
	}
	var out []*net.IPNet
	for _, ip := range ips {
		bits := 128
		if ip.To4() != nil {
			ip, bits = ip.To4(), 32
		}
		out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
	}
	return out, nil
}

func (p *Policy) groupsOf(user string) []string {
	if p.Groups == nil {
		return nil
	}
	return p.Groups(user)
}

// authorize decides a connection as Hadoop's Server.authorizeConnection
// does: a real user acting for another (not by token) must be allowed to
// by the proxy-user rules, then the effective user must pass the
// protocol's ACL. auth names the method (SIMPLE, TOKEN) for the message.
func (p *Policy) authorize(user, realUser, auth, protocol string, remote net.Addr) *RemoteError {
	if realUser != "" && realUser != user && auth != "TOKEN" {
		r, ok := p.proxies[realUser]
		if !ok || !r.users.Allows(user, p.groupsIfNeeded(r.users, user)) {
			return Errorf(ClassAuthorization, "User: %s is not allowed to impersonate %s", realUser, user)
		}
		ip := remoteIP(remote)
		allowed := r.any
		for _, n := range r.hosts {
			allowed = allowed || ip != nil && n.Contains(ip)
		}
		if !allowed {
			return Errorf(ClassAuthorization, "Unauthorized connection for super-user: %s from IP %s", realUser, ip)
		}
	}
	if !p.Authorization {
		return nil
	}
	acl, ok := p.acls[protocol]
	if !ok {
		acl = p.defaultACL
	}
	blocked, ok := p.blocked[protocol]
	if !ok {
		blocked = p.defaultBlock
	}
	var groups []string
	if acl.NamesGroups() || blocked.NamesGroups() {
		groups = p.groupsOf(user)
	}
	if !acl.Allows(user, groups) || blocked.Allows(user, groups) {
		who := fmt.Sprintf("%s (auth:%s)", user, auth)
		if realUser != "" && realUser != user {
			who = fmt.Sprintf("%s (auth:PROXY) via %s (auth:%s)", user, realUser, auth)
		}
		return Errorf(ClassAuthorization, "User %s is not authorized for protocol interface %s, expected client Kerberos principal is null",
			who, protocol)
	}
	return nil
}

func (p *Policy) groupsIfNeeded(a ACL, user string) []string {
	if a.all || !a.NamesGroups() {
		return nil
	}
	return p.groupsOf(user)
}

func remoteIP(a net.Addr) net.IP {
	if t, ok := a.(*net.TCPAddr); ok {
		if v4 := t.IP.To4(); v4 != nil {
			return v4
		}
		return t.IP
	}
	return nil
}

// Keys of the RPC server's limits. Hadoop's own where it has one.
const (
	KeyMaxFrame            = "ipc.maximum.data.length"
	KeyMaxConns            = "ipc.server.max.connections"
	KeyMaxSetupFrame       = "loom.rpc.max-setup-frame-bytes"
	KeySetupTimeout        = "loom.rpc.setup-timeout-ms"
	KeyMaxConnsPerAddr     = "loom.rpc.max-connections-per-address"
	KeyMaxSetupConnsPerAdr = "loom.rpc.max-setup-connections-per-address"
	KeyCapLoopback         = "loom.rpc.limit-loopback"
	KeyIdleTimeout         = "loom.rpc.idle-timeout-ms"
)

// ServerOptionsFromConf reads a server's limits and its Policy from a
// config (core-site.xml, hadoop-policy.xml and the daemon's own file).
// A key not set keeps the default (see ServerOptions); a set one must be
// positive. Every error names its key.
func ServerOptionsFromConf(c *hadoopconf.Conf, groups Groups) (ServerOptions, error) {
	var o ServerOptions
	var errs []error
	positive := func(key string, set func(int64)) {
		if _, ok := c.Raw(key); !ok {
			return
		}
		n, err := c.Int(key)
		if err == nil && n <= 0 {
			err = c.Errorf(key, "%d must be positive", n)
		}
		if err == nil && n > 1<<31-1 {
			err = c.Errorf(key, "%d is too large", n)
		}
		if err != nil {
			errs = append(errs, err)
			return
		}
		set(n)
	}
	positive(KeyMaxFrame, func(n int64) { o.MaxFrame = int(n) })
	positive(KeyMaxConns, func(n int64) { o.MaxConns = int(n) })
	positive(KeyMaxSetupFrame, func(n int64) { o.MaxSetupFrame = int(n) })
	positive(KeySetupTimeout, func(n int64) { o.SetupTimeout = time.Duration(n) * time.Millisecond })
	positive(KeyMaxConnsPerAddr, func(n int64) { o.MaxConnsPerAddr = int(n) })
	positive(KeyMaxSetupConnsPerAdr, func(n int64) { o.MaxSetupConnsPerAddr = int(n) })
	positive(KeyIdleTimeout, func(n int64) { o.IdleTimeout = time.Duration(n) * time.Millisecond })
	if _, ok := c.Raw(KeyCapLoopback); ok {
		v, err := c.Bool(KeyCapLoopback)
		errs = append(errs, err)
		o.CapLoopback = v
	}
	if o.MaxSetupFrame > 0 && o.MaxFrame > 0 && o.MaxSetupFrame > o.MaxFrame {
		errs = append(errs, c.Errorf(KeyMaxSetupFrame, "%d is above %s (%d)", o.MaxSetupFrame, KeyMaxFrame, o.MaxFrame))
	}
	p, err := PolicyFromConf(c, groups)
	errs = append(errs, err)
	o.Policy = p
	return o, errors.Join(errs...)
}
