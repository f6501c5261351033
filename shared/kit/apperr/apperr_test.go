package apperr_test

import (
	"testing"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// A kind kept as its word reads back as the same kind.
func TestKindNames(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range apperr.Kinds() {
		name := k.String()
		if name == "" || seen[name] {
			t.Errorf("kind %d is named %q", k, name)
		}
		seen[name] = true
		if got := apperr.KindNamed(name); got != k {
			t.Errorf("%q reads back as kind %d, want %d", name, got, k)
		}
	}
	if got := apperr.KindNamed("no such kind"); got != apperr.Internal {
		t.Errorf("an unknown word reads as kind %d", got)
	}
}
