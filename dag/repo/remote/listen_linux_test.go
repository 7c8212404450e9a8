package remote_test

import (
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo/remote"
)

// A burst of connections beyond the process's descriptor limit makes
// accept fail with "too many open files": the listener waits and goes on,
// and a normal command succeeds afterwards.
func TestListenerSurvivesDescriptorExhaustion(t *testing.T) {
	_, addr, log := listening(t, remote.Options{MaxConns: 4096, MaxConnsPerHost: 4096})
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = uint64(len(fds) + 40)
	if low.Cur > lim.Cur {
		t.Fatalf("descriptor limit %d already below %d", lim.Cur, low.Cur)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	restore := func() {
		for _, c := range held {
			c.Close()
		}
		held = nil
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	defer restore()
	// Dial until the server has met the limit (bounded: 400 attempts).
	for i := 0; i < 400 && !strings.Contains(log(), "too many open files"); i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		held = append(held, c)
	}
	restore()
	if !strings.Contains(log(), "too many open files") {
		t.Fatalf("the burst never exhausted the server's descriptors; log:\n%s", log())
	}
	if strings.Contains(log(), "no longer listening") {
		t.Fatalf("the listener stopped:\n%s", log())
	}
	command(t, addr)
}
