// Package dnstxt looks up TXT records (dnsrecord.TXTResolver) and aliases (CNAME records) through a
// configured DNS server, or the system's resolver.
package dnstxt

import (
	"context"
	"net"
	"strings"
	"time"
)

// Timeout bounds one lookup.
const Timeout = 5 * time.Second

// Resolver looks up TXT records.
type Resolver struct{ r *net.Resolver }

// New returns a resolver asking the DNS server at addr (host:port), or the system's resolver
// when addr is "".
func New(addr string) *Resolver {
	if addr == "" {
		return &Resolver{r: net.DefaultResolver}
	}
	var d net.Dialer
	return &Resolver{r: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}}
}

// LookupTXT returns the TXT records of name, a fully qualified name (no search domain is
// tried); a *net.DNSError whose IsNotFound is true when it has none.
func (r *Resolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	return r.r.LookupTXT(ctx, strings.TrimSuffix(name, ".")+".")
}

// LookupCNAME returns the canonical name name is an alias of (name itself when it is no
// alias), without the final dot; a *net.DNSError whose IsNotFound is true when the name does not
// exist.
func (r *Resolver) LookupCNAME(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cname, err := r.r.LookupCNAME(ctx, strings.TrimSuffix(name, ".")+".")
	return strings.TrimSuffix(strings.ToLower(cname), "."), err
}
