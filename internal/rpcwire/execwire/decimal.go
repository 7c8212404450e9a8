package execwire

// decimal is strconv.FormatUint(x, 10). This package, like the front end
// that links it, imports neither strconv nor strings: their dependencies
// (math, unicode) run initialisers that every served command would pay
// for at start-up.
func decimal(x uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + x%10)
		x /= 10
		if x == 0 {
			return string(b[i:])
		}
	}
}
