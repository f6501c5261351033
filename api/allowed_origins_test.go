package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// allowed_origins takes web origins only, scheme://host[:port]: anything else is 422 naming the
// item.
func TestAllowedOriginsAreOrigins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, nil)
	update := func(origins ...string) *apitest.Response {
		return b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: a.body(map[string]any{"allowed_origins": origins})})
	}
	for _, bad := range []string{"https://*", "https://*.example.com", "https://shop.example.com#x", `"https://shop.example.com"`, "https://shop.example.com/shop",
		"https://shop.example.com?x=1", "ftp://shop.example.com", "https://ada@shop.example.com", "https://shop example.com", "shop.example.com",
		"https://shop.example.com:port", "https://", "https://shop.example.com'", "https://shop.example.com;"} {
		t.Run(bad, func(t *testing.T) {
			res := update("https://fine.example.com", bad)
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			if !strings.Contains(string(res.Body), "allowed_origins[1]") {
				t.Fatalf("the refusal does not name the item: %s", res.Body)
			}
		})
	}
	res := update("https://shop.example.com", "HTTP://LocalHost:8080/", "https://[::1]:8443", "http://127.0.0.1")
	expect(t, res, http.StatusOK, "")
	if got := fmt.Sprint(res.JSON(t)["bot"].(map[string]any)["allowed_origins"]); got != "[https://shop.example.com http://localhost:8080 https://[::1]:8443 http://127.0.0.1]" {
		t.Fatalf("allowed_origins %s", got)
	}
}
