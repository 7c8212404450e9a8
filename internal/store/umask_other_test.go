//go:build !unix

package store_test

func umask(m int) int { return 0 }
