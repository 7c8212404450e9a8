package remote_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo/remote"
)

// Every HTTP response has a write deadline that moves with the bytes: a
// client that stops reading a large download has it ended (the handler's
// writes fail and it returns), while one that reads slowly but steadily
// gets the whole of it however long that takes.
func TestHTTPWriteDeadlineMovesWithTheBytes(t *testing.T) {
	const tok = "rw-token-abcdefghijkl"
	const size = 24 << 20
	defer remote.SetWriteTimeoutForTest(time.Second)()
	ended := make(chan error, 4)
	big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		piece := make([]byte, 64<<10)
		for n := 0; n < size; n += len(piece) {
			if _, err := w.Write(piece); err != nil {
				ended <- err
				return
			}
		}
		ended <- nil
	})
	_, srv, _ := startServed(t, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{tok}, HTTP: big})
	addr := tcpAddr(t, srv)
	request := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, tok)
		return c, bufio.NewReaderSize(c, 4096)
	}

	// Stalled: the client reads nothing.
	stalled, _ := request()
	defer stalled.Close()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("a response of 24 MiB to a client that reads nothing completed")
		}
	case <-time.After(patience(t)):
		t.Fatal("a response to a client that reads nothing did not end")
	}

	// Slow but steady: 64 KiB every 10 ms, several deadlines in all.
	slow, br := request()
	defer slow.Close()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, buf := 0, make([]byte, 64<<10)
	start := time.Now()
	for {
		n, err := io.ReadFull(resp.Body, buf)
		got += n
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			t.Fatalf("slow download after %d bytes: %v", got, err)
		}
		time.Sleep(10 * time.Millisecond) // 384 reads: about 4 s
	}
	if got != size {
		t.Fatalf("slow download: %d of %d bytes in %s (handler: %v)", got, size, time.Since(start), <-ended)
	}
	if err := <-ended; err != nil {
		t.Fatalf("the handler of the slow download failed: %v", err)
	}
}
