package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// BenchmarkOpenAIDoor measures what the OpenAI-compatible door adds to a turn: the same standard
// turn (a new chat, one retrieval, one call of the fake provider on loopback), asked through
// POST /v1/bot/chat and through POST /v1/chat/completions, one after the other in each
// iteration so that both see the same store and the same load. Reports each one's p50/p99 and
// the ratio of the door's p50 to the chat's (x-chat). Use -benchtime 300x or more.
func BenchmarkOpenAIDoor(b *testing.B) {
	fake := providertest.New(b)
	fake.Set(providertest.Behavior{Reply: "The shop closes at six."})
	bb := setup(b, withProvider(fake.URL), withRateLimit(0))
	botID := createBench(b, bb)
	chat, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "message": "When do you close?", "reasoning_mode": "standard"})
	completion, _ := json.Marshal(map[string]any{"model": "agent:" + botID, "reasoning_effort": "low",
		"messages": []any{map[string]any{"role": "user", "content": "When do you close?"}}})
	ask := func(path string, body []byte) (time.Duration, error) {
		start := time.Now()
		res, err := benchDo(bb, http.MethodPost, path, body)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		if res.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%s: status %d", path, res.StatusCode)
		}
		return time.Since(start), nil
	}
	var chats, doors []time.Duration
	for b.Loop() {
		c, err := ask("/v1/bot/chat", chat)
		if err != nil {
			b.Fatal(err)
		}
		d, err := ask("/v1/chat/completions", completion)
		if err != nil {
			b.Fatal(err)
		}
		chats, doors = append(chats, c), append(doors, d)
	}
	slices.Sort(chats)
	slices.Sort(doors)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(chats[len(chats)/2]), "chat-p50-ms")
	b.ReportMetric(ms(chats[len(chats)*99/100]), "chat-p99-ms")
	b.ReportMetric(ms(doors[len(doors)/2]), "door-p50-ms")
	b.ReportMetric(ms(doors[len(doors)*99/100]), "door-p99-ms")
	b.ReportMetric(float64(doors[len(doors)/2])/float64(chats[len(chats)/2]), "x-chat")
}
