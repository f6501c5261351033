package tenancy

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

// MaxNameLength bounds account, project and key names.
const MaxNameLength = 200

// Service holds the tenancy rules; persistence is its Repo's.
type Service struct {
	repo Repo
	now  func() time.Time
}

// NewService returns a Service storing in repo.
func NewService(repo Repo) *Service {
	return &Service{repo: repo, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

func checkName(field, name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", apperr.Invalidf(field, "is required")
	case utf8.RuneCountInString(name) > MaxNameLength:
		return "", apperr.Invalidf(field, "must be at most %d characters", MaxNameLength)
	}
	return name, nil
}

// CreateAccount creates an account and its first API key, returned once as the secret.
func (s *Service) CreateAccount(ctx context.Context, name string) (Account, string, error) {
	name, err := checkName("name", name)
	if err != nil {
		return Account{}, "", err
	}
	return s.createAccount(ctx, Account{ID: ids.New(), Name: name, CreatedAt: s.now()})
}

func (s *Service) createAccount(ctx context.Context, a Account) (Account, string, error) {
	if err := s.repo.InsertAccount(ctx, a); err != nil {
		return Account{}, "", err
	}
	_, secret, err := s.CreateKey(ctx, a.ID, "default")
	return a, secret, err
}

// CreateKey creates an API key for accountID; the secret is returned here and never again.
func (s *Service) CreateKey(ctx context.Context, accountID, name string) (Key, string, error) {
	if name == "" {
		name = "default"
	}
	name, err := checkName("name", name)
	if err != nil {
		return Key{}, "", err
	}
	return s.insertKey(ctx, accountID, name, newSecret())
}

func (s *Service) insertKey(ctx context.Context, accountID, name, secret string) (Key, string, error) {
	k := Key{ID: ids.New(), AccountID: accountID, Name: name, Prefix: displayPrefix(secret),
		Hash: HashKey(secret), CreatedAt: s.now()}
	if err := s.repo.InsertKey(ctx, k); err != nil {
		return Key{}, "", err
	}
	return k, secret, nil
}

// Authenticate returns the principal of an API key, or an Unauthorized error for a key that is
// unknown, malformed or revoked.
func (s *Service) Authenticate(ctx context.Context, secret string) (Principal, error) {
	bad := apperr.New(apperr.Unauthorized, "invalid_api_key", "The API key is not valid.")
	if !wellFormed(secret) {
		return Principal{}, bad
	}
	hash := HashKey(secret)
	k, err := s.repo.KeyByHash(ctx, hash)
	if err != nil {
		if apperr.As(err).Kind == apperr.NotFound {
			return Principal{}, bad
		}
		return Principal{}, err
	}
	if !hashesEqual(k.Hash, hash) || k.RevokedAt != nil {
		return Principal{}, bad
	}
	return Principal{AccountID: k.AccountID, KeyID: k.ID}, nil
}

// Keys lists the account's keys, revoked ones included, without secrets.
func (s *Service) Keys(ctx context.Context, accountID string) ([]Key, error) {
	return s.repo.Keys(ctx, accountID)
}

// RevokeKey revokes one of the account's keys; it stops working at once.
func (s *Service) RevokeKey(ctx context.Context, accountID, keyID string) error {
	return s.repo.RevokeKey(ctx, accountID, keyID, s.now())
}

// CreateProject creates a project of the account.
func (s *Service) CreateProject(ctx context.Context, accountID, name string) (Project, error) {
	name, err := checkName("name", name)
	if err != nil {
		return Project{}, err
	}
	p := Project{ID: ids.New(), AccountID: accountID, Name: name, CreatedAt: s.now()}
	return p, s.repo.InsertProject(ctx, p)
}

// Project returns the account's project id. A project of another account is not found, exactly
// like a missing one.
func (s *Service) Project(ctx context.Context, accountID, id string) (Project, error) {
	if id == "" {
		return Project{}, apperr.Invalidf("project_id", "is required")
	}
	return s.repo.Project(ctx, accountID, id)
}

// Projects lists one page of the account's projects, oldest first.
func (s *Service) Projects(ctx context.Context, accountID string, page paging.Page) ([]Project, int, error) {
	return s.repo.Projects(ctx, accountID, page)
}
