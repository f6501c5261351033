// Package dnsrecord checks that the DNS holds a record a user was asked to create (the ownership
// token of an agent's or a workspace's custom domain).
package dnsrecord

import (
	"context"
	"errors"
	"net"
	"slices"
)

// TXTResolver looks up the TXT records of a name. An error that is a *net.DNSError with
// IsNotFound means the name has none.
type TXTResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// TXT says why the TXT records at name do not hold value ("" when they do); err is a lookup that
// failed for another reason than the name having none.
func TXT(ctx context.Context, r TXTResolver, name, value string) (problem string, err error) {
	found, err := r.LookupTXT(ctx, name)
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "no TXT record at " + name, nil
	case err != nil:
		return "", err
	case !slices.Contains(found, value):
		return "the TXT records at " + name + " do not hold " + value, nil
	}
	return "", nil
}
