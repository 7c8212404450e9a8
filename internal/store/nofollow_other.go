//go:build !unix

package store

const oNoFollow = 0
