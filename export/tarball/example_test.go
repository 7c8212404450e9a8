package tarball_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"

	"github.com/agentstate/agentstate/export/tarball"
)

func Example() {
	ctx := context.Background()
	brain := map[string]string{ // already in bytewise key order below
		"MEMORY.md":     "# Memory\n",
		"skills/a.md":   "skill a\n",
		"skills/b/c.md": "skill c\n",
		"system.md":     "be brief\n",
	}
	keys := []string{"MEMORY.md", "skills/a.md", "skills/b/c.md", "system.md"}
	files := func(yield func(tarball.File, error) bool) {
		for _, k := range keys {
			c := brain[k]
			f := tarball.File{Path: k, Size: int64(len(c)), Open: func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(strings.NewReader(c)), nil
			}}
			if !yield(f, nil) {
				return
			}
		}
	}
	var archive bytes.Buffer
	st, err := tarball.Write(ctx, &archive, files, tarball.WriteOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d files, %d dirs, %d bytes, sha256 %x\n", st.Files, st.Dirs, st.TarBytes, sha256.Sum256(archive.Bytes()))

	rep, err := tarball.Read(ctx, &archive, func(path string, size int64, content io.Reader) error {
		fmt.Println(path, size)
		return nil // a real caller stages the file and commits only if Read succeeds
	}, tarball.ReadOptions{})
	fmt.Println(rep.Files, err)
	// Output:
	// 4 files, 2 dirs, 6144 bytes, sha256 2bfb5d8032b184d14cd0933cb964faff2b749cc86e50fbbba8d4069164ce5be6
	// MEMORY.md 9
	// skills/a.md 8
	// skills/b/c.md 8
	// system.md 9
	// 4 <nil>
}
