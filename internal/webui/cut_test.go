package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/webui"
	"github.com/chromedp/chromedp"
)

// routes are every API route over a Cut store with what each must answer.
func cutRoutes(c *inspecttest.Cut) map[string]int {
	a, fork, late, empty := inspecttest.A, inspecttest.Fork, inspecttest.Late, inspecttest.Empty
	gone := c.Steps[3].String()
	routes := map[string]int{
		"/":                   200,
		"/app.js":             200,
		"/app.css":            200,
		"/api/agents":         200,
		"/api/log?agent=" + a: 200,
		"/api/log?agent=" + a + "&path=memory.md":              200,
		"/api/log?agent=" + a + "&rev=keep-me":                 200,
		"/api/log?agent=" + fork:                               200,
		"/api/log?agent=" + late:                               200,
		"/api/commit?agent=" + a + "&rev=HEAD":                 200,
		"/api/commit?agent=" + a + "&rev=HEAD~1":               200,
		"/api/commit?agent=" + a + "&rev=keep-me":              200,
		"/api/commit?agent=" + late + "&rev=HEAD":              200,
		"/api/commit?agent=" + fork + "&rev=HEAD~2":            200,
		"/api/diff?agent=" + a + "&from=keep-me&to=HEAD":       200,
		"/api/value?agent=" + a + "&rev=keep-me&key=memory.md": 200,
		"/api/raw?agent=" + a + "&rev=HEAD~1&key=memory.md":    200,
		"/api/keys?agent=" + a + "&rev=keep-me":                200,
		"/api/oplog?agent=" + a:                                200,
		"/api/receipts?agent=" + a:                             200,
		"/api/snapshots?agent=" + a:                            200,
		"/api/snapshots?agent=" + empty:                        200,
		// Past the cut: not found.
		"/api/log?agent=" + a + "&rev=HEAD~2":                     404,
		"/api/commit?agent=" + a + "&rev=HEAD~5":                  404,
		"/api/commit?agent=" + a + "&rev=" + gone:                 404,
		"/api/diff?agent=" + a + "&from=HEAD~3&to=HEAD":           404,
		"/api/value?agent=" + a + "&rev=HEAD~2&key=memory.md":     404,
		"/api/raw?agent=" + a + "&rev=" + gone + "&key=memory.md": 404,
		"/api/keys?agent=" + a + "&rev=HEAD~4":                    404,
		// An agent with no commits: not found.
		"/api/log?agent=" + empty:                       404,
		"/api/commit?agent=" + empty + "&rev=HEAD":      404,
		"/api/diff?agent=" + empty + "&from=HEAD":       404,
		"/api/value?agent=" + empty + "&rev=HEAD&key=a": 404,
		"/api/raw?agent=" + empty + "&rev=HEAD&key=a":   404,
		"/api/keys?agent=" + empty:                      404,
		"/api/oplog?agent=" + empty:                     404,
		"/api/receipts?agent=" + empty:                  404,
		// What a client sends wrong: bad request.
		"/api/log":                                        400,
		"/api/log?agent=" + a + "&path=../x":              400,
		"/api/log?agent=" + a + "&rev=HEAD~~x":            400,
		"/api/commit?agent=" + a + "&rev=HEAD%5E%5E~x":    400,
		"/api/diff?agent=" + a + "&from=%00":              400,
		"/api/value?agent=" + a + "&rev=HEAD&key=":        400,
		"/api/value?agent=" + a + "&rev=HEAD&key=a//b":    400,
		"/api/raw?agent=" + a + "&rev=HEAD&key=/x":        400,
		"/api/keys?agent=..":                              400,
		"/api/oplog?agent=a%2Fb":                          400,
		"/api/receipts?agent=" + strings.Repeat("x", 300): 400,
		"/api/snapshots?agent=%20":                        400,
		"/api/oplog?agent=" + a + "&limit=-5":             200,
		"/api/log?agent=" + a + "&limit=x":                200,
		"/api/nothing":                                    404,
		"/api/log?agent=" + a + "&cursor=eyJ9":            400,
		"/api/log?agent=" + a + "&prefix=mem&limit=1":     200,
		"/api/log?agent=" + a + "&grep=more":              200,
		"/api/oplog?agent=" + a + "&before=3":             200,
		"/api/receipts?agent=" + a + "&from=1&limit=1":    200,
		"/favicon.svg":                                    200,
	}
	return routes
}

// Every route over a history a forget cut, a fork that still reaches the
// cut commits, a fork made on the cut history and an agent with no commits:
// the codes a client can act on, never a 500; the log marks the cut where
// 'agentstate log' prints it.
func TestCutHistory(t *testing.T) {
	c := inspecttest.NewCut(t)
	srv := httptest.NewServer(webui.Handler(inspect.New(c.R), webui.Options{Heartbeat: time.Second}))
	defer srv.Close()
	for route, want := range cutRoutes(c) {
		resp, body := get(t, srv.URL+route)
		if resp.StatusCode != want {
			t.Errorf("%s: %d %s, want %d", route, resp.StatusCode, body, want)
		}
		if want >= 400 && strings.HasPrefix(route, "/api/") && resp.Header.Get("Content-Type") == "application/json" {
			var e struct{ Error string }
			if json.Unmarshal(body, &e) != nil || e.Error == "" {
				t.Errorf("%s: error answer %s", route, body)
			}
		}
	}
	_, body := get(t, srv.URL+"/api/log?agent="+inspecttest.A)
	var log struct {
		Head      string           `json:"head"`
		Commits   []inspect.Commit `json:"commits"`
		Forgotten *inspect.Forgotten
	}
	if err := json.Unmarshal(body, &log); err != nil {
		t.Fatal(err)
	}
	if len(log.Commits) != 3 || log.Commits[0].Cut != nil || len(log.Commits[1].Cut) != 1 || log.Commits[1].Cut[0] != c.Steps[3] ||
		len(log.Commits[2].Cut) != 1 || log.Forgotten == nil || log.Forgotten.Policy != "--keep-last 2" || log.Head != c.Steps[5].String() {
		t.Fatalf("log of the cut history: %s", body)
	}
	// A page at a time, one commit each, the same log: the cuts marked on
	// the same commits and the island kept past the cut reached in turn.
	for _, agent := range []string{inspecttest.A, inspecttest.Fork, inspecttest.Late} {
		_, body := get(t, srv.URL+"/api/log?agent="+agent)
		var whole logAnswer
		if err := json.Unmarshal(body, &whole); err != nil {
			t.Fatal(err)
		}
		var paged []inspect.Commit
		for cursor, pages := "", 0; ; pages++ {
			resp, body := get(t, srv.URL+"/api/log?limit=1&agent="+agent+"&cursor="+cursor)
			var p logAnswer
			if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != 200 || pages > len(whole.Commits) {
				t.Fatalf("%s, page %d: %d %s", agent, pages, resp.StatusCode, body)
			}
			paged = append(paged, p.Commits...)
			if cursor = p.Next; cursor == "" {
				break
			}
		}
		a, _ := json.Marshal(paged)
		b, _ := json.Marshal(whole.Commits)
		if string(a) != string(b) {
			t.Errorf("%s paged one at a time:\n%s\nthe log:\n%s", agent, a, b)
		}
	}
	_, body = get(t, srv.URL+"/api/commit?agent="+inspecttest.A+"&rev=HEAD~1")
	if !strings.Contains(string(body), `"parentGone":true`) || !strings.Contains(string(body), `"cut":["`+c.Steps[3].String()) {
		t.Fatalf("commit whose parent is gone: %s", body)
	}
	_, body = get(t, srv.URL+"/api/commit?agent="+inspecttest.A+"&rev=HEAD~5")
	if !strings.Contains(string(body), "forget cut") {
		t.Fatalf("past the cut: %s", body)
	}
}

// While forgets and collections run beside it, no answer is a 500.
func TestMidForget(t *testing.T) {
	c := inspecttest.NewCut(t)
	v := inspect.New(c.R)
	srv := httptest.NewServer(webui.Handler(v, webui.Options{Heartbeat: time.Second}))
	defer srv.Close()
	ctx := context.Background()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := range 12 {
			if _, err := v.Put(ctx, inspecttest.A, "memory.md", fmt.Appendf(nil, "more %d\n", i), inspect.WriteOptions{Message: fmt.Sprint("more ", i)}); err != nil {
				t.Error(err)
				return
			}
			if _, err := c.R.Forget(ctx, inspecttest.A, repo.Policy{Last: 2}, false); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	routes := cutRoutes(c)
	logs := 0
	for pass := 0; ; pass++ {
		select {
		case <-done:
			if pass > 0 {
				wg.Wait()
				if logs == 0 {
					t.Fatal("no log answered while the forgets ran")
				}
				return
			}
		default:
		}
		for route := range routes {
			resp, body := get(t, srv.URL+route)
			if resp.StatusCode >= 500 {
				t.Errorf("%s during a forget: %d %s", route, resp.StatusCode, body)
			}
			if route == "/api/log?agent="+inspecttest.A {
				if resp.StatusCode != 200 {
					t.Errorf("log during a forget: %d %s", resp.StatusCode, body)
				}
				logs++
			}
		}
	}
}

// The page over the cut history, in a real headless Chromium: the cut rows
// where 'agentstate log' prints them, none on the fork that still reaches
// the cut commits, the commit whose parent is gone, a revision past the cut
// and an agent with no commits as errors.
func TestCutPageInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("Debian's chromium is needed (apt-get install chromium; .ci/run installs it): ", err)
	}
	c := inspecttest.NewCut(t)
	srv := httptest.NewServer(webui.Handler(inspect.New(c.R), webui.Options{Heartbeat: time.Second}))
	defer srv.Close()
	ctx := chromiumContext(t, context.Background(), chromium, 1200, 90*time.Second)
	must := steps(t, ctx)
	// at waits for the page to show agent's history (a hash change
	// re-renders the page in place).
	at := func(agent string) chromedp.Action {
		return chromedp.Poll(fmt.Sprintf(`(document.querySelector('main h1') || {}).textContent === %q && !!document.querySelector('#history')`, agent),
			nil, chromedp.WithPollingTimeout(10*time.Second))
	}
	var commits, cuts int
	var cutText, afterCut, gone, errText string
	var png []byte
	must("cut history", chromedp.Navigate(srv.URL+"/#/a/"+inspecttest.A), at(inspecttest.A),
		chromedp.Evaluate(`document.querySelectorAll('#history tr.commit').length`, &commits),
		chromedp.Evaluate(`document.querySelectorAll('#history tr.cut').length`, &cuts),
		chromedp.Text(`#history tr.cut`, &cutText),
		chromedp.Evaluate(`document.querySelector('#history tr.cut').previousElementSibling.dataset.cid`, &afterCut),
		chromedp.FullScreenshot(&png, 100))
	if commits != 3 || cuts != 2 || !strings.Contains(cutText, "history cut here by forget at") || !strings.Contains(cutText, "--keep-last 2") ||
		afterCut != c.Steps[4].String() {
		t.Fatalf("cut history: %d commits, %d cut rows, %q below %s", commits, cuts, cutText, afterCut)
	}
	if err := os.WriteFile(filepath.Join(screenshots(t), "cut-history.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	must("fork", chromedp.Navigate(srv.URL+"/#/a/"+inspecttest.Fork), at(inspecttest.Fork),
		chromedp.Evaluate(`document.querySelectorAll('#history tr.commit').length`, &commits),
		chromedp.Evaluate(`document.querySelectorAll('#history tr.cut').length`, &cuts))
	if commits != 3 || cuts != 0 {
		t.Fatalf("fork reaching the cut commits: %d commits, %d cut rows", commits, cuts)
	}
	must("late fork", chromedp.Navigate(srv.URL+"/#/a/"+inspecttest.Late), at(inspecttest.Late),
		chromedp.Text(`#history tr.cut`, &cutText))
	if strings.TrimSpace(cutText) != "~~ history cut here by forget ~~" {
		t.Fatalf("late fork's cut row %q", cutText)
	}
	must("parent gone", chromedp.Navigate(srv.URL+"/#/a/"+inspecttest.A+"/c/HEAD~1"), chromedp.WaitVisible(`#parent-gone`),
		chromedp.Text(`#parent-gone`, &gone))
	if !strings.Contains(gone, "forgotten") {
		t.Fatalf("commit whose parent is gone: %q", gone)
	}
	for rev, want := range map[string]string{"/#/a/" + inspecttest.A + "/c/HEAD~5": "forget cut", "/#/a/" + inspecttest.Empty: "no such agent"} {
		if err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+rev),
			chromedp.Poll(fmt.Sprintf(`(document.querySelector('#error') || {textContent: ""}).textContent.includes(%q)`, want), nil, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			chromedp.Run(ctx, chromedp.Text(`main`, &errText))
			t.Fatalf("%s: %v; page shows %q, want an error with %q", rev, err, errText, want)
		}
	}
}
