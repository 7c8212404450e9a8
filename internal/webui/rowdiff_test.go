package webui_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/chromedp/chromedp"
)

// The commit API carries a SQLite value's change by table (the read
// model's DiffRows), and the commit view shows it as row tables: the rows
// the learn task inserted, updated (old → new) and deleted.
func TestCommitRowsInChromium(t *testing.T) {
	s, srv := sqlFixture(t)
	learn := s.Commits[1].String() + "~1" // the learn task's put of memory.db
	_, body := get(t, srv.URL+"/api/commit?agent=lumen&rev="+learn)
	var shown struct{ Changes []inspect.Change }
	if err := json.Unmarshal(body, &shown); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ch := range shown.Changes {
		if ch.Path == "memory.db" && ch.Rows != nil && len(ch.Rows.Tables) == 3 {
			found = true
		}
	}
	if !found {
		t.Fatalf("no rows for memory.db in /api/commit: %s", body)
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("Debian's chromium is needed (apt-get install chromium; .ci/run installs it): ", err)
	}
	shots := screenshots(t)
	ctx := chromiumContext(t, context.Background(), chromium, 1200, 60*time.Second)
	var heads, updated, inserted, deleted string
	var png []byte
	err = chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/#/a/lumen/c/"+learn), chromedp.WaitVisible(`.row-diff table.rows`),
		chromedp.Evaluate(`[...document.querySelectorAll('.row-diff h3')].map(h => h.textContent).join('\n')`, &heads),
		chromedp.Evaluate(`document.querySelector('.row-diff tr.row-update td.changed').textContent`, &updated),
		chromedp.Evaluate(`[...document.querySelectorAll('.row-diff tr.row-insert')].map(r => r.children[1].textContent).join(',')`, &inserted),
		chromedp.Evaluate(`[...document.querySelectorAll('.row-diff tr.row-delete')].map(r => r.children[1].textContent).join(',')`, &deleted),
		chromedp.FullScreenshot(&png, 100))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(shots, "commit-rows.png"), png, 0o644)
	want := "facts (without rowid): 0 inserted, 1 updated, 0 deleted\nmessages (table): 1 inserted, 1 updated, 1 deleted\nnotes (fts5): 1 inserted, 0 updated, 0 deleted"
	if heads != want {
		t.Fatalf("row tables:\n%s\nwant\n%s", heads, want)
	}
	if updated != "an agent → a careful agent" {
		t.Fatalf("the updated cell: %q", updated)
	}
	if inserted != "12001,3" || deleted != "8" {
		t.Fatalf("inserted %q, deleted %q", inserted, deleted)
	}
}
