package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// manyCommits is the fixture's history (tasks, a merge, an undo) with n
// more commits on top: every tenth changes a key under deep/, the others
// one of log/.
func manyCommits(t *testing.T, n int, msg string) (*repo.Repo, *httptest.Server) {
	t.Helper()
	r, srv := fixture(t)
	ctx := context.Background()
	for i := range n {
		key := fmt.Sprintf("log/%d.md", i%7)
		if i%10 == 0 {
			key = fmt.Sprintf("deep/k%d.md", i)
		}
		v := objects.NewValue(fmt.Appendf(nil, "step %d\n", i))
		if _, err := r.Edit(ctx, repo.EditRequest{Agent: "lumen", Message: fmt.Sprintf("%s %03d", msg, i), Blocks: []objects.Block{v},
			Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, key, v.CID) }}); err != nil {
			t.Fatal(err)
		}
	}
	return r, srv
}

type logAnswer struct {
	Head    string           `json:"head"`
	Commits []inspect.Commit `json:"commits"`
	Next    string           `json:"next"`
	Scanned int              `json:"scanned"`
}

// The history through the API, a page at a time: the pages read in turn
// are the whole log (none twice), the cursor stays put as HEAD moves, and a
// forged cursor, another agent's, or one from another store is a 400.
func TestLogPagesAPI(t *testing.T) {
	r, srv := manyCommits(t, 230, "step")
	ctx := context.Background()
	whole, err := inspect.New(r).Log(ctx, "lumen", inspect.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cids []string
	cursor := ""
	for pages := 0; ; pages++ {
		resp, body := get(t, srv.URL+"/api/log?agent=lumen&limit=100&cursor="+url.QueryEscape(cursor))
		var l logAnswer
		if err := json.Unmarshal(body, &l); err != nil || resp.StatusCode != 200 {
			t.Fatalf("page %d: %d %s", pages, resp.StatusCode, body)
		}
		for _, c := range l.Commits {
			cids = append(cids, c.CID.String())
		}
		if pages == 0 { // HEAD moves: the next pages go on from where this one stopped
			v := objects.NewValue([]byte("later\n"))
			if _, err := r.Edit(ctx, repo.EditRequest{Agent: "lumen", Message: "landed between pages", Blocks: []objects.Block{v},
				Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, "later.md", v.CID) }}); err != nil {
				t.Fatal(err)
			}
		}
		if l.Next == "" {
			break
		}
		cursor = l.Next
	}
	var want []string
	for _, c := range whole.Commits {
		want = append(want, c.CID.String())
	}
	if !slices.Equal(cids, want) {
		t.Fatalf("pages: %d commits, the log %d (or another order)", len(cids), len(want))
	}
	// Filters: by key prefix and by text, through the read model's walk.
	_, body := get(t, srv.URL+"/api/log?agent=lumen&prefix=deep/")
	var l logAnswer
	if json.Unmarshal(body, &l) != nil || len(l.Commits) != 23 || !strings.HasPrefix(l.Commits[0].Message, "step 220") {
		t.Fatalf("prefix deep/: %d commits, %s", len(l.Commits), body[:min(len(body), 300)])
	}
	_, body = get(t, srv.URL+"/api/log?agent=lumen&grep=FAST")
	if json.Unmarshal(body, &l) != nil || len(l.Commits) != 1 || l.Commits[0].Metadata["task"] != "fast" || l.Scanned < 230 {
		t.Fatalf("grep FAST: %s", body[:min(len(body), 300)])
	}
	_, otherSrv := manyCommits(t, 3, "another store's step")
	_, body = get(t, otherSrv.URL+"/api/log?agent=lumen&limit=2")
	var o logAnswer
	if json.Unmarshal(body, &o) != nil || o.Next == "" {
		t.Fatalf("other store: %s", body)
	}
	for name, c := range map[string]string{
		"forged":          "bm90IGEgY3Vyc29y",
		"not base64":      "%%%",
		"another agent's": strings.Replace(o.Next, "bHVtZW4", "b3RoZXI", 1), // "lumen" → "other"
		"another store's": o.Next,
		"huge":            strings.Repeat("A", inspect.MaxCursor+1),
	} {
		resp, body := get(t, srv.URL+"/api/log?agent=lumen&cursor="+url.QueryEscape(c))
		if resp.StatusCode != 400 || !strings.Contains(string(body), "cursor") {
			t.Errorf("%s cursor: %d %.200s", name, resp.StatusCode, body)
		}
	}
	for route, code := range map[string]int{
		"/api/log?agent=lumen&grep=" + strings.Repeat("x", inspect.MaxGrep+1): 400,
		"/api/oplog?agent=lumen&before=x":                                     400,
		"/api/receipts?agent=lumen&from=-1":                                   400,
		"/api/receipts?agent=lumen&from=2&limit=1":                            200,
	} {
		if resp, body := get(t, srv.URL+route); resp.StatusCode != code {
			t.Errorf("%.80s: %d %.200s, want %d", route, resp.StatusCode, body, code)
		}
	}
	// The operation log and the receipts, a page at a time.
	_, body = get(t, srv.URL+"/api/oplog?agent=lumen&limit=5")
	var ops []inspect.Op
	if json.Unmarshal(body, &ops) != nil || len(ops) != 5 {
		t.Fatalf("oplog page: %s", body)
	}
	_, body = get(t, srv.URL+fmt.Sprintf("/api/oplog?agent=lumen&limit=5&before=%d", ops[4].Seq))
	var older []inspect.Op
	if json.Unmarshal(body, &older) != nil || len(older) != 5 || older[0].Seq != ops[4].Seq-1 {
		t.Fatalf("older oplog page after %d: %s", ops[4].Seq, body)
	}
	_, body = get(t, srv.URL+"/api/receipts?agent=lumen&limit=2")
	var rp struct {
		Receipts []struct {
			N        int
			Verified *bool
		}
		Total, From int
	}
	if json.Unmarshal(body, &rp) != nil || rp.Total != 3 || len(rp.Receipts) != 2 || rp.From != 2 || rp.Receipts[0].N != 2 ||
		rp.Receipts[1].Verified == nil || !*rp.Receipts[1].Verified {
		t.Fatalf("newest receipts: %s", body)
	}
}

// The page over a history of more than 200 commits, in headless Chromium
// at 1440 and at 390 pixels wide: the newest 200 and "older" through the
// rest (each commit once), a search by key and by text, two commits picked
// and compared, a merge's change against each parent, every table with a
// header row, nothing wider than the window, and no request answered 404
// (the favicon among them); j/k, Enter and Esc; HEAD, a tag and another
// agent's HEAD named on their commits.
func TestHistoryPagesInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("Debian's chromium is needed (apt-get install chromium; .ci/run installs it): ", err)
	}
	r, srv := manyCommits(t, 230, "step")
	whole, err := inspect.New(r).Log(context.Background(), "lumen", inspect.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Names on commits: a tag, and another agent whose HEAD is one.
	if err := r.SetTag(context.Background(), "lumen", "v1", whole.Commits[5].CID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Fork(context.Background(), "lumen", whole.Commits[3].CID, "nova"); err != nil {
		t.Fatal(err)
	}
	shots := screenshots(t)
	ctx := chromiumContext(t, context.Background(), chromium, 1440, 120*time.Second)
	var mu sync.Mutex
	var notFound []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*network.EventResponseReceived); ok && e.Response.Status == 404 {
			mu.Lock()
			notFound = append(notFound, e.Response.URL)
			mu.Unlock()
		}
	})
	must := steps(t, ctx)
	shot := func(name string) chromedp.Action { return saveShot(filepath.Join(shots, name+".png"), false) }
	// fits: nothing on the page is wider than the window.
	fits := func(step string, width int) {
		t.Helper()
		var sw, wide int
		var headless []string
		must(step+": width", chromedp.Sleep(100*time.Millisecond), chromedp.Evaluate(`document.documentElement.scrollWidth`, &sw),
			chromedp.Evaluate(`[...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.scroll')).length`, &wide),
			chromedp.Evaluate(`[...document.querySelectorAll('main table')].filter(t => !t.querySelector('tr th')).map(t => t.id || t.className)`, &headless))
		if sw > width || wide > 0 || len(headless) > 0 {
			t.Errorf("%s at %d px: page %d px wide, %d elements past the window's edge, tables without a header row %q", step, width, sw, wide, headless)
		}
	}
	rowsOf := func(sel string) chromedp.Action { return chromedp.WaitReady(sel) } // a task's commits may be folded (hidden) under its row
	// goTo loads the page afresh at hash (a hash change alone re-renders
	// in place, and a wait could find the view before it).
	goTo := func(hash string) chromedp.Action {
		return chromedp.Tasks{chromedp.Navigate(srv.URL + hash), chromedp.Reload()}
	}
	var first, second []string
	must("network", network.Enable())
	must("first page", chromedp.EmulateViewport(1440, 900), goTo("/#/a/lumen"), rowsOf(`#history tr.commit`),
		chromedp.Evaluate(`[...document.querySelectorAll('#history tr.commit')].map(tr => tr.dataset.cid)`, &first), shot("h1-history-1440"))
	fits("agent", 1440)
	var names string
	must("names", chromedp.Evaluate(`[...document.querySelectorAll('#history tr.commit')].map((tr, i) => [...tr.querySelectorAll('.head, .tag, .other-head')].map(s => i + ":" + s.textContent)).flat().join(",")`, &names))
	if names != "0:HEAD,3:nova,5:v1" {
		t.Fatalf("names on the history: %q", names)
	}
	must("older", chromedp.Click(`#history-nav a.older`), chromedp.WaitVisible(`#history-nav a.newest`), rowsOf(`#history tr.commit`),
		chromedp.Evaluate(`[...document.querySelectorAll('#history tr.commit')].map(tr => tr.dataset.cid)`, &second), shot("h2-older-1440"))
	fits("older page", 1440)
	var want []string
	for _, c := range whole.Commits {
		want = append(want, c.CID.String())
	}
	if len(first) != 200 || !slices.Equal(append(slices.Clone(first), second...), want) {
		t.Fatalf("pages of %d and %d commits; the log has %d (or another order)", len(first), len(second), len(want))
	}
	var older int
	must("no older", chromedp.Evaluate(`document.querySelectorAll('#history-nav a.older').length`, &older))
	if older != 0 {
		t.Fatal("an older link on the last page")
	}
	// Search by key prefix, then by text (a task's id), from the form.
	var msgs []string
	must("search by key: load", goTo("/#/a/lumen"), rowsOf(`#history tr.commit`))
	must("search by key: type", chromedp.SendKeys(`#key-filter`, "deep/"))
	must("search by key: filter", chromedp.Click(`#search button`))
	must("search by key",
		pollUntil(`location.hash.includes('prefix=deep')`), chromedp.Sleep(200*time.Millisecond), rowsOf(`#history tr.commit`),
		chromedp.Evaluate(`[...document.querySelectorAll('#history a.msg')].map(a => a.textContent)`, &msgs), shot("h3-search-key-1440"))
	if len(msgs) != 23 || msgs[0] != "step 220" || msgs[22] != "step 000" {
		t.Fatalf("search by key deep/: %d commits %q", len(msgs), msgs)
	}
	// The commits found are not each other's parents: the graph keeps them
	// in one lane instead of opening a lane for each parent not shown.
	var widest float64
	must("search by key: graph width", chromedp.Evaluate(`Math.max(...[...document.querySelectorAll('#history td.lane svg')].map(s => s.getBoundingClientRect().width))`, &widest))
	if widest > 40 {
		t.Fatalf("search by key deep/: the graph is %.0f px wide for commits in one line", widest)
	}
	must("search by text", goTo("/#/a/lumen/history?grep=slow"), pollUntil(`document.querySelectorAll('#history a.msg').length === 2 && document.querySelector('#grep').value === 'slow'`),
		chromedp.Evaluate(`[...document.querySelectorAll('#history tr.commit td.meta:not(.when)')].map(td => td.textContent)`, &msgs))
	if len(msgs) != 2 || !strings.Contains(msgs[0], "task=slow") || !strings.Contains(msgs[1], "task=slow") {
		t.Fatalf("search by text: %q", msgs)
	}
	// Pick two commits in the list and compare them.
	var keys []string
	must("compare", goTo("/#/a/lumen"), rowsOf(`#history tr.commit`),
		chromedp.Click(`#history tr.commit:nth-child(2) input.pick`), chromedp.Click(`#history tr.commit:nth-child(12) input.pick`),
		chromedp.Click(`#compare-picked`), chromedp.WaitVisible(`#compare-sides`), rowsOf(`#changes .change`),
		chromedp.Evaluate(`[...document.querySelectorAll('#changes .key')].map(k => k.textContent)`, &keys), shot("h4-compare-1440"))
	// Rows 2 and 12 are steps 229 and 219: between them steps 220–229 changed deep/k220.md and log/….
	if !slices.Equal(keys, []string{"deep/k220.md", "log/0.md", "log/1.md", "log/2.md", "log/3.md", "log/4.md", "log/5.md", "log/6.md"}) {
		t.Fatalf("compare step 219 → 229: %q", keys)
	}
	// A merge: its change against each parent.
	var merge string
	for _, c := range whole.Commits {
		if len(c.Parents) == 2 {
			merge = c.CID.String()
		}
	}
	var title1, title2 string
	var keys1, keys2 []string
	must("merge", goTo("/#/a/lumen/c/"+merge), chromedp.WaitVisible(`#parent-switch`), rowsOf(`#changes .change`),
		chromedp.Text(`#changes-title`, &title1), chromedp.Evaluate(`[...document.querySelectorAll('#changes .key')].map(k => k.textContent)`, &keys1),
		chromedp.Click(`#parent-switch a[data-parent="2"]`), pollUntil(`document.querySelector('#changes-title').textContent.includes('second')`),
		rowsOf(`#changes .change`), chromedp.Text(`#changes-title`, &title2),
		chromedp.Evaluate(`[...document.querySelectorAll('#changes .key')].map(k => k.textContent)`, &keys2), shot("h5-merge-parent-2-1440"))
	if !strings.Contains(title1, "first") || !slices.Equal(keys1, []string{"skills/x.md"}) || !slices.Equal(keys2, []string{"notes.md"}) {
		t.Fatalf("merge: %q %q, then %q %q", title1, keys1, title2, keys2)
	}
	// The keyboard: j j selects the second commit, Enter opens it, Esc goes
	// back up to the agent.
	var hash string
	must("keys", goTo("/#/a/lumen"), rowsOf(`#history tr.commit`), chromedp.Click(`main h1`), chromedp.KeyEvent("j"), chromedp.KeyEvent("j"),
		chromedp.WaitVisible(`#history tr.commit.selected`), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(`#message`),
		chromedp.Evaluate(`location.hash`, &hash))
	if hash != "#/a/lumen/c/"+whole.Commits[1].CID.String() {
		t.Fatalf("j j Enter opened %q, want the second commit %s", hash, whole.Commits[1].CID)
	}
	must("escape", chromedp.KeyEvent(kb.Escape), rowsOf(`#history tr.commit`), chromedp.Evaluate(`location.hash`, &hash))
	if hash != "#/a/lumen" {
		t.Fatalf("Esc went to %q", hash)
	}
	// 390 px wide: each view fits, tables scroll within themselves.
	for _, v := range []struct{ name, hash, wait string }{
		{"agents", "/#/", `#agents a.agent`},
		{"agent", "/#/a/lumen", `#history tr.commit`},
		{"older", "/#/a/lumen/history?cursor=" + url.QueryEscape(firstCursor(t, srv)), `#history tr.commit`},
		{"search", "/#/a/lumen/history?prefix=deep%2F", `#history tr.commit`},
		{"commit", "/#/a/lumen/c/" + merge, `#changes .change`},
		{"compare", "/#/a/lumen/compare?from=HEAD~10&to=HEAD", `#changes .change`},
		{"ops", "/#/a/lumen/ops", `#oplog tr.op`},
		{"receipts", "/#/a/lumen/receipts", `#receipts tr.receipt`},
		{"task", "/#/a/lumen/t/slow", `#task-commits tr.task-commit`},
		{"value", "/#/a/lumen/v/HEAD/notes.md", `#value`},
		{"blame", "/#/a/lumen/b/HEAD/notes.md", `#blame tr.line`},
	} {
		must(v.name+" at 390", chromedp.EmulateViewport(390, 844), goTo(v.hash), rowsOf(v.wait), shot("h-390-"+v.name))
		fits(v.name, 390)
		must(v.name+" at 1440", chromedp.EmulateViewport(1440, 900), chromedp.Sleep(100*time.Millisecond))
		fits(v.name, 1440)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notFound) > 0 {
		t.Fatalf("requests answered 404: %q", notFound)
	}
	var favicon int
	must("favicon", chromedp.Evaluate(`document.querySelectorAll('link[rel="icon"][href="/favicon.svg"]').length`, &favicon))
	if resp, _ := get(t, srv.URL+"/favicon.svg"); favicon != 1 || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("favicon: %d links, %d %q", favicon, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	t.Logf("screenshots in %s", shots)
}

func firstCursor(t *testing.T, srv *httptest.Server) string {
	_, body := get(t, srv.URL+"/api/log?agent=lumen")
	var l logAnswer
	if json.Unmarshal(body, &l) != nil || l.Next == "" {
		t.Fatalf("no cursor: %.200s", body)
	}
	return l.Next
}
