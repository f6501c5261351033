package chats_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/chats"
)

// Every reply, made at once or by a run, finished, running or waiting for approval, carries the
// same fields: lists are never null, and what is finished says so in every field that tells it.
func TestNewReply(t *testing.T) {
	user := chats.Message{Content: "When do you close?", Model: "m1", Preference: chats.Preference{Model: "m1", ReasoningType: "standard"}}
	for _, tt := range []struct {
		name                                string
		a                                   chats.Answered
		reply, model                        string
		complete, more, converged, approval bool
	}{
		{"Answered", chats.Answered{Agent: chats.Message{Content: "At six.", Model: "m2"}, Done: true, Kind: "standard"}, "At six.", "m2", true, false, true, false},
		{"Capped", chats.Answered{Agent: chats.Message{Content: "Partly.", Model: "m2"}, Done: true, Kind: "agent", Capped: true}, "Partly.", "m2", true, false, false, false},
		{"Running", chats.Answered{Agent: chats.Message{Model: "m2"}, Kind: "agent", StepInfo: "Running"}, "", "m1", false, true, false, false},
		{"WaitingForApproval", chats.Answered{Kind: "agent", Tool: &chats.Tool{Name: "create_deal"}}, "", "m1", false, true, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := chats.NewReply("c1", user, time.Now(), tt.a)
			if r.Reply != tt.reply || r.FinalAnswer != tt.reply || r.Preference.Model != tt.model || r.ConfigUsed != r.Preference {
				t.Errorf("reply %q, final %q, model %q", r.Reply, r.FinalAnswer, r.Preference.Model)
			}
			if r.IsComplete != tt.complete || r.HasMoreSteps != tt.more || r.Converged != tt.converged || r.RequiresApprove != tt.approval {
				t.Errorf("complete %v, more steps %v, converged %v, approval %v", r.IsComplete, r.HasMoreSteps, r.Converged, r.RequiresApprove)
			}
			if r.ChatID != "c1" || r.OriginalQuery != user.Content || r.User.Content != user.Content {
				t.Errorf("chat %q, query %q", r.ChatID, r.OriginalQuery)
			}
			raw, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]any
			if err := json.Unmarshal(raw, &fields); err != nil {
				t.Fatal(err)
			}
			for _, list := range []string{"meta", "sources", "executedTools", "reasoningSteps", "reasoning", "reasoningCycles"} {
				if _, ok := fields[list].([]any); !ok {
					t.Errorf("%s is %v, not a list", list, fields[list])
				}
			}
		})
	}
}
