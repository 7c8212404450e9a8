package tarball

import (
	"strconv"
	"strings"
)

// Tar layout constants (POSIX.1-2001 ustar and pax).
const (
	blockSize  = 512
	nameSize   = 100
	prefixSize = 155
	// maxUSTARSize is the largest size the 12-byte octal size field holds.
	maxUSTARSize = 1<<33 - 1

	typeReg     = '0'
	typeDir     = '5'
	typeXHeader = 'x'

	modeFile = 0o644
	modeDir  = 0o755
)

// Offsets and lengths of the header fields used here.
const (
	offName     = 0
	offMode     = 100
	offUID      = 108
	offGID      = 116
	offSize     = 124
	offMtime    = 136
	offChksum   = 148
	offTypeflag = 156
	offMagic    = 257
	offVersion  = 263
	offDevMajor = 329
	offDevMinor = 337
	offPrefix   = 345
)

var zeroBlock [blockSize]byte

// splitUSTAR reports how name is stored in a USTAR header: whole in the name
// field when it is ASCII and at most 100 bytes, or split at a '/' into the
// prefix field and the name field. The split is at the last '/' among the
// first min(len(name)-1, 156) bytes; it is valid when the prefix is 1..155
// bytes and the rest 1..100 bytes. ok is false when neither works, or when
// name holds a non-ASCII byte.
func splitUSTAR(name string) (prefix, suffix string, ok bool) {
	if !isASCII(name) {
		return "", "", false
	}
	if len(name) <= nameSize {
		return "", name, true
	}
	i := strings.LastIndexByte(name[:min(len(name)-1, prefixSize+1)], '/')
	if i < 1 || len(name)-i-1 > nameSize {
		return "", "", false
	}
	return name[:i], name[i+1:], true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// dropNonASCII removes every byte >= 0x80 (and every NUL) from s. For valid
// UTF-8 this removes every non-ASCII character.
func dropNonASCII(s string) string {
	if isASCII(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x80 && c != 0 {
			b = append(b, c)
		}
	}
	return string(b)
}

// paxRecord formats one PAX record "LEN key=value\n", LEN counting itself.
func paxRecord(key, value string) string {
	base := len(key) + len(value) + 3 // ' ', '=', '\n'
	n := base + len(strconv.Itoa(base))
	n = base + len(strconv.Itoa(n)) // one more digit if the first guess carried
	return strconv.Itoa(n) + " " + key + "=" + value + "\n"
}

// paxHeaderName is the name field of the extended header that precedes an
// entry named name: "<dir>/PaxHeaders.0/<base>", non-ASCII removed, cut to
// 100 bytes, trailing '/' removed. A directory "d/" gives "d/PaxHeaders.0",
// a top-level file "f" gives "PaxHeaders.0/f".
func paxHeaderName(name string) string {
	var n string
	if strings.HasSuffix(name, "/") {
		n = name + "PaxHeaders.0"
	} else if i := strings.LastIndexByte(name, '/'); i >= 0 {
		n = name[:i+1] + "PaxHeaders.0/" + name[i+1:]
	} else {
		n = "PaxHeaders.0/" + name
	}
	n = dropNonASCII(n)
	if len(n) > nameSize {
		n = n[:nameSize]
	}
	return strings.TrimRight(n, "/")
}

// putString stores s in field, NUL-terminated when shorter than the field.
func putString(field []byte, s string) {
	copy(field, s)
	if len(s) < len(field) {
		field[len(s)] = 0
	}
}

// putOctal stores x as zero-padded octal digits filling all but the last
// byte of field, then a NUL.
func putOctal(field []byte, x int64) {
	s := strconv.FormatInt(x, 8)
	if n := len(field) - 1 - len(s); n > 0 {
		s = strings.Repeat("0", n) + s
	}
	putString(field, s)
}

// finish sets the ustar magic and version and the checksum of blk.
func finish(blk []byte) {
	copy(blk[offMagic:], "ustar\x00")
	copy(blk[offVersion:], "00")
	copy(blk[offChksum:offChksum+8], "        ")
	var sum int64
	for _, c := range blk[:blockSize] {
		sum += int64(c)
	}
	putOctal(blk[offChksum:offChksum+7], sum)
	blk[offChksum+7] = ' '
}

// appendHeader appends the header block(s) of one entry to dst and returns
// the extended slice: a PAX extended header (one header block plus its
// records padded to a block) when the name does not fit a USTAR header or
// size exceeds 8 GiB - 1, then the entry's own header. name is the entry
// name (directories end in '/'), typeflag '0' or '5', size the content length.
func appendHeader(dst []byte, name string, typeflag byte, mode, size int64) []byte {
	prefix, suffix, fits := splitUSTAR(name)
	var recs string
	if !fits {
		recs += paxRecord("path", name)
	}
	if size > maxUSTARSize {
		recs += paxRecord("size", strconv.FormatInt(size, 10))
	}
	if recs != "" {
		dst, blk := grow(dst)
		putString(blk[offName:offName+nameSize], paxHeaderName(name))
		putOctal(blk[offMode:offMode+8], 0)
		putOctal(blk[offUID:offUID+8], 0)
		putOctal(blk[offGID:offGID+8], 0)
		putOctal(blk[offSize:offSize+12], int64(len(recs)))
		putOctal(blk[offMtime:offMtime+12], 0)
		blk[offTypeflag] = typeXHeader
		finish(blk)
		dst = append(dst, recs...)
		dst = append(dst, zeroBlock[:padding(int64(len(recs)))]...)
		return appendMain(dst, name, "", true, typeflag, mode, size)
	}
	return appendMain(dst, suffix, prefix, false, typeflag, mode, size)
}

// putMainName stores the name field of an entry whose real name travels in
// a PAX record: the name with non-ASCII removed; when that is longer than
// 100 bytes, its first 100 bytes, and if the 100th is '/', the byte just
// after the last non-'/' among the first 99 becomes NUL (so no reader that
// ignores PAX mistakes a file for a directory).
func putMainName(field []byte, name string) {
	n := dropNonASCII(name)
	putString(field, n)
	if len(n) > nameSize && n[nameSize-1] == '/' {
		field[len(strings.TrimRight(n[:nameSize-1], "/"))] = 0
	}
}

// appendMain appends an entry's own header. With pax set, name is the full
// entry name (held by a PAX record) and the name field gets putMainName;
// otherwise name and prefix are the USTAR name and prefix fields.
func appendMain(dst []byte, name, prefix string, pax bool, typeflag byte, mode, size int64) []byte {
	dst, blk := grow(dst)
	if pax {
		putMainName(blk[offName:offName+nameSize], name)
	} else {
		putString(blk[offName:offName+nameSize], name)
	}
	putOctal(blk[offMode:offMode+8], mode)
	putOctal(blk[offUID:offUID+8], 0)
	putOctal(blk[offGID:offGID+8], 0)
	if size > maxUSTARSize {
		putOctal(blk[offSize:offSize+12], 0) // the PAX "size" record holds it
	} else {
		putOctal(blk[offSize:offSize+12], size)
	}
	putOctal(blk[offMtime:offMtime+12], 0)
	blk[offTypeflag] = typeflag
	putOctal(blk[offDevMajor:offDevMajor+8], 0)
	putOctal(blk[offDevMinor:offDevMinor+8], 0)
	putString(blk[offPrefix:offPrefix+prefixSize], prefix)
	finish(blk)
	return dst
}

// grow appends one zero block to dst and returns dst and that block.
func grow(dst []byte) ([]byte, []byte) {
	n := len(dst)
	dst = append(dst, zeroBlock[:]...)
	return dst, dst[n : n+blockSize]
}

// padding is the number of zero bytes that bring n up to a block boundary.
func padding(n int64) int64 { return -n & (blockSize - 1) }
