package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/channels/telegram/telegramtest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// BenchmarkChannel measures what a channel adds to a chat turn: a Telegram message from the
// webhook call to the Bot API's sendMessage (signature, the message kept, the queue, the turn
// in a worker, the answer kept and sent), beside the same standard turn through /v1/bot/chat, in
// one run against the same fake provider, each message a new conversation. It reports p50/p99
// at 1 and 16 concurrent senders.
func BenchmarkChannel(b *testing.B) {
	fake := providertest.New(b)
	fake.Set(providertest.Behavior{Reply: "The shop closes at six."})
	bb := setup(b, withProvider(fake.URL), withRateLimit(0))
	bb.startWorker(b, workerOptions{})
	botID := createBench(b, bb)
	tg := telegramtest.New(b, "5:bench-token")
	raw, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "type": "telegram", "api_base_url": tg.URL,
		"credentials": map[string]any{"bot_token": tg.Token}})
	r, _ := http.NewRequest(http.MethodPost, bb.client.URL+"/v1/bot/channel/create", bytes.NewReader(raw))
	r.Header.Set("Authorization", "Bearer "+bb.key)
	r.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(r)
	if err != nil || res.StatusCode != http.StatusOK {
		b.Fatalf("create the channel: %v %v", res, err)
	}
	_ = res.Body.Close()
	var (
		mu      sync.Mutex
		waiting = map[string]chan struct{}{}
		next    atomic.Int64
	)
	tg.OnSent(func(c telegramtest.Call) {
		mu.Lock()
		defer mu.Unlock()
		if ch, ok := waiting[c.Params["chat_id"]]; ok {
			close(ch)
			delete(waiting, c.Params["chat_id"])
		}
	})
	viaTelegram := func() error {
		n := next.Add(1)
		chat := strconv.FormatInt(1_000_000+n, 10)
		done := make(chan struct{})
		mu.Lock()
		waiting[chat] = done
		mu.Unlock()
		status, _, err := tg.Deliver(context.Background(), telegramtest.TextUpdate(int(n), 1_000_000+n, telegramtest.Alice, "When do you close?"))
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("the webhook: %d %v", status, err)
		}
		<-done
		return nil
	}
	body, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "message": "When do you close?"})
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = 64
	for _, clients := range []int{1, 16} {
		for _, c := range []struct {
			name string
			op   func() error
		}{{"Chat", chatting(bb, body)}, {"Telegram", viaTelegram}} {
			b.Run(fmt.Sprintf("%s/clients=%d", c.name, clients), func(b *testing.B) {
				concurrently(b, clients, c.op)
			})
		}
	}
}
