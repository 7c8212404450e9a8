package history_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/export/history"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/walrus"
	"github.com/agentstate/agentstate/walrus/localstore"
)

func key(seed string) ed25519.PrivateKey {
	s := sha256.Sum256([]byte(seed))
	return ed25519.NewKeyFromSeed(s[:])
}

func put(t *testing.T, r *repo.Repo, key, val string) {
	t.Helper()
	v := objects.NewValue([]byte(val))
	if _, err := r.Edit(context.Background(), repo.EditRequest{Agent: "lumen", Message: "put " + key, Create: true, Blocks: []objects.Block{v},
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, key, v.CID) }}); err != nil {
		t.Fatal(err)
	}
}

func logOf(t *testing.T, r *repo.Repo) []objects.CID {
	t.Helper()
	h, err := r.Refs.Head(context.Background(), "lumen")
	if err != nil {
		t.Fatal(err)
	}
	var out []objects.CID
	for le, err := range dag.Log(context.Background(), r.Blocks, h.Commit) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, le.CID)
	}
	return out
}

type fixture struct {
	src      *repo.Repo
	blobs    *localstore.Store
	ptr      history.FilePointer
	cipher   envelope.Cipher
	operator ed25519.PrivateKey
}

func newFixture(t *testing.T) *fixture {
	blobs, err := localstore.Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	var k envelope.Key
	copy(k[:], "0123456789abcdef0123456789abcdef")
	c, err := envelope.NewAESGCM(k, envelope.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{src: repo.New(memory.New()), blobs: blobs, ptr: history.FilePointer{Dir: t.TempDir()}, cipher: c, operator: key("operator")}
}

func (f *fixture) shipper(r *repo.Repo) *history.Shipper {
	return &history.Shipper{Repo: r, Cipher: f.cipher, Blobs: f.blobs, Pointer: f.ptr}
}

// restoreFresh fetches the published history into a fresh store and moves
// its HEAD there, as restore --history does.
func (f *fixture) restoreFresh(t *testing.T) *repo.Repo {
	t.Helper()
	ctx := context.Background()
	dst := repo.New(memory.New())
	fe, err := f.shipper(dst).Fetch(ctx, "lumen", []ed25519.PublicKey{f.operator.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Integrate(ctx, "lumen", fe.Manifest.Head, true, refs.OpRestore, "restore --history"); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestPushAndRestoreHistory(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for i := range 20 {
		put(t, f.src, fmt.Sprint("k", i%4), fmt.Sprint("v", i))
	}
	m1, err := f.shipper(f.src).Push(ctx, "lumen", f.operator)
	if err != nil || len(m1.Packs) != 1 {
		t.Fatalf("first push: %+v %v", m1, err)
	}
	for i := range 3 {
		put(t, f.src, "new", fmt.Sprint("n", i))
	}
	m2, err := f.shipper(f.src).Push(ctx, "lumen", f.operator)
	if err != nil || len(m2.Packs) != 2 || !reflect.DeepEqual(m2.Packs[0], m1.Packs[0]) {
		t.Fatalf("second push: %+v %v", m2, err)
	}
	// The second pack holds what is new: 3 commits, their changed tree
	// nodes and values, far fewer blocks than the first.
	if m2.Packs[1].Blocks >= m1.Packs[0].Blocks || m2.Packs[1].Blocks > 12 {
		t.Fatalf("second pack %d blocks, first %d", m2.Packs[1].Blocks, m1.Packs[0].Blocks)
	}
	// A fresh store rebuilds the whole log, commit for commit.
	dst := f.restoreFresh(t)
	if !slices.Equal(logOf(t, dst), logOf(t, f.src)) {
		t.Fatal("the restored log differs from the original")
	}
	rep, err := dst.Verify(ctx)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
	// Nothing new: the same manifest.
	m3, err := f.shipper(f.src).Push(ctx, "lumen", f.operator)
	if err != nil || m3.Head != m2.Head || len(m3.Packs) != 2 || m3.Added || !m2.Added || m3.Ref != m2.Ref {
		t.Fatalf("push with nothing new: %+v %v", m3, err)
	}
}

// republish signs m with k and publishes it as the agent's manifest.
func (f *fixture) republish(t *testing.T, m *history.Manifest, k ed25519.PrivateKey) {
	t.Helper()
	ctx := context.Background()
	if err := m.Sign(k); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(m)
	st, err := f.blobs.Put(ctx, bytes.NewReader(body), int64(len(body)), walrus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if err := f.ptr.WriteHistory(ctx, "lumen", history.Ref{Blob: st.BlobID, SHA256: fmt.Sprintf("%x", sum), Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
}

func TestHostileHistory(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for i := range 10 {
		put(t, f.src, fmt.Sprint("k", i), "v")
	}
	m1, err := f.shipper(f.src).Push(ctx, "lumen", f.operator)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		put(t, f.src, "more", fmt.Sprint(i))
	}
	good, err := f.shipper(f.src).Push(ctx, "lumen", f.operator)
	if err != nil {
		t.Fatal(err)
	}
	trusted := []ed25519.PublicKey{f.operator.Public().(ed25519.PublicKey)}
	try := func(name string, m *history.Manifest, k ed25519.PrivateKey, want error) {
		t.Helper()
		c := *m
		c.Packs = slices.Clone(m.Packs)
		f.republish(t, &c, k)
		dst := repo.New(memory.New())
		_, err := f.shipper(dst).Fetch(ctx, "lumen", trusted)
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
		if _, err := dst.Refs.Head(ctx, "lumen"); !errors.Is(err, refs.ErrNoAgent) {
			t.Errorf("%s: the store has a HEAD after a refused history", name)
		}
	}
	try("signed by an unknown key", good.Manifest, key("mallory"), history.ErrUntrusted)
	lying := *good.Manifest
	lying.Packs = slices.Clone(good.Packs)
	lying.Packs[1].Blocks++
	try("a pack that contradicts its manifest", &lying, f.operator, history.ErrBadPack)
	badSum := *good.Manifest
	badSum.Packs = slices.Clone(good.Packs)
	badSum.Packs[0].SHA256 = fmt.Sprintf("%064x", 1)
	try("a pack whose bytes are not the manifest's", &badSum, f.operator, history.ErrBadPack)
	_ = m1
}

// Packs named out of order: the second pack, read first, lacks the blocks of
// the first: refused, nothing moved.
func TestPacksOutOfOrder(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for i := range 10 {
		put(t, f.src, fmt.Sprint("k", i), "v")
	}
	if _, err := f.shipper(f.src).Push(ctx, "lumen", f.operator); err != nil {
		t.Fatal(err)
	}
	put(t, f.src, "more", "x")
	good, err := f.shipper(f.src).Push(ctx, "lumen", f.operator)
	if err != nil {
		t.Fatal(err)
	}
	swapped := *good.Manifest
	swapped.Packs = []history.Pack{good.Packs[1], good.Packs[0]}
	swapped.Head = good.Packs[0].Head
	f.republish(t, &swapped, f.operator)
	dst := repo.New(memory.New())
	if _, err := f.shipper(dst).Fetch(ctx, "lumen", []ed25519.PublicKey{f.operator.Public().(ed25519.PublicKey)}); err == nil {
		t.Fatal("packs out of order were accepted")
	}
	if _, err := dst.Refs.Head(ctx, "lumen"); !errors.Is(err, refs.ErrNoAgent) {
		t.Fatal("a HEAD after refused packs")
	}
}

func TestParseManifestStrict(t *testing.T) {
	blob := walrus.BlobIDFromBytes(sha256.Sum256([]byte("b")))
	m := &history.Manifest{V: 1, Agent: "lumen", Head: objects.NewValue([]byte("x")).CID, Packs: []history.Pack{{Blob: blob, SHA256: fmt.Sprintf("%064x", 1), Size: 1, Head: objects.NewValue([]byte("x")).CID}}}
	if err := m.Sign(key("operator")); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(m)
	if _, err := history.Parse(body); err != nil {
		t.Fatalf("a good manifest: %v", err)
	}
	for name, data := range map[string][]byte{
		"extra member":  append(body[:len(body)-1:len(body)-1], []byte(`,"x":1}`)...),
		"not canonical": append([]byte(" "), body...),
		"truncated":     body[:len(body)/2],
		"version 2":     []byte(`{"v":2}`),
		"bad blob id":   bytes.Replace(body, []byte(blob), []byte("b"), 1),
		"upper hex":     bytes.Replace(body, []byte(fmt.Sprintf("%064x", 1)), []byte(fmt.Sprintf("%064X", 10)), 1),
	} {
		if _, err := history.Parse(data); !errors.Is(err, history.ErrBadManifest) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// receipt appends a receipt-like line to the agent's tape.
func receipt(t *testing.T, r *repo.Repo, n int) {
	t.Helper()
	if _, err := r.Tape.Append(context.Background(), "lumen", []byte(fmt.Sprintf(`{"task":"t-%d"}`, n))); err != nil {
		t.Fatal(err)
	}
}

// Receipts travel with the packs, each pack carrying the lines new since
// the one before; the keys the pushing store trusts for the agent's
// receipts travel in the manifest and a restore records them as learned
// with the agent's receipts (they sign nothing), and the signer as trusted
// for the agent.
func TestReceiptsAndOperatorsTravel(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	const prefix = "runtime/operator/"
	other := fmt.Sprintf("%x", key("other").Public().(ed25519.PublicKey))
	if err := f.src.Storage.SetMeta(ctx, prefix+other, []byte("x")); err != nil {
		t.Fatal(err)
	}
	sh := func(r *repo.Repo) *history.Shipper {
		s := f.shipper(r)
		s.RecordKeys = true
		return s
	}
	for i := range 5 {
		put(t, f.src, "k", fmt.Sprint(i))
		receipt(t, f.src, i)
	}
	m1, err := sh(f.src).Push(ctx, "lumen", f.operator)
	if err != nil || m1.Packs[0].Receipts == nil || m1.Packs[0].Receipts.Lines != 5 || !slices.Equal(m1.Operators, []string{other}) {
		t.Fatalf("first push: %+v %v", m1, err)
	}
	// Only receipts new: a second pack, with no blocks and one line.
	receipt(t, f.src, 5)
	m2, err := sh(f.src).Push(ctx, "lumen", f.operator)
	if err != nil || len(m2.Packs) != 2 || m2.Packs[1].Blocks != 0 || m2.Packs[1].Receipts.Lines != 1 || m2.Receipts.Lines != 6 {
		t.Fatalf("second push: %+v %v", m2, err)
	}
	put(t, f.src, "k", "last")
	receipt(t, f.src, 6)
	m3, err := sh(f.src).Push(ctx, "lumen", f.operator)
	if err != nil || len(m3.Packs) != 3 || m3.Packs[2].Receipts.Lines != 1 {
		t.Fatalf("third push: %+v %v", m3, err)
	}

	dst := repo.New(memory.New())
	pub := f.operator.Public().(ed25519.PublicKey)
	if _, err := sh(dst).Restore(ctx, "lumen", []ed25519.PublicKey{pub}, history.RestoreOptions{Expect: "0x" + strings.Repeat("0", 64)}); err == nil {
		t.Fatal("a manifest whose bundle hash is not the expected one was restored")
	}
	if _, err := dst.Refs.Head(ctx, "lumen"); !errors.Is(err, refs.ErrNoAgent) {
		t.Fatal("a refused restore moved HEAD")
	}
	res, err := sh(dst).Restore(ctx, "lumen", []ed25519.PublicKey{pub}, history.RestoreOptions{Expect: m3.BundleHash})
	if err != nil {
		t.Fatal(err)
	}
	if res.Integration.Outcome != "created" || res.Receipts != 7 || res.Operators != 2 {
		t.Fatalf("restore: %+v", res)
	}
	want, _ := f.src.Tape.NDJSON(ctx, "lumen")
	got, _ := dst.Tape.NDJSON(ctx, "lumen")
	if !bytes.Equal(got, want) {
		t.Fatalf("restored tape:\n%s\nwant:\n%s", got, want)
	}
	hexes := func(agent string, use repo.KeyUse) []string {
		keys, err := dst.TrustedKeys(ctx, agent, use)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range keys {
			out = append(out, repo.KeyHex(k))
		}
		slices.Sort(out)
		return out
	}
	both := []string{other, fmt.Sprintf("%x", pub)}
	slices.Sort(both)
	if got := hexes("lumen", repo.KeyVerifiesReceipts); !slices.Equal(got, both) {
		t.Errorf("keys verifying lumen's receipts: %v, want %v", got, both)
	}
	if got := hexes("lumen", repo.KeySignsHistory); !slices.Equal(got, []string{fmt.Sprintf("%x", pub)}) {
		t.Errorf("keys signing lumen's history: %v, want the signer's alone", got)
	}
	if got := hexes("other-agent", repo.KeyVerifiesReceipts); len(got) != 0 {
		t.Errorf("keys trusted for another agent: %v, want none", got)
	}
	if !slices.Equal(logOf(t, dst), logOf(t, f.src)) {
		t.Fatal("the restored log differs")
	}
	// Again: up to date, nothing added, no pack fetched.
	res, err = sh(dst).Restore(ctx, "lumen", []ed25519.PublicKey{pub}, history.RestoreOptions{})
	if err != nil || res.Integration.Outcome != "up to date" || res.Receipts != 0 || res.Fetched != 0 {
		t.Fatalf("second restore: %+v %v", res, err)
	}
	// One more push: a restore over the earlier one fetches only its pack
	// and fast-forwards, as a pull does.
	put(t, f.src, "k", "after")
	receipt(t, f.src, 7)
	if _, err := sh(f.src).Push(ctx, "lumen", f.operator); err != nil {
		t.Fatal(err)
	}
	res, err = sh(dst).Restore(ctx, "lumen", []ed25519.PublicKey{pub}, history.RestoreOptions{FFOnly: true})
	if err != nil || res.Integration.Outcome != "fast-forward" || res.Fetched != 1 || res.Receipts != 1 {
		t.Fatalf("incremental restore: %+v %v", res, err)
	}
	if !slices.Equal(logOf(t, dst), logOf(t, f.src)) {
		t.Fatal("the log differs after the incremental restore")
	}
}

// A history a forget cut ships with its cut links, and a fresh store takes
// it: the log is the kept one, the cuts are recorded, verify is clean.
func TestPushCutHistory(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for i := range 12 {
		put(t, f.src, fmt.Sprint("k", i%3), fmt.Sprint("v", i))
	}
	if _, err := f.src.Forget(ctx, "lumen", repo.Policy{Last: 4}, false); err != nil {
		t.Fatal(err)
	}
	m, err := f.shipper(f.src).Push(ctx, "lumen", f.operator)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Packs[0].Cuts) == 0 {
		t.Fatal("the pack of a cut history names no cut")
	}
	dst := repo.New(memory.New())
	if _, err := f.shipper(dst).Restore(ctx, "lumen", []ed25519.PublicKey{f.operator.Public().(ed25519.PublicKey)}, history.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	lo, _, err := dst.LogOptions(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for le, err := range dag.LogWith(ctx, dst.Blocks, m.Head, lo) {
		if err != nil {
			t.Fatal(err)
		}
		_ = le
		n++
	}
	if n == 0 || n >= 12 {
		t.Fatalf("restored log of the cut history has %d commits", n)
	}
	rep, err := dst.Verify(ctx)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
	// Without its cuts the pack is refused: a manifest that drops them.
	bad := *m.Manifest
	bad.Packs = slices.Clone(m.Packs)
	bad.Packs[0].Cuts = nil
	f.republish(t, &bad, f.operator)
	if _, err := f.shipper(repo.New(memory.New())).Fetch(ctx, "lumen", []ed25519.PublicKey{f.operator.Public().(ed25519.PublicKey)}); err == nil {
		t.Fatal("a pack missing parents its manifest does not name as cut was accepted")
	}
}

// A push whose pack would be larger than a reader takes is refused before
// anything is uploaded, and the published history stays as it was.
func TestPackTooLarge(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	put(t, f.src, "small", "v")
	sh := f.shipper(f.src)
	m1, err := sh.Push(ctx, "lumen", f.operator)
	if err != nil {
		t.Fatal(err)
	}
	put(t, f.src, "big", strings.Repeat("x", 64<<10))
	sh.MaxPack = 32 << 10
	files := func() int {
		n := 0
		filepath.WalkDir(f.blobs.Dir(), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	before := files()
	_, err = sh.Push(ctx, "lumen", f.operator)
	t.Log(err)
	if !errors.Is(err, history.ErrPackTooLarge) || !strings.Contains(err.Error(), "alone") {
		t.Fatalf("push of an oversized pack: %v", err)
	}
	if after := files(); after != before {
		t.Fatalf("a refused push uploaded %d blobs", after-before)
	}
	m, _, err := sh.Published(ctx, "lumen", []ed25519.PublicKey{f.operator.Public().(ed25519.PublicKey)})
	if err != nil || m.Head != m1.Head {
		t.Fatalf("the published history moved: %v", err)
	}
}

// refusingPointer is a pointer whose record update would be refused (an ENS
// signer the resolver does not authorise: ens.HistoryPointer.Preflight).
type refusingPointer struct{ history.FilePointer }

func (refusingPointer) Preflight(context.Context, string) error {
	return errors.New("not authorised to set the record")
}

// A push whose pointer cannot be updated uploads nothing.
func TestPushPreflight(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	put(t, f.src, "k", "v")
	sh := f.shipper(f.src)
	sh.Pointer = refusingPointer{f.ptr}
	if _, err := sh.Push(ctx, "lumen", f.operator); err == nil || !strings.Contains(err.Error(), "nothing was uploaded") {
		t.Fatalf("push through a refusing pointer: %v", err)
	}
	n := 0
	filepath.WalkDir(f.blobs.Dir(), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	if n != 0 {
		t.Fatalf("%d blobs uploaded", n)
	}
}

// Receipt blobs that contradict their manifest (another line count, bytes
// that are not the manifest's), and a pointer file that is not a pointer,
// are refused; the store gets no HEAD and no receipt.
func TestHostileReceiptsAndPointer(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	put(t, f.src, "k", "v")
	receipt(t, f.src, 1)
	receipt(t, f.src, 2)
	good, err := f.shipper(f.src).Push(ctx, "lumen", f.operator)
	if err != nil || good.Packs[0].Receipts == nil {
		t.Fatalf("push: %+v %v", good, err)
	}
	trusted := []ed25519.PublicKey{f.operator.Public().(ed25519.PublicKey)}
	for name, edit := range map[string]func(r *history.ReceiptBlob){
		"a line count that is not the blob's": func(r *history.ReceiptBlob) { r.Lines++ },
		"a sha256 that is not the blob's":     func(r *history.ReceiptBlob) { r.SHA256 = fmt.Sprintf("%064x", 9) },
	} {
		m := *good.Manifest
		m.Packs = slices.Clone(good.Packs)
		rb := *m.Packs[0].Receipts
		edit(&rb)
		m.Packs[0].Receipts = &rb
		f.republish(t, &m, f.operator)
		dst := repo.New(memory.New())
		if _, err := f.shipper(dst).Restore(ctx, "lumen", trusted, history.RestoreOptions{}); !errors.Is(err, history.ErrBadPack) {
			t.Errorf("%s: %v, want ErrBadPack", name, err)
		}
		if _, err := dst.Refs.Head(ctx, "lumen"); !errors.Is(err, refs.ErrNoAgent) {
			t.Errorf("%s: a HEAD after a refused restore", name)
		}
		if nd, _ := dst.Tape.NDJSON(ctx, "lumen"); len(nd) != 0 {
			t.Errorf("%s: receipts after a refused restore", name)
		}
	}
	for name, text := range map[string]string{
		"over 1 KiB":     strings.Repeat("A", 2000),
		"not a blob id":  "not-a-blob " + strings.Repeat("0", 64) + " 10",
		"a size of zero": string(good.Ref.Blob) + " " + good.Ref.SHA256 + " 0",
	} {
		if err := os.WriteFile(filepath.Join(f.ptr.Dir, "lumen.history"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := f.ptr.ReadHistory(ctx, "lumen"); !errors.Is(err, history.ErrBadManifest) {
			t.Errorf("pointer %s: %v, want ErrBadManifest", name, err)
		}
	}
}

// A history larger than a reader takes in one pack goes out in several,
// each ending at a commit of HEAD's line and none larger than the bound;
// a fresh store rebuilds it commit for commit, and the next push adds one
// pack as usual.
func TestPushSplitsLargeHistory(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for i := range 30 {
		put(t, f.src, fmt.Sprint("k", i%7), strings.Repeat(fmt.Sprint(i, "-"), 1000)) // 3-4 KiB each
	}
	sh := f.shipper(f.src)
	sh.MaxPack = 20 << 10
	m, err := sh.Push(ctx, "lumen", f.operator)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d packs", len(m.Packs))
	if len(m.Packs) < 5 {
		t.Fatalf("%d packs for about 120 KiB of history in packs of at most 20 KiB", len(m.Packs))
	}
	line := logOf(t, f.src) // newest first
	pos := map[objects.CID]int{}
	for i, c := range line {
		pos[c] = i
	}
	for i, p := range m.Packs {
		rc, err := f.blobs.Get(ctx, p.Blob)
		if err != nil {
			t.Fatal(err)
		}
		var plain bytes.Buffer
		err = f.cipher.Decrypt(ctx, &plain, rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if plain.Len() > int(sh.MaxPack) {
			t.Errorf("pack %d is %d bytes, over %d", i+1, plain.Len(), sh.MaxPack)
		}
		at, ok := pos[p.Head]
		if !ok || i > 0 && at >= pos[m.Packs[i-1].Head] {
			t.Errorf("pack %d ends at %s, not at a commit of HEAD's line after the pack before", i+1, p.Head.Short())
		}
	}
	if m.Packs[len(m.Packs)-1].Head != line[0] {
		t.Fatal("the last pack does not end at HEAD")
	}
	dst := f.restoreFresh(t)
	if !slices.Equal(logOf(t, dst), line) {
		t.Fatal("the restored log differs from the original")
	}
	if rep, err := dst.Verify(ctx); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
	put(t, f.src, "new", "n")
	m2, err := sh.Push(ctx, "lumen", f.operator)
	if err != nil || len(m2.Packs) != len(m.Packs)+1 || m2.Packs[len(m.Packs)].Blocks > 8 {
		t.Fatalf("the push after: %v, %d packs (before %d)", err, len(m2.Packs), len(m.Packs))
	}
}

// An older signed manifest replayed through the pointer: each manifest is
// numbered and names the one before; a store that has seen a newer one
// refuses it (ErrStale) before fetching anything, HEAD and tape unchanged,
// and a push will not build on it; a fresh store takes it unless MinSeq
// asks for more.
func TestReplayedManifest(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	pub := []ed25519.PublicKey{f.operator.Public().(ed25519.PublicKey)}
	put(t, f.src, "k", "1")
	m1, err := f.shipper(f.src).Push(ctx, "lumen", f.operator)
	if err != nil || m1.Seq != 1 || m1.Prev != "" {
		t.Fatalf("first push: seq %d prev %q %v", m1.Seq, m1.Prev, err)
	}
	put(t, f.src, "k", "2")
	m2, err := f.shipper(f.src).Push(ctx, "lumen", f.operator)
	if err != nil || m2.Seq != 2 || m2.Prev != m1.Ref.SHA256 {
		t.Fatalf("second push: seq %d prev %q (want 2, %s) %v", m2.Seq, m2.Prev, m1.Ref.SHA256, err)
	}
	dst := repo.New(memory.New())
	if res, err := f.shipper(dst).Restore(ctx, "lumen", pub, history.RestoreOptions{}); err != nil || res.Manifest.Seq != 2 {
		t.Fatalf("restore: %+v %v", res, err)
	}
	if seen, ok, err := f.shipper(dst).Seen(ctx, "lumen"); err != nil || !ok || seen.Seq != 2 || seen.SHA256 != m2.Ref.SHA256 {
		t.Fatalf("seen after restore: %+v %v %v", seen, ok, err)
	}
	head := logOf(t, dst)
	// The replay: the pointer names the first manifest again.
	if err := f.ptr.WriteHistory(ctx, "lumen", m1.Ref); err != nil {
		t.Fatal(err)
	}
	if _, err := f.shipper(dst).Restore(ctx, "lumen", pub, history.RestoreOptions{}); !errors.Is(err, history.ErrStale) {
		t.Fatalf("replayed manifest: %v, want ErrStale", err)
	}
	if !slices.Equal(logOf(t, dst), head) {
		t.Fatal("a refused replay moved HEAD")
	}
	if _, err := f.shipper(f.src).Push(ctx, "lumen", f.operator); !errors.Is(err, history.ErrStale) {
		t.Fatalf("push over a rolled-back pointer: %v, want ErrStale", err)
	}
	// A fresh store has seen nothing: MinSeq is the operator's check.
	fresh := repo.New(memory.New())
	if _, err := f.shipper(fresh).Restore(ctx, "lumen", pub, history.RestoreOptions{MinSeq: 2}); !errors.Is(err, history.ErrStale) {
		t.Fatalf("MinSeq 2 over seq 1: %v", err)
	}
	if _, err := fresh.Refs.Head(ctx, "lumen"); !errors.Is(err, refs.ErrNoAgent) {
		t.Fatal("a refused restore created the agent")
	}
	if res, err := f.shipper(fresh).Restore(ctx, "lumen", pub, history.RestoreOptions{}); err != nil || res.Manifest.Seq != 1 {
		t.Fatalf("fresh restore of seq 1: %v", err)
	}
	// A fork: another manifest numbered 2 that does not follow the first.
	other := *m2.Manifest
	other.Time++
	if err := other.Sign(f.operator); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(&other)
	st, err := f.blobs.Put(ctx, bytes.NewReader(body), int64(len(body)), walrus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if err := f.ptr.WriteHistory(ctx, "lumen", history.Ref{Blob: st.BlobID, SHA256: fmt.Sprintf("%x", sum), Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.shipper(dst).Restore(ctx, "lumen", pub, history.RestoreOptions{}); !errors.Is(err, history.ErrStale) {
		t.Fatalf("another seq 2: %v, want ErrStale", err)
	}
}

// A signed manifest naming a pack or receipt blob larger than a reader
// takes is refused before the blob is read (the blob store is not asked
// for terabytes).
func TestOversizedBlobsRefused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	pub := []ed25519.PublicKey{f.operator.Public().(ed25519.PublicKey)}
	put(t, f.src, "k", "1")
	receipt(t, f.src, 1)
	m, err := f.shipper(f.src).Push(ctx, "lumen", f.operator)
	if err != nil {
		t.Fatal(err)
	}
	for _, grow := range []func(m *history.Manifest){
		func(m *history.Manifest) { m.Packs[0].Size = 1 << 40 },
		func(m *history.Manifest) { m.Packs[0].Receipts.Size = 1 << 40 },
	} {
		lie := *m.Manifest
		lie.Packs = slices.Clone(m.Packs)
		r := *lie.Packs[0].Receipts
		lie.Packs[0].Receipts = &r
		grow(&lie)
		if err := lie.Sign(f.operator); err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(&lie)
		st, err := f.blobs.Put(ctx, bytes.NewReader(body), int64(len(body)), walrus.StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		if err := f.ptr.WriteHistory(ctx, "lumen", history.Ref{Blob: st.BlobID, SHA256: fmt.Sprintf("%x", sum), Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		dst := repo.New(memory.New())
		if _, err := f.shipper(dst).Restore(ctx, "lumen", pub, history.RestoreOptions{}); !errors.Is(err, history.ErrBadPack) || !strings.Contains(err.Error(), "more than a reader takes") {
			t.Fatalf("oversized blob: %v", err)
		}
	}
}

// A restore through a served store's client with a write token: the history
// and its receipts land, the newest manifest is recorded, and the signer
// given is recorded as learned with the agent's receipts, not trusted to
// sign (only the store's operator trusts a key).
func TestRestoreThroughServedStore(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	put(t, f.src, "k", "1")
	receipt(t, f.src, 1)
	if _, err := f.shipper(f.src).Push(ctx, "lumen", f.operator); err != nil {
		t.Fatal(err)
	}
	local, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	srv, err := remote.Start(local, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{"rw-token-abcdefghijkl"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	addrs := srv.Addrs()
	c, err := remote.Dial(ctx, addrs[len(addrs)-1], remote.DialOptions{Token: "rw-token-abcdefghijkl"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := f.shipper(repo.New(c))
	s.RecordKeys = true
	pub := f.operator.Public().(ed25519.PublicKey)
	res, err := s.Restore(ctx, "lumen", []ed25519.PublicKey{pub}, history.RestoreOptions{})
	if err != nil || res.Integration.Outcome != "created" || res.Receipts != 1 {
		t.Fatalf("restore: %+v %v", res, err)
	}
	if keys, _ := local.TrustedKeys(ctx, "lumen", repo.KeySignsHistory); len(keys) != 0 {
		t.Fatalf("a write token made %x a history signer", keys)
	}
	if keys, _ := local.TrustedKeys(ctx, "lumen", repo.KeyVerifiesReceipts); len(keys) != 1 || !keys[0].Equal(pub) {
		t.Fatalf("keys verifying lumen's receipts: %x", keys)
	}
	if seen, ok, err := s.Seen(ctx, "lumen"); err != nil || !ok || seen.Seq != 1 {
		t.Fatalf("seen: %+v %v %v", seen, ok, err)
	}
}
