package rowdiff_test

import (
	"context"
	"testing"

	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/dag/sqlitedb/rowdiff"
	"github.com/agentstate/agentstate/objects/memstore"
)

// BenchmarkCompute: the change between two versions of a memory.db of
// about 16 MiB (rowid table with ~1 KiB rows, an FTS5 table) some 1% of
// pages apart; it reports the blocks read per diff.
func BenchmarkCompute(b *testing.B) {
	old := filepath16MiB(b)
	nw := changed(b, old, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<40)
UPDATE messages SET body = hex(randomblob(500)) WHERE id IN (SELECT abs(random()) % 14000 FROM c);
INSERT INTO notes SELECT hex(randomblob(20)), hex(randomblob(200)) FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3);`)
	bs := &countingStore{Store: memstore.New()}
	a, c := openFile(b, bs, old), openFile(b, bs, nw)
	b.ResetTimer()
	var d *rowdiff.Diff
	var err error
	for range b.N {
		bs.gets.Store(0)
		if d, err = rowdiff.Compute(context.Background(), a, c, rowdiff.Options{SQL: true}); err != nil {
			b.Fatal(err)
		}
		if _, err := d.SQL(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(bs.gets.Load()), "blocks/op")
	b.ReportMetric(float64(d.ChangedPages), "changed-pages")
	b.ReportMetric(float64(d.NewPages), "pages")
}

func filepath16MiB(b *testing.B) string {
	return changed(b, baseDB(b, 14000), `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<1000)
INSERT INTO notes SELECT hex(randomblob(20)), hex(randomblob(400)) FROM c;
UPDATE messages SET body = hex(randomblob(500));`)
}

var _ = sqlitedb.ErrCorrupt
