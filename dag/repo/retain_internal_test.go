package repo

import (
	"testing"
	"time"
)

// restic's rules, on states one per 6 hours over 10 days, newest first.
func TestSelectStates(t *testing.T) {
	base := time.Date(2026, 3, 10, 23, 0, 0, 0, time.UTC).Unix()
	var states []State
	for i := range 40 {
		states = append(states, State{Seq: uint64(40 - i), Time: base - int64(i)*6*3600})
	}
	count := func(p Policy) (n int, kept []int) {
		for i, k := range selectStates(states, p) {
			if k {
				n++
				kept = append(kept, i)
			}
		}
		return
	}
	for _, tc := range []struct {
		p    Policy
		want int
	}{
		{Policy{Last: 3}, 3},
		{Policy{Last: -1}, 40},
		{Policy{Daily: 3}, 3},               // the newest of each of 3 days
		{Policy{Daily: 3, Last: 2}, 4},      // the newest two, and the newest of days 2 and 3
		{Policy{Hourly: 5}, 5},              // every state is its own hour
		{Policy{Within: 24 * time.Hour}, 5}, // 0, 6, 12, 18, 24 hours before the newest
		{Policy{Weekly: 2}, 2},
		{Policy{Monthly: 12}, 1},
		{Policy{Yearly: -1}, 1},
		{Policy{}, 0},
	} {
		if n, kept := count(tc.p); n != tc.want {
			t.Errorf("%s: kept %d %v, want %d", tc.p, n, kept, tc.want)
		}
	}
	_, kept := count(Policy{Daily: 3})
	if kept[0] != 0 || kept[1] != 4 || kept[2] != 8 {
		t.Errorf("--keep-daily 3 kept %v, want the newest state of each day: 0, 4, 8", kept)
	}
}
