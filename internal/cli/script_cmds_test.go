package cli

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// scriptCmds are extra testscript commands.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	// jsonlen N: stdout is a JSON array of N elements.
	"jsonlen": func(ts *testscript.TestScript, neg bool, args []string) {
		var v []any
		if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &v); err != nil {
			ts.Fatalf("stdout is not a JSON array: %v", err)
		}
		if got := fmt.Sprint(len(v)); (got == args[0]) == neg {
			ts.Fatalf("JSON array has %s elements, want %s%s", got, map[bool]string{true: "not ", false: ""}[neg], args[0])
		}
	},
	// setenvfile NAME FILE: set NAME to the trimmed contents of FILE (e.g. stdout).
	"setenvfile": func(ts *testscript.TestScript, neg bool, args []string) {
		ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
	},
	// mktar OUT NAME[=CONTENT|->TARGET]...: write a tar with arbitrary (even malicious) entries.
	"mktar": func(ts *testscript.TestScript, neg bool, args []string) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, a := range args[1:] {
			if name, target, ok := strings.Cut(a, "->"); ok {
				ts.Check(tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}))
				continue
			}
			name, content, _ := strings.Cut(a, "=")
			ts.Check(tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: int64(len(content)), Mode: 0o644}))
			tw.Write([]byte(content))
		}
		ts.Check(tw.Close())
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), buf.Bytes(), 0o644))
	},
	// flipbyte FILE OFFSET: corrupt one byte of a file (negative offsets count from the end).
	"flipbyte": func(ts *testscript.TestScript, neg bool, args []string) {
		p := ts.MkAbs(args[0])
		data, err := os.ReadFile(p)
		ts.Check(err)
		off, err := strconv.Atoi(args[1])
		ts.Check(err)
		if off < 0 {
			off += len(data)
		}
		data[off] ^= 0x40
		ts.Check(os.WriteFile(p, data, 0o644))
	},
	// truncfile FILE N: keep only the first N bytes.
	"truncfile": func(ts *testscript.TestScript, neg bool, args []string) {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		ts.Check(os.Truncate(ts.MkAbs(args[0]), int64(n)))
	},
	// findfile DIR VAR: set VAR to the path of the first regular file under DIR.
	"findfile": func(ts *testscript.TestScript, neg bool, args []string) {
		var found string
		filepath.Walk(ts.MkAbs(args[0]), func(p string, info os.FileInfo, err error) error {
			if err == nil && found == "" && info.Mode().IsRegular() {
				found = p
			}
			return nil
		})
		if found == "" {
			ts.Fatalf("no file under %s", args[0])
		}
		ts.Setenv(args[1], found)
	},
	// randfile FILE SIZE TEXT: write SIZE bytes of random (incompressible)
	// bytes with TEXT in the middle, so TEXT shows in a store's files
	// however they are compressed.
	"randfile": func(ts *testscript.TestScript, neg bool, args []string) {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		rng := rand.New(rand.NewPCG(uint64(len(args[0])), uint64(n)))
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		copy(data[n/2:], args[2])
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), data, 0o644))
	},
	// grepdir DIR TEXT: some regular file under DIR holds the bytes TEXT
	// (with !: none does).
	"grepdir": func(ts *testscript.TestScript, neg bool, args []string) {
		var found []string
		filepath.Walk(ts.MkAbs(args[0]), func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() {
				if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, []byte(args[1])) {
					found = append(found, p)
				}
			}
			return nil
		})
		if (len(found) > 0) == neg {
			ts.Fatalf("files under %s holding %q: %v", args[0], args[1], found)
		}
	},
	// corruptvalue STORE FILE: overwrite, inside the store, the bytes of the value
	// whose content is FILE's (simulated disk rot).
	"corruptvalue": func(ts *testscript.TestScript, neg bool, args []string) {
		st, err := badger.Open(ts.MkAbs(args[0]), badger.Options{})
		ts.Check(err)
		defer st.Close()
		st.CorruptForTest(objects.NewValue([]byte(ts.ReadFile(args[1]))).CID, []byte("rot"))
	},
	// mkbig FILE BYTES [SEED]: write a file of pseudo-random bytes.
	"mkbig": func(ts *testscript.TestScript, neg bool, args []string) {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		seed := uint64(1)
		if len(args) > 2 {
			s, _ := strconv.Atoi(args[2])
			seed = uint64(s)
		}
		data := make([]byte, n)
		x := seed*0x9e3779b97f4a7c15 + 1
		for i := range data {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			data[i] = byte(x)
		}
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), data, 0o644))
	},
	// samefiles A B: directories A and B hold the same regular files.
	"samefiles": func(ts *testscript.TestScript, neg bool, args []string) {
		a, b := ts.MkAbs(args[0]), ts.MkAbs(args[1])
		la, lb := listTree(ts, a), listTree(ts, b)
		if (la == lb) == neg {
			ts.Fatalf("directories %s and %s: same=%v\n%s\n---\n%s", args[0], args[1], la == lb, la, lb)
		}
	},
}

func listTree(ts *testscript.TestScript, root string) string {
	var buf bytes.Buffer
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			ts.Fatalf("%v", err)
		}
		rel, _ := filepath.Rel(root, p)
		if info.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&buf, "%s %q\n", rel, data)
		}
		return nil
	})
	return buf.String()
}
