package rpc

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"fmt"
	"sync"
	"testing"
)

// freshMAC is a token's password the plain way: HMAC-SHA1 keyed anew.
func freshMAC(key, identifier []byte) []byte {
	m := hmac.New(sha1.New, key)
	m.Write(identifier)
	return m.Sum(nil)
}

// TokenPassword reuses keyed HMACs: whatever the order of keys and
// identifiers, from many goroutines at once and past the number of pools
// it keeps, each password must be the HMAC-SHA1 of that identifier under
// that key (RFC 2202's first case checks the HMAC itself).
func TestTokenPasswordIsHMACSHA1(t *testing.T) {
	key := bytes.Repeat([]byte{0x0b}, 20)
	if got, want := fmt.Sprintf("%x", TokenPassword(key, []byte("Hi There"))), "b617318655057264e28bc0b6fb378c8ef146be00"; got != want {
		t.Fatalf("HMAC-SHA1 of RFC 2202 case 1 = %s, want %s", got, want)
	}
	keys := [][]byte{{}, []byte("k"), bytes.Repeat([]byte("long key "), 20)}
	for i := range 2 * maxMACPools {
		keys = append(keys, []byte(fmt.Sprintf("master key %d", i)))
	}
	ids := [][]byte{nil, []byte("a"), bytes.Repeat([]byte{1, 2, 3}, 100)}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 50 {
				k := keys[(g+round)%len(keys)]
				id := ids[(g*round)%len(ids)]
				if got, want := TokenPassword(k, id), freshMAC(k, id); !bytes.Equal(got, want) {
					errs <- fmt.Sprintf("key %q, identifier %q: %x, want %x", k, id, got, want)
					return
				}
				if !TokenPasswordOK(k, id, freshMAC(k, id)) || TokenPasswordOK(k, append(id, 0), freshMAC(k, id)) {
					errs <- fmt.Sprintf("key %q, identifier %q: TokenPasswordOK disagrees with the HMAC", k, id)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// BenchmarkTokenPassword signs a container token's worth of identifier
// with keyed HMACs reused (what the RM does) and keyed anew each time
// (what it did before).
func BenchmarkTokenPassword(b *testing.B) {
	key, id := bytes.Repeat([]byte{7}, 20), bytes.Repeat([]byte{1}, 120)
	b.Run("reused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			TokenPassword(key, id)
		}
	})
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			freshMAC(key, id)
		}
	})
}
