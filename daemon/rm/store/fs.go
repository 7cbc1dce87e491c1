package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
)

// fileSystem is what the HDFS store needs of a filesystem: HDFS in
// production (hdfsFS), the local disk in tests and for file:// URIs
// (osFS). Names are slash-separated absolute paths. Errors for missing
// files satisfy errors.Is(err, fs.ErrNotExist).
type fileSystem interface {
	ReadFile(name string) ([]byte, error)
	// WriteFile creates name, which must not exist, with data, durably:
	// when it returns nil the bytes are on disk (or on the datanodes).
	WriteFile(name string, data []byte) error
	// Rename moves a file, replacing whatever is at newname, atomically.
	Rename(oldname, newname string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes a tree, at once as far as readers can see; a
	// missing tree is not an error.
	RemoveAll(name string) error
	MkdirAll(name string) error
	// ReadDir lists a directory's entries.
	ReadDir(name string) ([]fs.FileInfo, error)
	Stat(name string) (fs.FileInfo, error)
	Close() error
}

// Files keeps the store as a directory tree, one file per record, as
// YARN's FileSystemRMStateStore does; on HDFS in production (OpenHDFS):
//
//	<dir>/FSRMStateRoot/RMVersionNode                  "1"
//	<dir>/FSRMStateRoot/EpochNode                      decimal
//	<dir>/FSRMStateRoot/RMAppRoot/<app id>/<app id>    the app's record
//	<dir>/FSRMStateRoot/RMAppRoot/<app id>/<attempt>   an attempt's record
//	<dir>/FSRMStateRoot/RMSecretRoot/<name>            a secret
//
// Each record is written to .<name>.tmp beside it and renamed over it, so
// a crash leaves the old record or the new one, never half of one; names
// starting with '.' are the store's own and Load passes them by. An app
// is removed by removing its directory, which HDFS does atomically.
//
// The store serialises its writes, and assumes it is the only writer:
// the epoch's read-and-write is atomic within one RM, not across two.
type Files struct {
	fs     fileSystem
	where  string // names the store in errors: a URI
	root   string // .../FSRMStateRoot
	mu     sync.Mutex
	closed bool
}

var _ Store = (*Files)(nil)

// openFiles opens (creating if needed) the store under dir on fsys. A
// store whose version file is there (it was made) but whose apps or
// secrets directory is gone is refused rather than made again empty.
func openFiles(fsys fileSystem, where, dir string) (*Files, error) {
	s := &Files{fs: fsys, where: where, root: path.Join(dir, FSRoot)}
	vp := s.path(versionNode)
	data, err := fsys.ReadFile(vp)
	switch {
	case err == nil:
		if err := checkVersion(fmt.Sprintf("%s store %s", where, vp), data); err != nil {
			return nil, err
		}
		if err := s.checkWhole(); err != nil {
			return nil, err
		}
	case errors.Is(err, fs.ErrNotExist):
		// A new store: the directories first, the version last, so that
		// a version file means the tree was whole.
		for _, d := range []string{s.path(appRoot), s.path(secretRoot)} {
			if err := fsys.MkdirAll(d); err != nil {
				return nil, s.wrap("create", d, err)
			}
		}
		if err := s.write(vp, versionBytes()); err != nil {
			return nil, err
		}
	default:
		return nil, s.wrap("read", vp, err)
	}
	return s, nil
}

// checkWhole refuses a store that lost its apps or secrets directory.
func (s *Files) checkWhole() error {
	what := s.where + " store"
	for _, d := range []string{appRoot, secretRoot} {
		if _, err := s.fs.Stat(s.path(d)); errors.Is(err, fs.ErrNotExist) {
			return refuseLostRoot(what, s.root, d)
		} else if err != nil {
			return s.wrap("stat", s.path(d), err)
		}
	}
	return nil
}

func (s *Files) path(parts ...string) string {
	return path.Join(append([]string{s.root}, parts...)...)
}

func (s *Files) wrap(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s store: %s %s: %w", s.where, op, name, err)
}

// write replaces the file at name with data through a temporary file.
func (s *Files) write(name string, data []byte) error {
	dir, base := path.Split(name)
	tmp := path.Join(dir, "."+base+".tmp")
	// A leftover from a crash would make the create fail.
	if err := s.fs.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.wrap("remove", tmp, err)
	}
	if err := s.fs.WriteFile(tmp, nonNil(data)); err != nil {
		return s.wrap("write", tmp, err)
	}
	if err := s.fs.Rename(tmp, name); err != nil {
		return s.wrap("rename", tmp, err)
	}
	return nil
}

// lock takes the write lock of an open store.
func (s *Files) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// PutApp implements Store.
func (s *Files) PutApp(ctx context.Context, appID string, data []byte) error {
	if err := checkName("app id", appID); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	dir := s.path(appRoot, appID)
	if err := s.fs.MkdirAll(dir); err != nil {
		return s.wrap("create", dir, err)
	}
	return s.write(path.Join(dir, appID), data)
}

// PutAttempt implements Store.
func (s *Files) PutAttempt(ctx context.Context, appID, attemptID string, data []byte) error {
	if err := checkAttempt(appID, attemptID); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	dir := s.path(appRoot, appID)
	if _, err := s.fs.Stat(path.Join(dir, appID)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("attempt %s: app %s: %w", attemptID, appID, ErrNoApp)
		}
		return s.wrap("stat", path.Join(dir, appID), err)
	}
	return s.write(path.Join(dir, attemptID), data)
}

// RemoveApp implements Store.
func (s *Files) RemoveApp(ctx context.Context, appID string) error {
	if err := checkName("app id", appID); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	dir := s.path(appRoot, appID)
	return s.wrap("remove", dir, s.fs.RemoveAll(dir))
}

// PutSecret implements Store.
func (s *Files) PutSecret(ctx context.Context, name string, data []byte) error {
	if err := checkName("secret name", name); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.write(s.path(secretRoot, name), data)
}

// RemoveSecret implements Store.
func (s *Files) RemoveSecret(ctx context.Context, name string) error {
	if err := checkName("secret name", name); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	p := s.path(secretRoot, name)
	if err := s.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s.wrap("remove", p, err)
	}
	return nil
}

// BumpEpoch implements Store.
func (s *Files) BumpEpoch(ctx context.Context) (int64, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n, err := s.readEpoch()
	if err != nil {
		return 0, err
	}
	if err := s.write(s.path(epochNode), epochBytes(n+1)); err != nil {
		return 0, err
	}
	return n + 1, nil
}

func (s *Files) readEpoch() (int64, error) {
	p := s.path(epochNode)
	data, err := s.fs.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, s.wrap("read", p, err)
	}
	return parseEpoch(fmt.Sprintf("%s store %s", s.where, p), data)
}

// Load implements Store.
func (s *Files) Load(ctx context.Context) (*State, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	st := newState()
	var err error
	if st.Epoch, err = s.readEpoch(); err != nil {
		return nil, err
	}
	ap := s.path(appRoot)
	apps, err := s.fs.ReadDir(ap)
	if err != nil {
		return nil, s.wrap("list", ap, err)
	}
	for _, a := range apps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id := a.Name()
		if strings.HasPrefix(id, ".") || !a.IsDir() {
			continue
		}
		dir := path.Join(ap, id)
		files, err := s.fs.ReadDir(dir)
		if err != nil {
			return nil, s.wrap("list", dir, err)
		}
		app := App{Attempts: map[string][]byte{}}
		for _, f := range files {
			name := f.Name()
			if strings.HasPrefix(name, ".") || f.IsDir() {
				continue
			}
			data, err := s.fs.ReadFile(path.Join(dir, name))
			if err != nil {
				return nil, s.wrap("read", path.Join(dir, name), err)
			}
			if name == id {
				app.Data = nonNil(data)
			} else {
				app.Attempts[name] = nonNil(data)
			}
		}
		// A directory without the app's record is a PutApp that crashed
		// before its rename: the app was never stored.
		if app.Data != nil {
			st.Apps[id] = app
		}
	}
	sp := s.path(secretRoot)
	secrets, err := s.fs.ReadDir(sp)
	if err != nil {
		return nil, s.wrap("list", sp, err)
	}
	for _, f := range secrets {
		name := f.Name()
		if strings.HasPrefix(name, ".") || f.IsDir() {
			continue
		}
		data, err := s.fs.ReadFile(path.Join(sp, name))
		if err != nil {
			return nil, s.wrap("read", path.Join(sp, name), err)
		}
		st.Secrets[name] = nonNil(data)
	}
	return st, nil
}

// Close implements Store.
func (s *Files) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.fs.Close()
}

// osFS is the local disk as a fileSystem: what a file:// URI opens, and
// what tests run the HDFS store's logic over.
type osFS struct{}

func (osFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

func (osFS) WriteFile(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Rename renames and then syncs the directory, so that the rename itself
// survives a crash.
func (osFS) Rename(oldname, newname string) error {
	if err := os.Rename(oldname, newname); err != nil {
		return err
	}
	return syncDir(path.Dir(newname))
}

func (osFS) Remove(name string) error { return os.Remove(name) }

// RemoveAll first renames the tree to a dot-name beside it, which Load
// passes by, so that a crash halfway through removing it never leaves a
// record with some of its files gone.
func (osFS) RemoveAll(name string) error {
	dir, base := path.Split(name)
	aside := path.Join(dir, "."+base+".removing")
	if err := os.RemoveAll(aside); err != nil {
		return err
	}
	err := os.Rename(name, aside)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return os.RemoveAll(aside)
}

// MkdirAll makes the directories missing on the way to name and syncs
// the directory each was made in, so that they survive a crash (a
// record fsync'd in a directory whose entry was not is lost with it).
func (osFS) MkdirAll(name string) error {
	var missing []string
	for p := path.Clean(name); ; p = path.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, p)
		if path.Dir(p) == p {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := os.MkdirAll(name, 0o700); err != nil {
		return err
	}
	for _, p := range missing {
		if err := syncDir(path.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

func (osFS) ReadDir(name string) ([]fs.FileInfo, error) {
	entries, err := os.ReadDir(name)
	if err != nil {
		return nil, err
	}
	infos := make([]fs.FileInfo, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while listing
		}
		if err != nil {
			return nil, err
		}
		infos = append(infos, info)
	}
	return infos, nil
}

func (osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

func (osFS) Close() error { return nil }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
