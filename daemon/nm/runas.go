package nm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// Running containers as a user, as YARN's LinuxContainerExecutor does
// when the cluster is not secure (yarn.nodemanager.container-executor.class
// names it): every container as one local user
// (yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user,
// "nobody") while nonsecure-mode.limit-users is true, YARN's default, or
// as the user who submitted the app when it is false. Its working and log
// directories, its localised files and its tokens become that user's; the
// NodeManager must run as root to do it. As container-executor.cfg does,
// root and the system users are refused: users below min.user.id (1000)
// unless allowed.system.users names them, and banned.users (the Hadoop
// service users). Without the LinuxContainerExecutor, containers run as
// the NodeManager's own user, as YARN's DefaultContainerExecutor.

// Keys of the run-as settings.
const (
	keyExecutorClass = "yarn.nodemanager.container-executor.class"
	keyLimitUsers    = "yarn.nodemanager.linux-container-executor.nonsecure-mode.limit-users"
	keyLocalUser     = "yarn.nodemanager.linux-container-executor.nonsecure-mode.local-user"
	keyUserPattern   = "yarn.nodemanager.linux-container-executor.nonsecure-mode.user-pattern"
	keyMinUID        = "loom.nodemanager.linux-container-executor.min-user-id"
	keyBannedUsers   = "loom.nodemanager.linux-container-executor.banned-users"
	keyAllowedSystem = "loom.nodemanager.linux-container-executor.allowed-system-users"
)

// runAsDefaults are the defaults of the keys above (YARN's and
// container-executor.cfg's).
var runAsDefaults = map[string]string{
	keyExecutorClass: "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor",
	keyLimitUsers:    "true",
	keyLocalUser:     "nobody",
	keyUserPattern:   `^[_.A-Za-z0-9][-@_.A-Za-z0-9]{0,255}?[$]?$`,
	keyMinUID:        "1000",
	keyBannedUsers:   "root,hdfs,yarn,mapred,bin",
	keyAllowedSystem: "",
}

// RunAs is how containers are run.
type RunAs struct {
	// Enabled: the LinuxContainerExecutor runs containers as users.
	Enabled bool
	// LimitUsers runs every container as LocalUser; otherwise as its
	// app's submitter.
	LimitUsers bool
	LocalUser  string
	Pattern    *regexp.Regexp
	MinUID     int
	Banned     []string
	Allowed    []string
}

// loadRunAs reads the run-as settings. Every error names its key.
func loadRunAs(c *hadoopconf.Conf) (RunAs, error) {
	str := func(key string) (string, error) {
		if _, set := c.Raw(key); !set {
			return runAsDefaults[key], nil
		}
		return c.String(key)
	}
	var r RunAs
	class, err := str(keyExecutorClass)
	if err != nil {
		return r, err
	}
	switch class = strings.TrimSpace(class); {
	case strings.HasSuffix(class, ".LinuxContainerExecutor"):
		r.Enabled = true
	case strings.HasSuffix(class, ".DefaultContainerExecutor"):
	default:
		return r, c.Errorf(keyExecutorClass, "%q: Loom runs the DefaultContainerExecutor (containers as the NodeManager's user) or the LinuxContainerExecutor (as users)", class)
	}
	limit, err := str(keyLimitUsers)
	if err == nil {
		r.LimitUsers, err = strconv.ParseBool(strings.TrimSpace(limit))
		if err != nil {
			err = c.Errorf(keyLimitUsers, "%q is not true or false", limit)
		}
	}
	if err != nil {
		return r, err
	}
	if r.LocalUser, err = str(keyLocalUser); err != nil {
		return r, err
	}
	r.LocalUser = strings.TrimSpace(r.LocalUser)
	pat, err := str(keyUserPattern)
	if err != nil {
		return r, err
	}
	if r.Pattern, err = regexp.Compile(pat); err != nil {
		return r, c.Errorf(keyUserPattern, "%v", err)
	}
	min, err := str(keyMinUID)
	if err != nil {
		return r, err
	}
	if r.MinUID, err = strconv.Atoi(strings.TrimSpace(min)); err != nil || r.MinUID < 0 {
		return r, c.Errorf(keyMinUID, "%q is not a user id", min)
	}
	for _, kv := range []struct {
		key string
		to  *[]string
	}{{keyBannedUsers, &r.Banned}, {keyAllowedSystem, &r.Allowed}} {
		v, err := str(kv.key)
		if err != nil {
			return r, err
		}
		for _, u := range strings.Split(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				*kv.to = append(*kv.to, u)
			}
		}
	}
	if r.Enabled && r.LimitUsers && r.LocalUser == "" {
		return r, c.Errorf(keyLocalUser, "empty: the user every container runs as")
	}
	return r, nil
}

// checkRunAs refuses to start a NodeManager that cannot switch users.
func (r RunAs) checkRunAs() error {
	if r.Enabled && os.Geteuid() != 0 {
		return fmt.Errorf("nm: %s is the LinuxContainerExecutor, which runs containers as other users, but this NodeManager runs as uid %d, not root", keyExecutorClass, os.Geteuid())
	}
	return nil
}

// runUser is who a container of submitter runs as, with its ids, or nil
// when containers run as the NodeManager's own user.
type runUser struct {
	name     string
	uid, gid uint32
	groups   []uint32
	home     string
}

// resolve finds and checks the user a container of submitter runs as.
func (r RunAs) resolve(submitter string) (*runUser, error) {
	if !r.Enabled {
		return nil, nil
	}
	name := submitter
	if r.LimitUsers {
		name = r.LocalUser
	} else if !r.Pattern.MatchString(name) {
		return nil, fmt.Errorf("user %q does not match %s (%s)", name, r.Pattern, keyUserPattern)
	}
	if slices.Contains(r.Banned, name) {
		return nil, fmt.Errorf("Requested user %s is banned (%s)", name, keyBannedUsers)
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("user %q does not exist on this node: %v", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user %q: %v", name, err)
	}
	if uid == 0 {
		return nil, fmt.Errorf("Requested user %s has id 0: containers never run as root", name)
	}
	if int(uid) < r.MinUID && !slices.Contains(r.Allowed, name) {
		return nil, fmt.Errorf("Requested user %s has id %d, which is below the minimum allowed %d (%s; %s names the system users allowed)",
			name, uid, r.MinUID, keyMinUID, keyAllowedSystem)
	}
	ru := &runUser{name: name, uid: uint32(uid), gid: uint32(gid), home: u.HomeDir}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil {
				ru.groups = append(ru.groups, uint32(g))
			}
		}
	}
	return ru, nil
}

// credential is the process credential to run as.
func (u *runUser) credential() *syscall.Credential {
	return &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: u.groups}
}

// own makes paths, and everything under them, the user's. Symlinks are
// not followed (a localised resource links to a cache owned likewise).
func (u *runUser) own(paths ...string) error {
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, int(u.uid), int(u.gid))
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot give %s to user %s: %v", p, u.name, err)
		}
	}
	return nil
}
