package remote_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/objects"
)

const hexKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// A read-write token writes no raw metadata record: a tag must name a
// commit the store holds, keys and checkpoints change only through their
// own calls (trusting a key only through the socket), and records no rule
// admits are refused. The store is unchanged.
func TestClientMetaChecked(t *testing.T) {
	ctx := context.Background()
	local, srv, _ := startServed(t, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{listenTok}})
	head := putKey(t, local, "lumen", "a", "1")
	c, err := remote.Dial(ctx, tcpAddr(t, srv), remote.DialOptions{Token: listenTok})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	value := objects.NewValue([]byte("not a commit"))
	if err := local.Blocks.Put(ctx, value); err != nil {
		t.Fatal(err)
	}
	cm, err := local.Commit(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	keysBefore, _ := local.Keys(ctx)
	before := stateOf(t, local, "lumen")
	for name, v := range map[string]string{
		"tag/lumen/bad name":                      "not-a-cid",
		"tag/lumen/v1":                            "not-a-cid",
		"tag/lumen/v2":                            value.CID.String(),
		"tag/lumen/v3":                            objects.Sum(objects.CodecDagCBOR, []byte("absent")).String(),
		"tag/../v1":                               head.String(),
		"tag/lumen":                               head.String(),
		repo.OperatorKeyPrefix + hexKey:           "2026-01-01T00:00:00Z",
		repo.AgentKeyPrefix + "lumen/" + hexKey:   `{"time":"2026-01-01T00:00:00Z"}`,
		repo.LearnedKeyPrefix + "lumen/" + hexKey: `{"time":"2026-01-01T00:00:00Z"}`,
		"checkpoint/lumen":                        `{}`,
		"format":                                  "x",
		"bundle/" + string(cm.Tree.Bytes()):       strings.Repeat("x", 32),
		"snapshots/lumen/1-push":                  "not json",
		"snapshots/../1-push":                     `{}`,
		"kdf-salt":                                "short",
		"anything/else":                           "v",
	} {
		wantCode(t, "SetMeta "+name, c.SetMeta(ctx, name, []byte(v)), rpcwire.CodeBadRequest)
	}
	for _, p := range []string{"tag/", "tag/lumen/", repo.OperatorKeyPrefix, repo.AgentKeyPrefix, "checkpoint/", "kdf-salt", "t"} {
		wantCode(t, "DeleteMetaPrefix "+p, c.DeleteMetaPrefix(ctx, p), rpcwire.CodeBadRequest)
	}
	// Trusting a key is the operator's: no token may.
	if _, err := c.ApplyKeyOp(ctx, repo.KeyOp{Op: repo.KeyOpTrust, Keys: []string{hexKey}}); !errors.Is(err, remote.ErrReadOnly) {
		t.Errorf("TrustKeys with a token: %v, want ErrReadOnly", err)
	}
	if after := stateOf(t, local, "lumen"); after != before {
		t.Errorf("the store changed:\n%s\n%s", before, after)
	}
	if keys, _ := local.Keys(ctx); len(keys) != len(keysBefore) {
		t.Errorf("trusted keys changed: %v", keys)
	}
	if tags, err := local.Tags(ctx, ""); err != nil || len(tags) != 0 {
		t.Errorf("tags: %v %v", tags, err)
	}
	verifyClean(t, local)

	// What the checked calls are for still works through them.
	rc := repo.New(c)
	for _, n := range []string{"v1", "v10"} {
		if err := rc.SetTag(ctx, "lumen", n, head); err != nil {
			t.Fatalf("SetTag %s: %v", n, err)
		}
	}
	if ok, err := rc.DeleteTag(ctx, "lumen", "v1"); !ok || err != nil {
		t.Fatalf("DeleteTag: %v %v", ok, err)
	}
	if tags, _ := local.Tags(ctx, "lumen"); len(tags["lumen"]) != 1 || tags["lumen"][0].Name != "v10" {
		t.Fatalf("after deleting v1: %v (v10 must stay)", tags)
	}
	if _, err := rc.BundleHash(ctx, cm.Tree); err != nil {
		t.Fatalf("BundleHash: %v", err)
	}
	salt := []byte("0123456789abcdef")
	if err := c.SetMeta(ctx, "kdf-salt", salt); err != nil {
		t.Fatalf("kdf-salt: %v", err)
	}
	wantCode(t, "replacing kdf-salt", c.SetMeta(ctx, "kdf-salt", []byte("fedcba9876543210")), rpcwire.CodeBadRequest)
	if err := c.SetMeta(ctx, "snapshots/lumen/0001-push", []byte(`{"op":"push"}`)); err != nil {
		t.Fatalf("snapshot record: %v", err)
	}
}

// A store survives a damaged tag record, whoever wrote it (an older server,
// a damaged disk): verify reports it, gc, forget, du and the tag list work
// around it, and tag -d removes it, locally and through a server.
func TestStoreSurvivesBadTagRecords(t *testing.T) {
	ctx := context.Background()
	local, _, c := startServed(t, remote.Options{})
	head := putKey(t, local, "lumen", "a", "1")
	putKey(t, local, "lumen", "b", "2")
	if err := local.SetTag(ctx, "lumen", "good", head); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{
		"tag/lumen/bad name": "not-a-cid",
		"tag/lumen/v2":       "not-a-cid",
		"tag/lumen/a/b":      head.String(),
	} {
		if err := local.Storage.SetMeta(ctx, name, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := local.Verify(ctx)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if len(rep.Problems) != 3 || !strings.Contains(strings.Join(rep.Problems, "\n"), "bad name") {
		t.Fatalf("verify problems: %q", rep.Problems)
	}
	for _, r := range []*repo.Repo{local, repo.New(c)} {
		tags, err := r.Tags(ctx, "lumen")
		if err != nil || len(tags["lumen"]) != 1 || tags["lumen"][0].Name != "good" {
			t.Fatalf("tags: %v %v", tags, err)
		}
		if _, err := r.DiskUsage(ctx, "lumen"); err != nil {
			t.Fatalf("du: %v", err)
		}
		if _, err := r.GC(ctx, true); err != nil {
			t.Fatalf("gc: %v", err)
		}
		if _, err := r.Forget(ctx, "lumen", repo.Policy{Last: 5}, true); err != nil {
			t.Fatalf("forget: %v", err)
		}
	}
	// tag -d removes them: one locally, two through the server.
	if ok, err := local.DeleteTag(ctx, "lumen", "bad name"); !ok || err != nil {
		t.Fatalf("DeleteTag bad name: %v %v", ok, err)
	}
	for _, n := range []string{"v2", "a/b"} {
		if ok, err := repo.New(c).DeleteTag(ctx, "lumen", n); !ok || err != nil {
			t.Fatalf("DeleteTag %s through the server: %v %v", n, ok, err)
		}
	}
	if ok, err := local.DeleteTag(ctx, "lumen", "no such/name"); ok || err == nil {
		t.Fatalf("deleting an invalid name that is not there: %v %v", ok, err)
	}
	verifyClean(t, local)
	if tags, _ := local.Tags(ctx, "lumen"); len(tags["lumen"]) != 1 {
		t.Fatalf("the good tag went: %v", tags)
	}
}

// Tags over TCP go through the SetTag and DeleteTag calls, which keep
// SetTag's rule in the server: a raw tag record is refused even when it
// names a commit the store holds (it could move a tag), an existing tag
// naming another commit moves only with MoveTag (tag -f), and a raw
// delete of a tag record is refused too.
func TestTagsThroughCheckedCalls(t *testing.T) {
	ctx := context.Background()
	const ro = "ro-token-tags-0123456789"
	local, srv, _ := startServed(t, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{listenTok}, ReadTokens: []string{ro}})
	first := putKey(t, local, "lumen", "a", "1")
	second := putKey(t, local, "lumen", "b", "2")
	c, err := remote.Dial(ctx, tcpAddr(t, srv), remote.DialOptions{Token: listenTok})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc := repo.New(c)
	if err := rc.SetTag(ctx, "lumen", "v1", first); err != nil {
		t.Fatalf("SetTag: %v", err)
	}
	tagOf := func() objects.CID {
		t.Helper()
		tags, err := local.Tags(ctx, "lumen")
		if err != nil || len(tags["lumen"]) != 1 {
			t.Fatalf("tags: %v %v", tags, err)
		}
		return tags["lumen"][0].Commit
	}
	// A raw record that would move it, or make a new tag, or delete it.
	wantCode(t, "SetMeta of tag/lumen/v1", c.SetMeta(ctx, "tag/lumen/v1", []byte(second.String())), rpcwire.CodeBadRequest)
	wantCode(t, "SetMeta of tag/lumen/v2", c.SetMeta(ctx, "tag/lumen/v2", []byte(second.String())), rpcwire.CodeBadRequest)
	wantCode(t, "DeleteMetaPrefix of tag/lumen/v1", c.DeleteMeta(ctx, "tag/lumen/v1"), rpcwire.CodeBadRequest)
	// SetTag of another commit: refused, as locally.
	err = rc.SetTag(ctx, "lumen", "v1", second)
	if !errors.Is(err, repo.ErrTagExists) || !strings.Contains(err.Error(), first.Short()) {
		t.Errorf("SetTag moving v1: %v, want ErrTagExists naming %s", err, first.Short())
	}
	if got := tagOf(); got != first {
		t.Fatalf("v1 moved to %s", got)
	}
	// The same commit again: a no-op; MoveTag moves it.
	if err := rc.SetTag(ctx, "lumen", "v1", first); err != nil {
		t.Fatalf("SetTag of the commit it names: %v", err)
	}
	if err := rc.MoveTag(ctx, "lumen", "v1", second); err != nil {
		t.Fatalf("MoveTag: %v", err)
	}
	if got := tagOf(); got != second {
		t.Fatalf("after MoveTag v1 is %s, want %s", got, second)
	}
	// Bad requests: a tag of no commit, a bad name.
	value := objects.NewValue([]byte("not a commit"))
	if err := c.Put(ctx, value); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "SetTag of a value", rc.SetTag(ctx, "lumen", "v3", value.CID), rpcwire.CodeBadRequest)
	if err := c.WriteTag(ctx, "lumen", "bad name", first, false); err == nil {
		t.Errorf("WriteTag of a bad name: no error")
	}
	// A read-only token may not tag.
	roc, err := remote.Dial(ctx, tcpAddr(t, srv), remote.DialOptions{Token: ro})
	if err != nil {
		t.Fatal(err)
	}
	defer roc.Close()
	if err := repo.New(roc).MoveTag(ctx, "lumen", "v1", first); !errors.Is(err, remote.ErrReadOnly) {
		t.Errorf("MoveTag with a read-only token: %v, want ErrReadOnly", err)
	}
	if ok, err := repo.New(roc).DeleteTag(ctx, "lumen", "v1"); ok || !errors.Is(err, remote.ErrReadOnly) {
		t.Errorf("DeleteTag with a read-only token: %v %v, want ErrReadOnly", ok, err)
	}
	if ok, err := rc.DeleteTag(ctx, "lumen", "v1"); !ok || err != nil {
		t.Fatalf("DeleteTag: %v %v", ok, err)
	}
	if ok, err := rc.DeleteTag(ctx, "lumen", "v1"); ok || err != nil {
		t.Fatalf("DeleteTag of a tag that is gone: %v %v", ok, err)
	}
	verifyClean(t, local)
}
