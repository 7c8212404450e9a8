package cli

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// init and clone into a new directory, killed at any instant, leave no
// store or a whole one: every command opens what is left, and the same
// command run again finishes the job.
func TestCreateKilledCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills processes")
	}
	bin := cliBin(t)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	if r := execCLI(t, bin, src, nil, "init"); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	for i := range 20 {
		f, _ := randomFile(t, tmp, i, 64<<10)
		if r := execCLI(t, bin, src, nil, "--agent", "lumen", "put", "k"+string(rune('a'+i))+".bin", f); r.code != 0 {
			t.Fatalf("put: %s", r.stderr)
		}
	}
	kills := map[string]int{}
	for i := range 24 {
		dst := filepath.Join(tmp, "dst")
		args := []string{"--store", dst, "init"}
		if i%2 == 1 {
			args = []string{"--store", dst, "clone", src, "lumen"}
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if err == nil {
			kills["finished"]++
		} else {
			kills["killed"]++
		}
		if ents, err := os.ReadDir(dst); err == nil && len(ents) > 0 {
			if r := execCLI(t, bin, dst, nil, "verify"); r.code != 0 {
				t.Fatalf("%v killed: verify of what was left: %s", args[2:], r.stderr)
			}
		}
		// The same command again finishes the job (or says it is done).
		r := execCLI(t, bin, dst, nil, args[2:]...)
		if r.code != 0 && !strings.Contains(r.stderr, "already exists") {
			t.Fatalf("%v again after a kill: %s", args[2:], r.stderr)
		}
		if i%2 == 1 {
			if r := execCLI(t, bin, dst, nil, "--agent", "lumen", "get", "ka.bin"); r.code != 0 {
				t.Fatalf("get after clone: %s", r.stderr)
			}
		}
		if err := os.RemoveAll(dst); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%v", kills)
}
