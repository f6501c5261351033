package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// An agent's provider_key is stored sealed: the stored agent holds neither the key nor its
// last characters, reads show it masked, and its chats call the provider with it. A key stored
// in the clear before keys were sealed is still used, and sealed at the agent's next write.
func TestAgentProviderKeySealed(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	const key, legacy = "sk-agent-7f3e9a21c4d8", "sk-legacy-5d8c2b19e0f6"
	a := b.chatBot(t, map[string]any{"provider_key": key})
	ctx := context.Background()
	stored := func() (string, bson.Raw) {
		t.Helper()
		raw, err := b.db.Collection("bots").FindOne(ctx, bson.M{"uuid": a.botID}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		return raw.Lookup("_id").StringValue(), raw
	}
	id, raw := stored()
	if v := raw.Lookup("provider_key").StringValue(); v == "" || strings.Contains(raw.String(), key) || strings.Contains(raw.String(), key[len(key)-4:]) {
		t.Fatalf("the stored agent shows its key: provider_key %q", v)
	}
	res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if strings.Contains(string(res.Body), key) || !strings.Contains(string(res.Body), `"provider_key":"****`+key[len(key)-4:]+`"`) {
		t.Fatalf("read %s", res.Body)
	}
	usedKey := func() string {
		t.Helper()
		fake.Set(providertest.Behavior{Reply: "Hello."})
		if res, reply := a.chat(t, map[string]any{"message": "Hi", "reasoning_mode": "standard"}); reply == nil || reply["reply"] != "Hello." {
			t.Fatalf("chat %d %s", res.Status, res.Body)
		}
		reqs := fake.Requests()
		return strings.TrimPrefix(reqs[len(reqs)-1].Header.Get("Authorization"), "Bearer ")
	}
	if got := usedKey(); got != key {
		t.Fatalf("the provider was called with %q", got)
	}

	if _, err := b.db.Collection("bots").UpdateOne(ctx, bson.M{"_id": id}, bson.M{"$set": bson.M{"provider_key": legacy}, "$inc": bson.M{"rev": 1}}); err != nil {
		t.Fatal(err)
	}
	res = b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: a.body(map[string]any{"name": "Renamed"})})
	expect(t, res, http.StatusOK, "")
	if got := usedKey(); got != legacy {
		t.Fatalf("with a key stored in the clear, the provider was called with %q", got)
	}
	if _, raw := stored(); strings.Contains(raw.String(), legacy) {
		t.Fatal("a key stored in the clear stays so after a write")
	}
}
