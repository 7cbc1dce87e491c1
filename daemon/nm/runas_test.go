package nm

import (
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomrm/loom/internal/hadoopconf"
)

const lce = "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor"

func TestLoadRunAs(t *testing.T) {
	load := func(kv ...string) (RunAs, error) {
		c := hadoopconf.New(nil)
		for i := 0; i+1 < len(kv); i += 2 {
			c.Set(kv[i], kv[i+1])
		}
		return loadRunAs(c)
	}
	r, err := load()
	if err != nil || r.Enabled {
		t.Errorf("defaults: %+v, %v; want the DefaultContainerExecutor", r, err)
	}
	r, err = load(keyExecutorClass, lce)
	if err != nil || !r.Enabled || !r.LimitUsers || r.LocalUser != "nobody" || r.MinUID != 1000 || !strings.Contains(strings.Join(r.Banned, ","), "root") {
		t.Errorf("the LinuxContainerExecutor: %+v, %v; want limit-users, nobody, min id 1000, root banned", r, err)
	}
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{keyExecutorClass, "org.example.DockerContainerExecutor"}, keyExecutorClass},
		{[]string{keyLimitUsers, "maybe"}, keyLimitUsers},
		{[]string{keyUserPattern, "(["}, keyUserPattern},
		{[]string{keyMinUID, "-3"}, keyMinUID},
		{[]string{keyExecutorClass, lce, keyLocalUser, " "}, keyLocalUser},
	} {
		if _, err := load(tc.kv...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.kv, err, tc.want)
		}
	}
}

func TestResolveRunAs(t *testing.T) {
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("this machine has no user nobody")
	}
	base := RunAs{Enabled: true, MinUID: 1000, Banned: []string{"root", "yarn"}}
	base.Pattern = mustPattern(t)
	limited := base
	limited.LimitUsers, limited.LocalUser = true, "nobody"
	allowed := base
	allowed.Allowed = []string{"daemon"}
	for _, tc := range []struct {
		name      string
		r         RunAs
		submitter string
		want      string // the user, or part of the refusal
		ok        bool
	}{
		{"limited: every app as nobody", limited, "alice", "nobody", true},
		{"as the submitter", base, "nobody", "nobody", true},
		{"root is banned", base, "root", "Requested user root is banned", false},
		{"a system user", base, "daemon", "below the minimum allowed 1000", false},
		{"a system user allowed", allowed, "daemon", "daemon", true},
		{"an unknown user", base, "no-such-user-q7", `user "no-such-user-q7" does not exist on this node`, false},
		{"a bad name", base, "../etc", "does not match", false},
		{"the default executor", RunAs{}, "alice", "", true},
	} {
		u, err := tc.r.resolve(tc.submitter)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.ok && tc.want == "" && u != nil:
			t.Errorf("%s: runs as %s, want the NM's user", tc.name, u.name)
		case tc.ok && tc.want != "" && (u == nil || u.name != tc.want):
			t.Errorf("%s: runs as %+v, want %s", tc.name, u, tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %+v, %v; want a refusal saying %q", tc.name, u, err, tc.want)
		}
	}
	if u, _ := limited.resolve("alice"); u == nil || nobody.Uid != strconv.FormatUint(uint64(u.uid), 10) {
		t.Errorf("nobody's uid %v, want %s", u, nobody.Uid)
	}
}

func mustPattern(t *testing.T) *regexp.Regexp {
	r, err := loadRunAs(hadoopconf.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	return r.Pattern
}

// TestContainersRunAsTheLocalUser: with the LinuxContainerExecutor the
// container's process is nobody's, its directories too; with
// limit-users off, an app whose submitter has no account on the node is
// refused with the reason.
func TestContainersRunAsTheLocalUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running containers as another user needs root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("this machine has no user nobody")
	}
	n, stub, cm := startRegistered(t, map[string]string{keyExecutorClass: lce})
	// The test's temporary dirs are root's alone; nobody must reach the
	// container's working dir, as on a real node's local dirs.
	for d := filepath.Dir(n.cfg.LocalDirs[0]); d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	cid := containerID(21, 1)
	start(t, cm, token(t, n, cid, 128), launch(`[ "$(id -u)" = `+nobody.Uid+` ] && [ "$(stat -c %u .)" = `+nobody.Uid+` ] && touch made-here`, nil, nil))
	if cs := stub.completed(t, cid, 10*time.Second); cs.GetExitStatus() != 0 {
		t.Errorf("the container as nobody: exit %d: %s", cs.GetExitStatus(), cs.GetDiagnostics())
	}

	n2, stub2, cm2 := startRegistered(t, map[string]string{keyExecutorClass: lce, keyLimitUsers: "false"})
	cid2 := containerID(22, 1)
	start(t, cm2, token(t, n2, cid2, 128), launch("true", nil, nil))
	cs := stub2.completed(t, cid2, 10*time.Second)
	if cs.GetExitStatus() == 0 || !strings.Contains(cs.GetDiagnostics(), `user "alice" does not exist on this node`) {
		t.Errorf("a container of alice, who has no account: exit %d: %s", cs.GetExitStatus(), cs.GetDiagnostics())
	}
}
