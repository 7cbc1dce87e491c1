package logagg

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteThenRead: two containers' logs on one node and one on another
// come back whole, by node, container and file; a half-written archive
// (.tmp) is never read; an app with no logs is ErrNoLogs.
func TestWriteThenRead(t *testing.T) {
	local := t.TempDir()
	mk := func(dir, name, body string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c1, c2 := filepath.Join(local, "a", "c1"), filepath.Join(local, "b", "c2")
	mk(c1, "stdout", "hello from c1\n")
	mk(c1, "stderr", "")
	mk(c2, "stdout", strings.Repeat("x", 100000))
	if err := os.Symlink("/etc/passwd", filepath.Join(c2, "sneaky")); err != nil {
		t.Fatal(err)
	}
	st, root, err := Open(context.Background(), "file://"+t.TempDir()+"/remote", "", "alice")
	if err != nil {
		t.Fatal(err)
	}
	dir := AppDir(root, "alice", "", "application_1_0001")
	if !strings.HasSuffix(dir, "/alice/logs/application_1_0001") {
		t.Errorf("app dir %s", dir)
	}
	if err := Read(st, dir, func(Log, io.Reader) error { return nil }); !errors.Is(err, ErrNoLogs) {
		t.Errorf("before any write: %v, want ErrNoLogs", err)
	}
	n, err := Write(st, dir, "host1:4545", []Container{{ID: "c1", Dirs: []string{c1}}, {ID: "c2", Dirs: []string{c2, filepath.Join(local, "gone")}}})
	if err != nil || n != 3 {
		t.Fatalf("write: %d files, %v; want 3 (the symlink is not followed)", n, err)
	}
	if _, err := Write(st, dir, "host2:4545", []Container{{ID: "c3", Dirs: []string{c1}}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "host3_1.tar.tmp"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	err = Read(st, dir, func(l Log, r io.Reader) error {
		b, err := io.ReadAll(r)
		if int64(len(b)) != l.Size {
			t.Errorf("%+v: read %d bytes", l, len(b))
		}
		got = append(got, l.Node+" "+l.Container+" "+l.File+" "+string(b[:min(len(b), 5)]))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"host1:4545 c1 stderr ", "host1:4545 c1 stdout hello", "host1:4545 c2 stdout xxxxx",
		"host2:4545 c3 stderr ", "host2:4545 c3 stdout hello"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("read\n%q\nwant\n%q", got, want)
	}
}

func TestOpenRefusesBadDirs(t *testing.T) {
	for _, tc := range []struct{ dir, defaultFS, want string }{
		{"relative/logs", "", "not an absolute path"},
		{"s3a://bucket/logs", "", `scheme "s3a"`},
		{"/tmp/logs", "hdfs://", "names no namenode"},
		{"::", "", "not a path or URL"},
	} {
		if _, _, err := Open(context.Background(), tc.dir, tc.defaultFS, "u"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q, %q): %v, want %q", tc.dir, tc.defaultFS, err, tc.want)
		}
	}
}

// FuzzRead: whatever bytes sit in an archive, Read returns an error or
// the entries, never a panic.
func FuzzRead(f *testing.F) {
	dir := f.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "stdout"), []byte("seed"), 0o644)
	st := localStore{}
	if _, err := Write(st, filepath.Join(dir, "app"), "h:1", []Container{{ID: "c", Dirs: []string{src}}}); err != nil {
		f.Fatal(err)
	}
	seed, _ := os.ReadFile(filepath.Join(dir, "app", "h_1.tar"))
	f.Add(seed)
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, b []byte) {
		app := t.TempDir()
		if err := os.WriteFile(filepath.Join(app, "h_1.tar"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = Read(st, app, func(l Log, r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			if strings.Contains(l.File, "/") {
				t.Errorf("entry file %q has a slash", l.File)
			}
			return err
		})
	})
}
