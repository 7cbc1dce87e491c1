package hostmem

import "testing"

func TestTotalMB(t *testing.T) {
	mb, err := TotalMB()
	if err != nil || mb <= 0 {
		t.Fatalf("machine memory %d MB, %v", mb, err)
	}
}
