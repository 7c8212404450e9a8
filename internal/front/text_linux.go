package front

// The few string operations the front end needs. Package strings is not
// linked: it brings package unicode, whose initialiser (its tables of
// categories and scripts) cost every served command about 0.05 ms at
// start-up on the reference machine (GODEBUG=inittrace=1).

func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// cut is strings.Cut with a one-byte separator.
func cut(s string, sep byte) (before, after string, found bool) {
	if i := indexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// split is strings.Split with a one-byte separator.
func split(s string, sep byte) []string {
	parts := make([]string, 0, 8)
	for {
		before, after, found := cut(s, sep)
		parts = append(parts, before)
		if !found {
			return parts
		}
		s = after
	}
}
