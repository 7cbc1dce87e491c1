// Package hostmem reads how much memory the machine has: the NM sizes
// its containers from it and the RM its collector's memory limit, neither
// importing the other.
package hostmem

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// TotalMB is MemTotal from /proc/meminfo, in MB.
func TotalMB() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("cannot read the machine's memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			break
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb <= 0 {
			break
		}
		return kb / 1024, nil
	}
	return 0, errors.New("cannot read the machine's memory: /proc/meminfo has no MemTotal")
}
