package queueconf

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseResources(t *testing.T) {
	tests := []struct {
		in   string
		want Amount
	}{
		// Old form: both needed, any order, any case, fractions cut.
		{"1024 mb, 4 vcores", abs(f64(0), "memory-mb", 1024, "vcores", 4)},
		{"4 vcores,1024mb", abs(f64(0), "memory-mb", 1024, "vcores", 4)},
		{"  10000 MB,0VCores  ", abs(f64(0), "memory-mb", 10000, "vcores", 0)},
		{"1024.9 mb, 2.35 vcores", abs(f64(0), "memory-mb", 1024, "vcores", 2)},
		{"1024 mb 4 vcores", abs(f64(0), "memory-mb", 1024, "vcores", 4)},
		// One percentage: every type.
		{"50%", frac(f64(0.5), "memory-mb", 0.5, "vcores", 0.5)},
		{"12.5 %", frac(f64(0.125), "memory-mb", 0.125, "vcores", 0.125)},
		{"50% memory", frac(f64(0.5), "memory-mb", 0.5, "vcores", 0.5)}, // as Hadoop: one part is all types
		// Percent of memory and cpu; other types zero.
		{"50% memory, 25% cpu", frac(f64(0), "memory-mb", 0.5, "vcores", 0.25)},
		{"25% CPU, 50% Memory", frac(f64(0), "memory-mb", 0.5, "vcores", 0.25)},
		{"40% memory-mb, 60% vcores", frac(f64(0), "memory-mb", 0.4, "vcores", 0.6)},
		// New form, absolute: unnamed types left to the default.
		{"memory-mb=1024, vcores=4", abs(nil, "memory-mb", 1024, "vcores", 4)},
		{"vcores=2", abs(nil, "vcores", 2)},
		{"memory-mb=4096,vcores=8,yarn.io/gpu=2", abs(nil, "memory-mb", 4096, "vcores", 8, "yarn.io/gpu", 2)},
		// New form, percentages: unnamed types 100%.
		{"vcores=50%, memory-mb=20%", frac(f64(1), "memory-mb", 0.2, "vcores", 0.5)},
		{"yarn.io/gpu=0%", frac(f64(1), "yarn.io/gpu", 0)},
	}
	for _, tt := range tests {
		got, err := ParseResources(tt.in)
		if err != nil {
			t.Errorf("ParseResources(%q): %v", tt.in, err)
			continue
		}
		if d := cmp.Diff(tt.want, got, cmpOpts...); d != "" {
			t.Errorf("ParseResources(%q) (-want +got):\n%s", tt.in, d)
		}
	}
}

func TestParseResourcesErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `the resource string is empty`},
		{"   ", `the resource string is empty`},
		{"1024 mb", `"1024 mb": missing resource: vcores (the old form needs both mb and vcores)`},
		{"4 vcores", `"4 vcores": missing resource: mb (the old form needs both mb and vcores)`},
		{"1 gb, 1 vcores", `"1 gb, 1 vcores": unknown unit "gb" (the old form takes mb and vcores)`},
		{"1024 mb, 1 vcore", `"1024 mb, 1 vcore": unknown unit "vcore" (the old form takes mb and vcores)`},
		{"1024 mb, 2048 mb, 1 vcores", `"1024 mb, 2048 mb, 1 vcores": mb is given twice`},
		{"-1024 mb, 1 vcores", `"-1024 mb, 1 vcores": -1024 mb must not be negative`},
		{"1024 mb, -1 vcores", `"1024 mb, -1 vcores": -1 vcores must not be negative`},
		{"1.2.3 mb, 1 vcores", `"1.2.3 mb, 1 vcores": "1.2.3" is not a number`},
		{"mb, 1 vcores", `"mb, 1 vcores": cannot read "mb" (write "1024 mb, 4 vcores", "50%" or "memory-mb=1024, vcores=4")`},
		{"-5%", `"-5%": a percentage must not be negative`},
		{"abc%", `"abc%" is not a percentage`},
		{"50% disk", `"50% disk": unknown resource "disk" after the percentage (memory or cpu)`},
		{"50% memory, 25% disk", `"50% memory, 25% disk": "25% disk" names no resource (write "N% memory, M% cpu")`},
		{"50% memory, 60% memory", `"50% memory, 60% memory": memory-mb is given twice`},
		{"50% memory, 25", `"50% memory, 25": "25" is not a percentage of memory or cpu`},
		{"50% memory, 1024 mb", `"50% memory, 1024 mb": "1024 mb" is not a percentage of memory or cpu`},
		{"10% memory, 10% memory-mb", `"10% memory, 10% memory-mb": memory-mb is given twice`},
		{"memory-mb=1024, 4", `"4": every resource must be of the form name=value`},
		{"memory-mb=1024=2", `"memory-mb=1024=2": every resource must be of the form name=value`},
		{"memory=1024", `unknown resource type "memory" (YARN calls memory "memory-mb")`},
		{"cpu=4", `unknown resource type "cpu" (YARN calls CPU "vcores")`},
		{"=4", `a resource name is empty`},
		{"gpu count=4", `"gpu count" is not a resource type name`},
		{"memory-mb=1024, memory-mb=2048", `resource "memory-mb" is given twice`},
		{"memory-mb=-1", `memory-mb=-1: the value must not be negative`},
		{"memory-mb=1Gi", `memory-mb=1Gi: the value must be an integer without units`},
		{"memory-mb=1.5", `memory-mb=1.5: the value must be an integer without units`},
		{"memory-mb=99999999999999999999", `memory-mb=99999999999999999999: the value must be an integer without units`},
		{"memory-mb=9007199254740993", `memory-mb=9007199254740993: the value is too large`},
		{"vcores=50%, memory-mb=1024", `memory-mb=1024: the values must all be percentages when one is: "1024" is not a percentage`},
		{"vcores=-5%", `vcores=-5%: the values must all be percentages when one is: "-5%": a percentage must not be negative`},
	}
	for _, tt := range tests {
		_, err := ParseResources(tt.in)
		if err == nil {
			t.Errorf("ParseResources(%q): no error; want %s", tt.in, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("ParseResources(%q)\n got: %s\nwant: %s", tt.in, err, tt.want)
		}
	}
}

func TestAmountOf(t *testing.T) {
	cluster := map[string]float64{"memory-mb": 100000, "vcores": 100, "yarn.io/gpu": 8}
	tests := []struct {
		in   string
		want map[string]float64
	}{
		{"1024 mb, 4 vcores", map[string]float64{"memory-mb": 1024, "vcores": 4, "yarn.io/gpu": 0}},
		{"50%", map[string]float64{"memory-mb": 50000, "vcores": 50, "yarn.io/gpu": 4}},
		{"50% memory, 25% cpu", map[string]float64{"memory-mb": 50000, "vcores": 25, "yarn.io/gpu": 0}},
		{"vcores=50%, memory-mb=20%", map[string]float64{"memory-mb": 20000, "vcores": 50, "yarn.io/gpu": 8}},
		{"memory-mb=2048, yarn.io/fpga=1", map[string]float64{"memory-mb": 2048, "yarn.io/fpga": 1}},
	}
	for _, tt := range tests {
		a, err := ParseResources(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.want, a.Of(cluster), cmpOpts...); d != "" {
			t.Errorf("%q.Of (-want +got):\n%s", tt.in, d)
		}
	}
	if got := (Amount{}).Of(cluster); len(got) != 0 {
		t.Errorf("unset amount Of = %v, want empty", got)
	}
	scaled := frac(f64(0.4), "memory-mb", 0.4).Scale(0.5)
	if d := cmp.Diff(frac(f64(0.2), "memory-mb", 0.2), scaled, cmpOpts...); d != "" {
		t.Errorf("Scale (-want +got):\n%s", d)
	}
}
