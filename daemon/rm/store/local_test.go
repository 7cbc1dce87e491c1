package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestLocalSecondOpenFails is a second RM started on the same dir while
// the first runs: it must be told at once, not wait, and not share.
func TestLocalSecondOpenFails(t *testing.T) {
	dir := t.TempDir()
	first, err := OpenLocal(dir, 0)
	check(t, "first open", err)
	defer first.Close()
	start := time.Now()
	second, err := Open(Config{Dir: dir, LockTimeout: 200 * time.Millisecond})
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("second open took %v with a 200ms lock timeout", el)
	}
	if err == nil {
		second.Close()
		t.Fatal("second open of a store in use succeeded")
	}
	path := filepath.Join(dir, LocalFile)
	for _, want := range []string{path, "another process holds", KeyDir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// Once the first lets go, the store opens.
	check(t, "close first", first.Close())
	again, err := OpenLocal(dir, 0)
	check(t, "open after the first closed", err)
	again.Close()
}

// TestLocalCorruptFile names the file, whatever the damage.
func TestLocalCorruptFile(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"garbage", []byte(strings.Repeat("not a bbolt file. ", 1000))},
		{"truncated", []byte("\x00\x01")},
		{"zeros", make([]byte, 16<<10)},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, LocalFile)
			check(t, "write", os.WriteFile(path, c.data, 0o600))
			s, err := OpenLocal(dir, 0)
			if err == nil {
				s.Close()
				t.Fatal("opened a corrupt file")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
		})
	}
}

// TestLocalNewerLayout refuses a file written in a layout this Loom does
// not know, rather than misreading it.
func TestLocalNewerLayout(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenLocal(dir, 0)
	check(t, "open", err)
	check(t, "close", s.Close())
	db, err := bolt.Open(filepath.Join(dir, LocalFile), 0o600, nil)
	check(t, "bolt open", err)
	check(t, "set version", db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(metaBucket).Put(versionKey, []byte("3"))
	}))
	check(t, "bolt close", db.Close())
	_, err = OpenLocal(dir, 0)
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "layout version 3") {
		t.Errorf("got %v, want ErrIncompatible saying version 3", err)
	}
}

// TestLocalFileMode: the file holds the secrets behind the RM's tokens.
func TestLocalFileMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rm")
	s, err := OpenLocal(dir, 0)
	check(t, "open", err)
	defer s.Close()
	check(t, "put secret", s.PutSecret(context.Background(), "k", []byte("v")))
	for p, want := range map[string]os.FileMode{dir: 0o700, s.Path(): 0o600} {
		st, err := os.Stat(p)
		check(t, "stat", err)
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
}
