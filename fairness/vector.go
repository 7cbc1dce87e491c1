// Package fairness holds the inter-job policy: weighted Dominant Resource
// Fairness with demand caps, and Jain's index, over the resource vectors
// of package resource (named here too, as the cores use them).
//
// The package is pure: no goroutines, no I/O, no clock.
package fairness

import "github.com/loomrm/loom/resource"

// Kind, Vector and Ceiling are package resource's, under the names the
// cores use.
type (
	Kind    = resource.Kind
	Vector  = resource.Vector
	Ceiling = resource.Ceiling
)

// The resource kinds.
const (
	Memory   = resource.Memory
	VCores   = resource.VCores
	Disk     = resource.Disk
	Network  = resource.Network
	GPU      = resource.GPU
	NumKinds = resource.NumKinds
)

// New is a vector of memory (MB) and vcores.
func New(memoryMB, vcores float64) Vector { return resource.New(memoryMB, vcores) }

// ParseKind reads a resource type's name.
func ParseKind(name string) (Kind, error) { return resource.ParseKind(name) }

// FromMap reads a vector keyed by resource type names.
func FromMap(m map[string]float64) (Vector, error) { return resource.FromMap(m) }
