package agents

import (
	"context"
	"crypto/rand"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/dnsrecord"
)

// An agent's page is served at its own domain once the domain is shown to be the account's: a
// TXT record at DomainRecordPrefix + domain holding the value the agent's domain_verification
// names. Until then the domain is the agent's claim, which any agent may make; only a verified
// domain serves, and only one agent's at a time, so a claim made first cannot keep the domain's
// owner from it.

// DomainRecordPrefix is the label under the domain where its verification record is looked for.
const DomainRecordPrefix = "_agentplane."

// domainValuePrefix starts the value of a verification record.
const domainValuePrefix = "agentplane-verification="

// Domain verification statuses.
const (
	DomainPending  = "pending"
	DomainVerified = "verified"
)

// DomainVerification is the state of an agent's own domain: the TXT record to create and whether
// it has been found.
type DomainVerification struct {
	Status string `json:"status" bson:"status"`
	// RecordName and RecordValue are the TXT record that proves the domain is the account's.
	RecordName  string `json:"record_name" bson:"record_name"`
	RecordValue string `json:"record_value" bson:"record_value"`
	// Problem says why the last check did not verify the domain.
	Problem    string     `json:"problem" bson:"problem"`
	CheckedAt  *time.Time `json:"checked_at" bson:"checked_at,omitempty"`
	VerifiedAt *time.Time `json:"verified_at" bson:"verified_at,omitempty"`
}

// Hosts are the host names an agent may not take, and how a domain's record is looked up.
type Hosts struct {
	// PublicDomain is the domain whose subdomains are agents' pages ("" for none): neither it nor
	// any name under it is an agent's own domain.
	PublicDomain string
	// Own are the deployment's own host names (its API's): neither they nor names under them are
	// an agent's own domain, and the subdomains of PublicDomain among them are no agent's.
	Own []string
	// TXT looks up verification records.
	TXT dnsrecord.TXTResolver
	// Sites says which domains and subdomains the deployment's other sites (published
	// workspaces) have (nil: none).
	Sites SiteDomains
}

// SiteDomains says whether a site other than an agent's page has verified domain, or is
// published at subdomain of the public domain.
type SiteDomains interface {
	HasDomain(ctx context.Context, domain string) (bool, error)
	HasSubdomain(ctx context.Context, subdomain string) (bool, error)
}

// ReservedSubdomains are subdomains no agent may take: names a deployment gives its own hosts.
var ReservedSubdomains = []string{
	"www", "api", "admin", "app", "mail", "inbox", "smtp", "imap", "pop", "ftp", "ns1", "ns2", "auth",
	"login", "sso", "docs", "status", "static", "assets", "cdn", "widget", "mcp", "a2a", "dashboard", "console",
}

var hostPattern = regexp.MustCompile(`^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// normalizeHost is a host name as stored and compared: lower case, no final dot.
func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}

// under reports whether host is name or a name under it.
func under(host, name string) bool {
	return name != "" && (host == name || strings.HasSuffix(host, "."+name))
}

// checkDomain adds the problems of a site's own domain to p, under field.
func (h Hosts) checkDomain(p *apperr.Problems, field, domain string) {
	switch {
	case domain == "":
	case net.ParseIP(strings.Trim(domain, "[]")) != nil:
		p.Add(field, "must be a host name, not an IP address")
	case len(domain) > 253 || !hostPattern.MatchString(domain):
		p.Add(field, "must be a host name such as help.example.com")
	case strings.Trim(domain[strings.LastIndexByte(domain, '.')+1:], "0123456789") == "":
		p.Add(field, "must be a host name, not an IP address")
	case under(domain, "localhost"):
		p.Add(field, "must be a public host name, not localhost")
	case under(domain, h.PublicDomain) || slices.ContainsFunc(h.Own, func(own string) bool { return under(domain, own) }):
		p.Add(field, "is this service's own host; a site is already at its subdomain of it")
	}
}

// CheckDomain says whether another site of the deployment (a published workspace) may take
// domain as its own, named by field in problems: the domain as stored (lower case, no final
// dot); Invalid when it is empty, no public host name or the deployment's own, a Conflict
// (domain_taken) when an agent's page is served at it.
func (s *Service) CheckDomain(ctx context.Context, field, domain string) (string, error) {
	domain = normalizeHost(domain)
	var p apperr.Problems
	if domain == "" {
		p.Add(field, "is required: a host name such as app.example.com")
	}
	s.hosts.checkDomain(&p, field, domain)
	if err := p.Err(); err != nil {
		return "", err
	}
	_, err := s.repo.ByDomain(ctx, domain)
	switch {
	case err == nil:
		return "", &apperr.Error{Kind: apperr.Conflict, Code: "domain_taken", Message: "domain " + domain + " is an agent's",
			Details: []apperr.Detail{{Field: field, Problem: "is an agent's"}}}
	case apperr.As(err).Kind == apperr.NotFound:
		return domain, nil
	}
	return "", err
}

// checkSubdomain adds the problems of an agent's subdomain to p.
func (h Hosts) checkSubdomain(p *apperr.Problems, subdomain string) {
	if !subdomainPattern.MatchString(subdomain) {
		p.Add("subdomain", "must be 3 to 63 lowercase letters, digits or hyphens, not starting or ending with a hyphen")
		return
	}
	own := slices.ContainsFunc(h.Own, func(host string) bool { return h.PublicDomain != "" && host == subdomain+"."+h.PublicDomain })
	if own || slices.Contains(ReservedSubdomains, subdomain) {
		p.Add("subdomain", "is reserved")
	}
}

// claimDomain gives next the verification state of its domain: none without one, a new pending
// record when the domain is new to it (or had none).
func claimDomain(cur, next *Bot) {
	switch {
	case next.Domain == "":
		next.DomainVerification, next.VerifiedDomain = nil, ""
	case next.Domain != cur.Domain || next.DomainVerification == nil:
		next.DomainVerification = &DomainVerification{Status: DomainPending, RecordName: DomainRecordPrefix + next.Domain,
			RecordValue: domainValuePrefix + rand.Text()}
		next.VerifiedDomain = ""
	}
}

// VerifyDomain looks up the agent's verification record and answers the agent with what was
// found: verified when a TXT record at its name holds its value (the agent's page is then served
// at the domain), else pending with the problem. A domain another agent or a workspace's site
// has verified first is a Conflict (domain_taken); an agent with no domain is Invalid.
func (s *Service) VerifyDomain(ctx context.Context, projectID, idOrUUID string) (Bot, error) {
	return s.change(ctx, projectID, idOrUUID, func(cur, next *Bot) error {
		if next.Domain == "" {
			return apperr.Invalidf("domain", "is not set: set the agent's domain first")
		}
		claimDomain(cur, next)
		v := *next.DomainVerification
		now := s.now()
		v.CheckedAt, v.Problem = &now, ""
		problem, err := dnsrecord.TXT(ctx, s.hosts.TXT, v.RecordName, v.RecordValue)
		if err != nil {
			return apperr.Unavailablef("dns", err)
		}
		v.Problem = problem
		if v.Problem == "" && s.hosts.Sites != nil {
			taken, err := s.hosts.Sites.HasDomain(ctx, next.Domain)
			if err != nil {
				return err
			}
			if taken {
				return &apperr.Error{Kind: apperr.Conflict, Code: "domain_taken", Message: "domain " + next.Domain + " is a workspace's site",
					Details: []apperr.Detail{{Field: "domain", Problem: "is a workspace's site"}}}
			}
		}
		if v.Problem == "" {
			if v.Status != DomainVerified {
				v.VerifiedAt = &now
			}
			v.Status, next.VerifiedDomain = DomainVerified, next.Domain
		} else {
			v.Status, v.VerifiedAt, next.VerifiedDomain = DomainPending, nil, ""
		}
		next.DomainVerification = &v
		return nil
	})
}

// domainTaken is the Conflict of a domain another agent serves.
func domainTaken(domain string) error {
	return &apperr.Error{Kind: apperr.Conflict, Code: "domain_taken", Message: "domain " + domain + " is another agent's",
		Details: []apperr.Detail{{Field: "domain", Problem: "is another agent's"}}}
}

// CheckSubdomain says whether another site of the deployment (a published workspace) may take
// subdomain of the public domain: Invalid when it is no DNS label of 3 to 63 characters or is
// reserved, a Conflict (subdomain_taken) when it is an agent's page.
func (s *Service) CheckSubdomain(ctx context.Context, subdomain string) error {
	var p apperr.Problems
	s.hosts.checkSubdomain(&p, subdomain)
	if err := p.Err(); err != nil {
		return err
	}
	_, err := s.repo.BySubdomain(ctx, subdomain)
	switch {
	case err == nil:
		return apperr.New(apperr.Conflict, "subdomain_taken", "The subdomain "+subdomain+" is taken: choose another.")
	case apperr.As(err).Kind == apperr.NotFound:
		return nil
	}
	return err
}
