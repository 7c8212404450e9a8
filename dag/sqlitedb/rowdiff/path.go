package rowdiff

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/objects"
)

// RowPath is what SQLite reads to find one row of a rowid table by its
// rowid in a chunked SQLite value: the header fields that shape the file,
// the schema pages, and the chunk CIDs of the table's pages from its root
// page to the leaf that holds (or would hold) the rowid, with the row's
// overflow pages. Two versions with equal paths hold the same row (or
// both lack it), so a row's history need not open the versions whose path
// did not change. ok is false when the path cannot be told cheaply (an
// unchunked value, a schema b-tree deeper than two levels): then the
// versions are to be read through SQLite.
func RowPath(ctx context.Context, p *sqlitedb.Pages, root, rowid int64) (path []objects.CID, sum string, ok bool, err error) {
	if _, err := p.PageCID(ctx, 1); err != nil {
		if errors.Is(err, sqlitedb.ErrUnchunked) {
			return nil, "", false, nil
		}
		return nil, "", false, err
	}
	h := p.Header()
	sum = string(h[16:18]) + string(h[20:21]) + string(h[56:60]) // page size, reserved bytes, text encoding
	usable := p.PageSize() - int(h[20])
	first, err := p.Page(ctx, 1)
	if err != nil {
		return nil, "", false, err
	}
	sum += string(first[sqlitedb.HeaderSize:]) // the schema's root (page 1 past the header)
	total := p.PageCount()
	pg, err := parsePage(first, 1, usable)
	if err != nil {
		return nil, "", false, err
	}
	addOverflow := func(pg *page, rows bool) error {
		over := pg.overflow
		if rows {
			over = nil
			for i, r := range pg.rowids {
				if r == rowid && pg.rowOver[i] != 0 {
					over = append(over, pg.rowOver[i])
				}
			}
		}
		for _, o := range over {
			next := int64(o)
			for steps := int64(0); next != 0; steps++ {
				if steps > total || next < 1 || next > total {
					return corruptf("an overflow chain runs outside the database")
				}
				c, err := p.PageCID(ctx, next)
				if err != nil {
					return err
				}
				path = append(path, c)
				data, err := p.Page(ctx, next)
				if err != nil {
					return err
				}
				next = int64(binary.BigEndian.Uint32(data))
			}
		}
		return nil
	}
	if err := addOverflow(pg, false); err != nil {
		return nil, "", false, err
	}
	if pg.typ == interiorTable {
		for _, c := range pg.children {
			if int64(c) < 1 || int64(c) > total {
				return nil, "", false, corruptf("the schema names page %d of %d", c, total)
			}
			cid, err := p.PageCID(ctx, int64(c))
			if err != nil {
				return nil, "", false, err
			}
			path = append(path, cid)
			data, err := p.Page(ctx, int64(c))
			if err != nil {
				return nil, "", false, err
			}
			child, err := parsePage(data, int64(c), usable)
			if err != nil {
				return nil, "", false, err
			}
			if child.typ != leafTable {
				return nil, "", false, nil // deeper than two levels
			}
			if err := addOverflow(child, false); err != nil {
				return nil, "", false, err
			}
		}
	}
	// The table, from its root to the leaf for rowid.
	n := root
	for depth := 0; ; depth++ {
		if depth > 64 || n < 1 || n > total {
			return nil, "", false, corruptf("the path to rowid %d leaves the database (page %d)", rowid, n)
		}
		cid, err := p.PageCID(ctx, n)
		if err != nil {
			return nil, "", false, err
		}
		path = append(path, cid)
		data, err := p.Page(ctx, n)
		if err != nil {
			return nil, "", false, err
		}
		pg, err := parsePage(data, n, usable)
		if err != nil {
			return nil, "", false, err
		}
		switch pg.typ {
		case leafTable:
			if err := addOverflow(pg, true); err != nil {
				return nil, "", false, err
			}
			return path, sum, true, nil
		case interiorTable:
			next := int64(pg.children[len(pg.children)-1])
			for i, k := range pg.keys {
				if rowid <= k {
					next = int64(pg.children[i])
					break
				}
			}
			n = next
		default:
			return nil, "", false, nil // not a rowid table
		}
	}
}
