package workspaces

import (
	"context"
	"crypto/rand"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// A published workspace is a static site at a subdomain: at /w/<subdomain>/ on the API's host
// and, when the deployment has a public domain, at <subdomain>.<public domain>, whose other
// subdomains are agents' pages. A subdomain is one site's across the deployment: the unique
// index of published workspaces' subdomains refuses a second workspace, and Names refuses the
// subdomains of agents' pages and the reserved ones.

// Names is what the deployment's other sites (agents' pages) say of a subdomain a workspace
// would take: Invalid when it is no DNS label or is reserved, a Conflict when it is taken; and
// of a domain of its own (CheckDomain: the domain as stored, or Invalid or a Conflict).
type Names interface {
	CheckSubdomain(ctx context.Context, subdomain string) error
	CheckDomain(ctx context.Context, field, domain string) (string, error)
}

// suggestTries bounds the candidates Suggest tries before it gives up.
const suggestTries = 12

// Publish makes the workspace a site at subdomain (a site already there moves): a subdomain
// another workspace or an agent has is a Conflict (subdomain_taken), one that is no DNS label
// of 3 to 63 characters, or is reserved, Invalid.
func (s *Service) Publish(ctx context.Context, w Workspace, subdomain string) (Workspace, error) {
	sub := strings.ToLower(strings.TrimSpace(subdomain))
	if sub == "" {
		return Workspace{}, apperr.Invalidf("subdomain", "is required")
	}
	if err := s.free(ctx, w, sub); err != nil {
		return Workspace{}, err
	}
	if w.Subdomain == sub {
		return w, nil
	}
	now := s.now()
	if err := s.repo.SetSubdomain(ctx, w.ProjectID, w.ID, sub, &now); err != nil {
		return Workspace{}, taken(err, sub)
	}
	w.Subdomain, w.PublishedAt, w.UpdatedAt = sub, &now, now
	return w, nil
}

// Unpublish takes the workspace's site down; a workspace not published stays so.
func (s *Service) Unpublish(ctx context.Context, w Workspace) (Workspace, error) {
	if w.Subdomain == "" {
		return w, nil
	}
	if err := s.repo.SetSubdomain(ctx, w.ProjectID, w.ID, "", nil); err != nil {
		return Workspace{}, err
	}
	w.Subdomain, w.PublishedAt, w.UpdatedAt = "", nil, s.now()
	return w, nil
}

// Suggest is a subdomain the workspace may be published at: its own when it is published, else
// one made of its name (a DNS label), numbered or given a random tail when that is taken.
func (s *Service) Suggest(ctx context.Context, w Workspace) (string, error) {
	if w.Subdomain != "" {
		return w.Subdomain, nil
	}
	base := label(w.Name)
	for i := range suggestTries {
		sub := base
		switch {
		case i > 0 && i < suggestTries/2:
			sub = base + "-" + strconv.Itoa(i+1)
		case i >= suggestTries/2:
			sub = base + "-" + strings.ToLower(rand.Text()[:6])
		}
		err := s.free(ctx, w, sub)
		if err == nil {
			return sub, nil
		}
		if k := apperr.As(err).Kind; k != apperr.Conflict && k != apperr.Invalid {
			return "", err
		}
	}
	return "", apperr.New(apperr.Conflict, "subdomain_taken", "No free subdomain was found for the workspace's name: publish it at one you choose.")
}

// free checks that w may take sub: a DNS label no other workspace or agent has.
func (s *Service) free(ctx context.Context, w Workspace, sub string) error {
	if !subdomainPattern.MatchString(sub) {
		return apperr.Invalidf("subdomain", "must be 3 to 63 lowercase letters, digits or hyphens, not starting or ending with a hyphen")
	}
	if s.names != nil {
		if err := s.names.CheckSubdomain(ctx, sub); err != nil {
			return err
		}
	}
	other, err := s.repo.BySubdomain(ctx, sub)
	switch {
	case err == nil && other.ID != w.ID:
		return taken(nil, sub)
	case err != nil && apperr.As(err).Kind != apperr.NotFound:
		return err
	}
	return nil
}

// taken is the Conflict of a subdomain another site has (err, when the store refused it).
func taken(err error, sub string) error {
	if e := apperr.As(err); err == nil || (e.Kind == apperr.Conflict && e.Code == Resource+"_exists") {
		return &apperr.Error{Kind: apperr.Conflict, Code: "subdomain_taken", Message: "The subdomain " + sub + " is taken: choose another.", Err: err}
	}
	return err
}

// label is a DNS label made of name: lower-case letters and digits, other runs of characters
// made one hyphen, at most 40 characters; "site" when that leaves fewer than 3.
func label(name string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			hyphen = false
		case !hyphen && b.Len() > 0:
			b.WriteByte('-')
			hyphen = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) < 3 {
		return "site"
	}
	return out
}

// Site is the file of the published workspace w at the path p of a request (the folder's
// index.html for a folder or the root): NotFound for a path that is no file of it. Folder
// reports that p names a folder without its final slash (which a browser needs for the
// folder's relative links).
func (s *Service) Site(ctx context.Context, w Workspace, p string) (f File, folder bool, err error) {
	p = strings.TrimPrefix(p, "/")
	if p == "" || strings.HasSuffix(p, "/") {
		p += "index.html"
	}
	clean, err := CleanPath("path", p)
	if err == nil {
		f, err = s.repo.FileAt(ctx, w.ProjectID, w.ID, clean)
	}
	if err != nil && path.Base(p) != "index.html" {
		// A folder (whose name is no file's: CleanPath refuses it, or no file is there) that has
		// an index.html.
		if index, ierr := CleanPath("path", p+"/index.html"); ierr == nil {
			if _, ierr := s.repo.FileAt(ctx, w.ProjectID, w.ID, index); ierr == nil {
				return File{}, true, nil
			}
		}
	}
	if apperr.As(err).Kind == apperr.Invalid {
		return File{}, false, apperr.NotFoundf(FileResource)
	}
	f.ContentType = TypeOf(f.Path).ContentType
	return f, false, err
}

// subdomainPattern is a DNS label of 3 to 63 characters, as agents' subdomains are.
var subdomainPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9])$`)

// Published is the workspace published at subdomain, of any project.
func (s *Service) Published(ctx context.Context, subdomain string) (Workspace, error) {
	sub := strings.ToLower(strings.TrimSpace(subdomain))
	if !subdomainPattern.MatchString(sub) {
		return Workspace{}, apperr.NotFoundf(Resource)
	}
	return s.repo.BySubdomain(ctx, sub)
}
