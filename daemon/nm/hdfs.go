package nm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"

	"github.com/loomrm/loom/internal/logagg"
)

// fetchHDFS copies an HDFS file or directory tree to dst as user (SIMPLE
// auth: HDFS trusts the name) and returns its modification time in
// milliseconds. A URL without a port uses the namenode's default, 8020.
func fetchHDFS(ctx context.Context, u *url.URL, user, dst string) (int64, error) {
	if u.Host == "" {
		return 0, errors.New("no namenode in the URL, and fs.defaultFS names none")
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "8020")
	}
	client, err := logagg.DialHDFS(ctx, addr, user)
	if err != nil {
		return 0, fmt.Errorf("cannot reach the HDFS namenode at %s: %v", addr, err)
	}
	defer client.Close()
	st, err := client.Stat(u.Path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("File %s does not exist", u)
	}
	if err != nil {
		return 0, err
	}
	copyOne := func(src, to string, mode fs.FileMode) error {
		f, err := client.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		return writeFile(ctx, to, f, mode)
	}
	if !st.IsDir() {
		return st.ModTime().UnixMilli(), copyOne(u.Path, dst, st.Mode())
	}
	root := path.Clean(u.Path)
	err = client.Walk(root, func(p string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		}
		return copyOne(p, target, info.Mode())
	})
	return st.ModTime().UnixMilli(), err
}
