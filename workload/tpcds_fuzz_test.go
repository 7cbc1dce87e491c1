package workload

import (
	"strings"
	"testing"

	"github.com/loomrm/loom/fairness"
)

// FuzzParseSparkPlan feeds the cutter arbitrary text: it must never panic,
// and any job it returns must be one the scheduler can run.
func FuzzParseSparkPlan(f *testing.F) {
	for _, q := range []string{"q1", "q2", "q6", "q9", "q44"} {
		data, err := tpcdsPlans.ReadFile(tpcdsPlanDir + "/" + q + tpcdsPlanSuffix)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data), uint8(1))
	}
	f.Add("Project\n  Subquery #1\n    Exchange #3\n      Scan parquet db.reason [r]\n", uint8(0))
	f.Add("Project\n  Filter\n    SubqueryBroadcast [d] #1\n      ReusedSubquery [d] #1\n", uint8(3))
	f.Add("Union\n  Exchange [a] #1\n    ReusedExchange [a] #2\n  Exchange [a] #2\n    Scan parquet db.inventory [i]\n", uint8(2))
	nodes := []fairness.Vector{PaperMachine()}
	scales := TPCDSScales()
	// The scale is picked from the supported ones: a bad scale factor is
	// rejected before the plan is read (TestParseSparkPlanErrors), so
	// fuzzing it would only waste runs.
	f.Fuzz(func(t *testing.T, plan string, scale uint8) {
		j, err := ParseSparkPlan("fuzz", plan, scales[int(scale)%len(scales)])
		if err != nil {
			if j != nil {
				t.Errorf("a job and an error: %v", err)
			}
			if strings.TrimSpace(err.Error()) == "" {
				t.Error("empty error")
			}
			return
		}
		if _, err := j.Graph(); err != nil {
			t.Fatalf("returned an invalid job: %v", err)
		}
		if err := j.CheckFits(nodes); err != nil {
			t.Fatalf("returned a job that fits no node: %v", err)
		}
		if j.Stages[0].Name != "s0" {
			t.Errorf("first stage %q, want s0", j.Stages[0].Name)
		}
	})
}
