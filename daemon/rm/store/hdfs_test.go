package store

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHDFSUnreachable opens the real HDFS client against a namenode
// address where nothing listens: a quick error naming the address.
func TestHDFSUnreachable(t *testing.T) {
	addr := deadAddr(t)
	start := time.Now()
	_, err := Open(Config{Kind: KindHDFS, HDFSURI: "hdfs://" + addr + "/loom/rmstore", HDFSUser: "loom", Timeout: time.Second})
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("open took %v with a 1s timeout", el)
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), KeyHDFSURI) {
		t.Errorf("got %v, want ErrUnavailable naming %s and %s", err, addr, KeyHDFSURI)
	}
}

// TestHDFSHungNamenode is a namenode that accepts the connection and
// never answers: the client has no deadline of its own, the store's
// bounds it.
func TestHDFSHungNamenode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(t, "listen", err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	addr := ln.Addr().String()
	start := time.Now()
	_, err = Open(Config{Kind: KindHDFS, HDFSURI: "hdfs://" + addr + "/loom/rmstore", HDFSUser: "loom", Timeout: time.Second})
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("open took %v with a 1s timeout", el)
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), addr) {
		t.Errorf("got %v, want ErrUnavailable naming %s", err, addr)
	}
}

// TestFilesLayout checks the tree against the documented layout, the
// one FileSystemRMStateStore keeps.
func TestFilesLayout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenHDFS(Config{HDFSURI: "file://" + dir})
	check(t, "open", err)
	defer s.Close()
	check(t, "put app", s.PutApp(ctx, "application_1_0001", []byte("app")))
	check(t, "put attempt", s.PutAttempt(ctx, "application_1_0001", "appattempt_1_0001_000001", []byte("att")))
	check(t, "put secret", s.PutSecret(ctx, "amrm-master-key-1", []byte("key")))
	_, err = s.BumpEpoch(ctx)
	check(t, "bump", err)
	for p, want := range map[string]string{
		"FSRMStateRoot/RMVersionNode":                                         "1",
		"FSRMStateRoot/EpochNode":                                             "1",
		"FSRMStateRoot/RMAppRoot/application_1_0001/application_1_0001":       "app",
		"FSRMStateRoot/RMAppRoot/application_1_0001/appattempt_1_0001_000001": "att",
		"FSRMStateRoot/RMSecretRoot/amrm-master-key-1":                        "key",
	} {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q, %v; want %q", p, got, err, want)
		}
	}
}

// TestFilesCrashLeftovers: what a crash mid-write or mid-remove leaves
// (a temporary file, a directory without its app's record, a tree
// renamed aside) is passed by on load and written over afterwards.
func TestFilesCrashLeftovers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenHDFS(Config{HDFSURI: "file://" + dir})
	check(t, "open", err)
	check(t, "put app", s.PutApp(ctx, "application_1_0001", []byte("app")))
	check(t, "put secret", s.PutSecret(ctx, "k", []byte("v1")))
	check(t, "close", s.Close())

	root := filepath.Join(dir, FSRoot)
	for p, data := range map[string]string{
		"RMSecretRoot/.k.tmp": "half a new v",
		"RMAppRoot/application_1_0001/.appattempt_1_0001_000001.tmp": "half an attempt",
		"RMAppRoot/application_1_0002/.application_1_0002.tmp":       "half an app",
		"RMAppRoot/.application_1_0003.removing/application_1_0003":  "an app being removed",
		".EpochNode.tmp": "7",
	} {
		p = filepath.Join(root, p)
		check(t, "mkdir", os.MkdirAll(filepath.Dir(p), 0o700))
		check(t, "write", os.WriteFile(p, []byte(data), 0o600))
	}

	s, err = OpenHDFS(Config{HDFSURI: "file://" + dir})
	check(t, "reopen", err)
	defer s.Close()
	want := &State{
		Apps:    map[string]App{"application_1_0001": {Data: []byte("app"), Attempts: map[string][]byte{}}},
		Secrets: map[string][]byte{"k": []byte("v1")},
	}
	got, err := s.Load(ctx)
	check(t, "load", err)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("load (-want +got):\n%s", d)
	}
	check(t, "put secret over a leftover", s.PutSecret(ctx, "k", []byte("v2")))
	check(t, "put attempt over a leftover", s.PutAttempt(ctx, "application_1_0001", "appattempt_1_0001_000001", []byte("a")))
	check(t, "put app over a leftover", s.PutApp(ctx, "application_1_0002", []byte("b")))
	n, err := s.BumpEpoch(ctx)
	check(t, "bump over a leftover", err)
	if n != 1 {
		t.Errorf("bump: got %d, want 1", n)
	}
	got, err = s.Load(ctx)
	check(t, "load", err)
	if len(got.Apps) != 2 || string(got.Secrets["k"]) != "v2" || len(got.Apps["application_1_0001"].Attempts) != 1 {
		t.Errorf("after writing over the leftovers: %+v", got)
	}
}
