package nm

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// containerEnv is a container's environment, as YARN's launch script
// builds it: the NM's own environment, then the launch context's
// variables (with {{VAR}} and <CPS> expanded as YARN does, and $VAR
// references resolved against the rest), then the variables the NM
// always sets, which a launch context cannot override.
func (n *NodeManager) containerEnv(c *container) []string {
	forced := map[string]string{
		"CONTAINER_ID":    c.idStr,
		"NM_HOST":         n.nodeID.GetHost(),
		"NM_PORT":         strconv.Itoa(int(n.nodeID.GetPort())),
		"NM_HTTP_PORT":    strconv.Itoa(n.httpPort),
		"LOCAL_DIRS":      strings.Join(c.appDirs, ","),
		"LOCAL_USER_DIRS": strings.Join(n.userDirs(c.user), ","),
		"LOG_DIRS":        strings.Join(c.logDirs, ","),
		"USER":            c.user,
		"LOGNAME":         c.user,
		"HOME":            n.cfg.UserHomeDir, // YARN's, as it is: not per user
		"PWD":             c.workDir,
	}
	if n.cfg.ConfDir != "" {
		forced["HADOOP_CONF_DIR"] = n.cfg.ConfDir
	}

	base := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			base[k] = v
		}
	}
	user := map[string]string{}
	var order []string
	for _, kv := range c.launch.GetEnvironment() {
		k := kv.GetKey()
		if k == "" || strings.ContainsAny(k, "=\x00") {
			continue
		}
		if _, ok := user[k]; !ok {
			order = append(order, k)
		}
		user[k] = expandMarkers(kv.GetValue())
	}

	// Resolve $VAR in the launch context's values in dependency order, as
	// YARN orders its exports; a cycle resolves to what the shell would
	// see, the NM's value or nothing.
	resolved := map[string]string{}
	visiting := map[string]bool{}
	var lookup func(name string) string
	resolve := func(k string) string {
		if v, ok := resolved[k]; ok {
			return v
		}
		visiting[k] = true
		v := os.Expand(user[k], lookup)
		visiting[k] = false
		resolved[k] = v
		return v
	}
	lookup = func(name string) string {
		if v, ok := forced[name]; ok {
			return v
		}
		if _, ok := user[name]; ok && !visiting[name] {
			return resolve(name)
		}
		return base[name]
	}

	env := map[string]string{}
	for k, v := range base {
		env[k] = v
	}
	for _, k := range order {
		env[k] = resolve(k)
	}
	for k, v := range forced {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// expandMarkers is YARN's cross-platform expansion: {{VAR}} is $VAR and
// <CPS> the class path separator.
func expandMarkers(s string) string {
	s = strings.ReplaceAll(s, "<CPS>", ":")
	s = strings.ReplaceAll(s, "{{", "${")
	return strings.ReplaceAll(s, "}}", "}")
}

// containerCommand is the launch context's command joined with spaces,
// with <LOG_DIR> (and {{LOG_DIR}}) the container's log dir, as YARN
// expands it.
func (n *NodeManager) containerCommand(c *container) string {
	cmd := strings.Join(c.launch.GetCommand(), " ")
	cmd = strings.ReplaceAll(cmd, "<LOG_DIR>", c.logDir)
	cmd = strings.ReplaceAll(cmd, "{{LOG_DIR}}", c.logDir)
	return expandMarkers(cmd)
}

// userDirs are the user's dirs under every local dir
// (<local-dir>/usercache/<user>).
func (n *NodeManager) userDirs(user string) []string {
	var ds []string
	for _, d := range n.cfg.LocalDirs {
		ds = append(ds, filepath.Join(d, "usercache", user))
	}
	return ds
}

// appDirs are the application's dirs under every local dir
// (<local-dir>/usercache/<user>/appcache/<app>).
func (n *NodeManager) appDirs(user, app string) []string {
	var ds []string
	for _, d := range n.userDirs(user) {
		ds = append(ds, filepath.Join(d, "appcache", app))
	}
	return ds
}
