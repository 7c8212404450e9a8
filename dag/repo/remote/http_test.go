package remote_test

import (
	"bufio"
	"context"
	"io"
	"net"
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
	cookie := remote.CookieName(tcpAddr(t, srv))
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
		{"GET", "/a?b=c", map[string]string{"Cookie": cookie + "=" + ro}, 200, "read-only GET /a?b=c"},
		// The cookie is for reading in a browser: never for a write method.
		{"POST", "/mcp", map[string]string{"Cookie": cookie + "=" + rw}, 401, "a token is required"},
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
	if len(cs) != 1 || cs[0].Name != cookie || cs[0].Value != ro || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
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

// No redirect leaves the origin; the cookie is the port's, Path=/,
// HttpOnly, SameSite=Strict; a browser's request must name this server in
// Host and come from its origin (DNS rebinding).
func TestHTTPOriginChecks(t *testing.T) {
	const ro = "ro-token-abcdefghijkl"
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	_, srv, _ := startServed(t, remote.Options{Listen: "127.0.0.1:0", ReadTokens: []string{ro}, HTTP: ok, HTTPHosts: []string{"brain.lan"}})
	addr := tcpAddr(t, srv)
	_, port, _ := net.SplitHostPort(addr)
	cookie := remote.CookieName(addr)
	if cookie != "agentstate_token_"+port {
		t.Fatalf("cookie name %q does not carry the port", cookie)
	}
	// A raw request: the target and Host exactly as a hostile page or
	// client would send them.
	raw := func(target string, hdr ...string) (int, http.Header) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		req := "GET " + target + " HTTP/1.1\r\n"
		host := addr
		for i := 0; i < len(hdr); i += 2 {
			if hdr[i] == "Host" {
				host = hdr[i+1]
				continue
			}
			req += hdr[i] + ": " + hdr[i+1] + "\r\n"
		}
		req += "Host: " + host + "\r\nConnection: close\r\n\r\n"
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	for _, target := range []string{"//evil.example/?token=" + ro, "/\\evil.example/?token=" + ro, "///evil.example/x?token=" + ro + "&a=b"} {
		code, h := raw(target)
		loc := h.Get("Location")
		if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") {
			t.Errorf("GET %s: %d, Location %q leaves the origin", target, code, loc)
		}
		if u, err := url.Parse(loc); err != nil || u.Host != "" {
			t.Errorf("GET %s: Location %q names a host", target, loc)
		}
	}
	code, h := raw("/page?token=" + ro)
	cs := (&http.Response{Header: h}).Cookies()
	if code != http.StatusSeeOther || len(cs) != 1 || cs[0].Name != cookie || cs[0].Path != "/" || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("?token=: %d, cookies %+v", code, cs)
	}
	for _, tc := range []struct {
		what string
		hdr  []string
		code int
	}{
		{"the port's cookie", []string{"Cookie", cookie + "=" + ro}, 200},
		{"another port's cookie", []string{"Cookie", "agentstate_token=" + ro}, 401},
		{"the cookie by localhost", []string{"Cookie", cookie + "=" + ro, "Host", "localhost:" + port}, 200},
		{"the cookie by an allowed name", []string{"Cookie", cookie + "=" + ro, "Host", "brain.lan:" + port}, 200},
		{"the cookie by a rebound name", []string{"Cookie", cookie + "=" + ro, "Host", "evil.example:" + port}, 403},
		{"?token= by a rebound name", []string{"Host", "evil.example:" + port}, 403},
		{"bearer from another origin", []string{"Authorization", "Bearer " + ro, "Origin", "http://evil.example"}, 403},
		{"bearer from a rebound origin", []string{"Authorization", "Bearer " + ro, "Origin", "http://evil.example:" + port, "Host", "evil.example:" + port}, 403},
		{"bearer from its own origin", []string{"Authorization", "Bearer " + ro, "Origin", "http://" + addr}, 200},
		{"bearer, no browser", []string{"Authorization", "Bearer " + ro, "Host", "agents.example:" + port}, 200},
	} {
		target := "/api/x"
		if tc.what == "?token= by a rebound name" {
			target = "/api/x?token=" + ro
		}
		if code, _ := raw(target, tc.hdr...); code != tc.code {
			t.Errorf("%s: %d, want %d", tc.what, code, tc.code)
		}
	}
}
