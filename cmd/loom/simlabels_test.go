package main

import (
	"slices"
	"strings"
	"testing"
)

// TestLabelModel: --node-labels and --labelled-machines give the labels
// and each machine's, from the end of the cluster; bad values name the
// flag.
func TestLabelModel(t *testing.T) {
	lm, err := labelModel("gpu(exclusive=true),shared(exclusive=false)", "gpu=2,shared=1", 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"", "", "shared", "gpu", "gpu"}; !slices.Equal(lm.Machines, want) {
		t.Errorf("machines %q, want %q", lm.Machines, want)
	}
	if !lm.Partitions["gpu"] || lm.Partitions["shared"] {
		t.Errorf("partitions %v", lm.Partitions)
	}
	for _, tc := range []struct{ labels, machines, want string }{
		{"gpu", "fpga=1", "fpga is not in --node-labels"},
		{"gpu", "gpu=9", "more labelled machines than the 5 there are"},
		{"gpu", "gpu", "write label=machines"},
		{"", "gpu=1", "--labelled-machines needs --node-labels"},
		{"a b", "", "--node-labels"},
	} {
		if _, err := labelModel(tc.labels, tc.machines, 5); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q: %v, want %q", tc.labels, tc.machines, err, tc.want)
		}
	}
}
