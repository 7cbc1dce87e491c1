package nm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// cacheEntry is one localised resource of an application: fetched once,
// shared by the application's containers on this node.
type cacheEntry struct {
	done chan struct{}
	path string
	err  error
}

// localize fetches a container's resource into its application's cache
// (<local-dir>/usercache/<user>/appcache/<app>/filecache/<n>/<name>),
// once per application, and returns where it is. Every visibility is kept
// per application: PUBLIC and PRIVATE resources are not shared across
// applications.
func (n *NodeManager) localize(c *container, key string, lr *pb.LocalResourceProto) (string, error) {
	u, err := resourceURL(lr.GetResource(), n.cfg.DefaultFS)
	if err != nil {
		return "", err
	}
	typ := pb.LocalResourceTypeProto_FILE
	if lr.Type != nil {
		typ = lr.GetType()
	}
	ck := fmt.Sprintf("%s|%s|%s|%d", u, typ, lr.GetPattern(), lr.GetTimestamp())
	app := c.app
	n.mu.Lock()
	e := app.cache[ck]
	if e == nil {
		e = &cacheEntry{done: make(chan struct{})}
		app.cache[ck] = e
		n.seq++
		dir := filepath.Join(c.appDirs[int(n.seq%int64(len(c.appDirs)))], "filecache", strconv.FormatInt(n.seq, 10))
		user, ts := c.user, lr.GetTimestamp()
		n.work.Add(1)
		// The fetch outlives the container that asked for it (its
		// siblings may be waiting), but not the NM.
		go func() {
			defer n.work.Done()
			p, err := n.fetch(n.ctx, u, typ, ts, user, dir)
			n.mu.Lock()
			e.path, e.err = p, err
			if err != nil && app.cache[ck] == e {
				delete(app.cache, ck) // the next container tries again
			}
			n.mu.Unlock()
			close(e.done)
		}()
	}
	n.mu.Unlock()
	select {
	case <-e.done:
		return e.path, e.err
	case <-c.ctx.Done():
		return "", c.ctx.Err()
	}
}

// resourceURL reads YARN's URL record. A URL without a scheme is on the
// default file system (fs.defaultFS).
func resourceURL(r *pb.URLProto, defaultFS string) (*url.URL, error) {
	if r == nil {
		return nil, errors.New("no URL")
	}
	u := &url.URL{Scheme: strings.ToLower(r.GetScheme()), Host: r.GetHost(), Path: r.GetFile()}
	if r.GetPort() > 0 {
		u.Host += ":" + strconv.Itoa(int(r.GetPort()))
	}
	if ui := r.GetUserInfo(); ui != "" {
		u.User = url.User(ui)
	}
	if u.Scheme == "" {
		d, err := url.Parse(defaultFS)
		if err != nil || d.Scheme == "" {
			return nil, fmt.Errorf("the URL has no scheme and fs.defaultFS %q is not a URL", defaultFS)
		}
		u.Scheme = d.Scheme
		if u.Host == "" {
			u.Host = d.Host
		}
	}
	if !strings.HasPrefix(u.Path, "/") {
		return nil, fmt.Errorf("%q is not an absolute path", u.Path)
	}
	return u, nil
}

// describeURL renders a URL record for messages, however broken.
func describeURL(r *pb.URLProto) string {
	if r == nil {
		return "(no URL)"
	}
	s := r.GetScheme() + "://"
	if r.GetUserInfo() != "" {
		s += r.GetUserInfo() + "@"
	}
	s += r.GetHost()
	if r.GetPort() > 0 {
		s += ":" + strconv.Itoa(int(r.GetPort()))
	}
	return s + r.GetFile()
}

// fetch copies a resource into dir under its base name, unpacking an
// ARCHIVE (and a PATTERN, which Loom treats as one) into a directory of
// that name. A timestamp other than 0 must match the source's
// modification time, as YARN checks it.
func (n *NodeManager) fetch(ctx context.Context, u *url.URL, typ pb.LocalResourceTypeProto, ts int64, user, dir string) (string, error) {
	name := path.Base(u.Path)
	if name == "/" || name == "." || name == "" {
		name = "resource"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	kind := ""
	if typ == pb.LocalResourceTypeProto_ARCHIVE || typ == pb.LocalResourceTypeProto_PATTERN {
		kind = archiveKind(name)
	}
	dst := filepath.Join(dir, name)
	raw := dst
	if kind != "" {
		raw = filepath.Join(dir, ".download-"+name)
	}
	var mtime int64
	var err error
	switch u.Scheme {
	case "file":
		mtime, err = copyLocal(ctx, u.Path, raw)
	case "hdfs":
		mtime, err = fetchHDFS(ctx, u, user, raw)
	default:
		return "", fmt.Errorf("unsupported scheme %q: Loom localises file:// and hdfs:// resources", u.Scheme)
	}
	if err != nil {
		os.RemoveAll(raw)
		return "", err
	}
	if ts != 0 && mtime != ts {
		os.RemoveAll(raw)
		return "", fmt.Errorf("Resource %s changed on src filesystem (expected %d, was %d)", u, ts, mtime)
	}
	if kind == "" {
		return dst, nil
	}
	defer os.RemoveAll(raw)
	if st, err := os.Stat(raw); err == nil && st.IsDir() {
		// A directory is already unpacked.
		return dst, os.Rename(raw, dst)
	}
	if err := unpackArchive(ctx, raw, dst, kind); err != nil {
		os.RemoveAll(dst)
		return "", fmt.Errorf("cannot unpack %s: %v", name, err)
	}
	return dst, nil
}

// copyLocal copies a local file or directory tree and returns the
// source's modification time in milliseconds.
func copyLocal(ctx context.Context, src, dst string) (int64, error) {
	st, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("File file:%s does not exist", src)
	}
	if err != nil {
		return 0, err
	}
	if !st.IsDir() {
		return st.ModTime().UnixMilli(), copyFile(ctx, src, dst, st.Mode())
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.Mode().IsRegular():
			return copyFile(ctx, p, target, info.Mode())
		}
		return nil // devices, sockets, pipes: not resources
	})
	return st.ModTime().UnixMilli(), err
}

func copyFile(ctx context.Context, src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeFile(ctx, dst, in, mode)
}

// writeFile writes r to a new file at dst, giving up when ctx ends.
func writeFile(ctx context.Context, dst string, r io.Reader, mode fs.FileMode) error {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm()|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, ctxReader{ctx, r}); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
