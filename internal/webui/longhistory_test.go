package webui_test

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/chromedp/chromedp"
)

// longHistory puts n commits on lumen's HEAD in the fixture's store,
// written straight through the library in batches (a commit block each,
// then one reset): every thousandth writes a key under deep/ (a tree
// edit), the others keep the tree and differ by message, "bulk N".
func longHistory(t *testing.T, r *repo.Repo, n int) {
	t.Helper()
	ctx := context.Background()
	head, err := r.Resolve(ctx, "lumen", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	cm, err := r.Commit(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	tree, tm := cm.Tree, cm.Time
	var batch []objects.Block
	flush := func() {
		if err := r.Blocks.Put(ctx, batch...); err != nil {
			t.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range n {
		if i%1000 == 999 {
			flush() // the tree edit reads what came before
			tr, err := objects.LoadTree(ctx, r.Blocks, tree)
			if err != nil {
				t.Fatal(err)
			}
			v := objects.NewValue(fmt.Appendf(nil, "deep %d\n", i))
			if err := r.Blocks.Put(ctx, v); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Put(ctx, fmt.Sprintf("deep/k%06d.md", i), v.CID); err != nil {
				t.Fatal(err)
			}
			if tree, err = tr.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		tm++
		c := &objects.Commit{Tree: tree, Parents: []objects.CID{head}, Time: tm, Message: fmt.Sprintf("bulk %d", i)}
		b, err := c.Block()
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, b)
		head = b.CID
		if len(batch) == 5000 {
			flush()
		}
	}
	flush()
	if _, err := r.Reset(ctx, "lumen", head); err != nil {
		t.Fatal(err)
	}
}

// The history of 100,000 commits in Chromium, at 1440 and 390 px: the
// first screen is the newest 200, "older" pages on (each page the log's
// next 200), a cursor 99,850 commits down opens the last page (no
// "older"), a search by text and a filter by key prefix find what they
// should within their bounded walk, two commits picked in the list
// compare, and nothing is wider than a 390-px window.
func TestHistory100kInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("Debian's chromium is needed (apt-get install chromium; .ci/run installs it): ", err)
	}
	r, srv := fixture(t)
	ctx0 := context.Background()
	v := inspect.New(r)
	before, err := v.Log(ctx0, "lumen", inspect.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	built := time.Now()
	longHistory(t, r, n)
	t.Logf("%d commits written in %v", n, time.Since(built).Round(time.Millisecond))
	page := func(cursor string) inspect.LogPage {
		p, err := v.LogPage(ctx0, "lumen", inspect.LogPageOptions{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cids := func(p inspect.LogPage) []string {
		var out []string
		for _, c := range p.Commits {
			out = append(out, c.CID.String())
		}
		return out
	}
	p1 := page("")
	p2 := page(p1.Next)
	p3 := page(p2.Next)
	deep, err := v.LogPage(ctx0, "lumen", inspect.LogPageOptions{Limit: len(before.Commits) + n - 150})
	if err != nil || deep.Next == "" {
		t.Fatal(err)
	}
	last := page(deep.Next)

	shots := screenshots(t)
	ctx := chromiumContext(t, ctx0, chromium, 1440, 300*time.Second)
	must := steps(t, ctx)
	shot := func(name string) chromedp.Action { return saveShot(filepath.Join(shots, name+".png"), false) }
	// goTo loads the page afresh at hash: from a blank page, so that it
	// is a whole load (a change of hash alone re-renders in place, and
	// waiting for a load that a same-document navigation never fires can
	// hang).
	goTo := func(hash string) chromedp.Action {
		return chromedp.Tasks{chromedp.Navigate("about:blank"), chromedp.Navigate(srv.URL + hash)}
	}
	rows := func(into *[]string) chromedp.Action {
		return chromedp.Evaluate(`[...document.querySelectorAll('#history tr.commit')].map(tr => tr.dataset.cid)`, into)
	}
	fits := func(step string, width int) {
		t.Helper()
		var sw, wide int
		must(step+": width", chromedp.Sleep(100*time.Millisecond), chromedp.Evaluate(`document.documentElement.scrollWidth`, &sw),
			chromedp.Evaluate(`[...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.scroll')).length`, &wide))
		if sw > width || wide > 0 {
			t.Errorf("%s at %d px: page %d px wide, %d elements past the window's edge", step, width, sw, wide)
		}
	}

	// The first screen (the history view: the agent's view also looks for
	// its tasks, a walk of the whole history when it has few), then older
	// twice.
	var got []string
	start := time.Now()
	must("first screen", chromedp.EmulateViewport(1440, 900), goTo("/#/a/lumen/history"), pollUntil(`!!document.querySelector("#history tr.commit")`), rows(&got))
	t.Logf("first screen of %d commits in %v (measured, not asserted)", n, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	must("first screen again", goTo("/#/a/lumen/history"), pollUntil(`!!document.querySelector("#history tr.commit")`))
	t.Logf("loaded again (the browser started) in %v (measured, not asserted)", time.Since(start).Round(time.Millisecond))
	must("first screen shot", shot("l1-100k-first-1440"))
	if !slices.Equal(got, cids(p1)) {
		t.Fatalf("first screen: %d rows, not the log's newest 200", len(got))
	}
	fits("first screen", 1440)
	for i, want := range [][]string{cids(p2), cids(p3)} {
		must(fmt.Sprintf("older %d", i+1), chromedp.Click(`#history-nav a.older`),
			pollUntil(fmt.Sprintf(`document.querySelector('#history tr.commit') && document.querySelector('#history tr.commit').dataset.cid === %q`, want[0])),
			rows(&got))
		if !slices.Equal(got, want) {
			t.Fatalf("older page %d: %d rows, not the log's", i+2, len(got))
		}
	}
	// The last page, from a cursor 99,850 commits down: no older.
	var older int
	must("last page", goTo("/#/a/lumen/history?cursor="+url.QueryEscape(deep.Next)), pollUntil(`!!document.querySelector("#history tr.commit")`), rows(&got),
		chromedp.Evaluate(`document.querySelectorAll('#history-nav a.older').length`, &older), shot("l2-100k-last-1440"))
	if !slices.Equal(got, cids(last)) || older != 0 || len(got) != 150 {
		t.Fatalf("last page: %d rows (want %d), %d older links", len(got), len(last.Commits), older)
	}
	// Search by text: the newest commit's message.
	var msgs []string
	must("search", goTo("/#/a/lumen/history?grep="+url.QueryEscape(fmt.Sprintf("bulk %d", n-1))),
		pollUntil(`document.querySelectorAll('#history a.msg').length === 1`),
		chromedp.Evaluate(`[...document.querySelectorAll('#history a.msg')].map(a => a.textContent)`, &msgs), shot("l3-100k-search-1440"))
	if len(msgs) != 1 || msgs[0] != fmt.Sprintf("bulk %d", n-1) {
		t.Fatalf("search: %q", msgs)
	}
	// Filter by key prefix: within the first page's walk of 5,000 commits,
	// the five that wrote under deep/, and a cursor on.
	must("filter by key", goTo("/#/a/lumen/history?prefix=deep%2F"), pollUntil(`document.querySelectorAll('#history a.msg').length === 5`),
		chromedp.Evaluate(`[...document.querySelectorAll('#history a.msg')].map(a => a.textContent)`, &msgs),
		chromedp.Evaluate(`document.querySelectorAll('#history-nav a.older').length`, &older), shot("l4-100k-prefix-1440"))
	if !slices.Equal(msgs, []string{"bulk 99999", "bulk 98999", "bulk 97999", "bulk 96999", "bulk 95999"}) || older == 0 {
		t.Fatalf("filter by deep/: %q, %d older links", msgs, older)
	}
	// Compare: two commits 149 apart with the same tree change nothing;
	// the newest and the 199th (picked in the list) differ by the deep/ key
	// the newest wrote.
	var keys []string
	must("compare", goTo("/#/a/lumen/compare?"+url.Values{"from": {cids(p1)[150]}, "to": {cids(p1)[1]}}.Encode()), chromedp.WaitVisible(`#compare-sides`),
		chromedp.Evaluate(`[...document.querySelectorAll('#changes .key')].map(k => k.textContent)`, &keys))
	if len(keys) != 0 {
		t.Fatalf("compare within one run of unchanged trees: %q", keys)
	}
	must("pick two", goTo("/#/a/lumen/history"), pollUntil(`!!document.querySelector("#history tr.commit")`),
		chromedp.Click(`#history tr.commit:nth-child(2) input.pick`), chromedp.Click(`#history tr.commit:nth-child(200) input.pick`),
		chromedp.Click(`#compare-picked`), chromedp.WaitVisible(`#compare-sides`), chromedp.Sleep(300*time.Millisecond),
		chromedp.Evaluate(`[...document.querySelectorAll('#changes .key')].map(k => k.textContent)`, &keys), shot("l5-100k-compare-1440"))
	if !slices.Equal(keys, []string{"deep/k099999.md"}) {
		t.Fatalf("compare the newest and the 199th: %q", keys)
	}
	// 390 px.
	for _, h := range []string{"/#/a/lumen/history", "/#/a/lumen/history?cursor=" + url.QueryEscape(deep.Next), "/#/a/lumen/history?prefix=deep%2F"} {
		must("390: "+h, chromedp.EmulateViewport(390, 844), goTo(h), pollUntil(`!!document.querySelector("#history tr.commit")`))
		fits(h, 390)
	}
	must("390 shot", goTo("/#/a/lumen/history"), pollUntil(`!!document.querySelector("#history tr.commit")`), shot("l6-100k-first-390"))
	t.Logf("screenshots in %s", shots)
}

// A task's neighbouring commits fold into one row for the task in the
// history, which opens to show them and closes again; j/k walk the rows
// shown; at 390 px it fits.
func TestTaskGroupsInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("Debian's chromium is needed (apt-get install chromium; .ci/run installs it): ", err)
	}
	r, srv := fixture(t)
	ctx0 := context.Background()
	edit := func(msg, key string, meta map[string]string) {
		v := objects.NewValue([]byte(msg + "\n"))
		if _, err := r.Edit(ctx0, repo.EditRequest{Agent: "lumen", Message: msg, Metadata: meta, Blocks: []objects.Block{v},
			Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, key, v.CID) }}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		edit(fmt.Sprintf("tidy step %d", i), fmt.Sprintf("tidy/%d.md", i), map[string]string{"task": "tidy", "attempt": "2"})
	}
	edit("by hand", "hand.md", nil)
	edit("notes one", "notes/1.md", map[string]string{"task": "notes"})
	edit("notes two", "notes/2.md", map[string]string{"task": "notes"})

	shots := screenshots(t)
	ctx := chromiumContext(t, ctx0, chromium, 1440, 90*time.Second)
	must := steps(t, ctx)
	shot := func(name string) chromedp.Action { return saveShot(filepath.Join(shots, name+".png"), false) }
	var groups, shown []string
	visible := chromedp.Evaluate(`[...document.querySelectorAll('#history tr.commit, #history tr.task-group')].filter(r => !r.hidden).slice(0, 4).map(r => r.dataset.task ? "task " + r.dataset.task : r.querySelector('a.msg').textContent)`, &shown)
	must("load", chromedp.EmulateViewport(1440, 900), chromedp.Navigate(srv.URL+"/#/a/lumen"), chromedp.WaitVisible(`#history tr.task-group`),
		chromedp.Evaluate(`[...document.querySelectorAll('#history tr.task-group')].map(r => r.dataset.task + ":" + r.querySelector('button.task-toggle').textContent)`, &groups),
		visible, shot("g1-task-groups-1440"))
	if !slices.Equal(groups[:2], []string{"notes:▸ 2 commits", "tidy@2:▸ 3 commits"}) {
		t.Fatalf("task groups: %q", groups)
	}
	if len(shown) < 3 || !slices.Equal(shown[:3], []string{"task notes", "by hand", "task tidy@2"}) {
		t.Fatalf("rows shown: %q", shown)
	}
	// Open tidy: its three commits show, newest first; close it again.
	must("open", chromedp.Click(`#history tr.task-group[data-task="tidy@2"] button.task-toggle`), visible, shot("g2-task-open-1440"))
	if !slices.Equal(shown, []string{"task notes", "by hand", "task tidy@2", "tidy step 2"}) {
		t.Fatalf("opened: %q", shown)
	}
	var open int
	var label string
	must("count open", chromedp.Evaluate(`[...document.querySelectorAll('#history tr.in-task')].filter(r => !r.hidden).length`, &open),
		chromedp.Text(`#history tr.task-group[data-task="tidy@2"] button.task-toggle`, &label))
	if open != 3 || label != "▾ 3 commits" {
		t.Fatalf("%d of tidy's commits shown, its button %q", open, label)
	}
	// j/k walk what is shown: the third row is the open group, the fourth
	// its newest commit; Enter opens that commit.
	var hash string
	must("keys", chromedp.Click(`main h1`), chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("j"),
		chromedp.KeyEvent("\r"), chromedp.WaitVisible(`#message`), chromedp.Evaluate(`location.hash`, &hash))
	if !strings.Contains(hash, "/c/") {
		t.Fatalf("j j j j Enter opened %q", hash)
	}
	must("back", chromedp.Navigate("about:blank"), chromedp.Navigate(srv.URL+"/#/a/lumen"), chromedp.WaitVisible(`#history tr.task-group`),
		chromedp.Click(`#history tr.task-group[data-task="tidy@2"] button.task-toggle`), chromedp.Click(`#history tr.task-group[data-task="tidy@2"] button.task-toggle`),
		chromedp.Evaluate(`[...document.querySelectorAll('#history tr.in-task')].filter(r => !r.hidden).length`, &open))
	if open != 0 {
		t.Fatalf("closed again, %d commits still shown", open)
	}
	// 390 px, a group open.
	var sw, wide int
	must("390", chromedp.EmulateViewport(390, 844), chromedp.Sleep(100*time.Millisecond),
		chromedp.Click(`#history tr.task-group[data-task="notes"] button.task-toggle`), chromedp.Sleep(100*time.Millisecond),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &sw),
		chromedp.Evaluate(`[...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.scroll')).length`, &wide),
		shot("g3-task-open-390"))
	if sw > 390 || wide > 0 {
		t.Fatalf("at 390 px: page %d px wide, %d elements past the edge", sw, wide)
	}
}
