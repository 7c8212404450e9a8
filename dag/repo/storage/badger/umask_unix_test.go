//go:build unix

package badger_test

import "syscall"

func umask(m int) int { return syscall.Umask(m) }
