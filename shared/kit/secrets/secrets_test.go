package secrets_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/secrets"
)

func box(t *testing.T) secrets.Box {
	t.Helper()
	key, err := secrets.ParseKey(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	b, err := secrets.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A sealed value opens with its key for its owner only, never shows the plain text, and seals
// differently each time.
func TestSealOpen(t *testing.T) {
	b, other := box(t), box(t)
	plain := []byte(`{"token":"sk-shop-secret"}`)
	sealed, err := b.Seal(plain, "tool-1")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := b.Seal(plain, "tool-1")
	if strings.Contains(sealed, "sk-shop") || sealed == again {
		t.Fatalf("sealed %q and %q", sealed, again)
	}
	if got, err := b.Open(sealed, "tool-1"); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %q, %v", got, err)
	}
	for name, open := range map[string]func() ([]byte, error){
		"another owner": func() ([]byte, error) { return b.Open(sealed, "tool-2") },
		"another key":   func() ([]byte, error) { return other.Open(sealed, "tool-1") },
		"tampered":      func() ([]byte, error) { return b.Open(sealed[:len(sealed)-4]+"AAA=", "tool-1") },
		"not sealed":    func() ([]byte, error) { return b.Open("plain text", "tool-1") },
		"no key":        func() ([]byte, error) { return secrets.Box{}.Open(sealed, "tool-1") },
	} {
		if got, err := open(); err == nil {
			t.Errorf("%s: opened to %q", name, got)
		}
	}
	if _, err := (secrets.Box{}).Seal(plain, "tool-1"); err != secrets.ErrNoKey {
		t.Fatalf("sealing without a key: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{secrets.NewKey(), true},
		{strings.TrimRight(secrets.NewKey(), "="), true},
		{"c2hvcnQ=", false},
		{"not base64!!", false},
		{"", false},
	} {
		if _, err := secrets.ParseKey(tt.in); (err == nil) != tt.ok {
			t.Errorf("ParseKey(%q): %v", tt.in, err)
		}
	}
}
