package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// tenantBot is an agent of one account, called with that account's key.
type tenantBot struct {
	b                            *bundle
	key, project, bot, subdomain string
}

// newTenantBot creates an account and an agent of it.
func (b *bundle) newTenantBot(t *testing.T, name string) *tenantBot {
	t.Helper()
	key, project := b.newTenant(t)
	res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/create", Key: key,
		Body: map[string]any{"project_id": project.ID, "name": name, "model": "gpt-4o-mini"}})
	expect(t, res, http.StatusOK, "")
	bot := res.JSON(t)["bot"].(map[string]any)
	return &tenantBot{b: b, key: key, project: project.ID, bot: bot["id"].(string), subdomain: bot["subdomain"].(string)}
}

// update sends the fields as an update of the agent.
func (tb *tenantBot) update(fields map[string]any) *apitest.Response {
	fields["project_id"], fields["bot_id"] = tb.project, tb.bot
	return tb.b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: tb.key, Body: fields})
}

// verify asks for the agent's domain to be verified and returns its domain_verification.
func (tb *tenantBot) verify(t *testing.T) map[string]any {
	t.Helper()
	res := tb.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/domain/verify", Key: tb.key,
		Body: map[string]any{"project_id": tb.project, "bot_id": tb.bot}})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)["bot"].(map[string]any)["domain_verification"].(map[string]any)
}

// setDomain sets the agent's domain and returns its domain_verification.
func (tb *tenantBot) setDomain(t *testing.T, domain string) map[string]any {
	t.Helper()
	res := tb.update(map[string]any{"domain": domain})
	expect(t, res, http.StatusOK, "")
	v, _ := res.JSON(t)["bot"].(map[string]any)["domain_verification"].(map[string]any)
	return v
}

// pageAt answers the status of the root page at host and whether it is the named agent's.
func (b *bundle) pageAt(t *testing.T, host, name string) (int, bool) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.client.URL+"/", nil)
	req.Host = host
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	return res.StatusCode, strings.Contains(string(page), `<h1 id="agent-name">`+name+`</h1>`)
}

// An agent's own domain must be a public host name that is not the deployment's; it is served
// only once a TXT record proves it is the account's, and only one agent's at a time: another
// account's agent cannot take it, before or after.
func TestAgentDomains(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner, squatter := b.newTenantBot(t, "Owner Help"), b.newTenantBot(t, "Squatter Help")

	t.Run("RefusedHosts", func(t *testing.T) {
		for _, host := range []string{"127.0.0.1", "[::1]", "::1", "127.1", "10.0.0.7", "localhost", "app.localhost",
			"agents.test", "x.agents.test", "api.platform.test", "v2.api.platform.test", "help", "-x.example.com", "https://help.example.com/"} {
			res := owner.update(map[string]any{"domain": host})
			if res.Status != http.StatusUnprocessableEntity {
				t.Errorf("domain %q: %d %s", host, res.Status, res.Body)
				continue
			}
			expectField(t, res, "domain")
		}
		if status, _ := b.pageAt(t, "127.0.0.1", "Owner Help"); status != http.StatusNotFound {
			t.Errorf("the API host's root: %d", status)
		}
	})

	t.Run("ReservedSubdomains", func(t *testing.T) {
		for _, sub := range []string{"www", "api", "admin", "mail", "inbox", "console"} {
			res := owner.update(map[string]any{"subdomain": sub})
			if res.Status != http.StatusUnprocessableEntity {
				t.Errorf("subdomain %q: %d %s", sub, res.Status, res.Body)
				continue
			}
			expectField(t, res, "subdomain")
		}
	})

	t.Run("SubdomainTaken", func(t *testing.T) {
		res := squatter.update(map[string]any{"subdomain": owner.subdomain})
		expect(t, res, http.StatusConflict, "subdomain_taken")
		expectField(t, res, "subdomain")
		if status, mine := b.pageAt(t, owner.subdomain+"."+testPublicDomain, "Owner Help"); status != http.StatusOK || !mine {
			t.Fatalf("the owner's subdomain: %d, its page %v", status, mine)
		}
	})

	t.Run("VerifiedBeforeServed", func(t *testing.T) {
		const domain = "help.shop.test"
		v := owner.setDomain(t, "Help.Shop.Test.")
		if v["status"] != "pending" || v["record_name"] != "_agentplane."+domain || !strings.HasPrefix(v["record_value"].(string), "agentplane-verification=") {
			t.Fatalf("domain_verification %v", v)
		}
		// Another account's agent may claim the domain too, but never verifies it: the record
		// holds the owner's value.
		squat := squatter.setDomain(t, domain)
		if squat["record_value"] == v["record_value"] {
			t.Fatalf("both claims have the value %v", v["record_value"])
		}
		if status, _ := b.pageAt(t, domain, "Owner Help"); status != http.StatusNotFound {
			t.Fatalf("unverified domain served: %d", status)
		}

		if got := owner.verify(t); got["status"] != "pending" || !strings.Contains(got["problem"].(string), "no TXT record") {
			t.Fatalf("no record: %v", got)
		}
		b.dns.SetTXT(v["record_name"].(string), "agentplane-verification=wrong")
		if got := owner.verify(t); got["status"] != "pending" || !strings.Contains(got["problem"].(string), "do not hold") {
			t.Fatalf("wrong record: %v", got)
		}
		b.dns.SetTXT(v["record_name"].(string), "v=spf1 -all", v["record_value"].(string))
		if got := owner.verify(t); got["status"] != "verified" || got["verified_at"] == nil || got["problem"] != "" {
			t.Fatalf("right record: %v", got)
		}
		if status, mine := b.pageAt(t, domain, "Owner Help"); status != http.StatusOK || !mine {
			t.Fatalf("verified domain: %d, the owner's page %v", status, mine)
		}

		if got := squatter.verify(t); got["status"] != "pending" {
			t.Fatalf("the squatter's claim: %v", got)
		}
		// With both records there, the domain is still the agent's that verified it first.
		b.dns.SetTXT(squat["record_name"].(string), v["record_value"].(string), squat["record_value"].(string))
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/domain/verify", Key: squatter.key,
			Body: map[string]any{"project_id": squatter.project, "bot_id": squatter.bot}})
		expect(t, res, http.StatusConflict, "domain_taken")
		another := b.newTenantBot(t, "Late Help")
		expect(t, another.update(map[string]any{"domain": domain}), http.StatusConflict, "domain_taken")
		if status, mine := b.pageAt(t, domain, "Owner Help"); status != http.StatusOK || !mine {
			t.Fatalf("after the others' claims: %d, the owner's page %v", status, mine)
		}

		// The owner lets the domain go: it serves no page, and another agent whose record is
		// there takes it.
		expect(t, owner.update(map[string]any{"domain": ""}), http.StatusOK, "")
		if status, _ := b.pageAt(t, domain, "Owner Help"); status != http.StatusNotFound {
			t.Fatalf("a released domain: %d", status)
		}
		b.dns.SetTXT(squat["record_name"].(string), squat["record_value"].(string))
		if got := squatter.verify(t); got["status"] != "verified" {
			t.Fatalf("the next holder's claim: %v", got)
		}
		if status, mine := b.pageAt(t, domain, "Squatter Help"); status != http.StatusOK || !mine {
			t.Fatalf("the next holder's page: %d %v", status, mine)
		}

		// A deleted agent lets its domain go too.
		expect(t, b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/delete?project_id=" + squatter.project + "&bot_id=" + squatter.bot,
			Key: squatter.key}), http.StatusOK, "")
		late := another.setDomain(t, domain)
		b.dns.SetTXT(late["record_name"].(string), late["record_value"].(string))
		if got := another.verify(t); got["status"] != "verified" {
			t.Fatalf("after the holder's deletion: %v", got)
		}
		if status, mine := b.pageAt(t, domain, "Late Help"); status != http.StatusOK || !mine {
			t.Fatalf("after the holder's deletion, the page: %d %v", status, mine)
		}
	})

	t.Run("VerifyWithoutDomain", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/domain/verify", Key: owner.key,
			Body: map[string]any{"project_id": owner.project, "bot_id": owner.bot}})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
		expectField(t, res, "domain")
	})
}
