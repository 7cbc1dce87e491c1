// Package resource holds Loom's resource vectors: the kinds of resource a
// node offers and a task demands, and arithmetic on them. It is data, not
// policy, so that the protocol layer (rpc) can carry vectors without
// knowing any scheduling package; fairness builds DRF on it.
//
// The package is pure: no goroutines, no I/O, no clock.
package resource

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Kind names one resource dimension. The set is fixed so that a Vector is a
// small array: arithmetic on it allocates nothing, which matters on the
// scheduler's hot paths.
type Kind int

// The resource kinds. Memory and VCores are YARN's two built-in types; the
// others are YARN 3 style extra resource types, named the way
// resource-types.xml names them.
const (
	Memory  Kind = iota // MB
	VCores              // virtual cores
	Disk                // disk bandwidth, MB/s
	Network             // network bandwidth, MB/s
	GPU                 // devices
	NumKinds
)

var kindNames = [NumKinds]string{
	Memory:  "memory-mb",
	VCores:  "vcores",
	Disk:    "loom.io/disk",
	Network: "loom.io/network",
	GPU:     "yarn.io/gpu",
}

var kindUnits = [NumKinds]string{
	Memory:  "MB",
	VCores:  "",
	Disk:    "MB/s",
	Network: "MB/s",
	GPU:     "",
}

// String returns the YARN-style resource type name.
func (k Kind) String() string {
	if k < 0 || k >= NumKinds {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// Unit returns the unit the kind is measured in ("" for counts).
func (k Kind) Unit() string { return kindUnits[k] }

// ParseKind maps a resource type name ("memory-mb", "vcores", ...) to its Kind.
func ParseKind(name string) (Kind, error) {
	for k, n := range kindNames {
		if n == name {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown resource type %q (known: %s)", name, strings.Join(kindNames[:], ", "))
}

// Vector is an amount of every resource kind. Integral amounts (MB, cores)
// are exact in float64 up to 2^53, so sums and differences of task demands
// stay exact; fractional values appear only in DRF allocations.
type Vector [NumKinds]float64

// epsilon absorbs the rounding of fractional allocations in comparisons.
const epsilon = 1e-9

// New returns a vector with the given memory (MB) and vcores.
func New(memoryMB, vcores float64) Vector {
	var v Vector
	v[Memory] = memoryMB
	v[VCores] = vcores
	return v
}

// With returns a copy of v with kind k set to x.
func (v Vector) With(k Kind, x float64) Vector {
	v[k] = x
	return v
}

// Add returns v + w.
//
// Add, Sub and Scale are written out kind by kind: they are the
// simulator's and the planner's innermost arithmetic, and the loop over
// five kinds cost twice the sums themselves. unrolled stops the build if
// a kind is added without them.
func (v Vector) Add(w Vector) Vector {
	return Vector{v[0] + w[0], v[1] + w[1], v[2] + w[2], v[3] + w[3], v[4] + w[4]}
}

// unrolled is valid only while there are five kinds (Add, Sub, Scale).
var _ = [1]struct{}{}[NumKinds-5]

// Sub returns v - w.
func (v Vector) Sub(w Vector) Vector {
	return Vector{v[0] - w[0], v[1] - w[1], v[2] - w[2], v[3] - w[3], v[4] - w[4]}
}

// Scale returns f·v.
func (v Vector) Scale(f float64) Vector {
	return Vector{v[0] * f, v[1] * f, v[2] * f, v[3] * f, v[4] * f}
}

// Min returns the componentwise minimum.
func (v Vector) Min(w Vector) Vector {
	for i := range v {
		v[i] = math.Min(v[i], w[i])
	}
	return v
}

// Max returns the componentwise maximum.
func (v Vector) Max(w Vector) Vector {
	for i := range v {
		v[i] = math.Max(v[i], w[i])
	}
	return v
}

// ClampZero returns v with negative components set to zero.
func (v Vector) ClampZero() Vector {
	for i := range v {
		if v[i] < 0 {
			v[i] = 0
		}
	}
	return v
}

// IsZero reports whether every component is zero (within rounding).
func (v Vector) IsZero() bool {
	for _, x := range v {
		if math.Abs(x) > epsilon {
			return false
		}
	}
	return true
}

// HasNegative reports whether any component is below zero.
func (v Vector) HasNegative() bool {
	for _, x := range v {
		if x < -epsilon {
			return true
		}
	}
	return false
}

// FitsIn reports whether v ≤ w in every kind, allowing for rounding.
func (v Vector) FitsIn(w Vector) bool {
	for i := range v {
		if v[i] > w[i]+tolerance(w[i]) {
			return false
		}
	}
	return true
}

// Ceiling is a vector with the rounding FitsIn allows already added in
// each kind, for checking many demands against one amount: v.FitsIn(w)
// and v.FitsUnder(w.Ceiling()) always agree.
type Ceiling Vector

// Ceiling returns w's ceiling.
func (w Vector) Ceiling() Ceiling {
	var c Ceiling
	for i, x := range w {
		c[i] = x + tolerance(x)
	}
	return c
}

// FitsUnder reports whether v fits under a ceiling: FitsIn with the
// rounding computed once.
func (v Vector) FitsUnder(c Ceiling) bool {
	for i := range v {
		if v[i] > c[i] {
			return false
		}
	}
	return true
}

// Shortfall returns the first kind in which v does not fit in w, and false
// when v fits. It says why a fit check failed.
func (v Vector) Shortfall(w Vector) (Kind, bool) {
	for i := range v {
		if v[i] > w[i]+tolerance(w[i]) {
			return Kind(i), true
		}
	}
	return 0, false
}

// tolerance is the rounding allowed when comparing against x: relative for
// large amounts, absolute below 1. Plain comparisons, because fit checks
// sit on the planner's innermost loops.
func tolerance(x float64) float64 {
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return epsilon
	}
	return epsilon * x
}

// Count returns how many copies of task fit in v: the largest n with
// n·task ≤ v. A zero task fits without bound; the result is then
// math.MaxInt. It sits on the planner's innermost loop, hence the plain
// comparisons.
func (v Vector) Count(task Vector) int {
	n := math.MaxInt
	for i, t := range task {
		if t <= 0 {
			continue
		}
		c := (v[i] + tolerance(v[i])) / t
		if c < 1 {
			return 0
		}
		if c < float64(n) {
			n = int(c)
		}
	}
	return n
}

// Share returns v's share of capacity in each kind (0 where capacity is 0
// and v is 0; +Inf where capacity is 0 and v is not).
func (v Vector) Share(capacity Vector) Vector {
	var s Vector
	for i := range v {
		switch {
		case capacity[i] > 0:
			s[i] = v[i] / capacity[i]
		case v[i] > epsilon:
			s[i] = math.Inf(1)
		}
	}
	return s
}

// DominantShare returns max over kinds of v[k]/capacity[k]: DRF's measure of
// how much of the cluster v is. A positive amount of a kind the capacity
// lacks gives +Inf.
func (v Vector) DominantShare(capacity Vector) float64 {
	d, _ := v.Dominant(capacity)
	return d
}

// Dominant returns the dominant share and the kind that attains it.
func (v Vector) Dominant(capacity Vector) (float64, Kind) {
	// Share's arithmetic, one kind at a time, without the vector: this
	// runs for every app at every scheduling decision.
	best, kind := 0.0, Kind(0)
	for i := range v {
		var s float64
		switch {
		case capacity[i] > 0:
			s = v[i] / capacity[i]
		case v[i] > epsilon:
			s = math.Inf(1)
		}
		if s > best {
			best, kind = s, Kind(i)
		}
	}
	return best, kind
}

// Dot returns Σ v[k]·w[k].
func (v Vector) Dot(w Vector) float64 {
	var s float64
	for i := range v {
		s += v[i] * w[i]
	}
	return s
}

// String prints the non-zero kinds, memory and vcores always:
// "<memory-mb=2048, vcores=1, loom.io/disk=40>".
func (v Vector) String() string {
	var b strings.Builder
	b.WriteByte('<')
	for i, x := range v {
		if i > int(VCores) && x == 0 {
			continue
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%s", kindNames[i], formatAmount(x))
	}
	b.WriteByte('>')
	return b.String()
}

func formatAmount(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return fmt.Sprintf("%d", int64(x))
	}
	return fmt.Sprintf("%.4g", x)
}

// Map returns the non-zero components keyed by resource type name, the shape
// used in JSON documents.
func (v Vector) Map() map[string]float64 {
	m := make(map[string]float64)
	for i, x := range v {
		if x != 0 {
			m[kindNames[i]] = x
		}
	}
	return m
}

// FromMap builds a vector from resource type names. Unknown names and
// non-finite amounts are errors naming the key.
func FromMap(m map[string]float64) (Vector, error) {
	var v Vector
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, name := range keys {
		k, err := ParseKind(name)
		if err != nil {
			return Vector{}, err
		}
		x := m[name]
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Vector{}, fmt.Errorf("resource %q: amount %v is not a finite number", name, x)
		}
		v[k] = x
	}
	return v, nil
}

// MarshalJSON writes the vector as an object keyed by resource type name.
func (v Vector) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for i, x := range v {
		if x == 0 && i > int(VCores) {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%q:%s", kindNames[i], formatJSONNumber(x))
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func formatJSONNumber(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return fmt.Sprintf("%d", int64(x))
	}
	return fmt.Sprintf("%g", x)
}

// UnmarshalJSON reads an object keyed by resource type name.
func (v *Vector) UnmarshalJSON(data []byte) error {
	var m map[string]float64
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("resource vector: %w", err)
	}
	w, err := FromMap(m)
	if err != nil {
		return err
	}
	*v = w
	return nil
}
