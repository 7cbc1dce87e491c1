package server

import (
	"time"

	"github.com/loomrm/loom/daemon/rm/store"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// rollingKey is a token master key that rolls as YARN's secret managers
// roll theirs: every interval a next key is made and saved; activation
// later it becomes the current one and the old one is forgotten. Who
// signs with the next key before it is current depends on who checks the
// tokens: AMRM tokens are checked by the RM itself, so new ones are signed
// with the next key at once; NMTokens are checked by NodeManagers, so the
// next key first goes out to every NM in its heartbeat and signs nothing
// until it is current. Both keys sit in the state store, so tokens outlive
// an RM restart. Fields are guarded by the RM's mu.
type rollingKey struct {
	// what names the key in logs; secret and nextSecret in the store.
	what, secret, nextSecret string
	cur, next                *pb.MasterKeyProto
	rolled                   time.Time
	every, activation        time.Duration
}

// loadRollingKey reads the keys from the store's state (or makes a current one).
func (r *RM) loadRollingKey(k *rollingKey, state *store.State, now time.Time) error {
	var err error
	if k.cur, err = r.masterKey(state, k.secret); err != nil {
		return err
	}
	if k.next, err = r.storedKey(state, k.nextSecret); err != nil {
		return err
	}
	if k.next.GetKeyId() == k.cur.GetKeyId() {
		k.next = nil // the RM died activating it
	}
	k.rolled = now
	return nil
}

// find is the key a token names by its key id: the current or the next
// one, else nil.
func (k *rollingKey) find(id int32) *pb.MasterKeyProto {
	switch {
	case k.next != nil && id == k.next.GetKeyId():
		return k.next
	case id == k.cur.GetKeyId():
		return k.cur
	}
	return nil
}

// newest is the next key if there is one, else the current one.
func (k *rollingKey) newest() *pb.MasterKeyProto {
	if k.next != nil {
		return k.next
	}
	return k.cur
}

// roll makes a next key, or activates it, when it is time. Keys are saved
// before they are used, outside the lock. It says whether a key was
// activated.
func (r *RM) roll(k *rollingKey, now time.Time) (activated bool, err error) {
	r.mu.Lock()
	cur, next, since := k.cur, k.next, now.Sub(k.rolled)
	r.mu.Unlock()
	switch {
	case next == nil && since >= k.every:
		nk := newMasterKey(cur.GetKeyId())
		if err := r.saveKey(k.nextSecret, nk); err != nil {
			return false, err
		}
		r.mu.Lock()
		r.keyMu.Lock()
		k.next, k.rolled = nk, now
		r.keyMu.Unlock()
		r.mu.Unlock()
		r.log.Info().Int32("key", nk.GetKeyId()).Msgf("%s master key rolled: a next key is out", k.what)
	case next != nil && since >= k.activation:
		if err := r.saveKey(k.secret, next); err != nil {
			return false, err
		}
		if err := r.saveKey(k.nextSecret, nil); err != nil {
			return false, err
		}
		r.mu.Lock()
		r.keyMu.Lock()
		k.cur, k.next = next, nil
		r.keyMu.Unlock()
		r.mu.Unlock()
		r.log.Info().Int32("key", next.GetKeyId()).Int32("retired", cur.GetKeyId()).Msgf("%s master key activated", k.what)
		return true, nil
	}
	return false, nil
}
