package cli

import (
	"flag"
	"time"
)

// testStart is when this test binary started.
var testStart = time.Now()

// patience is how long a script command waits for what must happen (a
// server coming up, an MCP answer, lines of a follow) before it calls it a
// hang: what is left of the test binary's -timeout less a margin to say
// so. A loaded machine or -race makes these waits long, never wrong, so no
// fixed budget decides a script's outcome, and a real hang still fails with
// its own message.
func patience() time.Duration {
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok && d > 0 {
				left := d - time.Since(testStart)
				return max(left-max(left/10, 5*time.Second), time.Second)
			}
		}
	}
	return 10 * time.Minute
}
