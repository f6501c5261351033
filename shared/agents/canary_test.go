package agents_test

import (
	"fmt"
	"testing"

	"github.com/agentplane/agentplane/shared/agents"
)

// The canary's share of chats is close to its share of chat ids, and the same id always falls
// the same way.
func TestInShareTakesItsShare(t *testing.T) {
	const n = 10000
	for _, share := range []float64{0.1, 0.5, 0.9} {
		in := 0
		for i := range n {
			id := fmt.Sprintf("01a21ee6-b030-713c-b7ba-%012d", i)
			got := agents.InShare(id, share)
			if got != agents.InShare(id, share) {
				t.Fatalf("%s fell both ways", id)
			}
			if got {
				in++
			}
		}
		if got := float64(in) / n; got < share-0.02 || got > share+0.02 {
			t.Errorf("share %v took %v of the chats", share, got)
		}
	}
}
