package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/operators"
	"github.com/agentplane/agentplane/shared/tenancy"
)

// An operator's token authorises the operator's projects only: scoped refuses any other project
// of its account as it refuses another account's, while an API key of the account reaches every
// one of them. No route uses inboxAuth and scoped together yet (the inbox will), so this test
// serves a route of its own that does.
func TestOperatorsScoped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	ten := tenancy.NewService(store.NewTenancy(db))
	s := &server{tenancy: ten, operators: operators.NewService(store.NewOperators(db), ten)}
	acct, key, err := ten.CreateAccount(ctx, "A")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := ten.CreateAccount(ctx, "B")
	if err != nil {
		t.Fatal(err)
	}
	var projects [3]tenancy.Project
	for i, owner := range []string{acct.ID, acct.ID, other.ID} {
		if projects[i], err = ten.CreateProject(ctx, owner, "project"); err != nil {
			t.Fatal(err)
		}
	}
	mine, theirs, elsewhere := projects[0].ID, projects[1].ID, projects[2].ID
	name, email := "Ada", "ada@example.com"
	_, token, err := s.operators.Create(ctx, acct.ID, operators.Input{ProjectIDs: []string{mine}, Name: &name, Email: &email})
	if err != nil {
		t.Fatal(err)
	}

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/scoped", s.inboxAuth, handle(func(c *gin.Context) (any, error) {
		var sc scope
		err := s.project(c, &sc)
		return gin.H{"project_id": sc.ProjectID}, err
	}))
	get := func(bearer, project string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, "/scoped?project_id="+project, nil)
		req.Header.Set("Authorization", "Bearer "+bearer)
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	_, missing := get(key, "no-such-project")
	for _, c := range []struct {
		name, bearer, project string
		status                int
	}{
		{"the operator's project", token, mine, http.StatusOK},
		{"another project of its account", token, theirs, http.StatusNotFound},
		{"another account's project", token, elsewhere, http.StatusNotFound},
		{"the account's key, the operator's project", key, mine, http.StatusOK},
		{"the account's key, another project", key, theirs, http.StatusOK},
		{"the account's key, another account's project", key, elsewhere, http.StatusNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := get(c.bearer, c.project)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			if status == http.StatusNotFound && body != missing {
				t.Errorf("answer %s, but %s for a project that does not exist", body, missing)
			}
		})
	}
}
