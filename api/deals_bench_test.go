package api_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// BenchmarkConcurrentUpdates measures 8 concurrent updates of one deal, each an op of its own
// (ns/op is the time for all 8 to land), against the baseline of 8 concurrent updates of 8
// different deals in the same run. docs/BENCHMARKS.md reports the ratio: what taking turns on
// one document costs over updates that never meet.
func BenchmarkConcurrentUpdates(b *testing.B) {
	bb := setup(b, withRateLimit(0))
	botID := bb.createBot(b, nil)["id"].(string)
	scope := func(m map[string]any) map[string]any {
		m["project_id"], m["bot_id"] = bb.project.ID, botID
		return m
	}
	const n = 8
	deals := make([]string, n)
	for i := range deals {
		deals[i] = bb.deal(b, "POST", "/v1/bot/crm/deals", scope(map[string]any{"title": "Bench", "value": 1})).UUID
	}
	var value atomic.Int64
	for _, c := range []struct {
		name string
		deal func(i int) string
	}{
		{"DifferentDeals", func(i int) string { return deals[i] }},
		{"OneDeal", func(int) string { return deals[0] }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						// Try, not Do: FailNow must not be called from this goroutine.
						res, err := bb.client.Try(apitest.Request{Method: "PUT", Path: "/v1/bot/crm/deals/" + c.deal(i), Key: bb.key,
							Body: scope(map[string]any{"value": value.Add(1)})})
						switch {
						case err != nil:
							b.Error(err)
						case res.Status != http.StatusOK:
							b.Errorf("status %d: %s", res.Status, res.Body)
						}
					})
				}
				wg.Wait()
			}
		})
	}
}
