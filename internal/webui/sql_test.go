package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/internal/webui"
	"github.com/chromedp/chromedp"
)

func sqlFixture(t *testing.T) (*inspecttest.SQLite, *httptest.Server) {
	s := inspecttest.NewSQLite(t)
	srv := httptest.NewServer(webui.Handler(inspect.New(s.R), webui.Options{Heartbeat: time.Second}))
	t.Cleanup(srv.Close)
	return s, srv
}

// The page's SQL API is the read model's: tables, pages of rows, a query
// at an old commit equal to sqlite3 on that version; refusals are 400s.
func TestSQLAPI(t *testing.T) {
	s, srv := sqlFixture(t)
	resp, body := get(t, srv.URL+"/api/sql/tables?agent=lumen&rev=task:seed&key=memory.db")
	var tables struct{ Tables []inspect.SQLTable }
	if err := json.Unmarshal(body, &tables); err != nil || resp.StatusCode != 200 || len(tables.Tables) != 8 || tables.Tables[0].Name != "facts" {
		t.Fatalf("tables: %d %v %s", resp.StatusCode, err, body)
	}
	resp, body = get(t, srv.URL+"/api/sql/rows?agent=lumen&rev=task:learn&key=memory.db&table=messages&offset=5&limit=3")
	var rows inspect.SQLResult
	if err := json.Unmarshal(body, &rows); err != nil || resp.StatusCode != 200 || len(rows.Rows) != 3 || !rows.Truncated || rows.Commit != s.Commits[1] {
		t.Fatalf("rows: %d %v %s", resp.StatusCode, err, body)
	}
	// Row 8 was deleted by the learn task: after 6 and 7 comes 9.
	if got := fmt.Sprintf("%d %d %d %s", rows.Rows[0][0].Int, rows.Rows[1][0].Int, rows.Rows[2][0].Int, rows.Rows[1][2].Text); got != "6 7 9 edited" {
		t.Fatalf("rows at task:learn: %s", got)
	}
	q := "SELECT subject, predicate, object FROM facts"
	resp, body = get(t, srv.URL+"/api/sql?agent=lumen&rev=task:seed&key=memory.db&query="+url.QueryEscape(q))
	if err := json.Unmarshal(body, &rows); err != nil || resp.StatusCode != 200 {
		t.Fatalf("sql: %d %v %s", resp.StatusCode, err, body)
	}
	want, err := exec.Command("sqlite3", "-readonly", s.Files[0], q).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, r := range rows.Rows {
		got.WriteString(r[0].Text + "|" + r[1].Text + "|" + r[2].Text + "\n")
	}
	if got.String() != string(want) {
		t.Fatalf("sql at task:seed: %q, sqlite3 %q", got.String(), want)
	}
	for u, want := range map[string]struct {
		code  int
		words string
	}{
		"/api/sql?agent=lumen&key=memory.db&query=" + url.QueryEscape("DROP TABLE facts"):      {400, "refused"},
		"/api/sql?agent=lumen&key=notes.md&query=SELECT+1":                                     {400, "not a SQLite database"},
		"/api/sql?agent=lumen&key=nope.db&query=SELECT+1":                                      {404, "does not exist"},
		"/api/sql/rows?agent=lumen&key=memory.db&table=messages&offset=x":                      {400, "offset"},
		"/api/sql/rows?agent=lumen&key=memory.db&table=messages&offset=-1":                     {400, "negative"},
		"/api/sql/rows?agent=lumen&key=memory.db&table=" + url.QueryEscape(`x"; DROP TABLE t`): {400, "no such table"},
		"/api/sql/tables?agent=lumen&key=notes.md":                                             {400, "not a SQLite database"},
	} {
		resp, body := get(t, srv.URL+u)
		if resp.StatusCode != want.code || !strings.Contains(string(body), want.words) {
			t.Errorf("%s: %d %s, want %d saying %q", u, resp.StatusCode, body, want.code, want.words)
		}
	}
}

// The table browser in a real headless Chromium: from memory.db's value
// view at an old commit to its tables, a table's rows, the next page.
func TestSQLBrowserInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("Debian's chromium is needed (apt-get install chromium; .ci/run installs it): ", err)
	}
	s, srv := sqlFixture(t)
	shots := screenshots(t)
	ctx := chromiumContext(t, context.Background(), chromium, 1200, 60*time.Second)
	shot := func(name string) chromedp.Action { return saveShot(filepath.Join(shots, "sql-"+name+".png"), true) }
	must := steps(t, ctx)
	var link, tables, cols, first, second, nextFirst, nulls, blobs string
	seed := s.Commits[0].String()
	must("value", chromedp.Navigate(srv.URL+"/#/a/lumen/v/"+seed+"/memory.db"), chromedp.WaitVisible(`#sql-link`), chromedp.Text(`#sql-link`, &link))
	if link != "SQLite: 8 tables" {
		t.Fatalf("value view's link %q", link)
	}
	must("tables", chromedp.Click(`#sql-link`), chromedp.WaitVisible(`#sql-tables tr.sql-table`),
		chromedp.Evaluate(`[...document.querySelectorAll('#sql-tables a.table-name')].map(a => a.textContent + (a.closest('tr').classList.contains('shadow') ? '*' : '')).join(' ')`, &tables), shot("tables"))
	if tables != "facts messages notes notes_config* notes_content* notes_data* notes_docsize* notes_idx*" {
		t.Fatalf("tables %q", tables)
	}
	must("rows", chromedp.Evaluate(`[...document.querySelectorAll('#sql-tables a.table-name')].find(a => a.textContent === 'messages').click()`, nil),
		chromedp.WaitVisible(`#sql-rows tr.sql-row`),
		chromedp.Evaluate(`[...document.querySelectorAll('#sql-rows th')].map(th => th.textContent).join(',')`, &cols),
		chromedp.Evaluate(`[...document.querySelectorAll('#sql-rows tr.sql-row')[0].children].slice(0, 3).map(td => td.textContent).join('|')`, &first),
		chromedp.Evaluate(`[...document.querySelectorAll('#sql-rows tr.sql-row')[7].children].slice(0, 3).map(td => td.textContent).join('|')`, &second),
		chromedp.Evaluate(`String(document.querySelectorAll('#sql-rows td.null').length)`, &nulls),
		chromedp.Evaluate(`String(document.querySelectorAll('#sql-rows td.blob').length)`, &blobs), shot("rows"))
	// At the seed commit row 7 is unedited and row 8 is there.
	if cols != "id,role,body,score,raw,at" || !strings.HasPrefix(first, "1|assistant|message 1 ") || !strings.HasPrefix(second, "8|tool|message 8 ") || nulls != "40" || blobs != "10" {
		t.Fatalf("rows: columns %q, first %q, eighth %q, %s NULLs, %s blobs", cols, first, second, nulls, blobs)
	}
	must("next page", chromedp.Click(`#rows-next`), chromedp.WaitVisible(`#rows-prev`),
		chromedp.Evaluate(`document.querySelector('#sql-rows tr.sql-row td').textContent`, &nextFirst), shot("next"))
	if nextFirst != "51" {
		t.Fatalf("next page starts at %q", nextFirst)
	}
}
