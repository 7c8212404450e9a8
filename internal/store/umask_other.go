//go:build !unix

package store

func holdUmask() func() { return func() {} }
