package workload

import (
	"fmt"
	"strconv"
	"strings"
)

// Input is a stage's input (Stage.Inputs) as HDFS reads it.
type Input struct {
	// Authority is the NameNode an hdfs:// URI names: host[:port], or
	// an HA or federated nameservice. It is empty for a path or
	// hdfs:///path, which are on fs.defaultFS's NameNode.
	Authority string
	// Path is the absolute path on that NameNode, as written: like
	// Hadoop's Path, Loom decodes no %-escapes ("a%20b" is a file of
	// that name).
	Path string
}

// ParseInput reads a stage's input: an absolute HDFS path, or an hdfs://
// URI, hdfs://namenode[:port]/path or hdfs:///path. Its error says what
// is wrong, naming the input.
//
// The path must be one HDFS accepts (DFSUtil.isValidName): no "." or ".."
// components, no ":" in a component, no empty component but a trailing
// slash. Other file systems are refused, since only HDFS tells Loom where
// blocks are, and so are glob patterns (* ? [ {), which Loom does not
// expand.
func ParseInput(s string) (Input, error) {
	if strings.TrimSpace(s) == "" {
		return Input{}, fmt.Errorf("input %q is empty: name an HDFS path or hdfs:// URI", s)
	}
	rest := s
	if scheme, after, ok := splitScheme(s); ok {
		switch scheme {
		case "hdfs":
		case "file":
			return Input{}, fmt.Errorf("input %q is a local file: only HDFS says where blocks are (hdfs://namenode:port/path, or a path on fs.defaultFS)", s)
		default:
			return Input{}, fmt.Errorf("input %q: scheme %q is not HDFS; only HDFS says where blocks are (hdfs://namenode:port/path, or a path on fs.defaultFS)", s, scheme)
		}
		if !strings.HasPrefix(after, "//") {
			return Input{}, fmt.Errorf("input %q has no absolute path: write hdfs://namenode:port/path or hdfs:///path", s)
		}
		after = after[2:]
		end := strings.IndexByte(after, '/')
		if end < 0 {
			end = len(after)
		}
		in := Input{Authority: after[:end]}
		if err := checkAuthority(s, in.Authority); err != nil {
			return Input{}, err
		}
		in.Path = after[end:]
		return in, checkHDFSPath(s, in.Path)
	}
	return Input{Path: rest}, checkHDFSPath(s, rest)
}

// CheckInput says whether s can name a stage's input (see ParseInput).
func CheckInput(s string) error {
	_, err := ParseInput(s)
	return err
}

// splitScheme splits "scheme:rest", a URI scheme being a letter then
// letters, digits, + - or . (RFC 3986); the scheme comes back in lower
// case, as schemes compare.
func splitScheme(s string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return "", s, false
	}
	for j, c := range s[:i] {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (j == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", s, false
		}
	}
	return strings.ToLower(s[:i]), s[i+1:], true
}

// checkAuthority holds an hdfs:// URI's authority to host[:port].
func checkAuthority(s, a string) error {
	if a == "" {
		return nil
	}
	if at := strings.IndexByte(a, '@'); at >= 0 {
		return fmt.Errorf("input %q names a user (%s@): HDFS URIs carry none; the AM reads as its app's user", s, a[:at])
	}
	host, port := a, ""
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return fmt.Errorf("input %q: host %q has no closing ]", s, a)
		}
		host = a[:end+1]
		switch after := a[end+1:]; {
		case after == "":
		case strings.HasPrefix(after, ":"):
			port = after[1:]
			if port == "" {
				return fmt.Errorf("input %q: the NameNode's port is empty", s)
			}
		default:
			return fmt.Errorf("input %q: %q after the host is not :port", s, after)
		}
	} else if i := strings.IndexByte(a, ':'); i >= 0 {
		host, port = a[:i], a[i+1:]
		if port == "" {
			return fmt.Errorf("input %q: the NameNode's port is empty", s)
		}
	}
	if host == "" {
		return fmt.Errorf("input %q names a port but no NameNode host", s)
	}
	if strings.ContainsAny(host, " ?#*[{}%") && !strings.HasPrefix(host, "[") {
		return fmt.Errorf("input %q: %q is not a host name", s, host)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("input %q: port %q is not a port number (1 to 65535)", s, port)
		}
	}
	return nil
}

// checkHDFSPath holds p to what HDFS's NameNode accepts as a path.
func checkHDFSPath(s, p string) error {
	if p == "" {
		return fmt.Errorf("input %q names no path", s)
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("input %q is a relative path: HDFS inputs are absolute (/dir/file)", s)
	}
	if i := strings.IndexAny(p, "*?[{"); i >= 0 {
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
