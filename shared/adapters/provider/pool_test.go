package provider_test

import (
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/provider"
)

// A request naming the provider and key of an earlier one gets the same client; another key,
// host or timeout gets another, and the least recently used clients go beyond the pool's size.
func TestPoolReusesClients(t *testing.T) {
	p := provider.NewPool(2)
	a := provider.Config{BaseURL: "http://one.example/v1", APIKey: "sk-a"}
	first := p.OpenAI(a)
	if p.OpenAI(a) != first {
		t.Fatal("the same host and key built a second client")
	}
	for name, other := range map[string]provider.Config{
		"OtherKey":     {BaseURL: a.BaseURL, APIKey: "sk-b"},
		"OtherHost":    {BaseURL: "http://two.example/v1", APIKey: a.APIKey},
		"OtherTimeout": {BaseURL: a.BaseURL, APIKey: a.APIKey, Timeout: 5},
	} {
		if p.OpenAI(other) == first {
			t.Errorf("%s: got the first client", name)
		}
	}
	q := provider.NewPool(2)
	kept := q.OpenAI(a)
	q.OpenAI(provider.Config{BaseURL: a.BaseURL, APIKey: "sk-b"})
	q.OpenAI(provider.Config{BaseURL: a.BaseURL, APIKey: "sk-c"})
	if q.OpenAI(a) == kept {
		t.Fatal("a pool of 2 kept the least recently used of 3 clients")
	}
}
