package remote

import "time"

// SetTimeoutsForTest shortens a TCP connection's timeouts until restore.
func SetTimeoutsForTest(auth, idle time.Duration) (restore func()) {
	a, i := authTimeout, idleTimeout
	authTimeout, idleTimeout = auth, idle
	return func() { authTimeout, idleTimeout = a, i }
}

// PreAuthMax is preAuthMax.
const PreAuthMax = preAuthMax
