package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestFirstGCPercentLastsOneCollection: the engine starts with a high GC
// setting so that a short command never collects, and Go's default (or
// whatever GOGC said) is back once a collection has run.
func TestFirstGCPercentLastsOneCollection(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	startGC()
	if got := debug.SetGCPercent(firstGCPercent); got != firstGCPercent {
		t.Fatalf("GC percent after start = %d, want %d", got, firstGCPercent)
	}
	// A cleanup runs in its own goroutine after the collection: collect
	// until it has (bounded).
	for i := 0; i < 500; i++ {
		runtime.GC()
		if p := debug.SetGCPercent(-1); p == 100 {
			debug.SetGCPercent(p)
			return
		} else {
			debug.SetGCPercent(p)
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("GC percent still %d after 500 collections, want 100 restored", debug.SetGCPercent(100))
}
