package nm

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// archiveKind is how an archive resource is unpacked, by its name as
// YARN's FSDownload decides: "tar", "tgz", "zip" (also .jar), or "" for a
// name it does not unpack (the file is then kept as it is).
func archiveKind(name string) string {
	l := strings.ToLower(name)
	switch {
	case strings.HasSuffix(l, ".tar.gz") || strings.HasSuffix(l, ".tgz"):
		return "tgz"
	case strings.HasSuffix(l, ".tar"):
		return "tar"
	case strings.HasSuffix(l, ".zip") || strings.HasSuffix(l, ".jar"):
		return "zip"
	}
	return ""
}

// unpackArchive unpacks src into the directory dst. Entries that would
// land outside dst, and links that point outside it, are refused.
func unpackArchive(ctx context.Context, src, dst, kind string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if kind == "zip" {
		return unzip(ctx, src, dst)
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if kind == "tgz" {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		defer gz.Close()
		r = gz
	}
	return untar(ctx, r, dst)
}

// inside joins name to dir, refusing a result outside dir.
func inside(dir, name string) (string, error) {
	if filepath.IsAbs(name) {
		return "", fmt.Errorf("entry %q has an absolute path", name)
	}
	p := filepath.Join(dir, name)
	if rel, err := filepath.Rel(dir, p); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("entry %q is outside the archive", name)
	}
	return p, nil
}

// symlinkInside makes a symbolic link at p (inside dir) to target, which
// must resolve inside dir too.
func symlinkInside(dir, p, target string) error {
	if filepath.IsAbs(target) {
		return fmt.Errorf("link %q points to an absolute path", target)
	}
	resolved := filepath.Join(filepath.Dir(p), target)
	if rel, err := filepath.Rel(dir, resolved); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("link %q points outside the archive", target)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.Symlink(target, p)
}

func untar(ctx context.Context, r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p, err := inside(dst, h.Name)
		if err != nil {
			return err
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := writeFile(ctx, p, tr, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := symlinkInside(dst, p, h.Linkname); err != nil {
				return err
			}
		case tar.TypeLink:
			old, err := inside(dst, h.Linkname)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Link(old, p); err != nil {
				return err
			}
		}
		// Devices, FIFOs and the like are not resources: skipped.
	}
}

func unzip(ctx context.Context, src, dst string) error {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		p, err := inside(dst, f.Name)
		if err != nil {
			return err
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			if err := os.MkdirAll(p, mode.Perm()|0o700); err != nil {
				return err
			}
		case mode&fs.ModeSymlink != 0:
			rc, err := f.Open()
			if err != nil {
				return err
			}
			target, err := io.ReadAll(io.LimitReader(rc, 4096))
			rc.Close()
			if err != nil {
				return err
			}
			if err := symlinkInside(dst, p, string(target)); err != nil {
				return err
			}
		case mode.IsRegular():
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			rc, err := f.Open()
			if err != nil {
				return err
			}
			err = writeFile(ctx, p, rc, mode)
			rc.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}
