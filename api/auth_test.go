package api_test

import (
	"net/http"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		name   string
		header string
		code   string
	}{
		{"NoHeader", "", "missing_api_key"},
		{"NotBearer", "Basic dXNlcjpwYXNz", "malformed_authorization"},
		{"BearerWithoutKey", "Bearer ", "malformed_authorization"},
		{"NoSpace", "Bearer" + b.key, "malformed_authorization"},
		{"UnknownKey", "Bearer ap_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "invalid_api_key"},
		{"NotAKey", "Bearer hello", "invalid_api_key"},
		{"KeyWithSuffix", "Bearer " + b.key + "x", "invalid_api_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Header: map[string]string{"Authorization": tt.header}})
			expect(t, res, http.StatusUnauthorized, tt.code)
			if res.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	t.Run("SchemeIsCaseInsensitive", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Header: map[string]string{"Authorization": "bearer " + b.key}})
		expect(t, res, http.StatusOK, "")
	})
}

func TestRevokedKeyStopsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/keys", Key: b.key, Body: map[string]any{"name": "ci"}})
	expect(t, res, http.StatusOK, "")
	var created struct {
		Key    struct{ ID, Prefix string }
		APIKey string `json:"api_key"`
	}
	res.Decode(t, &created)
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: created.APIKey}), http.StatusOK, "")

	expect(t, b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/keys/" + created.Key.ID, Key: created.APIKey,
		ContentType: "application/json"}), http.StatusOK, "")

	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: created.APIKey}), http.StatusUnauthorized, "invalid_api_key")
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: b.key}), http.StatusOK, "")
}

func TestAdminRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	create := func(c *apitest.Client, header string) *apitest.Response {
		return c.Do(apitest.Request{Method: "POST", Path: "/v1/admin/accounts", Body: map[string]any{"name": "acme"},
			Header: map[string]string{"Authorization": header}})
	}
	t.Run("NoToken", func(t *testing.T) {
		expect(t, create(b.client, ""), http.StatusUnauthorized, "missing_api_key")
	})
	t.Run("WrongToken", func(t *testing.T) {
		expect(t, create(b.client, "Bearer not-the-token"), http.StatusUnauthorized, "invalid_admin_token")
	})
	t.Run("AccountKeyIsNotAdmin", func(t *testing.T) {
		expect(t, create(b.client, "Bearer "+b.key), http.StatusUnauthorized, "invalid_admin_token")
	})
	t.Run("OffWithoutConfiguredToken", func(t *testing.T) {
		off := setup(t, withAdminToken(""))
		expect(t, create(off.client, "Bearer "+adminToken), http.StatusNotFound, "route_not_found")
	})
	t.Run("OK", func(t *testing.T) {
		res := create(b.client, "Bearer "+adminToken)
		expect(t, res, http.StatusOK, "")
		var out struct {
			Account struct{ ID, Name string }
			APIKey  string `json:"api_key"`
		}
		res.Decode(t, &out)
		if out.Account.Name != "acme" || out.Account.ID == "" {
			t.Fatalf("account %+v", out.Account)
		}
		expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/keys", Key: out.APIKey}), http.StatusOK, "")
	})
	t.Run("NameRequired", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/admin/accounts", Body: map[string]any{},
			Header: map[string]string{"Authorization": "Bearer " + adminToken}})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	})
}
