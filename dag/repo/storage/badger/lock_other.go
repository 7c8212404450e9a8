//go:build !unix

package badger

import "os"

// lockDir takes no lock of its own where flock is missing; Badger's
// directory lock still refuses a second writer.
func lockDir(dir string, shared bool) (*os.File, error) { return nil, nil }

// holdDir takes no lock where flock is missing: only the age of a building
// directory tells another Create that it was abandoned.
func holdDir(dir string) (*os.File, error) { return nil, nil }
