//go:build !unix

package badger

func holdUmask() func() { return func() {} }
