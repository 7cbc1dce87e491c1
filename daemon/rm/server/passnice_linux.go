package server

import (
	"fmt"
	"runtime"
	"syscall"
)

// lowerThreadPriority locks the calling goroutine to its thread for good
// and adds nice to that thread's nice value (setpriority on a thread id:
// Linux's threads each have their own). Raising a nice value needs no
// privilege.
func lowerThreadPriority(nice int) error {
	runtime.LockOSThread()
	tid := syscall.Gettid()
	// The raw getpriority system call returns 20 - nice.
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return fmt.Errorf("getpriority of thread %d: %w", tid, err)
	}
	to := min(20-raw+nice, 19)
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, to); err != nil {
		return fmt.Errorf("setpriority of thread %d to nice %d: %w", tid, to, err)
	}
	return nil
}
