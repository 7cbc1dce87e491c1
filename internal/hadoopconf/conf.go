// Package hadoopconf reads Hadoop's *-site.xml configuration files, the
// way an existing YARN installation keeps them, so that Loom's daemons
// start from the config dir a user already has. Values expand ${key} and
// ${env.NAME} references as Hadoop does. Every error names the file and
// the key.
package hadoopconf

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Conf is a set of properties: defaults, overlaid by the files loaded, in
// order, overlaid by values Set in code (command-line flags).
type Conf struct {
	defaults map[string]string
	values   map[string]string
	source   map[string]string // key -> file it came from
	dir      string            // the config dir LoadDir read
}

// New makes a Conf over the given defaults.
func New(defaults map[string]string) *Conf {
	return &Conf{defaults: defaults, values: map[string]string{}, source: map[string]string{}}
}

// Dir returns the config dir to use: the flag's value, else
// $HADOOP_CONF_DIR, else "" (defaults only).
func Dir(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv("HADOOP_CONF_DIR")
}

// LoadDir loads the named files (e.g. core-site.xml, yarn-site.xml) from
// dir; a missing file is skipped, a broken one is an error. An empty dir
// loads nothing.
func (c *Conf) LoadDir(dir string, files ...string) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("config dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("config dir %s is not a directory", dir)
	}
	c.dir = dir
	for _, f := range files {
		path := filepath.Join(dir, f)
		r, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = c.Load(path, r)
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

type xmlConf struct {
	XMLName    xml.Name `xml:"configuration"`
	Properties []struct {
		Name  string `xml:"name"`
		Value string `xml:"value"`
	} `xml:"property"`
}

// Load reads one *-site.xml. name is used in errors.
func (c *Conf) Load(name string, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var x xmlConf
	dec := xml.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&x); err != nil {
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%s:%d: malformed XML: %s", name, se.Line, se.Msg)
		}
		return fmt.Errorf("%s: not a Hadoop configuration file: %v", name, err)
	}
	for i, p := range x.Properties {
		key := strings.TrimSpace(p.Name)
		if key == "" {
			return fmt.Errorf("%s: property %d has no <name>", name, i+1)
		}
		c.values[key] = strings.TrimSpace(p.Value)
		c.source[key] = name
	}
	return nil
}

// ConfDir is the config dir LoadDir read, "" if none: where Hadoop finds
// files its keys name by a relative path (fair-scheduler.xml).
func (c *Conf) ConfDir() string { return c.dir }

// Set overrides a key, e.g. from a command-line flag.
func (c *Conf) Set(key, value string) {
	c.values[key] = value
	c.source[key] = "command line"
}

// Raw returns a key's unexpanded value and whether it is set or defaulted.
func (c *Conf) Raw(key string) (string, bool) {
	if v, ok := c.values[key]; ok {
		return v, true
	}
	v, ok := c.defaults[key]
	return v, ok
}

// Source says where a key's value came from: a file, the command line, or
// "default".
func (c *Conf) Source(key string) string {
	if s, ok := c.source[key]; ok {
		return s
	}
	return "default"
}

// Keys returns the keys set (not defaulted) with the given prefix.
func (c *Conf) Keys(prefix string) []string {
	var ks []string
	for k := range c.values {
		if strings.HasPrefix(k, prefix) {
			ks = append(ks, k)
		}
	}
	return ks
}

var ref = regexp.MustCompile(`\$\{([^}$]+)\}`)

// String returns a key's value with ${...} references expanded.
func (c *Conf) String(key string) (string, error) {
	v, _ := c.Raw(key)
	return c.expand(key, v, 0)
}

func (c *Conf) expand(key, v string, depth int) (string, error) {
	if depth > 20 {
		return "", c.errorf(key, "%q: variable expansion is too deep (a reference cycle?)", v)
	}
	var err error
	out := ref.ReplaceAllStringFunc(v, func(m string) string {
		name := m[2 : len(m)-1]
		if env, ok := strings.CutPrefix(name, "env."); ok {
			return os.Getenv(env)
		}
		if name == "user.name" {
			if u := os.Getenv("USER"); u != "" {
				return u
			}
			return "loom"
		}
		raw, ok := c.Raw(name)
		if !ok {
			return m // Hadoop leaves unknown references as they are
		}
		if err != nil {
			return ""
		}
		s, e := c.expand(name, raw, depth+1)
		if e != nil {
			err = e
		}
		return s
	})
	if err == nil && len(out) > 1<<16 {
		err = c.errorf(key, "expands to over 64 KB")
	}
	return out, err
}

// Error is a bad value, naming the key and where it was set.
type Error struct {
	Key, Source, Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Source, e.Key, e.Reason)
}

func (c *Conf) errorf(key, format string, args ...any) error {
	return &Error{Key: key, Source: c.Source(key), Reason: fmt.Sprintf(format, args...)}
}

// Errorf makes an error about key, for checks across keys.
func (c *Conf) Errorf(key, format string, args ...any) error { return c.errorf(key, format, args...) }

// Int reads an integer.
func (c *Conf) Int(key string) (int64, error) {
	s, err := c.String(key)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, c.errorf(key, "%q is not an integer", s)
	}
	return n, nil
}

// Float reads a number.
func (c *Conf) Float(key string) (float64, error) {
	s, err := c.String(key)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, c.errorf(key, "%q is not a number", s)
	}
	return f, nil
}

// Bool reads true or false.
func (c *Conf) Bool(key string) (bool, error) {
	s, err := c.String(key)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, c.errorf(key, "%q is not true or false", s)
}

// Millis reads a duration given in milliseconds, as Hadoop's *-ms keys are.
func (c *Conf) Millis(key string) (time.Duration, error) {
	n, err := c.Int(key)
	if err != nil {
		return 0, err
	}
	return time.Duration(n) * time.Millisecond, nil
}

// PositiveMillis is Millis, refusing zero and negative values.
func (c *Conf) PositiveMillis(key string) (time.Duration, error) {
	d, err := c.Millis(key)
	if err == nil && d <= 0 {
		err = c.errorf(key, "%d ms must be positive", d.Milliseconds())
	}
	return d, err
}

// Addr reads a host:port address.
func (c *Conf) Addr(key string) (string, error) {
	s, err := c.String(key)
	if err != nil {
		return "", err
	}
	host, port, err := splitHostPort(s)
	if err != nil {
		return "", c.errorf(key, "%q is not host:port: %v", s, err)
	}
	return host + ":" + port, nil
}

func splitHostPort(s string) (string, string, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", errors.New("no port")
	}
	host, port := s[:i], s[i+1:]
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return "", "", fmt.Errorf("port %q is not 0-65535", port)
	}
	return host, port, nil
}
