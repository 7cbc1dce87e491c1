package workload

import "github.com/loomrm/loom/fairness"

// The task demand model: the one place where Loom decides how much of each
// resource a catalogue task needs. Neither the TPC-H measurements nor
// Spark's plans carry per-task demands, so both catalogues derive them here
// from what a stage does.
//
// The model follows how Spark runs a stage's tasks:
//
//   - vcores: 1. Spark runs one task per executor core (spark.task.cpus=1).
//   - memory-mb: 2048 for a task that only scans and filters (it streams
//     through a 128 MB input split), plus 2048 if it reads shuffled input
//     (aggregation and sort buffers), plus 2048 if it joins two or more
//     inputs, a table scan counting as one (a hash table for the build
//     side). So 2, 4 or 6 GB.
//   - loom.io/disk: 40 MB/s for a task that scans a table (Parquet off
//     local SSD), 10 MB/s otherwise (shuffle files written and spilled).
//   - loom.io/network: 40 MB/s for a task that reads shuffled or broadcast
//     input over the network, 0 for a pure scan.
//
// On the paper's machines (20 cores, 128 GB, a 128 GB SSD taken as 500 MB/s,
// 10 Gbps = 1250 MB/s) this makes scans disk-bound (12 fit by disk before 20
// fit by cores) and joins memory-heavy (21 fit by memory), so the dominant
// resource differs between stages: the case where packing matters.
const (
	baseMemoryMB    = 2048
	shuffleMemoryMB = 2048
	joinMemoryMB    = 2048
	scanDiskMBps    = 40
	spillDiskMBps   = 10
	shuffleNetMBps  = 40
)

// StageShape is what the demand model needs to know about a stage.
type StageShape struct {
	// Scans is true when the stage reads table files.
	Scans bool
	// Inputs is the number of upstream stages whose output it reads
	// (shuffled or broadcast).
	Inputs int
	// Shuffles is true when at least one of those inputs is a shuffle, not
	// a broadcast.
	Shuffles bool
}

// TaskDemand returns the per-task demand of a stage of the given shape.
func TaskDemand(s StageShape) fairness.Vector {
	mem := float64(baseMemoryMB)
	if s.Shuffles {
		mem += shuffleMemoryMB
	}
	if s.Inputs >= 2 || (s.Scans && s.Inputs >= 1) {
		mem += joinMemoryMB
	}
	v := fairness.New(mem, 1)
	if s.Scans {
		v[fairness.Disk] = scanDiskMBps
	} else {
		v[fairness.Disk] = spillDiskMBps
	}
	if s.Inputs > 0 {
		v[fairness.Network] = shuffleNetMBps
	}
	return v
}

// PaperMachine is one machine of the Carbyne paper's cluster: 20 cores,
// 128 GB of memory, an SSD taken as 500 MB/s and a 10 Gbps NIC.
func PaperMachine() fairness.Vector {
	v := fairness.New(128*1024, 20)
	v[fairness.Disk] = 500
	v[fairness.Network] = 1250
	return v
}
