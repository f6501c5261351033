package agents

import (
	"context"
	"strings"

	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/kit/secrets"
	"github.com/agentplane/agentplane/shared/outbox"
)

// sealedPrefix marks a provider key stored sealed; a key stored before keys were sealed has
// none, and is read as it is.
const sealedPrefix = "sealed:"

// SealKeys is repo storing each agent's provider key sealed with box (for the agent: a sealed
// key copied onto another agent does not open) and reading it back in the clear, whether it
// was stored sealed or, before keys were, in the clear. With a box that has no key, keys are
// stored in the clear; a key that no longer opens (the deployment's key changed) reads as none.
func SealKeys(repo Repo, box secrets.Box) Repo { return sealedRepo{Repo: repo, box: box} }

type sealedRepo struct {
	Repo
	box secrets.Box
}

// seal is b with its provider key sealed.
func (r sealedRepo) seal(b Bot) (Bot, error) {
	if b.ProviderKey == "" || !r.box.Ready() {
		return b, nil
	}
	sealed, err := r.box.Seal([]byte(b.ProviderKey), b.ID)
	b.ProviderKey = sealedPrefix + sealed
	return b, err
}

// open is b with its provider key in the clear.
func (r sealedRepo) open(b Bot, err error) (Bot, error) {
	sealed, ok := strings.CutPrefix(b.ProviderKey, sealedPrefix)
	if err != nil || !ok {
		return b, err
	}
	plain, oerr := r.box.Open(sealed, b.ID)
	b.ProviderKey = string(plain)
	if oerr != nil {
		b.ProviderKey = ""
	}
	return b, nil
}

func (r sealedRepo) Insert(ctx context.Context, b Bot, ev outbox.Event) error {
	b, err := r.seal(b)
	if err != nil {
		return err
	}
	return r.Repo.Insert(ctx, b, ev)
}

func (r sealedRepo) Replace(ctx context.Context, b Bot, ev outbox.Event) error {
	b, err := r.seal(b)
	if err != nil {
		return err
	}
	return r.Repo.Replace(ctx, b, ev)
}

func (r sealedRepo) Get(ctx context.Context, projectID, idOrUUID string) (Bot, error) {
	return r.open(r.Repo.Get(ctx, projectID, idOrUUID))
}

func (r sealedRepo) Find(ctx context.Context, idOrUUID string) (Bot, error) {
	return r.open(r.Repo.Find(ctx, idOrUUID))
}

func (r sealedRepo) BySubdomain(ctx context.Context, subdomain string) (Bot, error) {
	return r.open(r.Repo.BySubdomain(ctx, subdomain))
}

func (r sealedRepo) ByDomain(ctx context.Context, host string) (Bot, error) {
	return r.open(r.Repo.ByDomain(ctx, host))
}

func (r sealedRepo) List(ctx context.Context, projectID string, page paging.Page) ([]Bot, int, error) {
	list, total, err := r.Repo.List(ctx, projectID, page)
	for i := range list {
		list[i], _ = r.open(list[i], nil)
	}
	return list, total, err
}
