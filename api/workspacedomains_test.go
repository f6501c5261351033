package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// domainRecords are the records a custom domain answer names, by type.
func domainRecords(t *testing.T, answer map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range answer["records"].([]any) {
		rec := r.(map[string]any)
		out[rec["type"].(string)] = rec
	}
	return out
}

// A published workspace's custom domain: refused when it is no public host name or the
// deployment's own; pending until the real DNS server on loopback holds its TXT record (none,
// then the wrong ones), verified then, active once the CNAME leads to the public domain, when
// the site is served on that host. The domain is then the workspace's alone: another account's
// claim never verifies and a new one is refused, as is an agent's verified domain; removing it
// stops the site there and lets the other account take it.
func TestWorkspaceDomains(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newWorkspace(t, b, "Shop Site")
	w.ok("POST", "/v1/bot/workspace/file", map[string]any{"file_path": "index.html", "content": "<h1>Shop</h1>"})
	w.ok("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": "shop-site"})
	other := *b
	other.key, other.project = b.newTenant(t)
	rival := newWorkspace(t, &other, "Rival Site")
	rival.ok("POST", "/v1/bot/workspace/file", map[string]any{"file_path": "index.html", "content": "<h1>Rival</h1>"})
	rival.ok("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": "rival-site"})
	const domain = "shop.example.test"
	served := func(host, page string) bool {
		t.Helper()
		res, body := b.siteGet(t, host, "/")
		if res.StatusCode == http.StatusOK && strings.Contains(body, page) {
			if csp := res.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox") {
				t.Errorf("the site at %s: Content-Security-Policy %q", host, csp)
			}
			return true
		}
		return false
	}

	for _, host := range []string{"", "127.0.0.1", "localhost", "x.localhost", testPublicDomain, "x." + testPublicDomain, "-x.example.com", "https://shop.example.test/"} {
		res := w.do("POST", "/v1/bot/workspace/domain/add", map[string]any{"custom_domain": host})
		expect(t, res, http.StatusUnprocessableEntity, "")
		expectField(t, res, "custom_domain")
	}
	if info := w.ok("GET", "/v1/bot/workspace/domain/info", nil); info["custom_domain"] != nil || info["status"] != nil {
		t.Fatalf("info without a domain %v", info)
	}
	res := w.do("GET", "/v1/bot/workspace/domain/status", nil)
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	expectField(t, res, "custom_domain")

	added := w.ok("POST", "/v1/bot/workspace/domain/add", map[string]any{"custom_domain": "Shop.Example.Test."})
	recs := domainRecords(t, added)
	cname, txt := recs["CNAME"], recs["TXT"]
	if added["custom_domain"] != domain || added["status"] != "pending" || added["url"] != nil ||
		cname["name"] != domain || cname["value"] != testPublicDomain ||
		txt["name"] != "_agentplane."+domain || !strings.HasPrefix(txt["value"].(string), "agentplane-verification=") {
		t.Fatalf("added %v", added)
	}
	if again := w.ok("POST", "/v1/bot/workspace/domain/add", map[string]any{"custom_domain": domain}); domainRecords(t, again)["TXT"]["value"] != txt["value"] {
		t.Fatalf("the same claim again made another token: %v", again)
	}
	if info := w.ok("GET", "/v1/bot/workspace/domain/info", nil); info["status"] != "pending" || domainRecords(t, info)["TXT"]["value"] != txt["value"] {
		t.Fatalf("info %v", info)
	}
	// Another account may claim the domain too, with another token.
	claim := domainRecords(t, rival.ok("POST", "/v1/bot/workspace/domain/add", map[string]any{"custom_domain": domain}))["TXT"]
	if claim["value"] == txt["value"] {
		t.Fatalf("both claims have the token %v", txt["value"])
	}

	status := func(c *wsClient) map[string]any { return c.ok("GET", "/v1/bot/workspace/domain/status", nil) }
	if got := status(w); got["status"] != "pending" || !strings.Contains(got["problem"].(string), "no TXT record") ||
		!strings.Contains(got["problem"].(string), "no CNAME record") {
		t.Fatalf("no records: %v", got)
	}
	b.dns.SetTXT(txt["name"].(string), "agentplane-verification=wrong")
	b.dns.SetCNAME(domain, "elsewhere.example.test")
	if got := status(w); got["status"] != "pending" || !strings.Contains(got["problem"].(string), "do not hold") ||
		!strings.Contains(got["problem"].(string), "is no CNAME of") {
		t.Fatalf("wrong records: %v", got)
	}
	if served(domain, "<h1>Shop</h1>") {
		t.Fatal("a pending domain is served")
	}

	b.dns.SetTXT(txt["name"].(string), "v=spf1 -all", txt["value"].(string))
	if got := status(w); got["status"] != "verified" || domainRecords(t, got)["TXT"]["found"] != true || domainRecords(t, got)["CNAME"]["found"] != false {
		t.Fatalf("the TXT record only: %v", got)
	}
	if served(domain, "<h1>Shop</h1>") {
		t.Fatal("a domain whose CNAME leads elsewhere is served")
	}
	b.dns.SetCNAME(domain, testPublicDomain+".")
	if got := status(w); got["status"] != "active" || got["problem"] != "" || got["url"] != "https://"+domain+"/" {
		t.Fatalf("both records: %v", got)
	}
	if !served(domain, "<h1>Shop</h1>") || !served(strings.ToUpper(domain)+".:443", "<h1>Shop</h1>") {
		t.Fatal("the active domain serves no site")
	}

	// The other account's claim never verifies, even with its token there; a new claim is refused.
	b.dns.SetTXT(txt["name"].(string), txt["value"].(string), claim["value"].(string))
	expect(t, rival.do("GET", "/v1/bot/workspace/domain/status", nil), http.StatusConflict, "domain_taken")
	late := newWorkspace(t, &other, "Late Site")
	expect(t, late.do("POST", "/v1/bot/workspace/domain/add", map[string]any{"custom_domain": domain}), http.StatusConflict, "domain_taken")
	if !served(domain, "<h1>Shop</h1>") {
		t.Fatal("after the other account's claims, the site is not served")
	}

	// Unpublished, the site is served nowhere, its domain included.
	w.ok("PUT", "/v1/bot/workspace/unpublish", nil)
	if served(domain, "<h1>Shop</h1>") {
		t.Fatal("an unpublished workspace is served at its domain")
	}
	if got := status(w); got["status"] != "verified" || !strings.Contains(got["problem"].(string), "not published") {
		t.Fatalf("unpublished: %v", got)
	}
	w.ok("PUT", "/v1/bot/workspace/publish", map[string]any{"subdomain": "shop-site"})
	if got := status(w); got["status"] != "active" || !served(domain, "<h1>Shop</h1>") {
		t.Fatalf("published again: %v", got)
	}

	// An agent's verified domain is no workspace's: a claim made before the agent verified it
	// never verifies, and a new one is refused.
	lateTXT := domainRecords(t, late.ok("POST", "/v1/bot/workspace/domain/add", map[string]any{"custom_domain": "help.example.test"}))["TXT"]
	agent := b.newTenantBot(t, "Agent Page")
	v := agent.setDomain(t, "help.example.test")
	b.dns.SetTXT(v["record_name"].(string), v["record_value"].(string), lateTXT["value"].(string))
	if got := agent.verify(t); got["status"] != "verified" {
		t.Fatalf("the agent's domain %v", got)
	}
	expect(t, late.do("GET", "/v1/bot/workspace/domain/status", nil), http.StatusConflict, "domain_taken")
	late.ok("DELETE", "/v1/bot/workspace/domain/remove", nil)
	expect(t, late.do("POST", "/v1/bot/workspace/domain/add", map[string]any{"custom_domain": "help.example.test"}), http.StatusConflict, "domain_taken")

	// Nor is a workspace's verified domain an agent's.
	av := agent.setDomain(t, domain)
	b.dns.SetTXT(av["record_name"].(string), txt["value"].(string), av["record_value"].(string))
	expect(t, b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/domain/verify", Key: agent.key,
		Body: map[string]any{"project_id": agent.project, "bot_id": agent.bot}}), http.StatusConflict, "domain_taken")
	b.dns.SetTXT(txt["name"].(string), txt["value"].(string), claim["value"].(string))

	// Removed, the domain serves nothing, and the other account's claim takes it.
	if removed := w.ok("DELETE", "/v1/bot/workspace/domain/remove", nil); removed["custom_domain"] != nil || removed["workspace"].(map[string]any)["domain"] != nil {
		t.Fatalf("removed %v", removed)
	}
	if served(domain, "<h1>Shop</h1>") {
		t.Fatal("a removed domain is served")
	}
	if got := status(rival); got["status"] != "active" || !served(domain, "<h1>Rival</h1>") {
		t.Fatalf("the next holder: %v", got)
	}
}
