//go:build !linux

package server

import "errors"

func lowerThreadPriority(int) error {
	return errors.New("a thread's own priority is set on Linux only")
}
