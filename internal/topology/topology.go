// Package topology says which rack a host is on, the way Hadoop's
// configuration names it (core-site.xml): a topology script
// (net.topology.script.file.name, org.apache.hadoop.net.ScriptBasedMapping,
// Hadoop's default) or a two-column table (net.topology.table.file.name
// with net.topology.node.switch.mapping.impl =
// org.apache.hadoop.net.TableMapping). Without either every host is on
// /default-rack, as in Hadoop.
//
// The script is run as Hadoop runs it: with up to
// net.topology.script.number.args hosts as its arguments, printing one
// rack per host, in order, separated by white space. Answers are cached
// per host, as CachedDNSToSwitchMapping does.
package topology

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// DefaultRack is Hadoop's NetworkTopology.DEFAULT_RACK.
const DefaultRack = "/default-rack"

// The keys, as Hadoop's CommonConfigurationKeysPublic spells them.
const (
	KeyImpl       = "net.topology.node.switch.mapping.impl"
	KeyScript     = "net.topology.script.file.name"
	KeyScriptArgs = "net.topology.script.number.args"
	KeyTable      = "net.topology.table.file.name"

	ScriptMapping = "org.apache.hadoop.net.ScriptBasedMapping"
	TableMapping  = "org.apache.hadoop.net.TableMapping"
)

// scriptTimeout bounds one run of the topology script.
const scriptTimeout = 30 * time.Second

// Resolver maps hosts to racks. It is safe for concurrent use.
type Resolver struct {
	script string
	args   int
	table  map[string]string // TableMapping: host -> rack

	mu    sync.Mutex
	cache map[string]string
}

// New reads the topology keys. A script that is not an executable file, a
// table that cannot be read or has a bad line, and a mapping class Loom
// cannot run (a Java class of the site's own) are errors naming the key.
func New(c *hadoopconf.Conf) (*Resolver, error) {
	r := &Resolver{cache: map[string]string{}, args: 100}
	impl, err := c.String(KeyImpl)
	if err != nil {
		return nil, err
	}
	switch impl = strings.TrimSpace(impl); impl {
	case "", ScriptMapping:
		if r.script, err = c.String(KeyScript); err != nil {
			return nil, err
		}
		if r.script = strings.TrimSpace(r.script); r.script == "" {
			return r, nil
		}
		if st, err := os.Stat(r.script); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return nil, c.Errorf(KeyScript, "%q is not an executable file", r.script)
		}
		if _, ok := c.Raw(KeyScriptArgs); ok {
			n, err := c.Int(KeyScriptArgs)
			if err != nil {
				return nil, err
			}
			if n < 1 {
				return nil, c.Errorf(KeyScriptArgs, "%d: the script takes at least one host", n)
			}
			r.args = int(n)
		}
	case TableMapping:
		path, err := c.String(KeyTable)
		if err != nil {
			return nil, err
		}
		if path = strings.TrimSpace(path); path == "" {
			return nil, c.Errorf(KeyTable, "is not set, and %s=%s needs it", KeyImpl, TableMapping)
		}
		if r.table, err = readTable(path); err != nil {
			return nil, c.Errorf(KeyTable, "%v", err)
		}
	default:
		return nil, c.Errorf(KeyImpl, "%q is a Java class Loom cannot run: use %s with %s, or %s with %s",
			impl, ScriptMapping, KeyScript, TableMapping, KeyTable)
	}
	return r, nil
}

// readTable reads a TableMapping file: "host rack" per line; blank lines
// and lines starting with # are skipped.
func readTable(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%s line %d: want \"host rack\", got %q", path, line, sc.Text())
		}
		if err := checkRack(f[1]); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", path, line, err)
		}
		t[f[0]] = f[1]
	}
	return t, sc.Err()
}

// checkRack accepts a rack as Hadoop's NodeBase.normalize does: an
// absolute path (/rack or /dc/rack), without a trailing slash.
func checkRack(rack string) error {
	if !strings.HasPrefix(rack, "/") || len(rack) > 1 && strings.HasSuffix(rack, "/") {
		return fmt.Errorf("rack %q is not an absolute path such as /dc1/rack1", rack)
	}
	return nil
}

// Source says where racks come from, for the log.
func (r *Resolver) Source() string {
	switch {
	case r.script != "":
		return KeyScript + "=" + r.script
	case r.table != nil:
		return fmt.Sprintf("%s (%d hosts)", KeyTable, len(r.table))
	}
	return "none: every host on " + DefaultRack
}

// Resolve returns each host's rack. A host the script or table does not
// place is on DefaultRack; so is every host of a script run that fails
// or answers with the wrong number of racks, and the error says why (the
// caller logs it: a node is never refused for its rack). Failed answers
// are not cached, so the next call tries again.
func (r *Resolver) Resolve(hosts []string) ([]string, error) {
	out := make([]string, len(hosts))
	var ask []string
	var at []int
	r.mu.Lock()
	for i, h := range hosts {
		if rack, ok := r.cache[h]; ok {
			out[i] = rack
			continue
		}
		switch {
		case r.table != nil:
			out[i] = DefaultRack
			if rack, ok := r.table[h]; ok {
				out[i] = rack
			}
			r.cache[h] = out[i]
		case r.script == "":
			out[i] = DefaultRack
		default:
			ask, at = append(ask, h), append(at, i)
		}
	}
	r.mu.Unlock()
	var errs []string
	for start := 0; start < len(ask); start += r.args {
		batch := ask[start:min(start+r.args, len(ask))]
		racks, err := r.runScript(batch)
		r.mu.Lock()
		for j := range batch {
			i := at[start+j]
			if err != nil {
				out[i] = DefaultRack
				continue
			}
			out[i] = racks[j]
			r.cache[batch[j]] = racks[j]
		}
		r.mu.Unlock()
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s: %s (those hosts are on %s)", KeyScript, strings.Join(errs, "; "), DefaultRack)
	}
	return out, nil
}

// Rack is Resolve for one host.
func (r *Resolver) Rack(host string) (string, error) {
	racks, err := r.Resolve([]string{host})
	return racks[0], err
}

func (r *Resolver) runScript(hosts []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.script, hosts...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		return nil, fmt.Errorf("%s %s: %v %s", r.script, strings.Join(hosts, " "), err, msg)
	}
	racks := strings.Fields(string(out))
	if len(racks) != len(hosts) {
		return nil, fmt.Errorf("%s answered %d racks for %d hosts (%s): want one per host, in order", r.script, len(racks), len(hosts), strings.Join(hosts, " "))
	}
	for _, rack := range racks {
		if err := checkRack(rack); err != nil {
			return nil, fmt.Errorf("%s: %v", r.script, err)
		}
	}
	return racks, nil
}
