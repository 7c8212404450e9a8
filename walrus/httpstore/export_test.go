package httpstore

import (
	"context"
	"time"
)

// SetSleep replaces the client's retry wait, so tests can record waits
// instead of sleeping.
func (c *Client) SetSleep(f func(ctx context.Context, d time.Duration) error) { c.sleep = f }
