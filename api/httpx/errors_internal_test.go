package httpx

import (
	"testing"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Every kind of error has its own HTTP status, a client or server error.
func TestEveryKindHasAStatus(t *testing.T) {
	seen := map[int]apperr.Kind{}
	for _, k := range apperr.Kinds() {
		status := StatusOf(k)
		if status < 400 || status > 599 {
			t.Errorf("kind %s answers %d", k, status)
		}
		if other, ok := seen[status]; ok {
			t.Errorf("kinds %s and %s both answer %d", k, other, status)
		}
		seen[status] = k
	}
}
