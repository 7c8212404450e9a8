package remote

import "time"

// SetWriteTimeoutForTest shortens the time each write to a client has, until restore.
func SetWriteTimeoutForTest(d time.Duration) (restore func()) {
	w := writeTimeout
	writeTimeout = d
	return func() { writeTimeout = w }
}
