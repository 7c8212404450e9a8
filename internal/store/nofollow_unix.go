//go:build unix

package store

import "syscall"

const oNoFollow = syscall.O_NOFOLLOW
