package badger_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
)

// TestMain lets the test binary run one Create on behalf of a test that
// kills it (TestCreateKilled), or the victim of TestDeferredKilled.
func TestMain(m *testing.M) {
	if dir := os.Getenv("AGENTSTATE_TEST_DEFERRED"); dir != "" {
		deferredChild(dir) // never returns
	}
	if dir := os.Getenv("AGENTSTATE_TEST_CREATE"); dir != "" {
		s, err := badger.Create(dir, badger.Options{})
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		if err := s.Close(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// whole reports whether dir is a store that opens and holds its format.
func whole(t *testing.T, dir string) {
	t.Helper()
	s, err := badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A Create killed at any instant leaves no store, a whole one, or a
// half-made one that HalfMade recognises and Create replaces; the building
// directories it leaves are removed by a later Create once abandoned.
func TestCreateKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills processes")
	}
	parent := t.TempDir()
	outcomes := map[string]int{}
	for i := range 30 {
		dir := filepath.Join(parent, "s")
		if i%2 == 1 {
			if err := os.Mkdir(dir, 0o755); err != nil { // an empty directory made by the user
				t.Fatal(err)
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "AGENTSTATE_TEST_CREATE="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()

		ents, err := os.ReadDir(dir)
		switch {
		case errors.Is(err, os.ErrNotExist) || (err == nil && len(ents) == 0):
			outcomes["none"]++
		case badger.IsStoreDir(dir) && !badger.HalfMade(dir):
			whole(t, dir)
			outcomes["whole"]++
		default:
			if !badger.HalfMade(dir) {
				t.Fatalf("kill %d left %s neither absent, whole nor half-made: %v", i, dir, ents)
			}
			outcomes["half-made"]++
		}
		if _, err := badger.Open(dir, badger.Options{}); err == nil {
			// whole: nothing more to check
		} else {
			s, err := badger.Create(dir, badger.Options{})
			if err != nil {
				t.Fatalf("kill %d: Create over what was left: %v", i, err)
			}
			s.Close()
			whole(t, dir)
		}
		// Age what a killed Create left building, so the next Create removes it.
		old := time.Now().Add(-2 * time.Minute)
		bents, _ := os.ReadDir(parent)
		for _, e := range bents {
			if strings.HasPrefix(e.Name(), badger.NewPrefix) {
				os.Chtimes(filepath.Join(parent, e.Name()), old, old)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	s, err := badger.Create(filepath.Join(parent, "s"), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	ents, _ := os.ReadDir(parent)
	if len(ents) != 1 {
		t.Fatalf("building directories left beside the store: %v", ents)
	}
	t.Logf("outcomes of 30 kills: %v", outcomes)
}

func TestCreateReplacesHalfMade(t *testing.T) {
	ctx := context.Background()
	// Badger's files without the marker.
	dir := filepath.Join(t.TempDir(), "s")
	os.Mkdir(dir, 0o700)
	for _, n := range []string{"KEYREGISTRY", "000001.vlog", "000003.mem", "agentstate.lock", "DISCARD"} {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600)
	}
	if _, err := badger.Open(dir, badger.Options{}); !errors.Is(err, badger.ErrNotStore) {
		t.Fatalf("open of a half-made store: %v", err)
	}
	if !badger.HalfMade(dir) {
		t.Fatal("Badger files without a marker are not taken for a half-made store")
	}
	s, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	whole(t, dir)

	// A marker, but the format record never written.
	dir = filepath.Join(t.TempDir(), "s")
	os.Mkdir(dir, 0o700)
	raw, err := badger.OpenRaw(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if !badger.IsStoreDir(dir) || !badger.HalfMade(dir) {
		t.Fatal("a store without its format record is not taken for a half-made one")
	}
	s, err = badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.GetMeta(ctx, "format"); err != nil || !ok || string(v) != badger.FormatVersion {
		t.Fatalf("format %q %v %v", v, ok, err)
	}
	s.Close()

	// A whole store is never half-made, and Create refuses it.
	if badger.HalfMade(dir) {
		t.Fatal("a whole store taken for a half-made one")
	}
	if _, err := badger.Create(dir, badger.Options{}); err == nil {
		t.Fatal("Create replaced a whole store")
	}
}

// A directory holding anything a store does not make is never replaced.
func TestCreateKeepsUserFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	os.Mkdir(dir, 0o755)
	for _, n := range []string{"KEYREGISTRY", "000001.vlog", "notes.txt"} {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600)
	}
	if badger.HalfMade(dir) {
		t.Fatal("a directory with a user's file taken for a half-made store")
	}
	if _, err := badger.Create(dir, badger.Options{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Create over a user's files: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "x" {
		t.Fatal("the user's file changed")
	}
	ents, _ := os.ReadDir(filepath.Dir(dir))
	if len(ents) != 1 {
		t.Fatalf("a refused Create left entries beside the directory: %v", ents)
	}
}
