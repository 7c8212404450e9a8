package webui_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/webui"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/runtime"
	"github.com/chromedp/chromedp"
)

const htmlMessage = `<img src=x onerror="document.title='pwned'">`

// fixture: a runtime lands tasks (two at once: a merge), then a commit whose
// message is HTML, a value with a script, a big binary value, and an undo.
func fixture(t *testing.T) (*repo.Repo, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	task := func(id, key, val string, hold func()) {
		if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: id, Model: "model-x"}, func(ctx context.Context, tx *runtime.Tx) error {
			if err := tx.Put(ctx, key, []byte(val)); err != nil {
				return err
			}
			if hold != nil {
				hold()
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
	}
	task("base", "notes.md", "one\ntwo\nthree\n", nil)
	in, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		task("slow", "skills/x.md", "<script>document.title='pwned'</script>\n", func() { close(in); <-release })
	}()
	<-in
	task("fast", "notes.md", "one\nTWO\nthree\n", nil)
	close(release)
	wg.Wait()
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	edit := func(msg, key string, val []byte) {
		v, blocks := objects.NewFileValue(val)
		if _, err := r.Edit(ctx, repo.EditRequest{Agent: "lumen", Message: msg, Blocks: blocks,
			Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, key, v) }}); err != nil {
			t.Fatal(err)
		}
	}
	edit(htmlMessage, "html.md", []byte("<b>bold?</b>\n"))
	edit("a big binary", "big.bin", append([]byte{0}, make([]byte, 300<<10)...))
	edit("to be undone", "tmp.md", []byte("temporary\n"))
	if _, err := r.Undo(ctx, "lumen"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(webui.Handler(inspect.New(r), webui.Options{Heartbeat: time.Second}))
	t.Cleanup(srv.Close)
	return r, srv
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestAPI(t *testing.T) {
	_, srv := fixture(t)
	resp, body := get(t, srv.URL+"/")
	if resp.StatusCode != 200 || !strings.Contains(string(body), "<script src=\"/app.js\"") {
		t.Fatalf("page: %d", resp.StatusCode)
	}
	for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy", "X-Frame-Options"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("no %s header", h)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
	resp, body = get(t, srv.URL+"/api/log?agent=lumen")
	var log struct {
		Head    string           `json:"head"`
		Commits []inspect.Commit `json:"commits"`
	}
	if err := json.Unmarshal(body, &log); err != nil || resp.StatusCode != 200 || len(log.Commits) < 5 {
		t.Fatalf("log: %d %v %s", resp.StatusCode, err, body)
	}
	merges := 0
	for _, c := range log.Commits {
		if len(c.Parents) == 2 {
			merges++
		}
	}
	if merges != 1 {
		t.Fatalf("%d merges in the log", merges)
	}
	for url, code := range map[string]int{
		"/api/log?agent=nobody":                               404,
		"/api/commit?agent=lumen&rev=bafyreiaaaaaaaaaaaaaaaa": 404,
		"/api/value?agent=lumen&rev=HEAD&key=nope":            404,
		"/api/value?agent=lumen&rev=HEAD&key=../x":            400,
		"/api/log?agent=../x":                                 400,
		"/api/commit?agent=lumen&rev=HEAD~~x":                 400,
		"/nope":                                               404,
	} {
		resp, body := get(t, srv.URL+url)
		if resp.StatusCode != code {
			t.Errorf("%s: %d %s, want %d", url, resp.StatusCode, body, code)
		}
	}
	// Tasks through the API: the history grouped by task, paged, and one
	// task's whole change.
	resp, body = get(t, srv.URL+"/api/tasks?agent=lumen&limit=2")
	var tl inspect.TaskLog
	if err := json.Unmarshal(body, &tl); err != nil || resp.StatusCode != 200 || len(tl.Tasks) != 2 || !tl.More ||
		tl.Tasks[0].ID != "slow" || !tl.Tasks[0].Merge || tl.Tasks[0].Receipt != inspect.ReceiptVerified || tl.Tasks[1].ID != "fast" {
		t.Fatalf("tasks: %d %v %s", resp.StatusCode, err, body)
	}
	resp, body = get(t, srv.URL+"/api/tasks?agent=lumen&skip=2")
	if err := json.Unmarshal(body, &tl); err != nil || len(tl.Tasks) != 1 || tl.Tasks[0].ID != "base" || tl.More {
		t.Fatalf("tasks from the third: %s", body)
	}
	resp, body = get(t, srv.URL+"/api/task?agent=lumen&id=fast")
	var td struct {
		Task    inspect.Task
		Receipt struct{ Verified *bool }
		Commits []inspect.Commit
		Changes []inspect.Change
	}
	if err := json.Unmarshal(body, &td); err != nil || resp.StatusCode != 200 || len(td.Changes) != 1 || !strings.Contains(td.Changes[0].Patch, "+TWO") ||
		td.Receipt.Verified == nil || !*td.Receipt.Verified || len(td.Commits) != 1 || td.Task.ID != "fast" {
		t.Fatalf("task fast: %d %v %s", resp.StatusCode, err, body)
	}
	for url, code := range map[string]int{"/api/task?agent=lumen&id=fsat": 404, "/api/task?agent=lumen": 400, "/api/tasks?agent=nobody": 404, "/api/commit?agent=lumen&rev=task:nope": 404} {
		if resp, body := get(t, srv.URL+url); resp.StatusCode != code {
			t.Errorf("%s: %d %s, want %d", url, resp.StatusCode, body, code)
		}
	}
	// A big value is never inlined; raw is a download, never a page.
	_, body = get(t, srv.URL+"/api/value?agent=lumen&rev=HEAD&key=big.bin")
	if strings.Contains(string(body), `"text"`) || !strings.Contains(string(body), "omitted") {
		t.Fatalf("big value preview: %.200s", body)
	}
	resp, body = get(t, srv.URL+"/api/raw?agent=lumen&rev=HEAD&key=skills/x.md")
	if resp.Header.Get("Content-Type") != "application/octet-stream" || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(string(body), "<script>") {
		t.Fatalf("raw: %v %q", resp.Header, body)
	}
}

func screenshots(t *testing.T) string {
	if d := os.Getenv("AGENTSTATE_UI_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// The page in a real headless Chromium, served by a store's server behind a
// token: agents, the history graph with its
// merge, HEAD and undone marks, a commit's line diff, a value, HTML shown as
// text and never run, an unknown commit's error, a live update.
func TestPageInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("Debian's chromium is needed (apt-get install chromium; .ci/run installs it): ", err)
	}
	r, _ := fixture(t)
	// The page as a served store serves it: on its TCP address, behind a
	// read-only token that the first visit turns into a cookie.
	const token = "page-token-0123456789abcdef"
	served, err := remote.Start(r, remote.Options{Listen: "127.0.0.1:0", ReadTokens: []string{token},
		HTTP: webui.Handler(inspect.New(r), webui.Options{Heartbeat: time.Second})})
	if err != nil {
		t.Fatal(err)
	}
	defer served.Close()
	base := "http://" + served.TCPAddr()
	shots := screenshots(t)
	ctx := chromiumContext(t, context.Background(), chromium, 1200, 90*time.Second)
	n := 0
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			n++
			return saveShot(filepath.Join(shots, fmt.Sprintf("%d-%s.png", n, name)), true).Do(ctx)
		})
	}
	var title, msg, diffDel, diffAdd, value, errText string
	var merges, heads, undone, rows, rowsAfter, injected int
	must := steps(t, ctx)
	must("agents", chromedp.Navigate(base+"/?token="+token), chromedp.WaitVisible(`#main`), chromedp.Navigate(base+"/#/"), chromedp.WaitVisible(`#agents a.agent`), shot("agents"))
	must("history", chromedp.Click(`#agents a.agent`), chromedp.WaitVisible(historyRow),
		chromedp.Evaluate(`document.querySelectorAll('#history tr.commit[data-parents="2"]').length`, &merges),
		chromedp.Evaluate(`document.querySelectorAll('#history .head').length`, &heads),
		chromedp.Evaluate(`document.querySelectorAll('#oplog tr.undone-op').length`, &undone),
		chromedp.Evaluate(`document.querySelectorAll('#history tr.commit').length`, &rows), shot("history"))
	if merges != 1 || heads != 1 || undone != 1 {
		t.Fatalf("graph: %d merges, %d HEAD marks; %d undone operations marked", merges, heads, undone)
	}
	// The history grouped by task: one row per landed task, the merge
	// marked; from the slow task's row to its view: its commits, its
	// receipt and its whole change (its own, not the other side's), HTML
	// in it shown as text.
	var taskNames, taskName, receiptState, changed, patch string
	var taskCommits int
	must("tasks", chromedp.WaitVisible(`#tasks tr.task-row`),
		chromedp.Evaluate(`[...document.querySelectorAll('#tasks tr.task-row')].map(tr => tr.dataset.task + (tr.querySelector('.merge') ? '(merge)' : '')).join(",")`, &taskNames))
	if taskNames != "slow(merge),fast,base" {
		t.Fatalf("tasks: %q", taskNames)
	}
	must("task", chromedp.Evaluate(`document.querySelector('#tasks tr[data-task="slow"] a.task').click()`, nil),
		chromedp.WaitVisible(`#task-commits tr.task-commit`),
		chromedp.Text(`#task-name`, &taskName), chromedp.Text(`#task .receipt-state`, &receiptState),
		chromedp.Evaluate(`document.querySelectorAll('#task-commits tr.task-commit').length`, &taskCommits),
		chromedp.Evaluate(`[...document.querySelectorAll('#changes .key')].map(k => k.textContent).join(",")`, &changed),
		chromedp.Text(`#changes .diff .add`, &patch), chromedp.Title(&title),
		chromedp.Evaluate(`document.querySelectorAll('main img, main script').length`, &injected), shot("task"))
	if taskName != "slow" || receiptState != "verified" || taskCommits != 2 || changed != "skills/x.md" ||
		patch != "+<script>document.title='pwned'</script>" || title != "agentstate" || injected != 0 {
		t.Fatalf("task view: %q, receipt %q, %d commits, changed %q, patch %q, title %q, %d injected", taskName, receiptState, taskCommits, changed, patch, title, injected)
	}
	must("back to history", chromedp.Navigate(base+"/#/a/lumen"), chromedp.WaitVisible(historyRow))
	// From the graph to the fast task's commit (notes.md changed), its diff.
	must("commit", chromedp.Evaluate(`[...document.querySelectorAll('#history tr.commit')].find(tr => tr.textContent.includes('task=fast')).querySelector('a.msg').click()`, nil),
		chromedp.WaitVisible(`#changes .diff`),
		chromedp.Text(`#changes .diff .del`, &diffDel), chromedp.Text(`#changes .diff .add`, &diffAdd), shot("commit-diff"))
	if !strings.Contains(diffDel, "-two") || !strings.Contains(diffAdd, "+TWO") {
		t.Fatalf("diff lines %q %q", diffDel, diffAdd)
	}
	must("value", chromedp.Click(`#changes a.key`), chromedp.WaitVisible(`#value`), chromedp.Text(`#value`, &value), shot("value"))
	if value != "one\nTWO\nthree\n" && strings.TrimSpace(value) != "one\nTWO\nthree" {
		t.Fatalf("value %q", value)
	}
	// From the value to its blame: each line's task, through the page's API.
	var blameTasks, blameText string
	must("blame", chromedp.Click(`#blame-link`), chromedp.WaitVisible(`#blame tr.line`),
		chromedp.Evaluate(`[...document.querySelectorAll('#blame td.task')].map(td => td.textContent).join(",")`, &blameTasks),
		chromedp.Evaluate(`[...document.querySelectorAll('#blame td.text')].map(td => td.textContent).join(",")`, &blameText), shot("blame"))
	if blameTasks != "base,fast,base" || blameText != "one,TWO,three" {
		t.Fatalf("blame: tasks %q, lines %q", blameTasks, blameText)
	}
	must("blame of html", chromedp.Navigate(base+"/#/a/lumen/b/HEAD/skills%2Fx.md"), chromedp.WaitVisible(`#blame tr.line`),
		chromedp.Sleep(300*time.Millisecond), chromedp.Title(&title), chromedp.Text(`#blame td.text`, &blameText),
		chromedp.Evaluate(`document.querySelectorAll('main img, main script').length`, &injected), shot("blame-html-as-text"))
	if title != "agentstate" || injected != 0 || blameText != "<script>document.title='pwned'</script>" {
		t.Fatalf("blame of HTML: title %q, %d injected elements, text %q", title, injected, blameText)
	}
	// HTML in a message and a value is text; nothing of it runs.
	must("html message", chromedp.Navigate(base+"/#/a/lumen"), chromedp.WaitVisible(historyRow),
		chromedp.Evaluate(`[...document.querySelectorAll('#history a.msg')].find(a => a.textContent.startsWith('<img')).click()`, nil),
		chromedp.WaitVisible(`#message`), chromedp.Text(`#message`, &msg),
		chromedp.Navigate(base+"/#/a/lumen/v/HEAD/skills%2Fx.md"), chromedp.WaitVisible(`#value`),
		chromedp.Sleep(300*time.Millisecond), chromedp.Title(&title),
		chromedp.Evaluate(`document.querySelectorAll('main img, main script').length`, &injected), shot("html-as-text"))
	if strings.TrimSpace(msg) != htmlMessage || title != "agentstate" || injected != 0 {
		t.Fatalf("HTML ran or was not shown as text: message %q, title %q, %d injected elements", msg, title, injected)
	}
	must("unknown commit", chromedp.Navigate(base+"/#/a/lumen/c/bafyreiaaaaaaaaaaaaaaaaaaa"), chromedp.WaitVisible(`#error`),
		chromedp.Text(`#error`, &errText), shot("unknown-commit"))
	if !strings.Contains(errText, "unknown revision") {
		t.Fatalf("error shown: %q", errText)
	}
	// Live: a commit lands while the page is open; it appears without a reload.
	must("live", chromedp.Navigate(base+"/#/a/lumen"), chromedp.WaitVisible(historyRow), chromedp.Sleep(500*time.Millisecond))
	v := objects.NewValue([]byte("landed live\n"))
	if _, err := r.Edit(context.Background(), repo.EditRequest{Agent: "lumen", Message: "landed while watching", Blocks: []objects.Block{v},
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, "live.md", v.CID) }}); err != nil {
		t.Fatal(err)
	}
	must("live update", chromedp.Poll(`[...document.querySelectorAll('#history a.msg')].some(a => a.textContent === 'landed while watching')`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate(`document.querySelectorAll('#history tr.commit').length`, &rowsAfter), shot("live-update"))
	if rowsAfter != rows+1 {
		t.Fatalf("rows %d -> %d after a commit landed", rows, rowsAfter)
	}
	t.Logf("screenshots in %s", shots)
}

// historyRow is the first row the history shows: a commit, or the row of a
// task whose commits are folded under it (hidden until it is opened).
const historyRow = `#history tr.commit:not([hidden]), #history tr.task-group`

// pollUntil waits until the JavaScript expression expr is true, evaluating
// it every 50 ms in whatever document the tab holds then: unlike
// chromedp.Poll, an evaluation that lands while a navigation replaces the
// document ("Cannot find context with specified id") is tried again, not
// an error. It gives up after a minute, with the last error.
func pollUntil(expr string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		deadline := time.Now().Add(time.Minute)
		for {
			var ok bool
			err := chromedp.Evaluate(expr, &ok).Do(ctx)
			if err == nil && ok {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("waiting for %s: %v (last error)", expr, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}
