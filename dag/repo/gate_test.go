package repo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
)

// gc waits for a writer that holds the gate, and keeps new writers out
// while it runs.
func TestGCWaitsForWriters(t *testing.T) {
	ctx := context.Background()
	r := repo.New(memory.New())
	release := r.HoldWrites()
	done := make(chan error, 1)
	go func() {
		_, err := r.GC(ctx, true)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("gc ran while a writer held the gate: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("gc did not run after the writer released the gate")
	}
}

// gc refuses to run shortly after a remote client stored blocks.
func TestGCAfterRemoteWrite(t *testing.T) {
	r := repo.New(memory.New())
	r.NoteRemoteWrite()
	if _, err := r.GC(context.Background(), false); err == nil || !strings.Contains(err.Error(), "remote client stored blocks") {
		t.Fatalf("gc right after a remote write: %v", err)
	}
}
