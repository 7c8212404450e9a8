//go:build unix

package export

import "syscall"

const oNoFollow = syscall.O_NOFOLLOW
