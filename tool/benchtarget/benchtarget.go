// Package benchtarget reports a benchmark's median per-operation time next
// to the target an issue set for it, so `go test -bench` output carries both
// figures on one line:
//
//	BenchmarkDRF1000Apps-2   1000   412345 ns/op   0.41 median-ms   1.00 target-ms
//
// It is for _test.go files only.
package benchtarget

import (
	"sort"
	"testing"
	"time"
)

// Run times op once per benchmark iteration and reports the median and the
// target in milliseconds. Medians, not means: these 2-core machines are
// noisy, and one descheduled iteration should not move the figure.
func Run(b *testing.B, target time.Duration, op func()) {
	b.Helper()
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		op()
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	report(b, target, samples)
}

func report(b *testing.B, target time.Duration, samples []time.Duration) {
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	median := samples[len(samples)/2]
	b.ReportMetric(float64(median)/float64(time.Millisecond), "median-ms")
	b.ReportMetric(float64(target)/float64(time.Millisecond), "target-ms")
	if median > target {
		b.Logf("median %v is over the %v target", median, target)
	}
}

// RunWithSetup is Run with an untimed setup before each timed op, for
// operations that consume their input.
func RunWithSetup(b *testing.B, target time.Duration, setup, op func()) {
	b.Helper()
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		setup()
		b.StartTimer()
		start := time.Now()
		op()
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	report(b, target, samples)
}
