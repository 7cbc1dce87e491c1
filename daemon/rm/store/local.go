package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Local is the default store: one bbolt file, <dir>/rmstate.db, every
// write a transaction fsync'd before it returns. bbolt holds an
// exclusive lock on the file, so a second RM pointed at the same dir
// fails to open it instead of corrupting it.
//
// Layout 2 (a name ending in / is a bucket):
//
//	meta/     version -> "2", id -> the store's random id,
//	          epoch -> decimal, digest -> see digest
//	apps/     <app id>/ app -> the app's record
//	                    attempts/ <attempt id> -> the attempt's record
//	secrets/  <name> -> the secret
//
// Every value but the version is sealed (sealRecord): a CRC32C over its
// place in the layout and its bytes comes first. Layout 1, which Loom
// wrote before, had no id, digest or checksums; OpenLocal rewrites such
// a store to layout 2 (a Loom that only knows layout 1 then refuses it,
// rather than misreading it).
//
// The store does not trust its file. OpenLocal checks bbolt's structure
// itself before bbolt walks it (checkBoltFile), then every record's
// checksum and the digest; and it keeps a marker beside the file
// (LocalMarker) recording the store's id, epoch, last bbolt transaction
// and apps, written when it opens, when the epoch is bumped and when it
// closes. A store file that is missing, empty, another store's or older
// than the marker says is refused, with what to do.
type Local struct {
	db     *bolt.DB
	path   string
	marker string
	id     string
	closed atomic.Bool

	markMu sync.Mutex
	marked int64 // the bbolt transaction the marker records
}

var _ Store = (*Local)(nil)

var (
	metaBucket     = []byte("meta")
	appsBucket     = []byte("apps")
	secretsBucket  = []byte("secrets")
	attemptsBucket = []byte("attempts")
	appKey         = []byte("app")
	versionKey     = []byte("version")
	epochKey       = []byte("epoch")
	idKey          = []byte("id")
	digestKey      = []byte("digest")
)

// localLayout is the local store's layout version (the ZooKeeper and
// HDFS stores are still at layoutVersion).
const localLayout = 2

// DefaultLockTimeout is how long OpenLocal waits for another process to
// let go of the file: long enough for an RM that is exiting, short enough
// that a second live RM is told at once.
const DefaultLockTimeout = time.Second

// OpenLocal opens (creating if needed) the store in dir. lockTimeout
// bounds the wait for the file's lock (DefaultLockTimeout if zero).
// A damaged file, or one the marker beside it disowns, is an error
// naming the file, what is wrong and what to do; never a panic.
func OpenLocal(dir string, lockTimeout time.Duration) (*Local, error) {
	if lockTimeout <= 0 {
		lockTimeout = DefaultLockTimeout
	}
	// The file holds the secrets behind the RM's tokens: only the RM's
	// user may read it.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("local store: %w", err)
	}
	s := &Local{path: filepath.Join(dir, LocalFile), marker: filepath.Join(dir, LocalMarker)}
	mk, err := readMarker(s.marker)
	if err != nil {
		return nil, err
	}
	if mk != nil {
		// bbolt makes a new store of a missing or empty file: with a
		// marker, that would be every app forgotten.
		st, err := os.Stat(s.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, s.refuseEmpty("is missing", mk)
		case err != nil:
			return nil, fmt.Errorf("local store %s: %w", s.path, err)
		case st.Size() == 0:
			return nil, s.refuseEmpty("is empty (0 bytes)", mk)
		}
	}
	// Check the file before bbolt opens it: a bbolt.Open that panics
	// leaves the file open and locked until the process exits.
	if data, err := os.ReadFile(s.path); err == nil && len(data) > 0 {
		if _, err := checkBoltFile(data); err != nil {
			return nil, s.damaged("%v", err)
		}
	}
	if s.db, err = s.openBolt(lockTimeout); err != nil {
		return nil, err
	}
	if err := s.open(mk); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

func plural(n int64, what string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func (s *Local) refuseEmpty(what string, mk *marker) error {
	return fmt.Errorf("local store %s %s but held %s at epoch %d (says %s): refusing to start with nothing; to start fresh, remove %s",
		s.path, what, plural(mk.apps, "app"), mk.epoch, s.marker, s.marker)
}

// damaged is the error for a file whose content cannot be trusted.
func (s *Local) damaged(format string, args ...any) error {
	return fmt.Errorf("local store %s is damaged: %s; restore it from a backup, or to start fresh move it and %s aside",
		s.path, fmt.Sprintf(format, args...), s.marker)
}

// safely runs f, turning a bbolt panic, or a fault on its memory map (a
// page past the end of the file), into an error naming the file.
func (s *Local) safely(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = s.damaged("bbolt: %v", r)
		}
	}()
	return f()
}

func (s *Local) openBolt(lockTimeout time.Duration) (*bolt.DB, error) {
	var db *bolt.DB
	// NoSync stays false: each commit is fsync'd before it returns.
	opts := &bolt.Options{Timeout: lockTimeout, NoSync: false, NoFreelistSync: false}
	err := s.safely(func() error {
		var err error
		db, err = bolt.Open(s.path, 0o600, opts)
		return err
	})
	switch {
	case err == nil:
		db.NoSync = false
		return db, nil
	case errors.Is(err, bolt.ErrTimeout):
		return nil, fmt.Errorf("local store %s: another process holds the file's lock (waited %v): is another RM running with the same %s?", s.path, lockTimeout, KeyDir)
	case errors.Is(err, bolt.ErrInvalid), errors.Is(err, bolt.ErrChecksum), errors.Is(err, bolt.ErrVersionMismatch):
		// Say what is wrong, if the file says.
		if data, rerr := os.ReadFile(s.path); rerr == nil {
			if _, cerr := checkBoltFile(data); cerr != nil {
				return nil, s.damaged("%v", cerr)
			}
		}
		return nil, s.damaged("not a bbolt file, or a damaged one (%v)", err)
	case strings.HasPrefix(err.Error(), "local store "):
		return nil, err
	}
	return nil, fmt.Errorf("local store %s: %w", s.path, err)
}

// localInfo is what a store file holds, in brief.
type localInfo struct {
	layout int // 0: nothing at all (a new file)
	id     string
	epoch  int64
	txid   int64
	apps   int64
}

// open checks the file under bbolt's lock, checks it against the
// marker, makes or upgrades the layout, and writes the marker.
func (s *Local) open(mk *marker) error {
	// Check again under bbolt's lock (the file could have changed since),
	// before bbolt walks any tree.
	data, err := os.ReadFile(s.path)
	if err != nil {
		return fmt.Errorf("local store %s: %w", s.path, err)
	}
	if _, err := checkBoltFile(data); err != nil {
		return s.damaged("%v", err)
	}
	data = nil
	if err := s.safely(s.boltCheck); err != nil {
		return err
	}
	var info localInfo
	err = s.safely(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			var err error
			info, err = s.inspect(tx)
			return err
		})
	})
	if err != nil {
		return err
	}
	if mk != nil {
		if err := s.checkMarker(info, mk); err != nil {
			return err
		}
	}
	if info.layout != localLayout {
		err = s.safely(func() error {
			return s.db.Update(func(tx *bolt.Tx) error {
				var err error
				if info.layout == 0 {
					err = s.create(tx)
				} else {
					err = s.upgrade(tx)
				}
				if err != nil {
					return err
				}
				info, err = s.inspect(tx)
				return err
			})
		})
		if err != nil {
			return err
		}
	}
	s.id = info.id
	return s.mark(info.txid, info.epoch, info.apps)
}

// boltCheck runs bbolt's own consistency check (safe now that
// checkBoltFile passed): it also checks the order of keys across pages.
func (s *Local) boltCheck() error {
	return s.db.View(func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() {
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return s.damaged("bbolt's check: %v", first)
		}
		return nil
	})
}

// checkMarker refuses a store the marker says is not the one, or older.
func (s *Local) checkMarker(info localInfo, mk *marker) error {
	switch {
	case info.layout == 0:
		return s.refuseEmpty("holds no state (a new, empty bbolt file)", mk)
	case info.id != mk.id:
		id := info.id
		if id == "" {
			id = "none: a store written before Loom kept ids"
		}
		return fmt.Errorf("local store %s is not the store %s describes (its id is %s, the marker's %s): "+
			"refusing to start from another store's state; to start from this file anyway, remove %s",
			s.path, s.marker, id, mk.id, s.marker)
	case info.epoch < mk.epoch, info.epoch == mk.epoch && info.txid < mk.txid:
		return fmt.Errorf("local store %s is at epoch %d, transaction %d, but was at epoch %d, transaction %d, with %s (says %s): "+
			"an older copy of the store? refusing to start from stale state; to start from this copy anyway, remove %s",
			s.path, info.epoch, info.txid, mk.epoch, mk.txid, plural(mk.apps, "app"), s.marker, s.marker)
	}
	return nil
}

// mark writes the marker, unless it already records a later transaction.
func (s *Local) mark(txid, epoch, apps int64) error {
	s.markMu.Lock()
	defer s.markMu.Unlock()
	if txid < s.marked {
		return nil
	}
	if err := writeMarker(s.marker, marker{id: s.id, epoch: epoch, txid: txid, apps: apps}); err != nil {
		return err
	}
	s.marked = txid
	return nil
}

// inspect reads what the file holds, checking every record (in layout 2).
func (s *Local) inspect(tx *bolt.Tx) (localInfo, error) {
	info := localInfo{txid: int64(tx.ID())}
	meta := tx.Bucket(metaBucket)
	if meta == nil {
		empty := true
		tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
		if !empty {
			return info, s.damaged("no %s bucket", metaBucket)
		}
		return info, nil
	}
	v := meta.Get(versionKey)
	if v == nil {
		return info, s.damaged("no layout version")
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(v)))
	switch {
	case err != nil:
		return info, fmt.Errorf("local store %s: %s holds %q, not a layout version: %w", s.path, versionKey, v, ErrIncompatible)
	case n == 1:
		info.layout = 1
		if e := meta.Get(epochKey); e != nil {
			if info.epoch, err = parseEpoch("local store "+s.path, e); err != nil {
				return info, err
			}
		}
		if b := tx.Bucket(appsBucket); b != nil {
			b.ForEachBucket(func([]byte) error { info.apps++; return nil })
		}
		return info, nil
	case n != localLayout:
		return info, fmt.Errorf("local store %s: layout version %d; this Loom reads versions 1 and %d: %w", s.path, n, localLayout, ErrIncompatible)
	}
	info.layout = localLayout
	st, d, err := s.readAll(tx)
	if err != nil {
		return info, err
	}
	info.id, info.epoch, info.apps = string(meta.Get(idKey)[4:]), st.Epoch, d.apps
	return info, nil
}

// sealedGet reads and checks a sealed value; nil, nil if absent.
func (s *Local) sealedGet(b *bolt.Bucket, key []byte, where string) ([]byte, error) {
	v := b.Get(key)
	if v == nil {
		return nil, nil
	}
	data, err := openRecord(where, v)
	if err != nil {
		return nil, s.damaged("%v", err)
	}
	return data, nil
}

// readAll reads and checks a layout-2 store: every record's checksum,
// nothing in it that the layout does not have, and the digest.
func (s *Local) readAll(tx *bolt.Tx) (*State, digest, error) {
	st := newState()
	var d digest
	err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		switch string(name) {
		case string(metaBucket), string(appsBucket), string(secretsBucket):
			return nil
		}
		return s.damaged("unexpected bucket %q", name)
	})
	if err != nil {
		return nil, d, err
	}
	meta, apps, secrets := tx.Bucket(metaBucket), tx.Bucket(appsBucket), tx.Bucket(secretsBucket)
	if apps == nil || secrets == nil {
		return nil, d, s.damaged("the %s or %s bucket is missing", appsBucket, secretsBucket)
	}
	if err := meta.ForEach(func(k, v []byte) error {
		switch string(k) {
		case string(versionKey), string(idKey), string(epochKey), string(digestKey):
			if v != nil {
				return nil
			}
		}
		return s.damaged("unexpected key %q in %s", k, metaBucket)
	}); err != nil {
		return nil, d, err
	}
	id, err := s.sealedGet(meta, idKey, "meta/id")
	if err == nil && len(id) == 0 {
		err = s.damaged("no store id")
	}
	if err != nil {
		return nil, d, err
	}
	if e, err := s.sealedGet(meta, epochKey, "meta/epoch"); err != nil {
		return nil, d, err
	} else if e != nil {
		if st.Epoch, err = parseEpoch("local store "+s.path, e); err != nil {
			return nil, d, s.damaged("%v", err)
		}
	}
	dv, err := s.sealedGet(meta, digestKey, "meta/digest")
	if err == nil && dv == nil {
		err = s.damaged("no digest")
	}
	if err != nil {
		return nil, d, err
	}
	stored, err := parseDigest(string(dv))
	if err != nil {
		return nil, d, s.damaged("meta/digest: %v", err)
	}

	err = apps.ForEach(func(id, v []byte) error {
		if v != nil {
			return s.damaged("unexpected key %q in %s", id, appsBucket)
		}
		b := apps.Bucket(id)
		app := App{Attempts: map[string][]byte{}}
		err := b.ForEach(func(k, v []byte) error {
			switch {
			case string(k) == string(appKey) && v != nil:
				where := "apps/" + string(id) + "/app"
				data, err := openRecord(where, v)
				if err != nil {
					return s.damaged("%v", err)
				}
				app.Data = clone(data)
				d.add(where, data)
				return nil
			case string(k) == string(attemptsBucket) && v == nil:
				return b.Bucket(k).ForEach(func(att, v []byte) error {
					where := "apps/" + string(id) + "/attempts/" + string(att)
					if v == nil {
						return s.damaged("unexpected bucket %s", where)
					}
					data, err := openRecord(where, v)
					if err != nil {
						return s.damaged("%v", err)
					}
					app.Attempts[string(att)] = clone(data)
					d.add(where, data)
					return nil
				})
			}
			return s.damaged("unexpected key %q in apps/%s", k, id)
		})
		if err != nil {
			return err
		}
		if app.Data == nil {
			return s.damaged("apps/%s has no app record", id)
		}
		d.apps++
		st.Apps[string(id)] = app
		return nil
	})
	if err != nil {
		return nil, d, err
	}
	err = secrets.ForEach(func(k, v []byte) error {
		where := "secrets/" + string(k)
		if v == nil {
			return s.damaged("unexpected bucket %s", where)
		}
		data, err := openRecord(where, v)
		if err != nil {
			return s.damaged("%v", err)
		}
		st.Secrets[string(k)] = clone(data)
		d.add(where, data)
		return nil
	})
	if err != nil {
		return nil, d, err
	}
	if d != stored {
		return nil, d, s.damaged("records are missing or extra: it holds %s, its digest says %s", d, stored)
	}
	return st, d, nil
}

// newID is a new store's id.
func newID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// create makes a new store's layout in an empty file.
func (s *Local) create(tx *bolt.Tx) error {
	for _, b := range [][]byte{metaBucket, appsBucket, secretsBucket} {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	return s.putMeta(tx, newID(), digest{})
}

func (s *Local) putMeta(tx *bolt.Tx, id string, d digest) error {
	meta := tx.Bucket(metaBucket)
	if err := meta.Put(versionKey, []byte(strconv.Itoa(localLayout))); err != nil {
		return err
	}
	if err := meta.Put(idKey, sealRecord("meta/id", []byte(id))); err != nil {
		return err
	}
	return meta.Put(digestKey, sealRecord("meta/digest", []byte(d.String())))
}

// upgrade rewrites a layout-1 store as layout 2, in one transaction:
// every record sealed, an id and a digest added.
func (s *Local) upgrade(tx *bolt.Tx) error {
	for _, b := range [][]byte{metaBucket, appsBucket, secretsBucket} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	meta := tx.Bucket(metaBucket)
	// A layout-2 store whose version record was damaged into "1" would be
	// sealed twice over: its epoch, sealed, tells.
	if e := meta.Get(epochKey); e != nil {
		if _, err := openRecord("meta/epoch", e); err == nil {
			return s.damaged("its layout version says 1 but its records carry checksums (layout %d): the version record is damaged", localLayout)
		}
		n, err := parseEpoch("local store "+s.path, e)
		if err != nil {
			return err
		}
		if err := meta.Put(epochKey, sealRecord("meta/epoch", epochBytes(n))); err != nil {
			return err
		}
	}
	type rec struct {
		b     *bolt.Bucket
		key   []byte
		where string
		data  []byte
	}
	var recs []rec
	var d digest
	apps := tx.Bucket(appsBucket)
	err := apps.ForEach(func(id, v []byte) error {
		if v != nil {
			return s.damaged("unexpected key %q in %s", id, appsBucket)
		}
		b := apps.Bucket(id)
		d.apps++
		where := "apps/" + string(id) + "/app"
		recs = append(recs, rec{b, appKey, where, clone(b.Get(appKey))})
		if ab := b.Bucket(attemptsBucket); ab != nil {
			return ab.ForEach(func(k, v []byte) error {
				if v == nil {
					return s.damaged("unexpected bucket apps/%s/attempts/%s", id, k)
				}
				recs = append(recs, rec{ab, clone(k), "apps/" + string(id) + "/attempts/" + string(k), clone(v)})
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	secrets := tx.Bucket(secretsBucket)
	err = secrets.ForEach(func(k, v []byte) error {
		if v == nil {
			return s.damaged("unexpected bucket secrets/%s", k)
		}
		recs = append(recs, rec{secrets, clone(k), "secrets/" + string(k), clone(v)})
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range recs {
		d.add(r.where, r.data)
		if err := r.b.Put(r.key, sealRecord(r.where, r.data)); err != nil {
			return err
		}
	}
	return s.putMeta(tx, newID(), d)
}

// Path is the store's file.
func (s *Local) Path() string { return s.path }

// MarkerPath is the marker beside the store's file (LocalMarker).
func (s *Local) MarkerPath() string { return s.marker }

// writer is one write transaction, keeping the digest up to date.
type writer struct {
	s  *Local
	tx *bolt.Tx
	d  digest
}

// put replaces a record, taking the old one (checked) out of the digest.
func (w *writer) put(b *bolt.Bucket, key []byte, where string, data []byte) error {
	if err := w.drop(b, key, where); err != nil {
		return err
	}
	data = nonNil(data)
	w.d.add(where, data)
	return b.Put(key, sealRecord(where, data))
}

// drop takes a record out of the digest (not out of the bucket).
func (w *writer) drop(b *bolt.Bucket, key []byte, where string) error {
	old, err := w.s.sealedGet(b, key, where)
	if err != nil {
		return err
	}
	if old != nil {
		w.d.remove(where, old)
	}
	return nil
}

// update runs a write transaction; f gets the digest, which is stored
// back with the write.
func (s *Local) update(ctx context.Context, f func(w *writer) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.safely(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			meta := tx.Bucket(metaBucket)
			dv, err := s.sealedGet(meta, digestKey, "meta/digest")
			if err != nil {
				return err
			}
			d, err := parseDigest(string(dv))
			if err != nil {
				return s.damaged("meta/digest: %v", err)
			}
			w := &writer{s: s, tx: tx, d: d}
			if err := f(w); err != nil {
				return err
			}
			if w.d == d {
				return nil
			}
			return meta.Put(digestKey, sealRecord("meta/digest", []byte(w.d.String())))
		})
	})
	if errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// Load implements Store. It checks every record again.
func (s *Local) Load(ctx context.Context) (*State, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var st *State
	err := s.safely(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			var err error
			st, _, err = s.readAll(tx)
			return err
		})
	})
	if errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return nil, ErrClosed
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// clone copies a value out of a transaction (bbolt's are valid only
// inside it); never nil.
func clone(b []byte) []byte { return append([]byte{}, b...) }

// BumpEpoch implements Store. bbolt runs one writer at a time, and the
// file lock keeps other processes out, so read-and-write is atomic. The
// marker then records the new epoch.
func (s *Local) BumpEpoch(ctx context.Context) (int64, error) {
	var n, txid, apps int64
	err := s.update(ctx, func(w *writer) error {
		meta := w.tx.Bucket(metaBucket)
		v, err := s.sealedGet(meta, epochKey, "meta/epoch")
		if err != nil {
			return err
		}
		if v != nil {
			if n, err = parseEpoch("local store "+s.path, v); err != nil {
				return s.damaged("%v", err)
			}
		}
		n++
		txid, apps = int64(w.tx.ID()), w.d.apps
		return meta.Put(epochKey, sealRecord("meta/epoch", epochBytes(n)))
	})
	if err != nil {
		return 0, err
	}
	return n, s.mark(txid, n, apps)
}

// PutApp implements Store.
func (s *Local) PutApp(ctx context.Context, appID string, data []byte) error {
	if err := checkName("app id", appID); err != nil {
		return err
	}
	return s.update(ctx, func(w *writer) error {
		apps := w.tx.Bucket(appsBucket)
		b := apps.Bucket([]byte(appID))
		if b == nil {
			var err error
			if b, err = apps.CreateBucket([]byte(appID)); err != nil {
				return err
			}
			w.d.apps++
		}
		return w.put(b, appKey, "apps/"+appID+"/app", data)
	})
}

// PutAttempt implements Store.
func (s *Local) PutAttempt(ctx context.Context, appID, attemptID string, data []byte) error {
	if err := checkAttempt(appID, attemptID); err != nil {
		return err
	}
	return s.update(ctx, func(w *writer) error {
		b := w.tx.Bucket(appsBucket).Bucket([]byte(appID))
		if b == nil {
			return fmt.Errorf("attempt %s: app %s: %w", attemptID, appID, ErrNoApp)
		}
		ab, err := b.CreateBucketIfNotExists(attemptsBucket)
		if err != nil {
			return err
		}
		return w.put(ab, []byte(attemptID), "apps/"+appID+"/attempts/"+attemptID, data)
	})
}

// RemoveApp implements Store.
func (s *Local) RemoveApp(ctx context.Context, appID string) error {
	if err := checkName("app id", appID); err != nil {
		return err
	}
	return s.update(ctx, func(w *writer) error {
		apps := w.tx.Bucket(appsBucket)
		b := apps.Bucket([]byte(appID))
		if b == nil {
			return nil
		}
		if err := w.drop(b, appKey, "apps/"+appID+"/app"); err != nil {
			return err
		}
		if ab := b.Bucket(attemptsBucket); ab != nil {
			err := ab.ForEach(func(k, _ []byte) error {
				return w.drop(ab, k, "apps/"+appID+"/attempts/"+string(k))
			})
			if err != nil {
				return err
			}
		}
		w.d.apps--
		return apps.DeleteBucket([]byte(appID))
	})
}

// PutSecret implements Store.
func (s *Local) PutSecret(ctx context.Context, name string, data []byte) error {
	if err := checkName("secret name", name); err != nil {
		return err
	}
	return s.update(ctx, func(w *writer) error {
		return w.put(w.tx.Bucket(secretsBucket), []byte(name), "secrets/"+name, data)
	})
}

// RemoveSecret implements Store.
func (s *Local) RemoveSecret(ctx context.Context, name string) error {
	if err := checkName("secret name", name); err != nil {
		return err
	}
	return s.update(ctx, func(w *writer) error {
		b := w.tx.Bucket(secretsBucket)
		if err := w.drop(b, []byte(name), "secrets/"+name); err != nil {
			return err
		}
		return b.Delete([]byte(name))
	})
}

// Close implements Store. The marker then records the store's last
// transaction, so that a copy taken before it is refused.
func (s *Local) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	var txid, epoch, apps int64
	err := s.safely(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			txid = int64(tx.ID())
			meta := tx.Bucket(metaBucket)
			if v, err := s.sealedGet(meta, epochKey, "meta/epoch"); err != nil {
				return err
			} else if v != nil {
				if epoch, err = parseEpoch("local store "+s.path, v); err != nil {
					return err
				}
			}
			dv, err := s.sealedGet(meta, digestKey, "meta/digest")
			if err != nil {
				return err
			}
			d, err := parseDigest(string(dv))
			apps = d.apps
			return err
		})
	})
	if err == nil {
		err = s.mark(txid, epoch, apps)
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}
