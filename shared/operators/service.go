package operators

import (
	"context"
	"crypto/subtle"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/keylock"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/tenancy"
)

// Projects reads the account's projects (tenancy.Service): another account's is NotFound.
type Projects interface {
	Project(ctx context.Context, accountID, id string) (tenancy.Project, error)
}

// Service holds the rules of operators and authenticates their tokens.
type Service struct {
	repo     Repo
	projects Projects
	now      func() time.Time
	writes   keylock.Locks // updates of this process, one at a time per operator
}

// NewService returns the operator service.
func NewService(repo Repo, projects Projects) *Service {
	return &Service{repo: repo, projects: projects, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Create creates an operator of the account; its token is returned here and never again.
func (s *Service) Create(ctx context.Context, accountID string, in Input) (Operator, string, error) {
	now := s.now()
	o := Operator{ID: ids.New(), AccountID: accountID, Availability: AvailabilityAway, MaxOpen: DefaultMaxOpen, CreatedAt: now, UpdatedAt: now}
	in.apply(&o)
	if err := s.validate(ctx, o); err != nil {
		return Operator{}, "", err
	}
	token := newToken()
	o.TokenHash = HashToken(token)
	if err := s.repo.Insert(ctx, o); err != nil {
		return Operator{}, "", err
	}
	return o, token, nil
}

// validate checks o's fields and that each of its projects is one of its account's.
func (s *Service) validate(ctx context.Context, o Operator) error {
	p := o.validate()
	if len(p) == 0 {
		for _, id := range o.ProjectIDs {
			_, err := s.projects.Project(ctx, o.AccountID, id)
			switch {
			case apperr.IsNotFound(err):
				p.Add("project_ids", "names %s, which is not a project of the account", id)
			case err != nil:
				return err
			}
		}
	}
	return p.Err()
}

// Get returns an operator of the account.
func (s *Service) Get(ctx context.Context, accountID, id string) (Operator, error) {
	if id = strings.TrimSpace(id); id == "" {
		return Operator{}, apperr.Invalidf("operator_id", "is required")
	}
	return s.repo.Get(ctx, accountID, id)
}

// List returns one page of the account's operators, oldest first: only those of projectID when
// it is not empty.
func (s *Service) List(ctx context.Context, accountID, projectID string, page paging.Page) ([]Operator, int, error) {
	return s.repo.List(ctx, accountID, projectID, page)
}

// Update applies in to an operator of the account. With rotate, the operator gets a new token,
// returned here and never again, and the old one stops working at once; the token is "" otherwise.
func (s *Service) Update(ctx context.Context, accountID, id string, in Input, rotate bool) (Operator, string, error) {
	if id = strings.TrimSpace(id); id == "" {
		return Operator{}, "", apperr.Invalidf("operator_id", "is required")
	}
	var token string
	if rotate {
		token = newToken()
	}
	o, err := apperr.Reapply(ctx, &s.writes, Resource, id, func() (Operator, error) {
		o, err := s.repo.Get(ctx, accountID, id)
		if err != nil {
			return Operator{}, err
		}
		in.apply(&o)
		if err := s.validate(ctx, o); err != nil {
			return Operator{}, err
		}
		if rotate {
			o.TokenHash = HashToken(token)
		}
		o.UpdatedAt, o.Rev = s.now(), o.Rev+1
		return o, s.repo.Replace(ctx, o)
	})
	if err != nil {
		return Operator{}, "", err
	}
	return o, token, nil
}

// Delete deletes an operator of the account; its token stops working at once.
func (s *Service) Delete(ctx context.Context, accountID, id string) error {
	if id = strings.TrimSpace(id); id == "" {
		return apperr.Invalidf("operator_id", "is required")
	}
	return s.repo.Delete(ctx, accountID, id)
}

// Authenticate returns the operator of a token, or an Unauthorized error invalid_operator_token
// for a token that is unknown, malformed, rotated away or of a deleted operator.
func (s *Service) Authenticate(ctx context.Context, token string) (Operator, error) {
	bad := apperr.New(apperr.Unauthorized, "invalid_operator_token", "The operator token is not valid.")
	if !wellFormed(token) {
		return Operator{}, bad
	}
	hash := HashToken(token)
	o, err := s.repo.ByTokenHash(ctx, hash)
	switch {
	case apperr.IsNotFound(err):
		return Operator{}, bad
	case err != nil:
		return Operator{}, err
	case subtle.ConstantTimeCompare([]byte(o.TokenHash), []byte(hash)) != 1:
		return Operator{}, bad
	}
	return o, nil
}
