package sqlitedb_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/objects"
)

// fuzzSeeds are small databases and near-databases.
func fuzzSeeds(f *testing.F) {
	small := mustRead(f, memoryDB(f, 30))
	f.Add(small)
	f.Add(small[:4096])
	hdr := append([]byte(sqlitedb.Magic), make([]byte, 1024-16)...)
	binary.BigEndian.PutUint16(hdr[16:], 512)
	f.Add(hdr)
	f.Add([]byte("SQLite format 3"))
}

// FuzzOpen: crafted bytes opened as a database and read whole (every table,
// integrity_check) give a result or one of the package's errors, never a
// crash.
func FuzzOpen(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, content []byte) {
		if len(content) > 1<<20 {
			return
		}
		err := scanAll(context.Background(), content)
		if err == nil {
			return
		}
		for _, e := range []error{sqlitedb.ErrNotDatabase, sqlitedb.ErrCorrupt, sqlitedb.ErrQuery, sqlitedb.ErrRefused, sqlitedb.ErrTimeout, sqlitedb.ErrTooLarge} {
			if errors.Is(err, e) {
				return
			}
		}
		t.Fatalf("an error of no kind: %v", err)
	})
}

// FuzzPagesReadAt: reads at any offset and length of a chunked database
// return exactly the file's bytes.
func FuzzPagesReadAt(f *testing.F) {
	content, err := os.ReadFile(memoryDB(f, 12000))
	if err != nil {
		f.Fatal(err)
	}
	bs, v := store(f, content)
	p, err := sqlitedb.OpenPages(context.Background(), bs, v)
	if err != nil {
		f.Fatal(err)
	}
	if v.Codec() != objects.CodecDagCBOR {
		f.Fatal("want a chunked value")
	}
	f.Add(int64(0), uint32(100))
	f.Add(int64(4095), uint32(2))
	f.Add(int64(len(content)-1), uint32(5))
	f.Fuzz(func(t *testing.T, off int64, n uint32) {
		n %= 3 * 65536
		buf := make([]byte, n)
		got, err := p.ReadAt(buf, off)
		switch {
		case off < 0:
			if err == nil {
				t.Fatal("negative offset read")
			}
			return
		case off >= int64(len(content)):
			if got != 0 || err == nil {
				t.Fatalf("read past the end: %d, %v", got, err)
			}
			return
		}
		want := content[off:min(off+int64(n), int64(len(content)))]
		if got != len(want) || !bytes.Equal(buf[:got], want) {
			t.Fatalf("ReadAt(%d, %d): %d bytes, %v", off, n, got, err)
		}
		if got < int(n) && err == nil {
			t.Fatal("a short read without an error")
		}
	})
}
