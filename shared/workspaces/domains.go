package workspaces

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/dnsrecord"
)

// A published workspace may be served at a domain of its account's: the account claims the
// domain (AddDomain), creates the records its Domain names, a CNAME to the deployment's public
// domain and a TXT record holding the domain's token, and asks for them to be looked up
// (CheckDomain). The domain is pending until the TXT record is found, verified when it is (the
// domain is then the workspace's: the sparse unique index of verified domains refuses it to
// every other workspace, and an agent's own verified domain is refused to workspaces), and
// active once the CNAME leads to the public domain and the workspace is published: its site is
// then served on that host. A claim alone holds nothing, so a claim made first cannot keep the
// domain's owner from it.

// Field is the name of a custom domain in requests and problems.
const Field = "custom_domain"

// DomainRecordPrefix is the label under the domain where its TXT record is looked for;
// domainValuePrefix starts the record's value.
const (
	DomainRecordPrefix = "_agentplane."
	domainValuePrefix  = "agentplane-verification="
)

// Custom domain statuses.
const (
	DomainPending  = "pending"
	DomainVerified = "verified"
	DomainActive   = "active"
)

// Domain is a workspace's custom domain: the records to create, which were found, and what the
// last check made of them.
type Domain struct {
	Name    string         `json:"custom_domain" bson:"name"`
	Status  string         `json:"status" bson:"status"`
	Records []DomainRecord `json:"records" bson:"records"`
	// Problem says what the last check found missing ("" when the domain is active).
	Problem    string     `json:"problem" bson:"problem"`
	CheckedAt  *time.Time `json:"checked_at" bson:"checked_at,omitempty"`
	VerifiedAt *time.Time `json:"verified_at" bson:"verified_at,omitempty"`
}

// DomainRecord is a DNS record the domain needs, and whether the last check found it.
type DomainRecord struct {
	Type  string `json:"type" bson:"type"`
	Name  string `json:"name" bson:"name"`
	Value string `json:"value" bson:"value"`
	Found bool   `json:"found" bson:"found"`
}

// Resolver looks up DNS records: a name's TXT records and the canonical name it is an alias of.
// An error that is a *net.DNSError with IsNotFound means the name has none.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupCNAME(ctx context.Context, name string) (string, error)
}

// Domains is how custom domains are checked: the resolver, and the public domain their CNAME
// records must lead to ("": the deployment serves no custom domains).
type Domains struct {
	DNS    Resolver
	Target string
}

// AddDomain claims domain for the workspace: a pending Domain with the records to create (the
// same claim again changes nothing). A domain that is no public host name, or the
// deployment's, is Invalid; one another workspace or an agent has verified is a Conflict
// (domain_taken).
func (s *Service) AddDomain(ctx context.Context, w Workspace, domain string) (Workspace, error) {
	if s.domains.Target == "" || s.names == nil {
		return Workspace{}, apperr.Invalidf(Field, "cannot be served: this deployment has no public domain (AGENTPLANE_PUBLIC_DOMAIN)")
	}
	name, err := s.names.CheckDomain(ctx, Field, domain)
	if err != nil {
		return Workspace{}, err
	}
	if w.Domain != nil && w.Domain.Name == name {
		return w, nil
	}
	if other, err := s.repo.ByDomain(ctx, name); err == nil && other.ID != w.ID {
		return Workspace{}, domainTaken(nil, name)
	} else if err != nil && apperr.As(err).Kind != apperr.NotFound {
		return Workspace{}, err
	}
	d := &Domain{Name: name, Status: DomainPending, Records: []DomainRecord{
		{Type: "CNAME", Name: name, Value: s.domains.Target},
		{Type: "TXT", Name: DomainRecordPrefix + name, Value: domainValuePrefix + rand.Text()},
	}, Problem: "the records have not been checked yet"}
	if err := s.repo.SetDomain(ctx, w.ProjectID, w.ID, d, ""); err != nil {
		return Workspace{}, err
	}
	w.Domain, w.VerifiedDomain, w.UpdatedAt = d, "", s.now()
	return w, nil
}

// RemoveDomain lets the workspace's domain go: its site is no longer served there.
func (s *Service) RemoveDomain(ctx context.Context, w Workspace) (Workspace, error) {
	if w.Domain == nil {
		return w, nil
	}
	if err := s.repo.SetDomain(ctx, w.ProjectID, w.ID, nil, ""); err != nil {
		return Workspace{}, err
	}
	w.Domain, w.VerifiedDomain, w.UpdatedAt = nil, "", s.now()
	return w, nil
}

// CheckDomain looks up the records of the workspace's domain and answers the workspace with
// what was found (pending, verified or active, with the problem). A workspace without a domain
// is Invalid; a domain another workspace or an agent verified first is a Conflict
// (domain_taken); a resolver that does not answer is Unavailable.
func (s *Service) CheckDomain(ctx context.Context, w Workspace) (Workspace, error) {
	if w.Domain == nil {
		return Workspace{}, apperr.Invalidf(Field, "is not set: add the workspace's custom domain first")
	}
	d := *w.Domain
	d.Records = slices.Clone(d.Records)
	now := s.now()
	var problems []string
	for i, r := range d.Records {
		found, problem, err := s.lookup(ctx, r)
		if err != nil {
			return Workspace{}, apperr.Unavailablef("dns", err)
		}
		d.Records[i].Found = found
		if problem != "" {
			problems = append(problems, problem)
		}
	}
	owned, routed := d.Records[1].Found, d.Records[0].Found
	verified := ""
	switch {
	case !owned:
		d.Status, d.VerifiedAt = DomainPending, nil
	case !routed || w.Subdomain == "":
		d.Status = DomainVerified
	default:
		d.Status = DomainActive
	}
	if owned {
		if _, err := s.names.CheckDomain(ctx, Field, d.Name); err != nil {
			return Workspace{}, err
		}
		verified = d.Name
		if d.VerifiedAt == nil {
			d.VerifiedAt = &now
		}
		if w.Subdomain == "" {
			problems = append(problems, "the workspace is not published: publish it to serve it at its domain")
		}
	}
	d.Problem, d.CheckedAt = strings.Join(problems, "; "), &now
	if err := s.repo.SetDomain(ctx, w.ProjectID, w.ID, &d, verified); err != nil {
		return Workspace{}, domainTaken(err, d.Name)
	}
	w.Domain, w.VerifiedDomain, w.UpdatedAt = &d, verified, now
	return w, nil
}

// lookup reports whether the record r is in the DNS, and if not, why.
func (s *Service) lookup(ctx context.Context, r DomainRecord) (bool, string, error) {
	var dnsErr *net.DNSError
	if r.Type == "CNAME" {
		target, err := s.domains.DNS.LookupCNAME(ctx, r.Name)
		switch {
		case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
			return false, "no CNAME record at " + r.Name, nil
		case err != nil:
			return false, "", err
		case target != r.Value:
			return false, r.Name + " is no CNAME of " + r.Value, nil
		}
		return true, "", nil
	}
	problem, err := dnsrecord.TXT(ctx, s.domains.DNS, r.Name, r.Value)
	return err == nil && problem == "", problem, err
}

// AtDomain is the workspace whose site is served at host: its verified domain, active, and the
// workspace published.
func (s *Service) AtDomain(ctx context.Context, host string) (Workspace, error) {
	w, err := s.repo.ByDomain(ctx, strings.TrimSuffix(strings.ToLower(host), "."))
	if err == nil && (w.Subdomain == "" || w.Domain == nil || w.Domain.Status != DomainActive) {
		return Workspace{}, apperr.NotFoundf(Resource)
	}
	return w, err
}

// domainTaken is the Conflict of a domain another site has verified (err, when the store
// refused it; other errors are err).
func domainTaken(err error, domain string) error {
	if e := apperr.As(err); err == nil || (e.Kind == apperr.Conflict && e.Code == Resource+"_exists") {
		return &apperr.Error{Kind: apperr.Conflict, Code: "domain_taken", Message: "domain " + domain + " is another site's",
			Details: []apperr.Detail{{Field: Field, Problem: "is another site's"}}, Err: err}
	}
	return err
}
