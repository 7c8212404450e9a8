//go:build !unix

package export

const oNoFollow = 0
