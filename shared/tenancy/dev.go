package tenancy

import (
	"context"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

// DevAccountID is the fixed id of the account `agentplane dev` creates for a newcomer.
const DevAccountID = "dev"

// DevSetup is what `agentplane dev` prints so a newcomer can make a first call.
type DevSetup struct {
	Project Project
	// APIKey is set when a key was created now (first start) or fixed by configuration.
	APIKey string
}

// EnsureDev creates the dev account, its first project and its key on first start. fixedKey,
// when set, is made a key of the dev account (AGENTPLANE_DEV_API_KEY).
func (s *Service) EnsureDev(ctx context.Context, fixedKey string) (DevSetup, error) {
	var setup DevSetup
	_, err := s.repo.Account(ctx, DevAccountID)
	switch {
	case err == nil:
	case apperr.As(err).Kind == apperr.NotFound:
		if fixedKey == "" {
			_, setup.APIKey, err = s.createAccount(ctx, Account{ID: DevAccountID, Name: "dev", CreatedAt: s.now()})
		} else {
			err = s.repo.InsertAccount(ctx, Account{ID: DevAccountID, Name: "dev", CreatedAt: s.now()})
		}
		if err != nil {
			return setup, err
		}
	default:
		return setup, err
	}
	if fixedKey != "" {
		if !wellFormed(fixedKey) {
			return setup, apperr.Invalidf("AGENTPLANE_DEV_API_KEY", "must be %q followed by 43 base64url characters", KeyPrefix)
		}
		if err := s.ensureKey(ctx, fixedKey); err != nil {
			return setup, err
		}
		setup.APIKey = fixedKey
	}
	projects, _, err := s.repo.Projects(ctx, DevAccountID, paging.Page{Page: 1, PerPage: 1})
	if err != nil {
		return setup, err
	}
	if len(projects) == 0 {
		if setup.Project, err = s.CreateProject(ctx, DevAccountID, "default"); err != nil {
			return setup, err
		}
	} else {
		setup.Project = projects[0]
	}
	return setup, nil
}

func (s *Service) ensureKey(ctx context.Context, secret string) error {
	k, err := s.repo.KeyByHash(ctx, HashKey(secret))
	switch {
	case err == nil && k.AccountID == DevAccountID && k.RevokedAt == nil:
		return nil
	case err == nil:
		return apperr.New(apperr.Conflict, "dev_key_unusable", "AGENTPLANE_DEV_API_KEY is revoked or belongs to another account")
	case apperr.As(err).Kind != apperr.NotFound:
		return err
	}
	_, _, err = s.insertKey(ctx, Key{AccountID: DevAccountID, Name: "dev"}, secret)
	return err
}
