package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Local is the default store: one bbolt file, <dir>/rmstate.db, every
// write a transaction fsync'd before it returns. bbolt holds an
// exclusive lock on the file, so a second RM pointed at the same dir
// fails to open it instead of corrupting it.
//
// Layout (a name ending in / is a bucket):
//
//	meta/     version -> "1", epoch -> decimal
//	apps/     <app id>/ app -> the app's record
//	                    attempts/ <attempt id> -> the attempt's record
//	secrets/  <name> -> the secret
type Local struct {
	db     *bolt.DB
	path   string
	closed atomic.Bool
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
)

// DefaultLockTimeout is how long OpenLocal waits for another process to
// let go of the file: long enough for an RM that is exiting, short enough
// that a second live RM is told at once.
const DefaultLockTimeout = time.Second

// OpenLocal opens (creating if needed) the store in dir. lockTimeout
// bounds the wait for the file's lock (DefaultLockTimeout if zero).
func OpenLocal(dir string, lockTimeout time.Duration) (*Local, error) {
	if lockTimeout <= 0 {
		lockTimeout = DefaultLockTimeout
	}
	// The file holds the secrets behind the RM's tokens: only the RM's
	// user may read it.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("local store: %w", err)
	}
	path := filepath.Join(dir, LocalFile)
	db, err := openBolt(path, lockTimeout)
	if err != nil {
		return nil, err
	}
	s := &Local{db: db, path: path}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{metaBucket, appsBucket, secretsBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(metaBucket)
		if v := meta.Get(versionKey); v != nil {
			return checkVersion("local store "+path, v)
		}
		return meta.Put(versionKey, versionBytes())
	})
	if err != nil {
		db.Close()
		if errors.Is(err, ErrIncompatible) {
			return nil, err
		}
		return nil, fmt.Errorf("local store %s: %w", path, err)
	}
	return s, nil
}

func openBolt(path string, lockTimeout time.Duration) (db *bolt.DB, err error) {
	// bbolt panics on some kinds of damage instead of returning an error.
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("local store %s: the file is corrupt (%v); move it aside to start with an empty store", path, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, bolt.ErrTimeout):
		return nil, fmt.Errorf("local store %s: another process holds the file's lock (waited %v): is another RM running with the same %s?", path, lockTimeout, KeyDir)
	case errors.Is(err, bolt.ErrInvalid), errors.Is(err, bolt.ErrChecksum), errors.Is(err, bolt.ErrVersionMismatch):
		return nil, fmt.Errorf("local store %s: the file is corrupt or not a store (%v); move it aside to start with an empty store", path, err)
	}
	return nil, fmt.Errorf("local store %s: %w", path, err)
}

// Path is the store's file.
func (s *Local) Path() string { return s.path }

func (s *Local) update(ctx context.Context, f func(tx *bolt.Tx) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.Update(f)
	if errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// Load implements Store.
func (s *Local) Load(ctx context.Context) (st *State, err error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, fmt.Errorf("local store %s: the file is corrupt (%v)", s.path, r)
		}
	}()
	st = newState()
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(metaBucket).Get(epochKey); v != nil {
			n, err := parseEpoch("local store "+s.path, v)
			if err != nil {
				return err
			}
			st.Epoch = n
		}
		err := tx.Bucket(appsBucket).ForEachBucket(func(id []byte) error {
			b := tx.Bucket(appsBucket).Bucket(id)
			app := App{Data: clone(b.Get(appKey)), Attempts: map[string][]byte{}}
			if ab := b.Bucket(attemptsBucket); ab != nil {
				if err := ab.ForEach(func(k, v []byte) error {
					app.Attempts[string(k)] = clone(v)
					return nil
				}); err != nil {
					return err
				}
			}
			st.Apps[string(id)] = app
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(secretsBucket).ForEach(func(k, v []byte) error {
			st.Secrets[string(k)] = clone(v)
			return nil
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
// file lock keeps other processes out, so read-and-write is atomic.
func (s *Local) BumpEpoch(ctx context.Context) (int64, error) {
	var n int64
	err := s.update(ctx, func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		if v := meta.Get(epochKey); v != nil {
			var err error
			if n, err = parseEpoch("local store "+s.path, v); err != nil {
				return err
			}
		}
		n++
		return meta.Put(epochKey, epochBytes(n))
	})
	return n, err
}

// PutApp implements Store.
func (s *Local) PutApp(ctx context.Context, appID string, data []byte) error {
	if err := checkName("app id", appID); err != nil {
		return err
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		b, err := tx.Bucket(appsBucket).CreateBucketIfNotExists([]byte(appID))
		if err != nil {
			return err
		}
		return b.Put(appKey, nonNil(data))
	})
}

// PutAttempt implements Store.
func (s *Local) PutAttempt(ctx context.Context, appID, attemptID string, data []byte) error {
	if err := checkAttempt(appID, attemptID); err != nil {
		return err
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(appsBucket).Bucket([]byte(appID))
		if b == nil {
			return fmt.Errorf("attempt %s: app %s: %w", attemptID, appID, ErrNoApp)
		}
		ab, err := b.CreateBucketIfNotExists(attemptsBucket)
		if err != nil {
			return err
		}
		return ab.Put([]byte(attemptID), nonNil(data))
	})
}

// RemoveApp implements Store.
func (s *Local) RemoveApp(ctx context.Context, appID string) error {
	if err := checkName("app id", appID); err != nil {
		return err
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		err := tx.Bucket(appsBucket).DeleteBucket([]byte(appID))
		if errors.Is(err, bolt.ErrBucketNotFound) {
			return nil
		}
		return err
	})
}

// PutSecret implements Store.
func (s *Local) PutSecret(ctx context.Context, name string, data []byte) error {
	if err := checkName("secret name", name); err != nil {
		return err
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(secretsBucket).Put([]byte(name), nonNil(data))
	})
}

// RemoveSecret implements Store.
func (s *Local) RemoveSecret(ctx context.Context, name string) error {
	if err := checkName("secret name", name); err != nil {
		return err
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(secretsBucket).Delete([]byte(name))
	})
}

// Close implements Store.
func (s *Local) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.db.Close()
}
