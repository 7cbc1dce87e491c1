package rpc_test

import (
	"testing"
	"time"

	"github.com/loomrm/loom/tool/bench"
	"github.com/loomrm/loom/tool/benchtarget"
)

// BenchmarkAllocateRoundTrip: an empty allocate() over loopback, one call
// at a time. Target: p50 under 50 µs. allocs/op counts both the client's
// and the server's allocations for the call.
func BenchmarkAllocateRoundTrip(b *testing.B) {
	r, err := bench.NewRPC(1)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	benchtarget.Run(b, 50*time.Microsecond, func() {
		if err := r.Allocate(0); err != nil {
			b.Fatal(err)
		}
	})
}

func benchThroughput(b *testing.B, conns int) {
	r, err := bench.NewRPC(conns)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if err := r.Batch(64, b.N); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
	b.ReportMetric(30000, "target-calls/s")
}

// BenchmarkPipelined64: 64 callers share one connection. Target: at least
// 30,000 calls/s on a 2-core machine.
func BenchmarkPipelined64(b *testing.B) { benchThroughput(b, 1) }

// BenchmarkConns64: 64 callers, each on its own connection. Target: at
// least 30,000 calls/s.
func BenchmarkConns64(b *testing.B) { benchThroughput(b, 64) }
