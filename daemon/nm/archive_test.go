package nm

import (
	"archive/tar"
	"archive/zip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnpacksZipAndTar(t *testing.T) {
	dir := t.TempDir()
	zp := filepath.Join(dir, "a.zip")
	f, _ := os.Create(zp)
	zw := zip.NewWriter(f)
	w, _ := zw.Create("lib/x.txt")
	w.Write([]byte("zipped"))
	zw.Close()
	f.Close()
	if err := unpackArchive(context.Background(), zp, filepath.Join(dir, "za"), "zip"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "za", "lib", "x.txt")); got != "zipped" {
		t.Errorf("zip: %q", got)
	}

	tp := filepath.Join(dir, "b.tar")
	f, _ = os.Create(tp)
	tw := tar.NewWriter(f)
	tw.WriteHeader(&tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "d/f", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3})
	tw.Write([]byte("abc"))
	tw.WriteHeader(&tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "d/f"})
	tw.Close()
	f.Close()
	if err := unpackArchive(context.Background(), tp, filepath.Join(dir, "ta"), "tar"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "ta", "link")); got != "abc" {
		t.Errorf("tar through its symlink: %q", got)
	}
	for name, kind := range map[string]string{"x.tar.gz": "tgz", "X.TGZ": "tgz", "x.tar": "tar", "x.zip": "zip", "x.jar": "zip", "x.txt": ""} {
		if archiveKind(name) != kind {
			t.Errorf("archiveKind(%s) = %q, want %q", name, archiveKind(name), kind)
		}
	}
}

func TestArchivesCannotEscape(t *testing.T) {
	for name, hdr := range map[string]tar.Header{
		"dot-dot":         {Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644},
		"absolute":        {Name: "/tmp/evil", Typeflag: tar.TypeReg, Mode: 0o644},
		"symlink out":     {Name: "l", Typeflag: tar.TypeSymlink, Linkname: "../../etc"},
		"absolute link":   {Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
		"hard link out":   {Name: "l", Typeflag: tar.TypeLink, Linkname: "../x"},
		"nested dot-dots": {Name: "a/../../evil", Typeflag: tar.TypeReg, Mode: 0o644},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, "bad.tar")
		f, _ := os.Create(p)
		tw := tar.NewWriter(f)
		tw.WriteHeader(&hdr)
		tw.Close()
		f.Close()
		err := unpackArchive(context.Background(), p, filepath.Join(dir, "out"), "tar")
		if err == nil || !(strings.Contains(err.Error(), "outside") || strings.Contains(err.Error(), "absolute")) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.zip")
	f, _ := os.Create(p)
	zw := zip.NewWriter(f)
	zw.Create("../../evil")
	zw.Close()
	f.Close()
	if err := unpackArchive(context.Background(), p, filepath.Join(dir, "out"), "zip"); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("zip slip: %v", err)
	}
}
