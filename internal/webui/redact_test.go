package webui_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/webui"
	"github.com/agentstate/agentstate/objects"
)

// TestValueRedacted: the page's value API answers a redacted value as
// redacted, with its record, not as an error.
func TestValueRedacted(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init("", repo.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, content := range []string{"token=SECRET\n", "no token\n"} {
		b := objects.NewValue([]byte(content))
		if _, err := r.Edit(ctx, repo.EditRequest{Agent: "lumen", Message: "put", Create: true, Blocks: []objects.Block{b},
			Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, "skill.md", b.CID) }}); err != nil {
			t.Fatal(err)
		}
	}
	at, err := r.Resolve(ctx, "lumen", "HEAD~1")
	if err != nil {
		t.Fatal(err)
	}
	seed := sha256.Sum256([]byte("redactor"))
	if _, err := r.Redact(ctx, repo.RedactRequest{Agent: "lumen", Key: "skill.md", At: at, Reason: "leaked"}, ed25519.NewKeyFromSeed(seed[:])); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(webui.Handler(inspect.New(r), webui.Options{}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/api/value?agent=lumen&rev=HEAD~1&key=skill.md")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != 200 || out["redacted"] == nil || out["text"] != nil || !strings.Contains(out["omitted"].(string), "leaked") {
		t.Fatalf("%d %v", res.StatusCode, out)
	}
	raw, err := http.Get(srv.URL + "/api/raw?agent=lumen&rev=HEAD~1&key=skill.md")
	if err != nil {
		t.Fatal(err)
	}
	raw.Body.Close()
	if raw.StatusCode != 404 {
		t.Fatalf("raw download of a redacted value: %d", raw.StatusCode)
	}
}
