package envelope

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"filippo.io/age"
)

// CipherAgeV1 is the ID of the age cipher: blobs that are standard age files
// (age-encryption.org/v1) encrypted to X25519 recipients.
const CipherAgeV1 = "age-v1"

// AgeMagic is the first line of every age file, by which Detect recognises an
// age blob.
const AgeMagic = "age-encryption.org/v1\n"

// maxIdentityFileSize bounds what LoadAgeIdentities reads: an identity file
// made by age-keygen is about 190 bytes.
const maxIdentityFileSize = 64 << 10

// maxRecipientsFileSize bounds what ParseAgeRecipients reads.
const maxRecipientsFileSize = 1 << 20

// ioBufSize is the copy buffer of the age cipher: age's own chunk size.
const ioBufSize = 64 << 10

var (
	// ErrAgeRecipient: a recipient string is not an age X25519 recipient
	// ("age1..."), or a recipients file holds a line that is not one.
	ErrAgeRecipient = errors.New("envelope: bad age recipient")
	// ErrAgeIdentity: an identity file is not a standard age identity file
	// (AGE-SECRET-KEY-1... lines, # comments), or is too large or not a
	// regular file. Messages never show key material.
	ErrAgeIdentity = errors.New("envelope: bad age identity file")
	// ErrMissingKey: Detect found a blob of a format for which it was given no
	// key (*MissingKeyError).
	ErrMissingKey = errors.New("envelope: no key for this blob's format")
)

// MissingKeyError reports a blob that Detect recognised but has no key for.
// It matches ErrMissingKey.
type MissingKeyError struct {
	// Format is CipherAgeV1 for an age blob (an identity is needed) or
	// CipherAES256GCMv1 for an AGSENV envelope (a key file or passphrase).
	Format string
}

func (e *MissingKeyError) Error() string {
	if e.Format == CipherAgeV1 {
		return "envelope: this snapshot is encrypted to age recipients, and no age identity was given"
	}
	return "envelope: this snapshot is an AES-256-GCM envelope, and no key file or passphrase was given"
}

// Is reports whether target is ErrMissingKey.
func (e *MissingKeyError) Is(target error) bool { return target == ErrMissingKey }

// Age is the Cipher for hand-over between operators: it encrypts to one or
// more age X25519 recipients (public keys, "age1...") and decrypts with age
// identities (secret keys, "AGE-SECRET-KEY-1..."). Its blobs are standard age
// files that the age tool decrypts too. Unlike AESGCM its output is
// randomized: age draws a fresh file key for every blob. It is safe for
// concurrent use.
type Age struct {
	recipients []age.Recipient
	identities []age.Identity
}

// Interface check.
var _ Cipher = (*Age)(nil)

// NewAgeEncrypter returns an age cipher that encrypts to recipients (each an
// X25519 recipient "age1...", see ParseAgeRecipient). It cannot decrypt.
func NewAgeEncrypter(recipients ...string) (*Age, error) {
	if len(recipients) == 0 {
		return nil, fmt.Errorf("%w: no recipients", ErrAgeRecipient)
	}
	a := &Age{}
	for _, s := range recipients {
		r, err := ParseAgeRecipient(s)
		if err != nil {
			return nil, err
		}
		a.recipients = append(a.recipients, r)
	}
	return a, nil
}

// NewAgeDecrypter returns an age cipher that decrypts with identities (from
// LoadAgeIdentities or ParseAgeIdentities). It cannot encrypt.
func NewAgeDecrypter(identities ...age.Identity) (*Age, error) {
	if len(identities) == 0 {
		return nil, fmt.Errorf("%w: no identities", ErrAgeIdentity)
	}
	return &Age{identities: identities}, nil
}

// ID returns CipherAgeV1.
func (a *Age) ID() string { return CipherAgeV1 }

// Recipients returns how many recipients Encrypt encrypts to.
func (a *Age) Recipients() int { return len(a.recipients) }

// ParseAgeRecipient parses one age X25519 recipient ("age1" and 58 more
// Bech32 characters). Anything else is ErrAgeRecipient: post-quantum
// ("age1pq1..."), SSH and plugin recipients are refused, and a secret key
// given by mistake is refused without being repeated.
func ParseAgeRecipient(s string) (*age.X25519Recipient, error) {
	t := strings.TrimSpace(s)
	upper := strings.ToUpper(t)
	switch {
	case strings.HasPrefix(upper, "AGE-SECRET-KEY-"), strings.HasPrefix(upper, "AGE-PLUGIN-"):
		return nil, fmt.Errorf("%w: that is a secret key (an identity), not a recipient: give its public key, the age1... line age-keygen prints (or 'age-keygen -y FILE')", ErrAgeRecipient)
	case strings.HasPrefix(t, "ssh-"), strings.HasPrefix(t, "ecdsa-"):
		return nil, fmt.Errorf("%w: SSH keys are not supported; give an age X25519 recipient (age1...)", ErrAgeRecipient)
	case strings.HasPrefix(t, "age1pq1"):
		return nil, fmt.Errorf("%w: post-quantum (age1pq1...) recipients are not supported; give an age X25519 recipient (age1...)", ErrAgeRecipient)
	case !strings.HasPrefix(strings.ToLower(t), "age1"):
		return nil, fmt.Errorf("%w: %s is not an age X25519 recipient (want age1... as age-keygen prints)", ErrAgeRecipient, quoteShort(t))
	}
	r, err := age.ParseX25519Recipient(t)
	if err != nil {
		// age1<plugin>1... (a plugin recipient) fails here with an
		// "invalid type": its Bech32 prefix is not "age".
		return nil, fmt.Errorf("%w: %s is not an age X25519 recipient (plugin recipients are not supported): %v", ErrAgeRecipient, quoteShort(t), stripQuoted(err, t))
	}
	return r, nil
}

// stripQuoted removes age's own quoting of the recipient from its error.
func stripQuoted(err error, s string) string {
	return strings.Replace(err.Error(), fmt.Sprintf("malformed recipient %q: ", s), "", 1)
}

// quoteShort quotes a public but untrusted string, cut to a readable length.
func quoteShort(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q...", s[:80])
	}
	return fmt.Sprintf("%q", s)
}

// ParseAgeRecipients reads a recipients file: one age X25519 recipient per
// line; blank lines and lines starting with # are skipped (age's recipients
// file syntax, restricted to X25519 recipients). It reads at most 1 MiB.
func ParseAgeRecipients(r io.Reader) ([]string, error) {
	lr := &io.LimitedReader{R: r, N: maxRecipientsFileSize + 1}
	sc := bufio.NewScanner(lr)
	var out []string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, err := ParseAgeRecipient(line); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: reading recipients: %w", ErrAgeRecipient, err)
	}
	if lr.N == 0 {
		return nil, fmt.Errorf("%w: recipients file larger than %d bytes", ErrAgeRecipient, maxRecipientsFileSize)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no recipients in the file", ErrAgeRecipient)
	}
	return out, nil
}

// ParseAgeIdentities parses the contents of an age identity file (the format
// age-keygen writes: AGE-SECRET-KEY-1... lines, # comments, blank lines), with
// age.ParseIdentities. Errors match ErrAgeIdentity and never show key material.
func ParseAgeIdentities(b []byte) ([]age.Identity, error) {
	ids, err := age.ParseIdentities(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAgeIdentity, err)
	}
	return ids, nil
}

// LoadAgeIdentities reads an age identity file (see ParseAgeIdentities). Files
// over 64 KiB and non-regular files are refused.
//
// Like LoadKeyFile, when the file is fine but its mode lets group or others
// read or write it, it returns the identities together with a
// *KeyFilePermissionError (matching ErrKeyFilePermissions): a caller that
// treats every error as fatal refuses them, one that only warns goes on.
func LoadAgeIdentities(ctx context.Context, path string) ([]age.Identity, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("envelope: opening identity file %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("envelope: reading identity file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file (mode %v)", ErrAgeIdentity, path, st.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxIdentityFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("envelope: reading identity file %s: %w", path, err)
	}
	if len(b) > maxIdentityFileSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrAgeIdentity, path, maxIdentityFileSize)
	}
	ids, err := ParseAgeIdentities(b)
	if err != nil {
		return nil, fmt.Errorf("identity file %s: %w", path, err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return ids, &KeyFilePermissionError{Path: path, Mode: st.Mode()}
	}
	return ids, nil
}

// GenerateAgeIdentity returns a new age X25519 identity (crypto/rand).
func GenerateAgeIdentity() (*age.X25519Identity, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, fmt.Errorf("envelope: generating age identity: %w", err)
	}
	return id, nil
}

// EncodeAgeIdentityFile returns an identity file in age-keygen's format: a
// "# created:" comment, a "# public key: age1..." comment and the secret key.
func EncodeAgeIdentityFile(id *age.X25519Identity, created time.Time) []byte {
	return fmt.Appendf(nil, "# created: %s\n# public key: %s\n%s\n",
		created.UTC().Format(time.RFC3339), id.Recipient(), id)
}

// WriteAgeIdentityFile writes id in age-keygen's format to a new file at path
// with mode 0600. It refuses to overwrite an existing file (the error matches
// fs.ErrExist) and syncs the file before returning.
func WriteAgeIdentityFile(ctx context.Context, path string, id *age.X25519Identity) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("envelope: creating identity file %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("envelope: closing identity file %s: %w", path, cerr)
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	if _, err := f.Write(EncodeAgeIdentityFile(id, time.Now())); err != nil {
		return fmt.Errorf("envelope: writing identity file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("envelope: syncing identity file %s: %w", path, err)
	}
	return nil
}

// Encrypt writes src as an age file encrypted to the cipher's recipients. It
// hashes the plaintext as it streams and, when the hash is not contentHash,
// returns ErrContentHash without writing age's final chunk, so the output
// never decrypts (it reads as truncated) and must be discarded.
func (a *Age) Encrypt(ctx context.Context, dst io.Writer, src io.Reader, contentHash [32]byte) error {
	if len(a.recipients) == 0 {
		return fmt.Errorf("%w: this age cipher has identities only and cannot encrypt", ErrBadOptions)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dw := &recordingWriter{w: dst}
	w, err := age.Encrypt(dw, a.recipients...)
	if err != nil {
		if dw.err != nil {
			return fmt.Errorf("envelope: writing age header: %w", dw.err)
		}
		return fmt.Errorf("envelope: age: %w", err)
	}
	h := sha256.New()
	buf := make([]byte, ioBufSize)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := io.ReadFull(src, buf)
		if n > 0 {
			h.Write(buf[:n])
			if _, err := w.Write(buf[:n]); err != nil {
				return fmt.Errorf("envelope: writing age blob: %w", dw.errOr(err))
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("envelope: reading plaintext: %w", rerr)
		}
	}
	var got [32]byte
	h.Sum(got[:0])
	if subtle.ConstantTimeCompare(got[:], contentHash[:]) != 1 {
		return fmt.Errorf("%w: the age blob has no final chunk and must be discarded", ErrContentHash)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("envelope: writing age blob: %w", dw.errOr(err))
	}
	return nil
}

// Decrypt reads an age file from src and streams its plaintext to dst. age
// authenticates each 64 KiB chunk before it is written; as with AESGCM, dst
// may hold the plaintext of the chunks before a failing one. Errors match the
// package's sentinels: ErrBadHeader (not an age file, a malformed header),
// ErrWrongKey (no identity matches a recipient), ErrTruncated, ErrTampered
// (a chunk or the header MAC fails, data after the final chunk); read and
// write errors of src and dst and context errors are returned wrapped.
func (a *Age) Decrypt(ctx context.Context, dst io.Writer, src io.Reader) error {
	if len(a.identities) == 0 {
		return &MissingKeyError{Format: CipherAgeV1}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	sr := &recordingReader{ctx: ctx, r: src}
	pr, err := age.Decrypt(sr, a.identities...)
	if err != nil {
		return ageError(ctx, sr, err, true)
	}
	buf := make([]byte, ioBufSize)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := pr.Read(buf)
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return fmt.Errorf("envelope: writing plaintext: %w", err)
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return ageError(ctx, sr, rerr, false)
		}
	}
}

// ageError maps an error of the age library to the package's sentinels,
// keeping read errors of the source and context errors as they are.
func ageError(ctx context.Context, sr *recordingReader, err error, inHeader bool) error {
	if cerr := ctx.Err(); cerr != nil && sr.err != nil {
		return cerr
	}
	if sr.err != nil {
		return fmt.Errorf("envelope: reading age blob: %w", sr.err)
	}
	var noMatch *age.NoIdentityMatchError
	switch {
	case errors.As(err, &noMatch):
		return fmt.Errorf("%w: none of the %s given matches a recipient of this age blob (its recipient stanzas: %s)",
			ErrWrongKey, plural(len(noMatch.Errors), "identity", "identities"), strings.Join(quoteAll(noMatch.StanzaTypes), ", "))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		where := "payload"
		if inHeader {
			where = "header"
		}
		return fmt.Errorf("%w: the age blob ends inside its %s", ErrTruncated, where)
	case inHeader && err.Error() == "bad header MAC":
		return fmt.Errorf("%w: the age header's MAC does not match (the header was modified)", ErrTampered)
	case inHeader:
		return fmt.Errorf("%w: age: %v", ErrBadHeader, err)
	default:
		return fmt.Errorf("%w: age: %v", ErrTampered, err)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func quoteAll(ss []string) []string {
	out := make([]string, 0, min(len(ss), 8))
	for i, s := range ss {
		if i == 8 {
			out = append(out, fmt.Sprintf("and %d more", len(ss)-i))
			break
		}
		out = append(out, quoteShort(s))
	}
	return out
}

// recordingReader checks the context before every read and remembers the
// first error of the underlying reader other than io.EOF, so that a failed
// read is reported as such and never as tampering.
type recordingReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

func (r *recordingReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		r.err = err
		return 0, err
	}
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// recordingWriter remembers the first write error of the underlying writer.
type recordingWriter struct {
	w   io.Writer
	err error
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

func (w *recordingWriter) errOr(err error) error {
	if w.err != nil {
		return w.err
	}
	return err
}

// Detect is the Cipher of a restore that accepts both formats: its Decrypt
// looks at the first bytes of the blob, at most len(AgeMagic) (22) of them,
// and hands the blob to AES for an AGSENV envelope or to Age for an age
// file. A blob of a format whose cipher is nil gives a *MissingKeyError;
// anything else ErrBadHeader (or ErrTruncated for a blob shorter than either
// magic that starts like one). Detect cannot encrypt.
type Detect struct {
	AES Cipher // the AGSENV envelope's cipher, e.g. NewAESGCM; may be nil
	Age *Age   // the age cipher, from NewAgeDecrypter; may be nil
}

// Interface check.
var _ Cipher = (*Detect)(nil)

// ID returns "detect".
func (d *Detect) ID() string { return "detect" }

// Encrypt fails: Detect only decrypts.
func (d *Detect) Encrypt(context.Context, io.Writer, io.Reader, [32]byte) error {
	return fmt.Errorf("%w: the detecting cipher only decrypts", ErrBadOptions)
}

// Sniff reads at most len(AgeMagic) bytes of src and reports the blob's
// format: CipherAES256GCMv1 for an AGSENV envelope, CipherAgeV1 for an age
// file. It returns the bytes it read, which the caller puts back in front of
// the rest (io.MultiReader).
func Sniff(src io.Reader) (format string, head []byte, err error) {
	head = make([]byte, len(AgeMagic))
	n, err := io.ReadFull(src, head)
	head = head[:n]
	ended := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if err != nil && !ended {
		return "", head, fmt.Errorf("envelope: reading blob: %w", err)
	}
	switch {
	case bytes.HasPrefix(head, []byte(Magic)):
		return CipherAES256GCMv1, head, nil
	case string(head) == AgeMagic:
		return CipherAgeV1, head, nil
	case ended && (bytes.HasPrefix([]byte(Magic), head) || bytes.HasPrefix([]byte(AgeMagic), head)):
		return "", head, fmt.Errorf("%w: the blob ends after %d bytes, inside its magic", ErrTruncated, n)
	}
	return "", head, fmt.Errorf("%w: neither an agentstate envelope (magic %q) nor an age file (%q); it starts %x",
		ErrBadHeader, Magic, strings.TrimSuffix(AgeMagic, "\n"), head[:min(len(head), 8)])
}

// Decrypt recognises the blob's format and decrypts it with the matching
// cipher (see Detect).
func (d *Detect) Decrypt(ctx context.Context, dst io.Writer, src io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	format, head, err := Sniff(src)
	if err != nil {
		return err
	}
	var c Cipher
	switch format {
	case CipherAgeV1:
		if d.Age == nil {
			return &MissingKeyError{Format: CipherAgeV1}
		}
		c = d.Age
	default:
		if d.AES == nil {
			return &MissingKeyError{Format: CipherAES256GCMv1}
		}
		c = d.AES
	}
	return c.Decrypt(ctx, dst, io.MultiReader(bytes.NewReader(head), src))
}
