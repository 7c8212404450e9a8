package runtime

import (
	"context"
	"testing"
	"time"
)

// The pacer admits every command at once while no task lands, and while
// tasks land a burst of 8 and then no more than its rate.
func TestPacer(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel() // a command that cannot wait: admitted only if it need not

	p := newPacer(20)
	for i := range 100 {
		if err := p.admit(done); err != nil {
			t.Fatalf("idle: command %d had to wait: %v", i, err)
		}
	}
	p.taskStart()
	for i := range 8 {
		if err := p.admit(done); err != nil {
			t.Fatalf("busy: command %d of the burst had to wait: %v", i, err)
		}
	}
	if err := p.admit(done); err == nil {
		t.Fatal("busy: a ninth command at once was admitted")
	}
	start := time.Now()
	for range 4 {
		if err := p.admit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("busy: 4 commands beyond the burst at 20/s were admitted in %v", d)
	}
	// Just after the task: still busy; long after: idle again.
	p.taskEnd()
	if !p.busy() {
		t.Fatal("not busy just after a task")
	}
	p.lastEnd.Store(time.Now().Add(-time.Second).UnixNano())
	if p.busy() {
		t.Fatal("busy a second after the last task")
	}
	if err := newPacer(-1).admit(done); err != nil {
		t.Fatalf("no bound: %v", err)
	}
}
