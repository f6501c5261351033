package api_test

import (
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// TestChatProviderHostGuarded: a provider host a request names is reached through the SSRF
// guard (a loopback host is refused, the provider hears nothing), while the configured provider,
// the operator's, is called directly with the agent's key.
func TestChatProviderHostGuarded(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withPrivateRefused(), withProvider(fake.URL))
	a := b.chatBot(t, map[string]any{"provider_key": "sk-agent-key"})
	fake.Set(providertest.Behavior{Reply: "From the configured provider."})

	if res, chat := a.chat(t, map[string]any{"message": "hello"}); chat == nil || chat["reply"] != "From the configured provider." {
		t.Fatalf("configured provider: %d %s", res.Status, res.Body)
	}
	res, _ := a.chat(t, map[string]any{"message": "hello", "provider_host": fake.URL, "provider_key": "sk-request-key"})
	expect(t, res, 502, "provider_unreachable")
	if !strings.Contains(string(res.Body), "blocked by the outbound request policy") {
		t.Fatalf("%s", res.Body)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("the provider received %d requests, want the configured provider's one", n)
	}
}
