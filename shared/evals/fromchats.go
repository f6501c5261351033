package evals

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// MaxChats bounds the chats one dataset is built from.
const MaxChats = 100

// Transcript reads a chat of the agent as turns, oldest first: the end user's messages (user)
// and the agent's or an operator's answers (assistant). A chat of another agent is not found.
type Transcript func(ctx context.Context, projectID, botID, chatID string) ([]Turn, error)

// UseTranscripts makes the service read chats with t (FromChats needs it).
func (s *Service) UseTranscripts(t Transcript) { s.transcript = t }

// FromChats stores a dataset of cases taken from chats of the agent: each end user's message
// that was answered is a case, the conversation before it its context and the last answer to
// it (an operator's correction comes after the agent's answer) its expected answer.
func (s *Service) FromChats(ctx context.Context, projectID, botID, name string, chatIDs []string) (Dataset, error) {
	if len(chatIDs) == 0 {
		return Dataset{}, apperr.Invalidf("chat_ids", "at least one chat is required")
	}
	if len(chatIDs) > MaxChats {
		return Dataset{}, apperr.Invalidf("chat_ids", "has at most %d chats", MaxChats)
	}
	var cases []Case
	for i, id := range chatIDs {
		if strings.TrimSpace(id) == "" {
			return Dataset{}, apperr.Invalidf(fmt.Sprintf("chat_ids[%d]", i), "is empty")
		}
		turns, err := s.transcript(ctx, projectID, botID, id)
		if err != nil {
			return Dataset{}, err
		}
		cases = append(cases, casesOf(turns, fmt.Sprintf("chat_ids[%d]", i))...)
		if len(cases) > MaxCases {
			return Dataset{}, apperr.New(apperr.TooLarge, "eval_dataset_too_large", fmt.Sprintf("A dataset has at most %d cases; these chats hold more answered messages.", MaxCases))
		}
	}
	if len(cases) == 0 {
		return Dataset{}, apperr.Invalidf("chat_ids", "the chats hold no answered message of an end user")
	}
	return s.create(ctx, projectID, botID, Input{Name: name, Cases: cases}, func(i int) string { return cases[i].origin })
}

// casesOf is a case for each answered user turn of turns; origin names the chat in errors.
func casesOf(turns []Turn, origin string) []Case {
	var out []Case
	for i := 0; i < len(turns); i++ {
		if turns[i].Role != RoleUser {
			continue
		}
		j := i + 1
		for j < len(turns) && turns[j].Role == RoleAssistant {
			j++
		}
		if j == i+1 {
			continue
		}
		c := Case{ExpectedAnswer: turns[j-1].Content, origin: fmt.Sprintf("%s.messages[%d]", origin, i)}
		c.Conversation = turns[max(0, i+1-MaxTurns) : i+1]
		for len(c.Conversation) > 1 && c.size() > MaxCaseBytes {
			c.Conversation = c.Conversation[1:]
		}
		if len(c.Conversation) == 1 {
			c.Input, c.Conversation = c.Conversation[0].Content, nil
		}
		out = append(out, c)
		i = j - 1
	}
	return out
}
