//go:build !unix

package badger

const oNoFollow = 0
