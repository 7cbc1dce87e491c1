package resource

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVectorArithmetic(t *testing.T) {
	a := New(4096, 2).With(Disk, 40)
	b := New(1024, 1).With(Network, 10)
	tests := []struct {
		name      string
		got, want Vector
	}{
		{"add", a.Add(b), New(5120, 3).With(Disk, 40).With(Network, 10)},
		{"sub", a.Sub(b), New(3072, 1).With(Disk, 40).With(Network, -10)},
		{"scale", a.Scale(0.5), New(2048, 1).With(Disk, 20)},
		{"min", a.Min(b), New(1024, 1)},
		{"max", a.Max(b), New(4096, 2).With(Disk, 40).With(Network, 10)},
		{"clamp", a.Sub(b).ClampZero(), New(3072, 1).With(Disk, 40)},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestFitAndCount(t *testing.T) {
	node := New(8192, 4).With(Disk, 100)
	tests := []struct {
		name      string
		task      Vector
		fits      bool
		shortfall Kind
		count     int
	}{
		// min(8192/2048, 4/1, 100/40) = min(4, 4, 2.5) = 2
		{"disk-bound", New(2048, 1).With(Disk, 40), true, 0, 2},
		// min(8192/1024, 4/2) = 2
		{"cpu-bound", New(1024, 2), true, 0, 2},
		{"exact fit", node, true, 0, 1},
		{"too much memory", New(9000, 1), false, Memory, 0},
		{"needs a gpu", New(1, 1).With(GPU, 1), false, GPU, 0},
		// A third of a core: floating-point thirds must still count 12.
		{"fractional", New(0, 1.0/3), true, 0, 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.task.FitsIn(node); got != tc.fits {
				t.Errorf("FitsIn = %v, want %v", got, tc.fits)
			}
			if got := tc.task.FitsUnder(node.Ceiling()); got != tc.fits {
				t.Errorf("FitsUnder(Ceiling) = %v, want %v", got, tc.fits)
			}
			k, short := tc.task.Shortfall(node)
			if short == tc.fits || (short && k != tc.shortfall) {
				t.Errorf("Shortfall = %v, %v; want %v, %v", k, short, tc.shortfall, !tc.fits)
			}
			if got := node.Count(tc.task); got != tc.count {
				t.Errorf("Count = %d, want %d", got, tc.count)
			}
		})
	}
	// The rounding FitsIn allows: absolute (1e-9) below 1, relative above;
	// a ceiling holds the same.
	edge := []struct {
		v, w Vector
		fits bool
	}{
		{Vector{0.5 + 0.5e-9}, Vector{0.5}, true},
		{Vector{0.5 + 2e-9}, Vector{0.5}, false},
		{Vector{1000 * (1 + 0.5e-9)}, Vector{1000}, true},
		{Vector{1000 * (1 + 2e-9)}, Vector{1000}, false},
		{Vector{-1e-10}, Vector{0}, true},
		{Vector{2e-9}, Vector{0}, false},
	}
	for _, e := range edge {
		if got, under := e.v.FitsIn(e.w), e.v.FitsUnder(e.w.Ceiling()); got != e.fits || under != e.fits {
			t.Errorf("%v in %v: FitsIn %v, FitsUnder %v; want %v", e.v, e.w, got, under, e.fits)
		}
	}
	if got := node.Count(Vector{}); got != math.MaxInt {
		t.Errorf("Count(zero task) = %d, want MaxInt", got)
	}
}

func TestDominantShare(t *testing.T) {
	capacity := New(18, 9)
	tests := []struct {
		v     Vector
		share float64
		kind  Kind
	}{
		{New(4, 1), 4.0 / 18, Memory},
		{New(1, 3), 3.0 / 9, VCores},
		{Vector{}, 0, Memory},
		{New(1, 1).With(GPU, 1), math.Inf(1), GPU},
	}
	for _, tc := range tests {
		s, k := tc.v.Dominant(capacity)
		if s != tc.share || k != tc.kind {
			t.Errorf("Dominant(%v) = %v, %v; want %v, %v", tc.v, s, k, tc.share, tc.kind)
		}
	}
}

func TestVectorJSON(t *testing.T) {
	v := New(2048, 1).With(Disk, 40).With(GPU, 0.5)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"memory-mb":2048,"vcores":1,"loom.io/disk":40,"yarn.io/gpu":0.5}`
	if string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
	var back Vector
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back != v {
		t.Errorf("round trip = %v, want %v", back, v)
	}
	if got := v.String(); got != "<memory-mb=2048, vcores=1, loom.io/disk=40, yarn.io/gpu=0.5>" {
		t.Errorf("String = %s", got)
	}
}

func TestVectorJSONErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`{"memory":1}`, `unknown resource type "memory"`},
		{`{"vcores":"two"}`, `resource vector`},
		{`[1,2]`, `resource vector`},
	}
	for _, tc := range tests {
		var v Vector
		err := json.Unmarshal([]byte(tc.in), &v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Unmarshal(%s) error = %v, want it to mention %q", tc.in, err, tc.want)
		}
	}
}

func TestParseKind(t *testing.T) {
	for k := Kind(0); k < NumKinds; k++ {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, err)
		}
	}
}
