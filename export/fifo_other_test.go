//go:build !unix

package export_test

import "errors"

func mkfifo(p string) error { return errors.New("no FIFOs on this system") }
