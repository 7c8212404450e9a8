package rowdiff

// RowsRead is how many rows d's computation read through SQLite, in both
// versions.
func RowsRead(d *Diff) int { return d.rowsRead }
