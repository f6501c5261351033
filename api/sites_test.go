package api_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// onePixelPNG is a whole PNG image of one pixel.
var onePixelPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")

// siteGet fetches path from the API's host, with host as the Host header when it is not "".
func (b *bundle) siteGet(t *testing.T, host, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.client.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// Publishing: a subdomain suggested from the workspace's name, taken by one workspace of the
// whole deployment (another account's gets 409, as does an agent's subdomain), DNS-label rules
// (422), moved and given back by unpublish.
func TestWorkspacePublish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorkspace(t, b, "  My Café Site!! ")
	other := *b
	other.key, other.project = b.newTenant(t)
	rival := newWorkspace(t, &other, "My Café Site")

	suggested := w.ok("GET", "/v1/bot/workspace/suggest-subdomain", nil)
	if suggested["subdomain"] != "my-caf-site" || suggested["url"] != "https://my-caf-site."+testPublicDomain+"/" {
		t.Fatalf("suggested %v", suggested)
	}
	pub := w.ok("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": "My-Caf-Site"})
	ws := pub["workspace"].(map[string]any)
	if pub["published"] != true || pub["subdomain"] != "my-caf-site" || ws["subdomain"] != "my-caf-site" || ws["published_at"] == nil ||
		pub["url"] != "https://my-caf-site."+testPublicDomain+"/" {
		t.Fatalf("published %v", pub)
	}
	// Publishing again at the same subdomain changes nothing; the suggestion is its own.
	w.ok("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": "my-caf-site"})
	if got := w.ok("GET", "/v1/bot/workspace/suggest-subdomain", nil)["subdomain"]; got != "my-caf-site" {
		t.Fatalf("suggested %v to the published workspace", got)
	}
	// Another account's workspace is told it is taken and is suggested another.
	expect(t, rival.do("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": "my-caf-site"}), http.StatusConflict, "subdomain_taken")
	if got := rival.ok("GET", "/v1/bot/workspace/suggest-subdomain", nil)["subdomain"]; got != "my-caf-site-2" {
		t.Fatalf("suggested %v to the rival", got)
	}
	// An agent's subdomain is another site's too, and a published workspace's is no agent's.
	agent := b.newTenantBot(t, "Agent Page")
	expect(t, rival.do("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": agent.subdomain}), http.StatusConflict, "subdomain_taken")
	expect(t, agent.update(map[string]any{"subdomain": "my-caf-site"}), http.StatusConflict, "subdomain_taken")

	for _, sub := range []string{"", "ab", "-site", "site-", "my_site", "my.site", "sité", strings.Repeat("a", 64), "www", "console"} {
		expect(t, rival.do("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": sub}), http.StatusUnprocessableEntity, "")
	}

	// Moving frees the old subdomain, which the rival then takes; unpublishing frees the new one.
	moved := w.ok("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": "cafe-two"})
	if moved["subdomain"] != "cafe-two" {
		t.Fatalf("moved %v", moved)
	}
	rival.ok("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": "my-caf-site"})
	un := w.ok("PUT", "/v1/bot/workspace/unpublish", nil)
	if un["published"] != false || un["url"] != nil || un["workspace"].(map[string]any)["subdomain"] != "" {
		t.Fatalf("unpublished %v", un)
	}
	w.ok("PUT", "/v1/bot/workspace/unpublish", nil)
	rival.ok("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": "cafe-two"})
}

// A published workspace is a static site at /w/<subdomain>/ and at <subdomain>.<public
// domain>: each file with its type, never sniffed, sandboxed by its Content-Security-Policy,
// with no referrer and no cookie; an unpublished workspace's files, and files that are not
// there, are 404.
func TestWorkspaceSite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorkspace(t, b, "Static")
	w.create("index.html", "<h1>Home</h1>")
	w.create("style.css", "h1{color:red}")
	w.create("js/app.js", "document.title='x'")
	w.create("img/dot.png", base64.StdEncoding.EncodeToString(onePixelPNG))
	w.create("docs/index.html", "<h1>Docs</h1>")
	w.create("data.json", `{"a":1}`)

	expectNotFound := func(host, path string) {
		t.Helper()
		if res, body := b.siteGet(t, host, path); res.StatusCode != http.StatusNotFound || strings.Contains(body, "Home") {
			t.Fatalf("%s %s: %d %q, want 404", host, path, res.StatusCode, body)
		}
	}
	// Not published yet.
	expectNotFound("", "/w/static-site/index.html")
	expectNotFound("static-site."+testPublicDomain, "/index.html")

	w.ok("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": "static-site"})
	files := []struct{ path, contentType, body string }{
		{"/", "text/html; charset=utf-8", "<h1>Home</h1>"},
		{"/index.html", "text/html; charset=utf-8", "<h1>Home</h1>"},
		{"/style.css", "text/css; charset=utf-8", "h1{color:red}"},
		{"/js/app.js", "text/javascript; charset=utf-8", "document.title='x'"},
		{"/img/dot.png", "image/png", string(onePixelPNG)},
		{"/docs/", "text/html; charset=utf-8", "<h1>Docs</h1>"},
		{"/data.json", "application/json", `{"a":1}`},
	}
	for _, via := range []struct{ host, prefix string }{
		{"", "/w/static-site"},
		{"static-site." + testPublicDomain, ""},
		{"STATIC-SITE." + testPublicDomain + ":8443", ""},
	} {
		for _, f := range files {
			res, body := b.siteGet(t, via.host, via.prefix+f.path)
			if res.StatusCode != http.StatusOK || body != f.body || res.Header.Get("Content-Type") != f.contentType {
				t.Fatalf("%s %s: %d %s %q", via.host, via.prefix+f.path, res.StatusCode, res.Header.Get("Content-Type"), body)
			}
			csp := res.Header.Get("Content-Security-Policy")
			if !strings.HasPrefix(csp, "sandbox allow-scripts allow-forms allow-popups;") || strings.Contains(csp, "allow-same-origin") ||
				!strings.Contains(csp, "default-src 'self'") || res.Header.Get("X-Content-Type-Options") != "nosniff" ||
				res.Header.Get("Referrer-Policy") != "no-referrer" || len(res.Cookies()) != 0 {
				t.Fatalf("%s %s headers %v", via.host, via.prefix+f.path, res.Header)
			}
		}
		// A folder without its final slash goes to the folder; what is not there is 404.
		if res, _ := b.siteGet(t, via.host, via.prefix+"/docs"); res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != via.prefix+"/docs/" {
			t.Fatalf("%s /docs: %d to %q", via.host, res.StatusCode, res.Header.Get("Location"))
		}
		expectNotFound(via.host, via.prefix+"/missing.html")
		expectNotFound(via.host, via.prefix+"/js/")
		expectNotFound(via.host, via.prefix+"/../index.html")
	}
	if res, _ := b.siteGet(t, "", "/w/static-site"); res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/w/static-site/" {
		t.Fatalf("/w/static-site: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	// A host under the public domain that names no site is an agent's page as before.
	agent := b.newTenantBot(t, "Page Agent")
	if status, mine := b.pageAt(t, agent.subdomain+"."+testPublicDomain, "Page Agent"); status != http.StatusOK || !mine {
		t.Fatalf("agent's page: %d %v", status, mine)
	}

	w.ok("PUT", "/v1/bot/workspace/unpublish", nil)
	expectNotFound("", "/w/static-site/index.html")
	expectNotFound("static-site."+testPublicDomain, "/")
	expectNotFound("", "/w/no-such-site/index.html")
}

// In a real browser, a published page's script runs (its own script file loads) but in an
// opaque origin: it can read none of the visitor's cookies of the API's host, nor the answer
// of an authenticated /v1 route it calls with the visitor's credentials.
func TestWorkspaceSiteSandbox(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	b := setup(t)
	w := newWorkspace(t, b, "Sandboxed")
	w.create("index.html", `<!doctype html><html><head><title>Sandboxed</title></head><body><h1>Hi</h1><script src="app.js"></script></body></html>`)
	w.create("app.js", `const out = {ran: true};
try { out.cookie = document.cookie; } catch (e) { out.cookie = 'blocked'; }
fetch('/v1/projects', {credentials: 'include'})
  .then((r) => r.text().then(() => { out.api = 'read ' + r.status; }))
  .catch(() => { out.api = 'blocked'; })
  .finally(() => { document.body.dataset.result = JSON.stringify(out); });`)
	w.ok("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": "sandboxed"})

	// The visitor holds a cookie of the API's host, as a console served there would set.
	if err := chromedp.Do(ctx, chromedp.Navigate(b.client.URL+"/healthz"),
		chromedp.Evaluate[chromedp.Void](`document.cookie = 'visitor=secret; path=/'`), chromedp.Navigate(b.client.URL+"/w/sandboxed/")); err != nil {
		t.Fatal(err)
	}
	raw := get(t, ctx, chromedp.Poll[string](`document.body && document.body.dataset.result`))
	var out struct {
		Ran         bool
		Cookie, API string
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatal(err)
	}
	if !out.Ran || out.Cookie != "blocked" || out.API != "blocked" {
		t.Fatalf("the page's script saw %s", raw)
	}
}
