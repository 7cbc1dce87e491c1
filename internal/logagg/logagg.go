// Package logagg keeps finished applications' container logs in one
// place, as YARN's log aggregation does: each NodeManager writes, per
// application, one archive of the logs of every container the app ran on
// it, under
//
//	<yarn.nodemanager.remote-app-log-dir>/<user>/<suffix>/<app id>/<host>_<port>.tar
//
// on the local filesystem or on HDFS, as the directory's URL (resolved
// against fs.defaultFS) says. The archive is a POSIX tar of
// <container id>/<log file> entries, readable by `loom logs` and by tar
// itself. It is not YARN's TFile: `yarn logs` does not read it.
package logagg

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// The keys and YARN's defaults.
const (
	KeyEnabled   = "yarn.log-aggregation-enable"
	KeyRemoteDir = "yarn.nodemanager.remote-app-log-dir"
	KeySuffix    = "yarn.nodemanager.remote-app-log-dir-suffix"

	DefaultRemoteDir = "/tmp/logs"
	DefaultSuffix    = "logs"
)

// Store is where aggregated logs live.
type Store interface {
	MkdirAll(dir string) error
	// Create writes a new file; it is only seen under its name once
	// closed and renamed.
	Create(name string) (io.WriteCloser, error)
	Rename(from, to string) error
	Open(name string) (io.ReadCloser, error)
	// List names a directory's entries, sorted; a missing directory is
	// fs.ErrNotExist.
	List(dir string) ([]string, error)
	Close() error
}

// Open connects to the store remoteDir names: an hdfs:// URL, a file://
// URL or a path, which fs.defaultFS (defaultFS) resolves as YARN does.
// It returns the store and the directory's path in it. user is who HDFS
// is told the caller is (SIMPLE auth).
func Open(ctx context.Context, remoteDir, defaultFS, user string) (Store, string, error) {
	if remoteDir == "" {
		remoteDir = DefaultRemoteDir
	}
	u, err := url.Parse(remoteDir)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %q is not a path or URL: %v", KeyRemoteDir, remoteDir, err)
	}
	if u.Scheme == "" && defaultFS != "" {
		base, err := url.Parse(defaultFS)
		if err != nil {
			return nil, "", fmt.Errorf("fs.defaultFS: %q is not a URL: %v", defaultFS, err)
		}
		u.Scheme, u.Host = base.Scheme, base.Host
	}
	switch u.Scheme {
	case "", "file":
		if !path.IsAbs(u.Path) {
			return nil, "", fmt.Errorf("%s: %q is not an absolute path", KeyRemoteDir, remoteDir)
		}
		return localStore{}, filepath.Clean(u.Path), nil
	case "hdfs":
		if u.Host == "" {
			return nil, "", fmt.Errorf("%s: %q names no namenode, and fs.defaultFS names none", KeyRemoteDir, remoteDir)
		}
		addr := u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "8020")
		}
		c, err := DialHDFS(ctx, addr, user)
		if err != nil {
			return nil, "", fmt.Errorf("cannot reach the HDFS namenode at %s for %s: %v", addr, KeyRemoteDir, err)
		}
		return hdfsStore{c}, path.Clean(u.Path), nil
	}
	return nil, "", fmt.Errorf("%s: scheme %q is neither file nor hdfs", KeyRemoteDir, u.Scheme)
}

// DialHDFS connects to a namenode as user (SIMPLE auth: HDFS trusts the
// name), its and the datanodes' connections bounded by ctx and 10 s each.
func DialHDFS(ctx context.Context, addr, user string) (*hdfs.Client, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	dial := func(_ context.Context, network, a string) (net.Conn, error) { return d.DialContext(ctx, network, a) }
	return hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{addr}, User: user, NamenodeDialFunc: dial, DatanodeDialFunc: dial})
}

// AppDir is where an app's aggregated logs go.
func AppDir(root, user, suffix, appID string) string {
	if suffix == "" {
		suffix = DefaultSuffix
	}
	return path.Join(root, user, suffix, appID)
}

// NodeFile names a node's archive in an app's dir: host_port.tar.
func NodeFile(nodeID string) string { return strings.ReplaceAll(nodeID, ":", "_") + ".tar" }

// Container is one container's local log dirs.
type Container struct {
	ID   string
	Dirs []string
}

// Write archives the containers' logs as node's file in appDir: first
// under a temporary name, then renamed, so that a reader never sees half
// an archive. It returns how many files it wrote.
func Write(st Store, appDir, node string, containers []Container) (int, error) {
	if err := st.MkdirAll(appDir); err != nil {
		return 0, fmt.Errorf("cannot make %s: %w", appDir, err)
	}
	final := path.Join(appDir, NodeFile(node))
	tmp := final + ".tmp"
	w, err := st.Create(tmp)
	if err != nil {
		return 0, fmt.Errorf("cannot create %s: %w", tmp, err)
	}
	tw := tar.NewWriter(w)
	files := 0
	for _, c := range containers {
		for _, dir := range c.Dirs {
			ents, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range ents {
				if !e.Type().IsRegular() {
					continue
				}
				if err := addFile(tw, filepath.Join(dir, e.Name()), c.ID+"/"+e.Name()); err != nil {
					w.Close()
					return 0, err
				}
				files++
			}
		}
	}
	if err := tw.Close(); err != nil {
		w.Close()
		return 0, fmt.Errorf("cannot write %s: %w", tmp, err)
	}
	if err := w.Close(); err != nil {
		return 0, fmt.Errorf("cannot write %s: %w", tmp, err)
	}
	if err := st.Rename(tmp, final); err != nil {
		return 0, fmt.Errorf("cannot rename %s to %s: %w", tmp, final, err)
	}
	return files, nil
}

func addFile(tw *tar.Writer, src, name string) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", src, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	// The size is what is there now: a file still being written is cut
	// at that length.
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o640, Size: st.Size(), ModTime: st.ModTime(),
		Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, st.Size()); err != nil {
		return fmt.Errorf("cannot archive %s: %w", src, err)
	}
	return nil
}

// Log is one container's log file in an archive.
type Log struct {
	Node      string // host:port
	Container string
	File      string
	Size      int64
	ModTime   time.Time
}

// ErrNoLogs: the app has no aggregated logs (not finished, aggregation
// off, or not yet written).
var ErrNoLogs = errors.New("no aggregated logs")

// Read walks every archive in appDir, node by node, and calls fn for each
// log file with its contents. fn may stop the walk by returning an
// error, which Read returns.
func Read(st Store, appDir string, fn func(Log, io.Reader) error) error {
	names, err := st.List(appDir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w in %s", ErrNoLogs, appDir)
	}
	if err != nil {
		return err
	}
	found := false
	for _, name := range names {
		if !strings.HasSuffix(name, ".tar") {
			continue
		}
		found = true
		node := strings.TrimSuffix(name, ".tar")
		if i := strings.LastIndexByte(node, '_'); i >= 0 {
			node = node[:i] + ":" + node[i+1:]
		}
		if err := readArchive(st, path.Join(appDir, name), node, fn); err != nil {
			return err
		}
	}
	if !found {
		return fmt.Errorf("%w in %s", ErrNoLogs, appDir)
	}
	return nil
}

func readArchive(st Store, name, node string, fn func(Log, io.Reader) error) error {
	r, err := st.Open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: not a log archive: %w", name, err)
		}
		cont, file, ok := strings.Cut(h.Name, "/")
		if !ok || h.Typeflag != tar.TypeReg || strings.Contains(file, "/") {
			return fmt.Errorf("%s: unexpected entry %q", name, h.Name)
		}
		if err := fn(Log{Node: node, Container: cont, File: file, Size: h.Size, ModTime: h.ModTime}, tr); err != nil {
			return err
		}
	}
}

type localStore struct{}

func (localStore) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o750) }
func (localStore) Create(name string) (io.WriteCloser, error) {
	return os.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
}
func (localStore) Rename(from, to string) error            { return os.Rename(from, to) }
func (localStore) Open(name string) (io.ReadCloser, error) { return os.Open(name) }
func (localStore) Close() error                            { return nil }
func (localStore) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

type hdfsStore struct{ c *hdfs.Client }

func (h hdfsStore) MkdirAll(dir string) error { return h.c.MkdirAll(dir, 0o750) }
func (h hdfsStore) Create(name string) (io.WriteCloser, error) {
	if err := h.c.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return h.c.Create(name)
}
func (h hdfsStore) Rename(from, to string) error            { return h.c.Rename(from, to) }
func (h hdfsStore) Open(name string) (io.ReadCloser, error) { return h.c.Open(name) }
func (h hdfsStore) Close() error                            { return h.c.Close() }
func (h hdfsStore) List(dir string) ([]string, error) {
	infos, err := h.c.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(infos))
	for _, fi := range infos {
		names = append(names, fi.Name())
	}
	slices.Sort(names)
	return names, nil
}
