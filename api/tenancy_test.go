package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

func TestProjects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 11 {
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/projects", Key: b.key, Body: map[string]any{"name": fmt.Sprintf("p%d", i)}})
		expect(t, res, http.StatusOK, "")
	}
	t.Run("ListFirstPage", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: b.key})
		expect(t, res, http.StatusOK, "")
		var out struct {
			Total      int
			Projects   []struct{ ID, Name string }
			Pagination struct {
				Page, PerPage, Total, TotalPages int
			}
		}
		res.Decode(t, &out)
		if out.Total != 12 || len(out.Projects) != 10 || out.Projects[0].ID != b.project.ID {
			t.Fatalf("got total %d, %d projects, first %+v", out.Total, len(out.Projects), out.Projects[0])
		}
	})
	t.Run("ListSecondPage", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects?page=2&per_page=10", Key: b.key})
		expect(t, res, http.StatusOK, "")
		if m := res.JSON(t); len(m["projects"].([]any)) != 2 || m["pagination"].(map[string]any)["total_pages"] != float64(2) {
			t.Fatalf("body %s", res.Body)
		}
	})
	for _, q := range []string{"page=0", "page=x", "per_page=101", "per_page=-1"} {
		t.Run("BadPaging/"+q, func(t *testing.T) {
			expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects?" + q, Key: b.key}), http.StatusUnprocessableEntity, "invalid_field")
		})
	}
	t.Run("Read", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects/" + b.project.ID, Key: b.key})
		expect(t, res, http.StatusOK, "")
	})
	t.Run("NameRequired", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/projects", Key: b.key, Body: map[string]any{"name": "  "}})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	})
	t.Run("NameTooLong", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/projects", Key: b.key, Body: map[string]any{"name": strings.Repeat("n", 201)}})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	})
}

// Another account's resources answer exactly like missing ones.
func TestOtherAccountsResourcesAreNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	otherKey, otherProject := b.newTenant(t)
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects/" + otherProject.ID, Key: b.key})
	expect(t, res, http.StatusNotFound, "project_not_found")
	missing := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects/no-such-project", Key: b.key})
	expect(t, missing, http.StatusNotFound, "project_not_found")
	if a, m := res.JSON(t)["message"], missing.JSON(t)["message"]; a != m {
		t.Errorf("another account's project says %q, a missing one %q", a, m)
	}

	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/keys", Key: otherKey})
	var keys struct{ Keys []struct{ ID string } }
	res.Decode(t, &keys)
	expect(t, b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/keys/" + keys.Keys[0].ID, Key: b.key}), http.StatusNotFound, "key_not_found")
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: otherKey}), http.StatusOK, "")

	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: b.key})
	if strings.Contains(string(res.Body), otherProject.ID) {
		t.Fatal("project list shows another account's project")
	}
}

func TestKeysAreShownOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/keys", Key: b.key, Body: map[string]any{"name": "deploy"}})
	expect(t, res, http.StatusOK, "")
	var created struct {
		Key    struct{ ID, Name, Prefix string }
		APIKey string `json:"api_key"`
	}
	res.Decode(t, &created)
	if created.Key.Name != "deploy" || !strings.HasPrefix(created.APIKey, created.Key.Prefix) || len(created.Key.Prefix) >= len(created.APIKey) {
		t.Fatalf("created %+v", created)
	}
	list := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/keys", Key: b.key})
	expect(t, list, http.StatusOK, "")
	for _, secret := range []string{created.APIKey, b.key} {
		if strings.Contains(string(list.Body), secret) {
			t.Fatal("key list shows a secret")
		}
	}
	if strings.Contains(string(list.Body), "hash") {
		t.Fatal("key list shows hashes")
	}
	if n := len(list.JSON(t)["keys"].([]any)); n != 2 {
		t.Fatalf("%d keys, want 2", n)
	}
}
