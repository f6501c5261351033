package tenancy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/tenancy"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func service(t *testing.T) *tenancy.Service {
	t.Helper()
	db := testenv.Mongo(t)
	if err := store.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return tenancy.NewService(store.NewTenancy(db))
}

func wantKind(t *testing.T, what string, err error, kind apperr.Kind) {
	t.Helper()
	if err == nil || apperr.As(err).Kind != kind {
		t.Fatalf("%s: error %v, want kind %s", what, err, kind)
	}
}

// An account's key is shown once, stored only as its hash, and authenticates as its account
// until it is revoked; anything else is refused the same way.
func TestKeys(t *testing.T) {
	s := service(t)
	ctx := context.Background()
	acct, secret, err := s.CreateAccount(ctx, "  Acme  ")
	if err != nil {
		t.Fatal(err)
	}
	if acct.Name != "Acme" || !strings.HasPrefix(secret, tenancy.KeyPrefix) || len(secret) != len(tenancy.KeyPrefix)+43 {
		t.Fatalf("account %+v, key %q", acct, secret)
	}
	p, err := s.Authenticate(ctx, secret)
	if err != nil || p.AccountID != acct.ID {
		t.Fatalf("principal %+v (%v)", p, err)
	}
	keys, err := s.Keys(ctx, acct.ID)
	if err != nil || len(keys) != 1 || keys[0].Hash != tenancy.HashKey(secret) || !strings.HasPrefix(secret, keys[0].Prefix) || len(keys[0].Prefix) >= len(secret) {
		t.Fatalf("keys %+v (%v)", keys, err)
	}
	second, secret2, err := s.CreateKey(ctx, acct.ID, "ci")
	if err != nil || secret2 == secret {
		t.Fatalf("second key %+v (%v)", second, err)
	}
	other, otherSecret, err := s.CreateAccount(ctx, "Globex")
	if err != nil {
		t.Fatal(err)
	}
	// Revoking names the account: another account's key is not found, and stays good.
	wantKind(t, "revoking another account's key", s.RevokeKey(ctx, other.ID, second.ID), apperr.NotFound)
	if err := s.RevokeKey(ctx, acct.ID, second.ID); err != nil {
		t.Fatal(err)
	}
	altered := secret[:len(secret)-1] + "A"
	if altered == secret {
		altered = secret[:len(secret)-1] + "B"
	}
	for _, bad := range []string{secret2, "", "ap_short", "sk-" + secret[3:], altered} {
		if _, err := s.Authenticate(ctx, bad); apperr.As(err).Code != "invalid_api_key" {
			t.Errorf("key %q: %v", bad, err)
		}
	}
	if p, err := s.Authenticate(ctx, otherSecret); err != nil || p.AccountID != other.ID {
		t.Fatalf("the other account's key: %+v (%v)", p, err)
	}
	if p, err := s.Authenticate(ctx, secret); err != nil || p.AccountID != acct.ID {
		t.Fatalf("the first key after another was revoked: %+v (%v)", p, err)
	}
	for _, name := range []string{"", "   ", strings.Repeat("x", tenancy.MaxNameLength+1)} {
		if _, _, err := s.CreateAccount(ctx, name); apperr.As(err).Kind != apperr.Invalid {
			t.Errorf("account named %q: %v", name, err)
		}
	}
}

// A project belongs to its account: another account's project is not found, like a missing one.
func TestProjects(t *testing.T) {
	s := service(t)
	ctx := context.Background()
	a, _, _ := s.CreateAccount(ctx, "A")
	b, _, _ := s.CreateAccount(ctx, "B")
	p, err := s.CreateProject(ctx, a.ID, "Support")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Project(ctx, a.ID, p.ID); err != nil || got.Name != "Support" {
		t.Fatalf("own project %+v (%v)", got, err)
	}
	_, errOther := s.Project(ctx, b.ID, p.ID)
	_, errMissing := s.Project(ctx, b.ID, "no-such-project")
	wantKind(t, "another account's project", errOther, apperr.NotFound)
	if apperr.As(errOther).Code != apperr.As(errMissing).Code || apperr.As(errOther).Message != apperr.As(errMissing).Message {
		t.Fatalf("another account's project %v, a missing one %v", errOther, errMissing)
	}
	wantKind(t, "no project id", func() error { _, err := s.Project(ctx, a.ID, ""); return err }(), apperr.Invalid)
	wantKind(t, "a nameless project", func() error { _, err := s.CreateProject(ctx, a.ID, " "); return err }(), apperr.Invalid)
	if list, total, err := s.Projects(ctx, b.ID, paging.Page{Page: 1, PerPage: 10}); err != nil || total != 0 || len(list) != 0 {
		t.Fatalf("B's projects %v, %d (%v)", list, total, err)
	}
}

// dev's setup is made once: the account, a project and a key on first start, the same project
// after; a fixed key becomes the dev account's, and one that is not a key is refused.
func TestEnsureDev(t *testing.T) {
	s := service(t)
	ctx := context.Background()
	first, err := s.EnsureDev(ctx, "")
	if err != nil || first.APIKey == "" || first.Project.ID == "" {
		t.Fatalf("first start %+v (%v)", first, err)
	}
	again, err := s.EnsureDev(ctx, "")
	if err != nil || again.APIKey != "" || again.Project.ID != first.Project.ID {
		t.Fatalf("second start %+v (%v)", again, err)
	}
	fixed := tenancy.KeyPrefix + strings.Repeat("k", 43)
	withKey, err := s.EnsureDev(ctx, fixed)
	if err != nil || withKey.APIKey != fixed {
		t.Fatalf("with a fixed key %+v (%v)", withKey, err)
	}
	if p, err := s.Authenticate(ctx, fixed); err != nil || p.AccountID != tenancy.DevAccountID {
		t.Fatalf("the fixed key %+v (%v)", p, err)
	}
	if _, err := s.EnsureDev(ctx, "not-a-key"); apperr.As(err).Kind != apperr.Invalid {
		t.Fatalf("a malformed fixed key: %v", err)
	}
}
