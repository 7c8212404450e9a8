package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/walrus"
	"github.com/agentstate/agentstate/walrus/localstore"
	"github.com/agentstate/agentstate/walrus/walrustest"
	"github.com/rogpeppe/go-internal/testscript"
)

// Script commands for hostile restores (testdata/script/hostile_restore.txtar).
func init() {
	// pointerblob FILE VAR: set VAR to the blob id a pointer file names.
	scriptCmds["pointerblob"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: pointerblob FILE VAR")
		}
		b, err := snapshot.ParsePointerFile([]byte(ts.ReadFile(args[0])))
		ts.Check(err)
		ts.Setenv(args[1], string(b.Blob))
	}
	// walrusd VAR: start a walrustest server (a Walrus publisher and
	// aggregator on 127.0.0.1) for the rest of the script; VAR is its URL.
	scriptCmds["walrusd"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 1 {
			ts.Fatalf("usage: walrusd VAR")
		}
		srv := walrustest.NewServer(scriptTB{ts: ts})
		work := ts.Getenv("WORK")
		setServer(work, srv)
		ts.Defer(func() { setServer(work, nil) })
		ts.Setenv(args[0], srv.URL)
	}
	// walrusserve ID FROM: make the script's walrustest server answer blob
	// FROM's bytes for blob ID (an aggregator serving wrong content).
	scriptCmds["walrusserve"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: walrusserve ID FROM")
		}
		srv := getServer(ts.Getenv("WORK"))
		if srv == nil {
			ts.Fatalf("no walrusd in this script")
		}
		content, _, ok := srv.Blob(walrus.BlobID(args[1]))
		if !ok {
			ts.Fatalf("no blob %s", args[1])
		}
		ts.Check(srv.ReplaceBlob(walrus.BlobID(args[0]), content))
	}
	// localswap DIR ID FROM: in the local blob directory DIR, put blob
	// FROM's file where blob ID's is.
	scriptCmds["localswap"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 3 {
			ts.Fatalf("usage: localswap DIR ID FROM")
		}
		path := func(id string) string {
			b, err := walrus.BlobID(id).Bytes()
			ts.Check(err)
			h := hex.EncodeToString(b[:])
			return filepath.Join(ts.MkAbs(args[0]), h[:2], h)
		}
		data, err := os.ReadFile(path(args[2]))
		ts.Check(err)
		dst := path(args[1])
		ts.Check(os.Chmod(dst, 0o600))
		ts.Check(os.WriteFile(dst, data, 0o600))
	}
	// tarset IN OUT NAME=CONTENT...: copy a tar, replacing or adding entries
	// (kept in bytewise path order).
	scriptCmds["tarset"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 3 {
			ts.Fatalf("usage: tarset IN OUT NAME=CONTENT...")
		}
		set := map[string]string{}
		for _, a := range args[2:] {
			name, content, _ := strings.Cut(a, "=")
			set[name] = content
		}
		type entry struct {
			hdr  *tar.Header
			data []byte
		}
		var entries []entry
		tr := tar.NewReader(strings.NewReader(ts.ReadFile(args[0])))
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			ts.Check(err)
			data, err := io.ReadAll(tr)
			ts.Check(err)
			if c, ok := set[hdr.Name]; ok {
				data = []byte(c)
				hdr.Size = int64(len(data))
				delete(set, hdr.Name)
			}
			entries = append(entries, entry{hdr, data})
		}
		for name, c := range set {
			entries = append(entries, entry{&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(c)), Format: tar.FormatUSTAR}, []byte(c)})
		}
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].hdr.Name < entries[j].hdr.Name })
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, e := range entries {
			ts.Check(tw.WriteHeader(e.hdr))
			_, err := tw.Write(e.data)
			ts.Check(err)
		}
		ts.Check(tw.Close())
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), buf.Bytes(), 0o644))
	}
	// sealput KEYFILE IN BLOBDIR VAR: encrypt IN under the key as push does,
	// store it in the local blob directory, set VAR to its blob id.
	scriptCmds["sealput"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 4 {
			ts.Fatalf("usage: sealput KEYFILE IN BLOBDIR VAR")
		}
		ctx := context.Background()
		k, err := envelope.LoadKeyFile(ctx, ts.MkAbs(args[0]))
		ts.Check(err)
		c, err := envelope.NewAESGCM(k, envelope.Options{})
		ts.Check(err)
		plain := []byte(ts.ReadFile(args[1]))
		var sealed bytes.Buffer
		ts.Check(c.Encrypt(ctx, &sealed, bytes.NewReader(plain), sha256.Sum256(plain)))
		st, err := localstore.Open(ts.MkAbs(args[2]))
		ts.Check(err)
		stored, err := st.Put(ctx, bytes.NewReader(sealed.Bytes()), int64(sealed.Len()), walrus.StoreOptions{})
		ts.Check(err)
		ts.Setenv(args[3], string(stored.BlobID))
	}
}

// servers are the walrustest servers of running scripts, by $WORK (scripts
// run in parallel).
var servers = struct {
	sync.Mutex
	m map[string]*walrustest.Server
}{m: map[string]*walrustest.Server{}}

func setServer(work string, s *walrustest.Server) {
	servers.Lock()
	defer servers.Unlock()
	if s == nil {
		delete(servers.m, work)
	} else {
		servers.m[work] = s
	}
}

func getServer(work string) *walrustest.Server {
	servers.Lock()
	defer servers.Unlock()
	return servers.m[work]
}

// scriptTB lets walrustest.NewServer run inside a script: a temporary
// directory under $WORK and cleanup when the script ends. NewServer uses
// nothing else of testing.TB.
type scriptTB struct {
	testing.TB
	ts *testscript.TestScript
}

func (s scriptTB) Helper() {}

func (s scriptTB) TempDir() string {
	dir, err := os.MkdirTemp(s.ts.Getenv("WORK"), "walrusd-")
	s.ts.Check(err)
	return dir
}

func (s scriptTB) Cleanup(f func()) { s.ts.Defer(f) }
