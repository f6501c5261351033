package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/agentplane/agentplane/shared/adapters/provider"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/llm"
)

// BenchmarkChat measures what the platform adds to a model call: a standard chat through the
// API (auth, agent, chat and messages in the store, retrieval, events, provider call) against
// the same provider called directly, side by side against the fake provider on loopback. It
// reports latency p50/p99 at 1 and 16 concurrent clients, requests per second, and the time to
// the first streamed delta.
func BenchmarkChat(b *testing.B) {
	fake := providertest.New(b)
	fake.Set(providertest.Behavior{Reply: "The shop closes at six.", Chunks: 3})
	bb := setup(b, withProvider(fake.URL), withRateLimit(0))
	botID := createBench(b, bb)
	direct := provider.NewOpenAI(provider.Config{BaseURL: fake.URL, APIKey: "k", Timeout: 10 * time.Second})
	req := llm.Request{Model: "gpt-4o-mini", MaxTokens: 1024, Messages: []llm.Message{{Role: "system", Content: "You are helpful."}, {Role: "user", Content: "When do you close?"}}}
	body, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "message": "When do you close?"})
	streamBody, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "message": "When do you close?", "stream": true})
	post := func(body []byte) (*http.Response, error) { return postChat(bb, body) }
	platform := chatting(bb, body)
	directCall := func() error { _, err := direct.Complete(context.Background(), req); return err }
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = 64

	for _, clients := range []int{1, 16} {
		for _, c := range []struct {
			name string
			op   func() error
		}{{"Direct", directCall}, {"Platform", platform}} {
			b.Run(fmt.Sprintf("%s/clients=%d", c.name, clients), func(b *testing.B) {
				concurrently(b, clients, c.op)
			})
		}
	}
	b.Run("TimeToFirstDelta/Direct", func(b *testing.B) {
		firstByte(b, func() (time.Duration, error) {
			var first time.Duration
			start := time.Now()
			_, err := direct.Stream(context.Background(), req, func(string) error {
				if first == 0 {
					first = time.Since(start)
				}
				return nil
			})
			return first, err
		})
	})
	b.Run("TimeToFirstDelta/Platform", func(b *testing.B) {
		firstByte(b, func() (time.Duration, error) {
			start := time.Now()
			res, err := post(streamBody)
			if err != nil {
				return 0, err
			}
			defer res.Body.Close()
			var first time.Duration
			for ev, err := range sse.Read(res.Body, nil) {
				if err != nil {
					return 0, err
				}
				if ev.Type == "delta" && first == 0 {
					first = time.Since(start)
				}
			}
			return first, nil
		})
	})
}

// BenchmarkChatOneWord measures a standard chat whose message is 32,000 letters written as one
// word (no space) and as words of seven letters, side by side: the word must not cost much
// more than the words (the token count's byte-pair merge was quadratic in a word's length).
func BenchmarkChatOneWord(b *testing.B) {
	fake := providertest.New(b)
	fake.Set(providertest.Behavior{Reply: "The shop closes at six.", Chunks: 3})
	bb := setup(b, withProvider(fake.URL), withRateLimit(0))
	botID := createBench(b, bb)
	word := make([]byte, 32000)
	x := uint32(2463534242)
	for i := range word {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		word[i] = 'a' + byte(x%26)
	}
	words := bytes.Clone(word)
	for i := 7; i < len(words); i += 8 {
		words[i] = ' '
	}
	for _, c := range []struct {
		name string
		msg  []byte
	}{{"words", words}, {"word", word}} {
		body, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "message": string(c.msg)})
		op := chatting(bb, body)
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// postChat sends body to POST /v1/bot/chat with bb's key.
func postChat(bb *bundle, body []byte) (*http.Response, error) {
	r, _ := http.NewRequest(http.MethodPost, bb.client.URL+"/v1/bot/chat", bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+bb.key)
	r.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(r)
}

// chatting is one chat of body through the platform, read to its end.
func chatting(bb *bundle, body []byte) func() error {
	return func() error {
		res, err := postChat(bb, body)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
}

// firstByte runs op b.N times and reports the p50/p99 of the durations it returns.
func firstByte(b *testing.B, op func() (time.Duration, error)) {
	b.Helper()
	times := make([]time.Duration, b.N)
	for i := range b.N {
		d, err := op()
		if err != nil || d == 0 {
			b.Fatal("no first delta", err)
		}
		times[i] = d
	}
	report(b, times)
}

// concurrently runs op b.N times from clients goroutines and reports p50/p99 latency and
// requests per second.
func concurrently(b *testing.B, clients int, op func() error) {
	b.Helper()
	times := make([]time.Duration, b.N)
	var (
		next = make(chan int, b.N)
		wg   sync.WaitGroup
		errs = make(chan error, clients)
	)
	for i := range b.N {
		next <- i
	}
	close(next)
	b.ResetTimer()
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for i := range next {
				t := time.Now()
				if err := op(); err != nil {
					errs <- err
					return
				}
				times[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	report(b, times)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}

func report(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}

// createBench creates the benchmark's agent.
func createBench(b *testing.B, bb *bundle) string {
	b.Helper()
	raw, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "name": "Bench", "model": "gpt-4o-mini"})
	r, _ := http.NewRequest(http.MethodPost, bb.client.URL+"/v1/bot/create", bytes.NewReader(raw))
	r.Header.Set("Authorization", "Bearer "+bb.key)
	r.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ Bot struct{ UUID string } }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || out.Bot.UUID == "" {
		b.Fatal("create bot", err)
	}
	return out.Bot.UUID
}

// BenchmarkChatStored measures whether a chat costs more once the store holds many: the same
// standard chat into a new chat, at 1 and 16 clients, on a fresh store and on one holding 100,000
// chats of the same agent (seeded directly, each with a question and its answer), side by side in
// one run. The ratio of the two is the cost of what is stored; a hot-path read that scans what
// grows shows here.
func BenchmarkChatStored(b *testing.B) {
	fake := providertest.New(b)
	fake.Set(providertest.Behavior{Reply: "The shop closes at six.", Chunks: 3})
	for _, stored := range []int{0, 100_000} {
		bb := setup(b, withProvider(fake.URL), withRateLimit(0))
		botID := createBench(b, bb)
		seedChats(b, bb, botID, stored)
		body, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "message": "When do you close?"})
		platform := chatting(bb, body)
		for _, clients := range []int{1, 16} {
			b.Run(fmt.Sprintf("stored=%d/clients=%d", stored, clients), func(b *testing.B) { concurrently(b, clients, platform) })
		}
	}
}

// seedChats stores n chats of the agent botID as the API would have (each a question and its
// answer, kept with the chat), in batches.
func seedChats(b *testing.B, bb *bundle, botID string, n int) {
	b.Helper()
	ctx := context.Background()
	var bot struct {
		ID string `bson:"_id"`
	}
	if err := bb.db.Collection("bots").FindOne(ctx, map[string]any{"uuid": botID}).Decode(&bot); err != nil {
		b.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	for start := 0; start < n; start += 1000 {
		var batch []any
		for i := start; i < min(start+1000, n); i++ {
			id := fmt.Sprintf("seeded-%06d", i)
			batch = append(batch, chats.Chat{UUID: id, ProjectID: bb.project.ID, BotID: bot.ID, Title: "When do you close?", Messages: 2,
				CreatedAt: at, UpdatedAt: at, RecentFrom: 1, Rev: 2, Recent: []chats.Message{
					{UUID: id + "-1", ChatID: id, Seq: 1, Role: chats.RoleUser, Content: "When do you close?", CreatedAt: at, UpdatedAt: at},
					{UUID: id + "-2", ChatID: id, Seq: 2, Role: chats.RoleAgent, Content: "The shop closes at six.", CreatedAt: at, UpdatedAt: at},
				}})
		}
		if _, err := bb.db.Collection("chats").InsertMany(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}
