package apperr_test

import (
	"context"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/keylock"
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

// Reapply applies a change again while other requests' writes cross it, up to 50 times: a
// change crossed 49 times lands on its 50th try; one crossed every time answers the resource's
// `_changed` conflict after its 50th; another error, or another resource's conflict, is not
// retried.
func TestReapplyTriesFiftyTimes(t *testing.T) {
	t.Parallel()
	var locks keylock.Locks
	changed := apperr.New(apperr.Conflict, "deal_changed", "The deal was changed or deleted by another request; read it and retry.")
	for _, c := range []struct {
		name    string
		crossed int
		err     error
		tries   int
		landed  bool
	}{
		{"crossed 49 times", 49, changed, 50, true},
		{"crossed every time", 1000, changed, 50, false},
		{"another resource's conflict", 1000, apperr.New(apperr.Conflict, "agent_changed", "changed"), 1, false},
		{"another error", 1000, apperr.Invalidf("title", "is required"), 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tries := 0
			got, err := apperr.Reapply(context.Background(), &locks, "deal", "d1", func() (int, error) {
				tries++
				if tries <= c.crossed {
					return 0, c.err
				}
				return tries, nil
			})
			if tries != c.tries || c.landed != (err == nil) || c.landed && got != c.tries || !c.landed && err != c.err {
				t.Fatalf("%d tries, got %d, %v", tries, got, err)
			}
		})
	}
}
