package safehttp_test

import (
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/safehttp"
)

// FuzzCheckURL holds URL validation to what it promises: no panic, and a URL it accepts is http
// or https, has a host and carries no credentials.
func FuzzCheckURL(f *testing.F) {
	for _, seed := range []string{
		"https://example.com/a?b=c#d", "http://127.0.0.1/", "http://0x7f.1/", "http://[::1]:8080/", "http://user:pw@example.com/",
		"ftp://example.com/", "http://example.com:22/", "//example.com", "http://%zz", "https://exa mple.com", "http://2130706433/",
		"http://[fe80::1%25eth0]/", "javascript:alert(1)", "",
	} {
		f.Add(seed)
	}
	guarded, open := safehttp.New(safehttp.Options{}), safehttp.New(safehttp.Options{AllowPrivate: true})
	f.Fuzz(func(t *testing.T, raw string) {
		for _, c := range []*safehttp.Client{guarded, open} {
			u, err := c.CheckURL(raw)
			if err != nil {
				continue
			}
			if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || strings.ContainsAny(u.Host, " \t\n") {
				t.Fatalf("accepted %q as %#v", raw, u)
			}
		}
	})
}
