//go:build unix

package main

import (
	"log/slog"
	"syscall"
)

// raiseOpenFileLimit raises the process's soft limit of open files to its
// hard limit: every connection is a descriptor, and the default soft
// limit (often 1024) is far below what a busy server holds.
func raiseOpenFileLimit(log *slog.Logger) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur >= l.Max {
		return
	}
	l.Cur = l.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		log.Warn("raise the open file limit", "err", err)
	}
}
