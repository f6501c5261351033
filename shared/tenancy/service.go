package tenancy

import (
	"context"
	"slices"
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
	return s.insertKey(ctx, Key{AccountID: accountID, Name: name}, newSecret())
}

// insertKey stores k (its account, name and scope set) as the key of secret.
func (s *Service) insertKey(ctx context.Context, k Key, secret string) (Key, string, error) {
	k.ID, k.Prefix, k.Hash, k.CreatedAt = ids.New(), displayPrefix(secret), HashKey(secret), s.now()
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
	p := Principal{AccountID: k.AccountID, KeyID: k.ID}
	if k.BotID != "" {
		p.BotID, p.Projects = k.BotID, []string{k.ProjectID}
	}
	return p, nil
}

// CreateAgentKey creates an A2A key of the agent botID of the account's project projectID (the
// caller authorised both): it reaches that agent's A2A endpoint only. The secret is returned
// here and never again.
func (s *Service) CreateAgentKey(ctx context.Context, accountID, projectID, botID, name string) (Key, string, error) {
	if strings.TrimSpace(name) == "" {
		name = "a2a"
	}
	name, err := checkName("name", name)
	if err != nil {
		return Key{}, "", err
	}
	return s.insertKey(ctx, Key{AccountID: accountID, Name: name, ProjectID: projectID, BotID: botID}, newSecret())
}

// AgentKeys lists the A2A keys of the account's agent botID that work, without secrets.
func (s *Service) AgentKeys(ctx context.Context, accountID, botID string) ([]Key, error) {
	keys, err := s.repo.Keys(ctx, accountID)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(keys, func(k Key) bool { return k.BotID != botID || k.RevokedAt != nil }), nil
}

// DeleteAgentKey revokes the A2A key keyID of the account's agent botID: it stops working at
// once. Any other key (another agent's, an account's API key) is not found.
func (s *Service) DeleteAgentKey(ctx context.Context, accountID, botID, keyID string) error {
	if keyID = strings.TrimSpace(keyID); keyID == "" {
		return apperr.Invalidf("key_id", "is required")
	}
	keys, err := s.AgentKeys(ctx, accountID, botID)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(keys, func(k Key) bool { return k.ID == keyID }) {
		return apperr.NotFoundf("key")
	}
	return s.repo.RevokeKey(ctx, accountID, keyID, s.now())
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
