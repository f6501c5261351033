package provider_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/provider"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/memory/text"
)

// passages are the memory of the offline tests: [1] opening hours, [2] parking, [3] refunds.
func passages() []memory.Passage {
	return []memory.Passage{
		{ChunkID: "a-1-0", Text: "# Opening hours\n\nThe office opens at 9am on weekdays. On Saturdays the office opens at 10am and closes at noon. It is closed on Sundays."},
		{ChunkID: "b-1-0", Text: "Visitors can park in the garage behind the building. Parking is free for the first two hours!"},
		{ChunkID: "c-1-0", Text: "- Refunds are issued within 14 days of a return.\n- Damaged items are refunded in full, including shipping."},
	}
}

func ask(question string) llm.Request {
	return llm.Request{
		Model: "ignored",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "Answer from the passages."},
			{Role: llm.RoleUser, Content: "Where can I park?"},
			{Role: llm.RoleAssistant, Content: "In the garage [2]."},
			{Role: llm.RoleUser, Content: question},
		},
		Passages: passages(),
		NoAnswer: "Sorry, I have nothing on that.",
	}
}

// over asks question of the passages, each with its retrieval score (Passage.Score).
func over(question string, passages ...memory.Passage) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: question}}, Passages: passages}
}

func TestOffline(t *testing.T) {
	tests := []struct {
		name     string
		request  llm.Request
		want     string
		wantSome []string // when the answer is only partly fixed
	}{
		{
			name:    "the most relevant sentence, cited",
			request: ask("When does the office open on Saturday?"),
			want:    "On Saturdays the office opens at 10am and closes at noon. [1]",
		},
		{
			name:    "sentences of several passages, in passage order",
			request: ask("How long are refunds for damaged items, and is parking free?"),
			wantSome: []string{
				"Parking is free for the first two hours! [2]",
				"Damaged items are refunded in full, including shipping. [3]",
			},
		},
		{
			name: "related terms match, as memory searches them",
			request: over("How do I unpack it?",
				memory.Passage{Text: "The archive format is documented in the manual."},
				memory.Passage{Text: "Run tar -x to extract the archive."}),
			want: "Run tar -x to extract the archive. [2]",
		},
		{
			name: "a term held by fewer passages weighs more, however often one passage repeats it",
			request: over("Does the garage have a lift?",
				memory.Passage{Text: "The garage is behind the hotel. The garage closes at midnight. The garage has two floors. The garage is free for guests. The garage is guarded."},
				memory.Passage{Text: "Take the lift to the third floor."},
				memory.Passage{Text: "The lift is out of order today."},
				memory.Passage{Text: "The lift fits four people."},
				memory.Passage{Text: "The lift needs a key card."}),
			want: "The garage is behind the hotel. [1]",
		},
		{
			name: "of sentences matching alike, the one in the passage retrieval scored higher",
			request: over("When does the shop open?",
				memory.Passage{Text: "The shop opens at nine on weekdays.", Score: 1},
				memory.Passage{Text: "The shop opens at ten on Saturdays.", Score: 2}),
			want: "The shop opens at ten on Saturdays. [2]",
		},
		{
			name:    "nothing relevant",
			request: ask("What is the weather like on Mars?"),
			want:    "Sorry, I have nothing on that.",
		},
		{
			name:    "only stopwords",
			request: ask("What is it?"),
			want:    "Sorry, I have nothing on that.",
		},
		{
			name: "no passages and no NoAnswer",
			request: llm.Request{Messages: []llm.Message{
				{Role: llm.RoleUser, Content: "When does the office open?"},
			}},
			want: "I don't know the answer to that yet.",
		},
	}
	m := provider.NewOffline()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Complete(t.Context(), tt.request)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if tt.want != "" && got.Content != tt.want {
				t.Errorf("answer %q, want %q", got.Content, tt.want)
			}
			last := -1
			for _, s := range tt.wantSome {
				i := strings.Index(got.Content, s)
				if i <= last {
					t.Errorf("answer %q lacks %q after the previous sentence", got.Content, s)
				}
				last = i
			}
			prompt := 0
			for _, msg := range tt.request.Messages {
				prompt += text.Tokens(msg.Content)
			}
			wantUsage := llm.Usage{PromptTokens: prompt, CompletionTokens: text.Tokens(got.Content),
				TotalTokens: prompt + text.Tokens(got.Content), Counted: true}
			if got.Model != "offline-extractive" || got.Usage != wantUsage || got.FinishReason != "stop" {
				t.Errorf("reply %+v, want model offline-extractive, usage %+v", got, wantUsage)
			}

			var deltas []string
			streamed, err := m.Stream(t.Context(), tt.request, collect(&deltas))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if !reflect.DeepEqual(streamed, got) || strings.Join(deltas, "") != got.Content {
				t.Errorf("streamed %+v in %q, want %+v", streamed, deltas, got)
			}
			if len(strings.Fields(got.Content)) > 4 && len(deltas) < 2 {
				t.Errorf("streamed %q in one piece", deltas)
			}
		})
	}
}

func TestOfflineStreamCancelled(t *testing.T) {
	m := provider.NewOffline()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var deltas []string
	got, err := m.Stream(ctx, ask("When does the office open on Saturday?"), func(d string) error {
		deltas = append(deltas, d)
		cancel()
		return nil
	})
	if err != context.Canceled {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if len(deltas) != 1 || got.Content != deltas[0] {
		t.Errorf("partial reply %q after deltas %q", got.Content, deltas)
	}
	if m.Name() != "offline-extractive" {
		t.Errorf("Name() = %q", m.Name())
	}
}
