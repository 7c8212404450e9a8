package execwire

import (
	"math"
	"strconv"
	"testing"
)

func TestDecimalMatchesStrconv(t *testing.T) {
	for _, x := range []uint64{0, 1, 9, 10, 99, 100, 4096, 1<<32 - 1, 1 << 32, math.MaxInt64, math.MaxUint64} {
		if got, want := decimal(x), strconv.FormatUint(x, 10); got != want {
			t.Errorf("decimal(%d) = %q, want %q", x, got, want)
		}
	}
}
