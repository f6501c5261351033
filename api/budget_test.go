package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// An account's requests in progress are bounded: with a budget of 2 and two chats held open by
// a model that does not answer, the account's next request waits its turn and is answered 429
// account_busy when none comes; another account is served meanwhile; once the chats end, the
// account is served again.
func TestAccountBudget(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	fake.Set(providertest.Behavior{Hang: true})
	b := setup(t, withProvider(fake.URL), withAccountBudget(2), withRateLimit(0))
	a := b.chatBot(t, nil)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		body, _ := json.Marshal(a.body(map[string]any{"message": "hi"}))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.client.URL+"/v1/bot/chat", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+b.key)
		req.Header.Set("Content-Type", "application/json")
		wg.Go(func() {
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	for deadline := time.Now().Add(20 * time.Second); len(fake.Requests()) < 2; waitABit() {
		if time.Now().After(deadline) {
			t.Fatalf("the model got %d requests, want the 2 chats in progress", len(fake.Requests()))
		}
	}

	project := "/v1/projects/" + b.project.ID
	res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: project, Key: b.key})
	expect(t, res, http.StatusTooManyRequests, "account_busy")
	if res.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1", res.Header.Get("Retry-After"))
	}
	otherKey, other := b.newTenant(t)
	expect(t, b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/projects/" + other.ID, Key: otherKey}), http.StatusOK, "")

	cancel()
	wg.Wait()
	expect(t, b.client.Do(apitest.Request{Method: http.MethodGet, Path: project, Key: b.key}), http.StatusOK, "")
}
