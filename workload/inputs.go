package workload

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// CheckInput says whether s can name a stage's input (Stage.Inputs): an
// absolute HDFS path, read on the NameNode fs.defaultFS names, or an
// hdfs:// URI, hdfs://namenode[:port]/path (a NameNode's address or an HA
// nameservice) or hdfs:///path (fs.defaultFS's NameNode). Its error says
// what is wrong with s, naming it.
//
// The path must be one HDFS accepts (DFSUtil.isValidName): no "." or ".."
// components, no ":" in a component, no empty component but a trailing
// slash. Other file systems are refused, since only HDFS tells Loom where
// blocks are, and so are glob patterns, which Loom does not expand.
func CheckInput(s string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("input %q is empty: name an HDFS path or hdfs:// URI", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("input %q is not a path or URI: %v", s, err)
	}
	switch u.Scheme {
	case "":
	case "hdfs":
		if u.Opaque != "" {
			return fmt.Errorf("input %q has no absolute path: write hdfs://namenode:port/path or hdfs:///path", s)
		}
		if u.User != nil {
			return fmt.Errorf("input %q names a user (%s@): HDFS URIs carry none; the AM reads as its app's user", s, u.User.Username())
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("input %q: port %q is not a port number (1 to 65535)", s, p)
			}
		} else if strings.HasSuffix(u.Host, ":") {
			return fmt.Errorf("input %q: the NameNode's port is empty", s)
		}
	case "file":
		return fmt.Errorf("input %q is a local file: only HDFS says where blocks are (hdfs://namenode:port/path, or a path on fs.defaultFS)", s)
	default:
		return fmt.Errorf("input %q: scheme %q is not HDFS; only HDFS says where blocks are (hdfs://namenode:port/path, or a path on fs.defaultFS)", s, u.Scheme)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("input %q has a query or fragment (? or #): HDFS paths have neither", s)
	}
	return checkHDFSPath(s, u.Path)
}

// checkHDFSPath holds p to what HDFS's NameNode accepts as a path.
func checkHDFSPath(s, p string) error {
	if p == "" {
		return fmt.Errorf("input %q names no path", s)
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("input %q is a relative path: HDFS inputs are absolute (/dir/file)", s)
	}
	if i := strings.IndexAny(p, "*[{"); i >= 0 {
		return fmt.Errorf("input %q has a glob pattern (%q): Loom does not expand globs; name the files or their directory", s, p[i:i+1])
	}
	parts := strings.Split(p, "/")
	for i, c := range parts[1:] {
		last := i == len(parts)-2
		switch {
		case c == "" && !last:
			return fmt.Errorf("input %q has an empty path component (//)", s)
		case c == "." || c == "..":
			return fmt.Errorf("input %q has a %q component: HDFS paths are normalized", s, c)
		case strings.Contains(c, ":"):
			return fmt.Errorf("input %q: component %q has a colon, which HDFS refuses in names", s, c)
		}
	}
	return nil
}
