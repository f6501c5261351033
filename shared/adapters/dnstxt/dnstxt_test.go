package dnstxt_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/dnstxt"
	"github.com/agentplane/agentplane/shared/adapters/dnstxt/dnstxttest"
)

// The configured server is asked: a name's records are answered, a name without any is not
// found, and a server that does not answer is an error of another kind.
func TestLookupTXT(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := dnstxttest.Start(t)
	srv.SetTXT("_agentplane.help.example.com", "v=spf1 -all", "agentplane-verification=abc")
	r := dnstxt.New(srv.Addr)

	got, err := r.LookupTXT(ctx, "_agentplane.help.example.com")
	if err != nil || !slices.Equal(got, []string{"v=spf1 -all", "agentplane-verification=abc"}) {
		t.Fatalf("records %q, %v", got, err)
	}
	var dnsErr *net.DNSError
	if _, err := r.LookupTXT(ctx, "_agentplane.other.example.com"); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("a name without records: %v", err)
	}

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	silent := pc.LocalAddr().String()
	_ = pc.Close()
	if _, err := dnstxt.New(silent).LookupTXT(ctx, "_agentplane.help.example.com"); err == nil || (errors.As(err, &dnsErr) && dnsErr.IsNotFound) {
		t.Fatalf("a server that does not answer: %v", err)
	}
}

// An alias is answered as its canonical name, a name that is none as not found.
func TestLookupCNAME(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := dnstxttest.Start(t)
	srv.SetCNAME("app.shop.example", "Sites.Example.")
	r := dnstxt.New(srv.Addr)
	if got, err := r.LookupCNAME(ctx, "app.shop.example"); err != nil || got != "sites.example" {
		t.Fatalf("alias %q, %v", got, err)
	}
	var dnsErr *net.DNSError
	if got, err := r.LookupCNAME(ctx, "www.shop.example"); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("a name that does not exist: %q, %v", got, err)
	}
}
