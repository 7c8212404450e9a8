//go:build unix

package badger

import "syscall"

const oNoFollow = syscall.O_NOFOLLOW
