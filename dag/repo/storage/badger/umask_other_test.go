//go:build !unix

package badger_test

func umask(m int) int { return 0 }
