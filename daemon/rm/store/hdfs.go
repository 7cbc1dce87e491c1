package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// OpenHDFS opens the store at cfg.HDFSURI: hdfs://host:port/dir on a
// namenode, or file:///dir on the local disk (one RM only: nothing locks
// it). An unreachable namenode is an error naming its address within
// cfg.Timeout.
func OpenHDFS(cfg Config) (*Files, error) {
	if cfg.HDFSURI == "" {
		return nil, configErrorf(KeyHDFSURI, "not set: the hdfs store needs hdfs://namenode:port/dir")
	}
	addr, dir, local, err := parseHDFSURI(cfg.HDFSURI)
	if err != nil {
		return nil, configErrorf(KeyHDFSURI, "%v", err)
	}
	if local {
		return openFiles(osFS{}, cfg.HDFSURI, dir)
	}
	name := cfg.HDFSUser
	if name == "" {
		name = os.Getenv("HADOOP_USER_NAME")
	}
	if name == "" {
		u, err := user.Current()
		if err != nil {
			return nil, configErrorf(KeyHDFSUser, "not set, and the RM's own user is unknown: %v", err)
		}
		name = u.Username
	}
	h, err := dialHDFS(addr, name, cfg.timeout())
	if err != nil {
		return nil, err
	}
	s, err := openFiles(h, "hdfs://"+addr, dir)
	if err != nil {
		h.Close()
		return nil, err
	}
	return s, nil
}

// loadHDFSConfig reads the hdfs store's keys into cfg.
func loadHDFSConfig(c *hadoopconf.Conf, cfg *Config) error {
	var key string
	var err error
	if cfg.HDFSURI, key, err = confValue(c, KeyHDFSURI); err != nil {
		return err
	}
	if cfg.HDFSURI != "" {
		if _, _, _, err := parseHDFSURI(cfg.HDFSURI); err != nil {
			return c.Errorf(key, "%v", err)
		}
	}
	cfg.HDFSUser, _, err = confValue(c, KeyHDFSUser)
	return err
}

// parseHDFSURI splits hdfs://host[:port]/dir into the namenode's address
// and the directory; local is true for file:///dir.
func parseHDFSURI(s string) (addr, dir string, local bool, err error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", "", false, fmt.Errorf("%q is not a URI: %v", s, err)
	}
	if u.Opaque != "" {
		return "", "", false, fmt.Errorf("%q has no absolute path (hdfs://host:port/dir, file:///dir)", s)
	}
	dir = u.Path
	if dir == "" {
		dir = "/"
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" {
			return "", "", false, fmt.Errorf("%q: a file URI has no host (file:///dir)", s)
		}
		return "", dir, true, nil
	case "hdfs":
		if u.Hostname() == "" {
			return "", "", false, fmt.Errorf("%q names no namenode (hdfs://host:port/dir)", s)
		}
		port := u.Port()
		if port == "" {
			port = defaultHDFSPort
		}
		return net.JoinHostPort(u.Hostname(), port), dir, false, nil
	}
	return "", "", false, fmt.Errorf("%q: the scheme must be hdfs:// or file://", s)
}

// hdfsFS is a namenode (and its datanodes) as a fileSystem.
type hdfsFS struct {
	client      *hdfs.Client
	addr        string
	timeout     time.Duration
	replication int
	blockSize   int64
}

var _ fileSystem = (*hdfsFS)(nil)

// dialHDFS connects to the namenode at addr and asks for its defaults,
// which proves it answers. Every read and write on the namenode's
// connection has a deadline of timeout: the client has none of its own,
// and a namenode that accepts a connection and then hangs would hold
// the RM forever.
func dialHDFS(addr, userName string, timeout time.Duration) (*hdfsFS, error) {
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &deadlineConn{Conn: c, timeout: timeout}, nil
	}
	dataDial := func(ctx context.Context, network, address string) (net.Conn, error) {
		d := net.Dialer{Timeout: timeout}
		return d.DialContext(ctx, network, address)
	}
	h := &hdfsFS{addr: addr, timeout: timeout}
	client, err := hdfs.NewClient(hdfs.ClientOptions{
		Addresses:        []string{addr},
		User:             userName,
		NamenodeDialFunc: dial,
		DatanodeDialFunc: dataDial,
	})
	if err != nil {
		return nil, h.unreachable(err)
	}
	h.client = client
	defaults, err := client.ServerDefaults()
	if err != nil {
		client.Close()
		return nil, h.unreachable(err)
	}
	h.replication, h.blockSize = defaults.Replication, defaults.BlockSize
	return h, nil
}

func (h *hdfsFS) unreachable(err error) error {
	return fmt.Errorf("hdfs store: namenode %s (%s) does not answer (%w): %v", h.addr, KeyHDFSURI, ErrUnavailable, err)
}

// check marks failures to reach the namenode or a datanode as
// ErrUnavailable, naming the namenode; HDFS's own answers (no such file,
// permission denied) pass as they are.
func (h *hdfsFS) check(err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrDeadlineExceeded) || strings.Contains(err.Error(), "no available namenodes") {
		return fmt.Errorf("namenode %s (%w): %w", h.addr, ErrUnavailable, err)
	}
	return err
}

func (h *hdfsFS) ReadFile(name string) ([]byte, error) {
	f, err := h.client.Open(name)
	if err != nil {
		return nil, h.check(err)
	}
	defer f.Close()
	if err := f.SetDeadline(time.Now().Add(h.timeout)); err != nil {
		return nil, h.check(err)
	}
	data, err := io.ReadAll(f)
	return data, h.check(err)
}

// WriteFile writes a file and closes it, which returns once the
// datanodes hold the data and the namenode has the file complete.
func (h *hdfsFS) WriteFile(name string, data []byte) error {
	w, err := h.client.CreateFile(name, h.replication, h.blockSize, 0o600)
	if err != nil {
		return h.check(err)
	}
	deadline := time.Now().Add(h.timeout)
	if err := w.SetDeadline(deadline); err != nil {
		w.Close()
		return h.check(err)
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return h.check(err)
	}
	// The namenode may not yet have heard from the datanodes about the
	// last block; asking again is what the client's docs prescribe.
	for backoff := 50 * time.Millisecond; ; backoff *= 2 {
		err = w.Close()
		if !errors.Is(err, hdfs.ErrReplicating) || time.Now().Add(backoff).After(deadline) {
			return h.check(err)
		}
		time.Sleep(backoff)
	}
}

func (h *hdfsFS) Rename(oldname, newname string) error {
	return h.check(h.client.Rename(oldname, newname))
}

func (h *hdfsFS) Remove(name string) error { return h.check(h.client.Remove(name)) }

// RemoveAll is one delete on the namenode, atomic for readers.
func (h *hdfsFS) RemoveAll(name string) error { return h.check(h.client.RemoveAll(name)) }

func (h *hdfsFS) MkdirAll(name string) error { return h.check(h.client.MkdirAll(name, 0o700)) }

func (h *hdfsFS) ReadDir(name string) ([]fs.FileInfo, error) {
	infos, err := h.client.ReadDir(name)
	return infos, h.check(err)
}

func (h *hdfsFS) Stat(name string) (fs.FileInfo, error) {
	info, err := h.client.Stat(name)
	return info, h.check(err)
}

func (h *hdfsFS) Close() error { return h.client.Close() }

// deadlineConn puts a deadline on each read and write, so that a peer
// that stops answering fails the call instead of hanging it.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
}

func (c *deadlineConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
