package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

const (
	testApp1 = "application_1700000000000_0001"
	testApp2 = "application_1700000000000_0002"
	testAtt1 = "appattempt_1700000000000_0001_000001"
)

// fillStore writes a few records in dir's store through the interface,
// as an RM does (bump, then writes), and closes it.
func fillStore(t testing.TB, dir string) *State {
	t.Helper()
	ctx := context.Background()
	s, err := OpenLocal(dir, 0)
	check(t, "open", err)
	_, err = s.BumpEpoch(ctx)
	check(t, "bump", err)
	check(t, "put app1", s.PutApp(ctx, testApp1, []byte("record-of-app-1")))
	check(t, "put attempt", s.PutAttempt(ctx, testApp1, testAtt1, []byte("record-of-attempt-1")))
	check(t, "put app2", s.PutApp(ctx, testApp2, []byte("record-of-app-2")))
	check(t, "put secret", s.PutSecret(ctx, "ContainerTokenMasterKey", []byte("secret-bytes")))
	check(t, "put secret 2", s.PutSecret(ctx, "gone", []byte("x")))
	check(t, "remove secret 2", s.RemoveSecret(ctx, "gone"))
	st, err := s.Load(ctx)
	check(t, "load", err)
	check(t, "close", s.Close())
	return st
}

func markerOf(t testing.TB, dir string) marker {
	t.Helper()
	m, err := readMarker(filepath.Join(dir, LocalMarker))
	check(t, "read marker", err)
	if m == nil {
		t.Fatal("no marker")
	}
	return *m
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	check(t, "read "+from, err)
	check(t, "write "+to, os.WriteFile(to, data, 0o600))
}

// TestLocalRefusesWhatItCannotTrust opens a store after each kind of
// damage and wants the exact error.
func TestLocalRefusesWhatItCannotTrust(t *testing.T) {
	for _, c := range []struct {
		name string
		// damage breaks the store in dir and returns the error wanted.
		damage func(t *testing.T, dir, db, mk string) string
	}{
		{"corrupt page", func(t *testing.T, dir, db, mk string) string {
			data, err := os.ReadFile(db)
			check(t, "read", err)
			c := boltChecker{data: data}
			m, err := c.pickMeta()
			check(t, "meta", err)
			// The root bucket's page: garbage over all of it.
			off := m.root * m.pageSize
			copy(data[off:off+m.pageSize], bytes.Repeat([]byte{0xAB}, int(m.pageSize)))
			check(t, "write", os.WriteFile(db, data, 0o600))
			return fmt.Sprintf("local store %s is damaged: root bucket: page %d says it is page %d; "+
				"restore it from a backup, or to start fresh move it and %s aside", db, m.root, uint64(0xABABABABABABABAB), mk)
		}},
		{"page past the end", func(t *testing.T, dir, db, mk string) string {
			data, err := os.ReadFile(db)
			check(t, "read", err)
			c := boltChecker{data: data}
			m, err := c.pickMeta()
			check(t, "meta", err)
			// Cut the file short of the pages the meta page counts.
			check(t, "truncate", os.Truncate(db, int64(2*m.pageSize)))
			return fmt.Sprintf("local store %s is damaged: meta page %d says the file has %d pages; it holds 2; "+
				"restore it from a backup, or to start fresh move it and %s aside", db, m.which, m.hwm, mk)
		}},
		{"zero-length file", func(t *testing.T, dir, db, mk string) string {
			check(t, "truncate", os.Truncate(db, 0))
			m := markerOf(t, dir)
			return fmt.Sprintf("local store %s is empty (0 bytes) but held 2 apps at epoch %d (says %s): "+
				"refusing to start with nothing; to start fresh, remove %s", db, m.epoch, mk, mk)
		}},
		{"missing file with marker", func(t *testing.T, dir, db, mk string) string {
			check(t, "remove", os.Remove(db))
			return fmt.Sprintf("local store %s is missing but held 2 apps at epoch 1 (says %s): "+
				"refusing to start with nothing; to start fresh, remove %s", db, mk, mk)
		}},
		{"new empty bbolt file with marker", func(t *testing.T, dir, db, mk string) string {
			check(t, "remove", os.Remove(db))
			b, err := bolt.Open(db, 0o600, nil)
			check(t, "bolt open", err)
			check(t, "bolt close", b.Close())
			return fmt.Sprintf("local store %s holds no state (a new, empty bbolt file) but held 2 apps at epoch 1 (says %s): "+
				"refusing to start with nothing; to start fresh, remove %s", db, mk, mk)
		}},
		{"flipped byte in a record", func(t *testing.T, dir, db, mk string) string {
			data, err := os.ReadFile(db)
			check(t, "read", err)
			// Every copy of it, live or on a free page.
			n := bytes.Count(data, []byte("record-of-app-1"))
			if n == 0 {
				t.Fatal("record not in the file")
			}
			data = bytes.ReplaceAll(data, []byte("record-of-app-1"), []byte("record-of-app-9"))
			check(t, "write", os.WriteFile(db, data, 0o600))
			where := "apps/" + testApp1 + "/app"
			return fmt.Sprintf("local store %s is damaged: %s: checksum mismatch (stored %08x, computed %08x); "+
				"restore it from a backup, or to start fresh move it and %s aside",
				db, where, recordSum(where, []byte("record-of-app-1")), recordSum(where, []byte("record-of-app-9")), mk)
		}},
		{"flipped byte in an app id", func(t *testing.T, dir, db, mk string) string {
			data, err := os.ReadFile(db)
			check(t, "read", err)
			data = bytes.ReplaceAll(data, []byte(testApp2), []byte("application_1700000000000_0003"))
			check(t, "write", os.WriteFile(db, data, 0o600))
			where := "apps/application_1700000000000_0003/app"
			return fmt.Sprintf("local store %s is damaged: %s: checksum mismatch (stored %08x, computed %08x); "+
				"restore it from a backup, or to start fresh move it and %s aside",
				db, where, recordSum("apps/"+testApp2+"/app", []byte("record-of-app-2")), recordSum(where, []byte("record-of-app-2")), mk)
		}},
		{"rolled-back copy (older epoch)", func(t *testing.T, dir, db, mk string) string {
			old := filepath.Join(t.TempDir(), "old.db")
			copyFile(t, db, old)
			was := markerOf(t, dir)
			ctx := context.Background()
			s, err := OpenLocal(dir, 0)
			check(t, "open", err)
			_, err = s.BumpEpoch(ctx)
			check(t, "bump", err)
			check(t, "put app", s.PutApp(ctx, "application_1700000000000_0004", []byte("later")))
			check(t, "close", s.Close())
			now := markerOf(t, dir)
			copyFile(t, old, db)
			return fmt.Sprintf("local store %s is at epoch 1, transaction %d, but was at epoch 2, transaction %d, with 3 apps (says %s): "+
				"an older copy of the store? refusing to start from stale state; to start from this copy anyway, remove %s",
				db, was.txid, now.txid, mk, mk)
		}},
		{"rolled-back copy (same epoch)", func(t *testing.T, dir, db, mk string) string {
			ctx := context.Background()
			s, err := OpenLocal(dir, 0)
			check(t, "open", err)
			_, err = s.BumpEpoch(ctx)
			check(t, "bump", err)
			old := filepath.Join(t.TempDir(), "old.db")
			copyFile(t, db, old) // no write under way: a consistent copy
			was := markerOf(t, dir)
			check(t, "remove app", s.RemoveApp(ctx, testApp2))
			check(t, "close", s.Close())
			now := markerOf(t, dir)
			copyFile(t, old, db)
			return fmt.Sprintf("local store %s is at epoch 2, transaction %d, but was at epoch 2, transaction %d, with 1 app (says %s): "+
				"an older copy of the store? refusing to start from stale state; to start from this copy anyway, remove %s",
				db, was.txid, now.txid, mk, mk)
		}},
		{"another store's file", func(t *testing.T, dir, db, mk string) string {
			other := t.TempDir()
			fillStore(t, other)
			copyFile(t, filepath.Join(other, LocalFile), db)
			return fmt.Sprintf("local store %s is not the store %s describes (its id is %s, the marker's %s): "+
				"refusing to start from another store's state; to start from this file anyway, remove %s",
				db, mk, markerOf(t, other).id, markerOf(t, dir).id, mk)
		}},
		{"damaged marker", func(t *testing.T, dir, db, mk string) string {
			data, err := os.ReadFile(mk)
			check(t, "read", err)
			check(t, "write", os.WriteFile(mk, bytes.Replace(data, []byte("apps 2"), []byte("apps 0"), 1), 0o600))
			return fmt.Sprintf("local store marker %s is damaged (checksum mismatch (stored %s, computed %s)): it cannot vouch for %s; "+
				"if the store is the one you expect, remove the marker and the RM writes a new one",
				mk, markerSum(t, data, false), markerSum(t, data, true), db)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fillStore(t, dir)
			db, mk := filepath.Join(dir, LocalFile), filepath.Join(dir, LocalMarker)
			want := c.damage(t, dir, db, mk)
			s, err := OpenLocal(dir, 0)
			if err == nil {
				st, lerr := s.Load(context.Background())
				s.Close()
				t.Fatalf("opened a damaged store (load: %v, %d apps)", lerr, len(st.Apps))
			}
			if err.Error() != want {
				t.Errorf("got  %s\nwant %s", err, want)
			}
			// Whatever was refused was left as it was: refusing twice
			// gives the same answer.
			if _, err2 := OpenLocal(dir, 0); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("second open: got %v, want the same refusal", err2)
			}
		})
	}
}

// markerSum is the checksum a marker's text stores, or (computed) the
// one its text would need once apps 2 is changed to apps 0.
func markerSum(t *testing.T, data []byte, computed bool) string {
	t.Helper()
	for _, line := range strings.Split(string(data), "\n") {
		if !computed && strings.HasPrefix(line, "crc32c ") {
			return strings.TrimPrefix(line, "crc32c ")
		}
	}
	m, err := parseMarker(data)
	check(t, "parse marker", err)
	m.apps = 0
	enc := string(m.encode())
	return enc[strings.LastIndex(enc, "crc32c ")+len("crc32c ") : len(enc)-1]
}

// TestLocalForceFresh: removing the marker is how to start anew (or from
// an older copy) on purpose; the store then opens and is marked again.
func TestLocalForceFresh(t *testing.T) {
	dir := t.TempDir()
	fillStore(t, dir)
	db, mk := filepath.Join(dir, LocalFile), filepath.Join(dir, LocalMarker)
	check(t, "truncate", os.Truncate(db, 0))
	if _, err := OpenLocal(dir, 0); err == nil {
		t.Fatal("opened an emptied store")
	}
	check(t, "remove marker", os.Remove(mk))
	s, err := OpenLocal(dir, 0)
	check(t, "open after removing the marker", err)
	st, err := s.Load(context.Background())
	check(t, "load", err)
	if len(st.Apps) != 0 || st.Epoch != 0 {
		t.Errorf("fresh store holds %d apps at epoch %d", len(st.Apps), st.Epoch)
	}
	check(t, "close", s.Close())
	if m := markerOf(t, dir); m.apps != 0 || m.epoch != 0 {
		t.Errorf("new marker: %+v", m)
	}
}

// TestLocalUpgradesLayout1 reads a store written before records had
// checksums, and rewrites it with them.
func TestLocalUpgradesLayout1(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, LocalFile)
	b, err := bolt.Open(db, 0o600, nil)
	check(t, "bolt open", err)
	check(t, "write layout 1", b.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket(metaBucket)
		apps, _ := tx.CreateBucket(appsBucket)
		secrets, _ := tx.CreateBucket(secretsBucket)
		meta.Put(versionKey, []byte("1"))
		meta.Put(epochKey, []byte("3"))
		a, _ := apps.CreateBucket([]byte(testApp1))
		a.Put(appKey, []byte("old app"))
		at, _ := a.CreateBucket(attemptsBucket)
		at.Put([]byte(testAtt1), []byte("old attempt"))
		e, _ := apps.CreateBucket([]byte(testApp2))
		e.Put(appKey, []byte{})
		return secrets.Put([]byte("k"), []byte("old secret"))
	}))
	check(t, "bolt close", b.Close())
	want := &State{Epoch: 3,
		Apps: map[string]App{
			testApp1: {Data: []byte("old app"), Attempts: map[string][]byte{testAtt1: []byte("old attempt")}},
			testApp2: {Data: []byte{}, Attempts: map[string][]byte{}},
		},
		Secrets: map[string][]byte{"k": []byte("old secret")}}
	for i := range 2 {
		s, err := OpenLocal(dir, 0)
		check(t, "open", err)
		st, err := s.Load(context.Background())
		check(t, "load", err)
		if d := cmp.Diff(want, st); d != "" {
			t.Errorf("open %d (-want +got):\n%s", i+1, d)
		}
		check(t, "close", s.Close())
	}
	b, err = bolt.Open(db, 0o600, nil)
	check(t, "bolt open", err)
	defer b.Close()
	b.View(func(tx *bolt.Tx) error {
		if v := string(tx.Bucket(metaBucket).Get(versionKey)); v != "2" {
			t.Errorf("layout after the upgrade: %q, want 2", v)
		}
		if v := tx.Bucket(secretsBucket).Get([]byte("k")); !bytes.Equal(v, sealRecord("secrets/k", []byte("old secret"))) {
			t.Errorf("secret after the upgrade: %q, not sealed", v)
		}
		return nil
	})
}

// TestLocalSyncs: bbolt fsyncs each commit unless told not to.
func TestLocalSyncs(t *testing.T) {
	s, err := OpenLocal(t.TempDir(), 0)
	check(t, "open", err)
	defer s.Close()
	if s.db.NoSync || s.db.NoFreelistSync {
		t.Errorf("NoSync %v, NoFreelistSync %v: commits would not be durable", s.db.NoSync, s.db.NoFreelistSync)
	}
}

// TestLocalMarkerFollowsTheStore: the marker records the epoch after a
// bump and the last transaction after a close.
func TestLocalMarkerFollowsTheStore(t *testing.T) {
	dir := t.TempDir()
	fillStore(t, dir)
	m := markerOf(t, dir)
	if m.epoch != 1 || m.apps != 2 || len(m.id) != 32 {
		t.Errorf("marker after the first run: %+v", m)
	}
	s, err := OpenLocal(dir, 0)
	check(t, "open", err)
	n, err := s.BumpEpoch(context.Background())
	check(t, "bump", err)
	if m2 := markerOf(t, dir); m2.epoch != n || m2.txid <= m.txid || m2.id != m.id {
		t.Errorf("marker after bump to %d: %+v (was %+v)", n, m2, m)
	}
	check(t, "close", s.Close())
}

// openWithin opens and loads the store in dir, failing the test if that
// takes longer than d (a damaged file must never hang the RM).
func openWithin(t testing.TB, dir string, d time.Duration) (*State, error) {
	type result struct {
		st  *State
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := OpenLocal(dir, 0)
		if err != nil {
			done <- result{nil, err}
			return
		}
		st, err := s.Load(context.Background())
		if cerr := s.Close(); err == nil && cerr != nil {
			err = cerr
		}
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		return r.st, r.err
	case <-time.After(d):
		t.Fatalf("open and load did not return within %v", d)
		return nil, nil
	}
}

// TestRemoteStoresRefuseALostTree: the ZooKeeper and HDFS stores refuse
// a store that was made (its version is there) but lost its apps or
// secrets, instead of making it again empty.
func TestRemoteStoresRefuseALostTree(t *testing.T) {
	type remote struct {
		name string
		// fresh makes an empty place and returns how to open it, how to
		// remove a part (a directory or znode, with what is under it)
		// and the error's prefix and the store's top.
		fresh func(t *testing.T) (open func() (Store, error), remove func(part string), where, root string)
	}
	remotes := []remote{
		{"hdfs-logic-on-local-fs", func(t *testing.T) (func() (Store, error), func(string), string, string) {
			dir := t.TempDir()
			uri := "file://" + dir + "/rmstore"
			root := dir + "/rmstore/" + FSRoot
			return func() (Store, error) { return Open(Config{Kind: KindHDFS, HDFSURI: uri}) },
				func(part string) { check(t, "remove "+part, os.RemoveAll(filepath.Join(root, part))) },
				uri + " store", root
		}},
		{"zookeeper", func(t *testing.T) (func() (Store, error), func(string), string, string) {
			cfg := zkTestConfig(t)
			return func() (Store, error) { return Open(cfg) },
				func(part string) {
					c, err := zkRawConn(cfg.ZKAddresses[0])
					check(t, "connect", err)
					defer c.Close()
					zkDeleteTree(c, cfg.ZKRoot+"/"+part)
				},
				fmt.Sprintf("zookeeper store (%s)", cfg.ZKAddresses[0]), cfg.ZKRoot
		}},
	}
	for _, r := range remotes {
		for _, c := range []struct {
			part string
			want func(where, root string) string
		}{
			{appRoot, func(where, root string) string {
				return fmt.Sprintf("%s %s has RMVersionNode but no RMAppRoot: the store held state and lost it; "+
					"refusing to start with nothing; to start fresh, remove %s", where, root, root)
			}},
			{secretRoot, func(where, root string) string {
				return fmt.Sprintf("%s %s has RMVersionNode but no RMSecretRoot: the store held state and lost it; "+
					"refusing to start with nothing; to start fresh, remove %s", where, root, root)
			}},
		} {
			t.Run(r.name+"/lost "+c.part, func(t *testing.T) {
				open, remove, where, root := r.fresh(t)
				ctx := context.Background()
				s := mustOpen(t, open)
				_, err := s.BumpEpoch(ctx)
				check(t, "bump", err)
				check(t, "put app", s.PutApp(ctx, testApp1, []byte("a")))
				check(t, "put app 2", s.PutApp(ctx, testApp2, []byte("b")))
				check(t, "put secret", s.PutSecret(ctx, "k", []byte("s")))
				check(t, "close", s.Close())
				remove(c.part)
				s2, err := open()
				if err == nil {
					s2.Close()
					t.Fatal("opened a store that lost its " + c.part)
				}
				if want := c.want(where, root); err.Error() != want {
					t.Errorf("got  %s\nwant %s", err, want)
				}
			})
		}
	}
}
