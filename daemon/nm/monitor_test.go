package nm

import (
	"os"
	"testing"
)

func TestParseStatWithAwkwardCommandNames(t *testing.T) {
	line := "4242 (my (odd) cmd) S 4241 4240 4240 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 1 0 12345 104857600 2560 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
	p, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := proc{pid: 4242, ppid: 4241, pgrp: 4240, session: 4240, comm: "my (odd) cmd", utime: 250, stime: 30, vsize: 104857600, rss: 2560}
	if *p != want {
		t.Errorf("parsed %+v, want %+v", *p, want)
	}
	if _, err := parseStat([]byte("12 (x) S 1")); err == nil {
		t.Error("a short stat parsed")
	}
}

func TestProcessTreeIsTheGroupAndTheDescendants(t *testing.T) {
	procs := map[int]*proc{
		1:  {pid: 1, ppid: 0, pgrp: 1},
		10: {pid: 10, ppid: 1, pgrp: 10, rss: 1},  // the container's leader
		11: {pid: 11, ppid: 10, pgrp: 10, rss: 2}, // its child
		12: {pid: 12, ppid: 11, pgrp: 12, rss: 4}, // a grandchild in a group of its own
		13: {pid: 13, ppid: 1, pgrp: 10, rss: 8},  // orphaned, still in the group
		20: {pid: 20, ppid: 1, pgrp: 20, rss: 16}, // someone else
	}
	var pids []int
	for _, p := range processTree(procs, 10) {
		pids = append(pids, p.pid)
	}
	if len(pids) != 4 || pids[0] != 10 || pids[1] != 11 || pids[2] != 12 || pids[3] != 13 {
		t.Errorf("tree %v, want [10 11 12 13]", pids)
	}
	// This process, read from /proc, is its own tree's root.
	all, err := readProcs()
	if err != nil {
		t.Fatal(err)
	}
	if me := all[os.Getpid()]; me == nil || me.rss <= 0 {
		t.Errorf("this process in /proc: %+v", me)
	}
}

func TestByteStringIsYARNs(t *testing.T) {
	for n, want := range map[int64]string{512: "512 B", 64 << 20: "64 MB", 1 << 30: "1 GB", 215285760: "205.3 MB", 1536: "1.5 KB"} {
		if got := byteString(n); got != want {
			t.Errorf("byteString(%d) = %q, want %q", n, got, want)
		}
	}
}
