// Package store is the ResourceManager's state store, what a
// work-preserving restart recovers from (YARN's RMStateStore): each app's
// record and its attempts', the secrets behind the RM's tokens (master
// keys), and the epoch, a number each RM start takes a new value of so
// that ids minted after a restart never collide with ids from before it.
//
// The store keeps opaque bytes keyed by ids; the RM serialises its
// records itself. Three backends sit behind one interface: a bbolt file
// on local disk (the default), ZooKeeper (the option for HA), and a
// directory tree on HDFS. Open picks one from Config.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Store is a durable map of the RM's records. When a call returns nil,
// what it wrote survives a crash of the RM and of the machine (an
// fsync'd file, a ZooKeeper quorum write, an HDFS file closed).
//
// Ids and names are path components in some backends: they must be
// non-empty, must not contain '/' or NUL and must not start with '.'
// (YARN's application_*, appattempt_* and key names all qualify).
//
// A Store is safe for concurrent use. It assumes one RM writes at a time
// (the active one); fencing a stale active RM is the caller's job.
type Store interface {
	// Load returns everything stored, for recovery.
	Load(ctx context.Context) (*State, error)
	// BumpEpoch increments the RM's epoch and returns the new value: 1 on
	// a store's first start. Concurrent bumps, even from two RMs, never
	// return the same value; a bump whose reply was lost and is retried
	// may skip a number, so epochs are promised to increase, not to be
	// consecutive.
	BumpEpoch(ctx context.Context) (int64, error)
	// PutApp creates or replaces an app's record.
	PutApp(ctx context.Context, appID string, data []byte) error
	// PutAttempt creates or replaces an attempt's record. The app must
	// have been put first (ErrNoApp otherwise).
	PutAttempt(ctx context.Context, appID, attemptID string, data []byte) error
	// RemoveApp removes an app's record and all its attempts at once.
	// Removing an app that is not there is not an error.
	RemoveApp(ctx context.Context, appID string) error
	// PutSecret creates or replaces a named secret (e.g. a master key).
	PutSecret(ctx context.Context, name string, data []byte) error
	// RemoveSecret removes a secret; one that is not there is not an error.
	RemoveSecret(ctx context.Context, name string) error
	// Close releases the store (its file lock, its session). Calls after
	// Close return ErrClosed.
	Close() error
}

// State is everything a store holds. Maps are never nil, nor is any
// record's data (an empty record loads as an empty slice).
type State struct {
	// Epoch is the last value BumpEpoch returned, 0 if it never ran.
	Epoch int64
	// Apps by app id.
	Apps map[string]App
	// Secrets by name.
	Secrets map[string][]byte
}

// App is one app's stored record with its attempts'.
type App struct {
	Data []byte
	// Attempts by attempt id.
	Attempts map[string][]byte
}

func newState() *State {
	return &State{Apps: map[string]App{}, Secrets: map[string][]byte{}}
}

var (
	// ErrNoApp is PutAttempt's error when the attempt's app is not stored.
	ErrNoApp = errors.New("app not in the store")
	// ErrClosed is returned by calls on a closed store.
	ErrClosed = errors.New("store is closed")
	// ErrUnavailable wraps errors from a backend that could not be reached
	// in time (ZooKeeper or the namenode down, hung or partitioned). The
	// write may or may not have happened; every call is safe to repeat.
	ErrUnavailable = errors.New("store unavailable")
	// ErrTooLarge is a record the backend cannot hold (ZooKeeper's
	// jute.maxbuffer).
	ErrTooLarge = errors.New("record too large")
	// ErrInvalidName is an id or name the store refuses (see Store).
	ErrInvalidName = errors.New("invalid id")
	// ErrIncompatible is a store written in a layout this Loom cannot read.
	ErrIncompatible = errors.New("incompatible store layout")
)

// Names in the layout, YARN's where YARN has one (RMStateStore,
// ZKRMStateStore, FileSystemRMStateStore), so an operator who knows
// YARN's store finds their way around.
const (
	// DefaultZKRoot is where the ZooKeeper store lives by default:
	// YARN's yarn.resourcemanager.zk-state-store.parent-path (/rmstore)
	// and its ZKRMStateRoot under it.
	DefaultZKRoot = "/rmstore/ZKRMStateRoot"
	// FSRoot is the directory the HDFS store makes under the URI's path,
	// as FileSystemRMStateStore does.
	FSRoot = "FSRMStateRoot"
	// LocalFile is the local store's file in loom.store.dir.
	LocalFile = "rmstate.db"

	appRoot     = "RMAppRoot"
	secretRoot  = "RMSecretRoot"
	epochNode   = "EpochNode"
	versionNode = "RMVersionNode"
)

// layoutVersion is the version of the layouts below (the bbolt buckets,
// the znode tree, the directory tree). A store written by a newer,
// incompatible Loom is refused rather than misread.
const layoutVersion = 1

// checkVersion compares a stored layout version with ours; where names
// the store for the error.
func checkVersion(where string, stored []byte) error {
	v, err := strconv.Atoi(strings.TrimSpace(string(stored)))
	if err != nil {
		return fmt.Errorf("%s: %s holds %q, not a layout version: %w", where, versionNode, stored, ErrIncompatible)
	}
	if v != layoutVersion {
		return fmt.Errorf("%s: layout version %d; this Loom reads version %d: %w", where, v, layoutVersion, ErrIncompatible)
	}
	return nil
}

// refuseLostRoot is the error for a store whose version record says it
// was made, but which lost a part every store has: its apps or secrets
// were removed behind its back. where names the store, root its top.
func refuseLostRoot(where, root, missing string) error {
	return fmt.Errorf("%s %s has %s but no %s: the store held state and lost it; refusing to start with nothing; to start fresh, remove %s",
		where, root, versionNode, missing, root)
}

func versionBytes() []byte { return []byte(strconv.Itoa(layoutVersion)) }

// parseEpoch reads an epoch record; where names it for the error.
func parseEpoch(where string, data []byte) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: %q is not an epoch", where, data)
	}
	return n, nil
}

func epochBytes(n int64) []byte { return []byte(strconv.FormatInt(n, 10)) }

// checkName enforces the rules on ids and names (see Store); kind says
// what the name is, for the error.
func checkName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty %s: %w", kind, ErrInvalidName)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%s %q starts with '.': %w", kind, name, ErrInvalidName)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("%s %q contains '/' or NUL: %w", kind, name, ErrInvalidName)
	}
	return nil
}

// checkAttempt checks an app id and one of its attempt ids. An attempt
// may not share its app's id: the HDFS layout keeps the app's record in
// the app's directory under the app's own id, beside the attempts.
func checkAttempt(appID, attemptID string) error {
	if err := checkName("app id", appID); err != nil {
		return err
	}
	if err := checkName("attempt id", attemptID); err != nil {
		return err
	}
	if attemptID == appID {
		return fmt.Errorf("attempt id %q is its app's id: %w", attemptID, ErrInvalidName)
	}
	return nil
}

// nonNil makes an empty record load as an empty slice whatever the
// backend returned for it.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
