//go:build unix

package main

import (
	"fmt"
	"syscall"
)

// raiseFileLimit lifts the soft limit on open files to the hard limit and
// returns the new soft limit: loadtest holds thousands of sockets.
func raiseFileLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("reading the open-files limit: %w", err)
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			return 0, fmt.Errorf("raising the open-files limit to %d: %w", rl.Max, err)
		}
	}
	return rl.Cur, nil
}
