package fairness_test

import (
	"testing"
	"time"

	"github.com/loomrm/loom/fairness"
	"github.com/loomrm/loom/tool/bench"
	"github.com/loomrm/loom/tool/benchtarget"
)

// BenchmarkDRF1000Apps: the target is a median under 1 ms for 1,000
// apps over 3 resources.
func BenchmarkDRF1000Apps(b *testing.B) {
	capacity, claims := bench.DRFClaims(7)
	benchtarget.Run(b, time.Millisecond, func() { fairness.DRF(capacity, claims) })
}
