package remote_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/remote"
)

// The TCP listener serves HTTP beside the API, behind the same tokens.
func TestHTTPBesideTheAPI(t *testing.T) {
	const rw, ro = "rw-token-abcdefghijkl", "ro-token-abcdefghijkl"
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if remote.ReadOnlyRequest(r) {
			io.WriteString(w, "read-only "+r.Method+" "+r.URL.RequestURI())
			return
		}
		io.WriteString(w, "read-write "+r.Method+" "+r.URL.RequestURI())
	})
	local, srv, _ := startServed(t, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{rw}, ReadTokens: []string{ro}, HTTP: echo})
	putKey(t, local, "lumen", "a", "1")
	base := "http://" + tcpAddr(t, srv)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, hdr map[string]string) (int, string, *http.Response) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp
	}
	for _, tc := range []struct {
		method, path string
		hdr          map[string]string
		code         int
		body         string
	}{
		{"GET", "/x", nil, 401, "a token is required"},
		{"GET", "/x", map[string]string{"Authorization": "Bearer wrong-token-0123456789"}, 401, "wrong token"},
		{"GET", "/x", map[string]string{"Authorization": "Basic " + rw}, 401, "Bearer"},
		{"POST", "/mcp", map[string]string{"Authorization": "Bearer " + rw}, 200, "read-write POST /mcp"},
		{"POST", "/mcp", map[string]string{"Authorization": "bearer " + ro}, 200, "read-only POST /mcp"},
		{"GET", "/a?b=c", map[string]string{"Cookie": remote.CookieName + "=" + ro}, 200, "read-only GET /a?b=c"},
		// The cookie is for reading in a browser: never for a write method.
		{"POST", "/mcp", map[string]string{"Cookie": remote.CookieName + "=" + rw}, 401, "a token is required"},
		{"POST", "/mcp?token=" + rw, nil, 401, "a token is required"},
	} {
		code, body, _ := do(tc.method, tc.path, tc.hdr)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s %v: %d %q, want %d %q", tc.method, tc.path, tc.hdr, code, body, tc.code, tc.body)
		}
	}
	// ?token= sets the cookie and sends the browser on without the token.
	code, _, resp := do("GET", "/ui/?token="+url.QueryEscape(ro)+"&x=1", nil)
	if code != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/?x=1" {
		t.Fatalf("?token=: %d, Location %q", code, resp.Header.Get("Location"))
	}
	cs := resp.Cookies()
	if len(cs) != 1 || cs[0].Name != remote.CookieName || cs[0].Value != ro || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", cs)
	}
	if code, _, _ := do("GET", "/?token=wrong-token-0123456789", nil); code != 401 {
		t.Fatalf("a wrong ?token=: %d", code)
	}
	// The API on the same port, for both kinds of token.
	for _, tok := range []string{rw, ro} {
		c, err := remote.Dial(context.Background(), tcpAddr(t, srv), remote.DialOptions{Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := c.HeadRecord(context.Background(), "lumen"); err != nil || !ok {
			t.Fatalf("the API beside HTTP: %v", err)
		}
		c.Close()
	}
}
