package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/api/apitest"
)

// operatorTokenShape is an operator's token: op_ and 43 base64url characters (256 bits).
var operatorTokenShape = regexp.MustCompile(`^op_[A-Za-z0-9_-]{43}$`)

// createOperator creates an operator with key and returns the answer's operator and token.
func createOperator(t *testing.T, b *bundle, key string, body map[string]any) (map[string]any, string) {
	t.Helper()
	res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/operator/create", Key: key, Body: body})
	expect(t, res, http.StatusOK, "")
	out := res.JSON(t)
	token, _ := out["token"].(string)
	return out["operator"].(map[string]any), token
}

// hashOf is how a token would be stored: hex SHA-256.
func hashOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// An operator's token is answered once, on creation (and on a rotation), and stored only as its
// hash; it reaches GET /v1/bot/operator/me and no route that takes API keys; a rotation stops
// the old token and a deletion the last.
func TestOperatorsToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	op, token := createOperator(t, b, b.key, map[string]any{"project_id": b.project.ID, "name": " Ada ", "email": "ada@example.com"})
	if !operatorTokenShape.MatchString(token) {
		t.Fatalf("token %q", token)
	}
	id := op["id"].(string)
	if op["name"] != "Ada" || op["availability"] != "away" || op["max_open"] != float64(5) ||
		!slices.Equal(op["project_ids"].([]any), []any{b.project.ID}) {
		t.Fatalf("defaults: %v", op)
	}

	var stored bson.M
	if err := b.db.Collection("operators").FindOne(t.Context(), bson.D{{Key: "_id", Value: id}}).Decode(&stored); err != nil {
		t.Fatal(err)
	}
	for k, v := range stored {
		if s, ok := v.(string); ok && strings.Contains(s, token[len("op_"):]) {
			t.Errorf("the stored operator keeps the token in %s", k)
		}
	}
	if stored["token_hash"] != hashOf(token) {
		t.Errorf("stored hash %v, want the token's SHA-256", stored["token_hash"])
	}

	q := "?operator_id=" + id
	reads := []apitest.Request{
		{Method: http.MethodGet, Path: "/v1/bot/operator/read" + q, Key: b.key},
		{Method: http.MethodGet, Path: "/v1/bot/operator/readall?project_id=" + b.project.ID, Key: b.key},
		{Method: http.MethodPut, Path: "/v1/bot/operator/update", Key: b.key, Body: map[string]any{"operator_id": id, "availability": "online"}},
		{Method: http.MethodGet, Path: "/v1/bot/operator/me", Key: token},
	}
	for _, r := range reads {
		res := b.client.Do(r)
		expect(t, res, http.StatusOK, "")
		body := string(res.Body)
		if !strings.Contains(body, id) || strings.Contains(body, token) || strings.Contains(body, hashOf(token)) || strings.Contains(body, `"token`) {
			t.Errorf("%s %s shows the token or its hash, or not the operator: %s", r.Method, r.Path, body)
		}
	}

	// The token is the operator's on /me only: every route of API keys refuses it as a key.
	for _, c := range []struct {
		name   string
		req    apitest.Request
		status int
		code   string
	}{
		{"me with the token", apitest.Request{Method: http.MethodGet, Path: "/v1/bot/operator/me", Key: token}, http.StatusOK, ""},
		{"me with an API key", apitest.Request{Method: http.MethodGet, Path: "/v1/bot/operator/me", Key: b.key}, http.StatusForbidden, "operator_token_required"},
		{"me with a made-up token", apitest.Request{Method: http.MethodGet, Path: "/v1/bot/operator/me", Key: "op_" + strings.Repeat("A", 43)}, http.StatusUnauthorized, "invalid_operator_token"},
		{"the agents", apitest.Request{Method: http.MethodGet, Path: "/v1/bot/readall?project_id=" + b.project.ID, Key: token}, http.StatusUnauthorized, "invalid_api_key"},
		{"the projects", apitest.Request{Method: http.MethodGet, Path: "/v1/projects", Key: token}, http.StatusUnauthorized, "invalid_api_key"},
		{"its own record", apitest.Request{Method: http.MethodGet, Path: "/v1/bot/operator/read" + q, Key: token}, http.StatusUnauthorized, "invalid_api_key"},
		{"the operators", apitest.Request{Method: http.MethodPost, Path: "/v1/bot/operator/create", Key: token,
			Body: map[string]any{"project_id": b.project.ID, "name": "Eve", "email": "eve@example.com"}}, http.StatusUnauthorized, "invalid_api_key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := b.client.Do(c.req)
			expect(t, res, c.status, c.code)
			if c.status == http.StatusOK && res.JSON(t)["operator"].(map[string]any)["id"] != id {
				t.Errorf("me answered %s", res.Body)
			}
		})
	}

	// A rotation answers a new token, once; the old one stops working at once.
	res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/operator/update", Key: b.key, Body: map[string]any{"operator_id": id, "rotate_token": true}})
	expect(t, res, http.StatusOK, "")
	rotated, _ := res.JSON(t)["token"].(string)
	if !operatorTokenShape.MatchString(rotated) || rotated == token {
		t.Fatalf("rotated token %q (was %q)", rotated, token)
	}
	me := func(token string) *apitest.Response {
		return b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/operator/me", Key: token})
	}
	expect(t, me(token), http.StatusUnauthorized, "invalid_operator_token")
	expect(t, me(rotated), http.StatusOK, "")

	// A deletion stops the token at once.
	expect(t, b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/operator/delete" + q, Key: b.key}), http.StatusOK, "")
	expect(t, me(rotated), http.StatusUnauthorized, "invalid_operator_token")
	expect(t, b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/operator/read" + q, Key: b.key}), http.StatusNotFound, "operator_not_found")
}

// Creations and updates are refused, naming the field, unless the operator is whole: a name, a
// valid email, an availability, a bound of open conversations, and projects of the account.
func TestOperatorsValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, otherProject := b.newTenant(t)
	tooMany := []string{b.project.ID}
	for i := range 50 {
		tooMany = append(tooMany, fmt.Sprintf("project-%d", i))
	}
	op, _ := createOperator(t, b, b.key, map[string]any{"project_id": b.project.ID, "name": "Ada", "email": "ada@example.com"})
	for _, c := range []struct {
		name   string
		fields map[string]any
		field  string
	}{
		{"no name", map[string]any{"name": "  "}, "name"},
		{"a long name", map[string]any{"name": strings.Repeat("n", 201)}, "name"},
		{"a bad email", map[string]any{"email": "ada at example.com"}, "email"},
		{"an email with a display name", map[string]any{"email": "Ada <ada@example.com>"}, "email"},
		{"a long email", map[string]any{"email": strings.Repeat("a", 250) + "@example.com"}, "email"},
		{"an unknown project", map[string]any{"project_ids": []string{b.project.ID, "no-such-project"}}, "project_ids"},
		{"another account's project", map[string]any{"project_ids": []string{otherProject.ID}}, "project_ids"},
		{"no projects", map[string]any{"project_ids": []string{}}, "project_ids"},
		{"too many projects", map[string]any{"project_ids": tooMany}, "project_ids"},
		{"an unknown availability", map[string]any{"availability": "busy"}, "availability"},
		{"no open conversations", map[string]any{"max_open": 0}, "max_open"},
		{"too many open conversations", map[string]any{"max_open": 101}, "max_open"},
	} {
		t.Run(c.name, func(t *testing.T) {
			create := map[string]any{"project_id": b.project.ID, "name": "Grace", "email": "grace@example.com"}
			update := map[string]any{"operator_id": op["id"]}
			for k, v := range c.fields {
				create[k], update[k] = v, v
			}
			for _, r := range []apitest.Request{
				{Method: http.MethodPost, Path: "/v1/bot/operator/create", Key: b.key, Body: create},
				{Method: http.MethodPut, Path: "/v1/bot/operator/update", Key: b.key, Body: update},
			} {
				res := b.client.Do(r)
				expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
				expectField(t, res, c.field)
			}
		})
	}
	// The request's own project is authorised like every project a request names.
	res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/operator/create", Key: b.key,
		Body: map[string]any{"project_id": otherProject.ID, "name": "Grace", "email": "grace@example.com"}})
	expect(t, res, http.StatusNotFound, "project_not_found")
	list := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/operator/readall", Key: b.key})
	expect(t, list, http.StatusOK, "")
	if total := list.JSON(t)["total"]; total != float64(1) {
		t.Errorf("%v operators after refused creations, want 1: %s", total, list.Body)
	}
}

// The operators of an account are its own: another account's key finds none of them, and
// changes none.
func TestOperatorsOtherAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	otherKey, _ := b.newTenant(t)
	op, token := createOperator(t, b, b.key, map[string]any{"project_id": b.project.ID, "name": "Ada", "email": "ada@example.com"})
	id := op["id"].(string)
	read := apitest.Request{Method: http.MethodGet, Path: "/v1/bot/operator/read?operator_id=" + id, Key: b.key}
	before := b.client.Do(read)
	for _, r := range []apitest.Request{
		{Method: http.MethodGet, Path: "/v1/bot/operator/read?operator_id=" + id, Key: otherKey},
		{Method: http.MethodPut, Path: "/v1/bot/operator/update", Key: otherKey, Body: map[string]any{"operator_id": id, "name": "Taken"}},
		{Method: http.MethodPut, Path: "/v1/bot/operator/update", Key: otherKey, Body: map[string]any{"operator_id": id, "rotate_token": true}},
		{Method: http.MethodDelete, Path: "/v1/bot/operator/delete?operator_id=" + id, Key: otherKey},
	} {
		t.Run(r.Method+" "+strings.SplitN(r.Path, "?", 2)[0], func(t *testing.T) {
			res := b.client.Do(r)
			expect(t, res, http.StatusNotFound, "operator_not_found")
			if strings.Contains(string(res.Body), "Ada") {
				t.Errorf("the answer shows the operator: %s", res.Body)
			}
		})
	}
	list := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/operator/readall", Key: otherKey})
	expect(t, list, http.StatusOK, "")
	if strings.Contains(string(list.Body), id) {
		t.Errorf("another account lists the operator: %s", list.Body)
	}
	if after := b.client.Do(read); string(after.Body) != string(before.Body) {
		t.Errorf("the operator changed: %s, was %s", after.Body, before.Body)
	}
	expect(t, b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/operator/me", Key: token}), http.StatusOK, "")
}

// The account's operators are listed oldest first, a page at a time, all of them or those of one
// project.
func TestOperatorsList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/projects", Key: b.key, Body: map[string]any{"name": "Second"}})
	expect(t, res, http.StatusOK, "")
	second := res.JSON(t)["project"].(map[string]any)["id"].(string)
	var ids []string
	for _, c := range []struct {
		name     string
		projects []string
	}{{"first", []string{b.project.ID}}, {"second", []string{second}}, {"both", []string{b.project.ID, second}}} {
		op, _ := createOperator(t, b, b.key, map[string]any{"project_ids": c.projects, "name": c.name, "email": c.name + "@example.com"})
		ids = append(ids, op["id"].(string))
	}
	for _, c := range []struct {
		name  string
		query string
		total int
		want  []string
	}{
		{"all", "", 3, ids},
		{"of the first project", "?project_id=" + b.project.ID, 2, []string{ids[0], ids[2]}},
		{"of the second project", "?project_id=" + second, 2, []string{ids[1], ids[2]}},
		{"a page", "?per_page=2&page=2", 3, ids[2:]},
	} {
		t.Run(c.name, func(t *testing.T) {
			var list struct {
				Total     int
				Operators []struct{ ID string }
			}
			res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/operator/readall" + c.query, Key: b.key})
			expect(t, res, http.StatusOK, "")
			res.Decode(t, &list)
			var got []string
			for _, o := range list.Operators {
				got = append(got, o.ID)
			}
			if list.Total != c.total || !slices.Equal(got, c.want) {
				t.Errorf("total %d, operators %v; want %d, %v", list.Total, got, c.total, c.want)
			}
		})
	}
}
