package usermemory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory/text"
	"github.com/agentplane/agentplane/shared/tasks"
)

// What a prompt gets of a user's memories.
const (
	// PromptMemories bounds how many.
	PromptMemories = 8
	// PromptBudget bounds their tokens (cl100k).
	PromptBudget = 400
)

// Models picks the model that extracts the facts of a message: the one that answered its turn
// (the request's provider, else the agent's key with the configured provider, else the
// configured provider or the offline model).
type Models func(ctx context.Context, p tasks.MemoryExtractPayload) (llm.Model, error)

// Service keeps end users' memories: it queues the extraction of a turn, extracts and merges
// (workers), recalls them for prompts, and lists and deletes them (the API).
type Service struct {
	repo   Repo
	queue  tasks.Queue
	models Models
	log    *slog.Logger
	now    func() time.Time
}

// NewService returns the service over repo, queueing extractions on queue, extracting with the
// model models picks.
func NewService(repo Repo, queue tasks.Queue, models Models, log *slog.Logger) *Service {
	return &Service{repo: repo, queue: queue, models: models, log: log,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Heard queues the extraction of p's message when it may say something durable about the user
// (Said): a Redis enqueue, no store command. The task's id is the message's, so queueing it
// again is one task.
func (s *Service) Heard(ctx context.Context, p tasks.MemoryExtractPayload) error {
	if p.UserUUID == "" || !Said(p.Text) {
		return nil
	}
	return s.queue.Enqueue(ctx, tasks.NewMemoryExtractTask(p))
}

// ErrDropped is an extraction given up for good (a model's malformed answer, a provider's
// refusal): the task ends without storing anything.
var ErrDropped = errors.New("memory extraction dropped")

// Extract finds the durable facts of p's message (rules with the offline model, else one model
// call with a strict JSON schema) and merges them into the user's memories. A malformed answer
// or a provider's refusal is ErrDropped; other failures are worth a retry.
func (s *Service) Extract(ctx context.Context, p tasks.MemoryExtractPayload) error {
	known, err := s.repo.ForUser(ctx, p.ProjectID, p.BotID, p.UserUUID)
	if err != nil {
		return err
	}
	model, err := s.models(ctx, p)
	if err != nil {
		if apperr.As(err).Kind == apperr.NotFound {
			return fmt.Errorf("%w: %v", ErrDropped, err)
		}
		return err
	}
	if llm.IsOffline(model) {
		return s.merge(ctx, p, known, Rules(p.Text))
	}
	req := request(p.Text, known)
	req.Model = p.Model
	res, err := model.Complete(ctx, req)
	switch {
	case llm.Permanent(err):
		return fmt.Errorf("%w: %v", ErrDropped, err)
	case err != nil:
		return err
	}
	facts, err := parse(res.Content)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDropped, err)
	}
	return s.merge(ctx, p, known, facts)
}

// merge writes facts into the user's memories known (most recently updated first): a fact of
// a known subject replaces that memory, one of the same normalized text as a known memory
// confirms it, any other is added, replacing the least recently confirmed beyond MaxPerUser.
func (s *Service) merge(ctx context.Context, p tasks.MemoryExtractPayload, known []Memory, facts []Fact) error {
	now := s.now()
	for _, f := range facts {
		m := Memory{ProjectID: p.ProjectID, BotID: p.BotID, UserUUID: p.UserUUID, Type: f.Type, Subject: Normalize(f.Subject),
			Content: f.Content, MessageID: p.MessageID, CreatedAt: now, UpdatedAt: now}
		m.ID = idOf(m)
		if i := slices.IndexFunc(known, func(k Memory) bool { return Normalize(k.Content) == Normalize(m.Content) }); i >= 0 {
			m.ID, m.Subject, m.CreatedAt = known[i].ID, known[i].Subject, known[i].CreatedAt
		}
		i := slices.IndexFunc(known, func(k Memory) bool { return k.ID == m.ID })
		if i < 0 && len(known) >= MaxPerUser {
			oldest := known[len(known)-1]
			if _, err := s.repo.Delete(ctx, p.ProjectID, p.BotID, oldest.ID); err != nil && apperr.As(err).Kind != apperr.NotFound {
				return err
			}
			known = known[:len(known)-1]
		}
		if err := s.repo.Put(ctx, m); err != nil {
			return err
		}
		if i >= 0 {
			known = slices.Delete(known, i, i+1)
		}
		known = slices.Insert(known, 0, m)
	}
	if len(facts) > 0 {
		s.log.Debug("user memories merged", "bot_id", p.BotID, "message_id", p.MessageID, "facts", len(facts))
	}
	return nil
}

// Recall is the prompt section of what the agent knows about the user that bears on the
// question ("" when nothing is known): at most PromptMemories of the user's memories within
// PromptBudget tokens, those sharing the most words with the question first, then the most
// recently confirmed. It reads only the user's own memories.
func (s *Service) Recall(ctx context.Context, projectID, botID, userUUID, question string) (string, error) {
	if userUUID == "" {
		return "", nil
	}
	all, err := s.repo.ForUser(ctx, projectID, botID, userUUID)
	if err != nil || len(all) == 0 {
		return "", err
	}
	return Section(relevant(all, question)), nil
}

// relevant picks the memories for a prompt out of ms (most recently updated first).
func relevant(ms []Memory, question string) []Memory {
	asked := map[string]bool{}
	for _, w := range words(question) {
		asked[w] = true
	}
	type scored struct {
		m     Memory
		score int
	}
	all := make([]scored, len(ms))
	for i, m := range ms {
		all[i].m = m
		for _, w := range words(m.Content) {
			if asked[w] {
				all[i].score++
			}
		}
	}
	slices.SortStableFunc(all, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	var out []Memory
	budget := PromptBudget
	for _, c := range all {
		if len(out) == PromptMemories {
			break
		}
		if budget -= text.Tokens(c.m.Content) + 2; budget < 0 {
			break
		}
		out = append(out, c.m)
	}
	return out
}

// unweighted are words every memory or question has.
var unweighted = map[string]bool{"the": true, "user": true, "users": true, "and": true, "you": true, "your": true, "for": true,
	"are": true, "was": true, "what": true, "who": true, "how": true, "asked": true, "remember": true, "with": true, "that": true, "this": true}

// words are the normalized words of s that weigh in relevance (three letters or more).
func words(s string) []string {
	var out []string
	for _, w := range strings.Fields(Normalize(s)) {
		if len(w) >= 3 && !unweighted[w] {
			out = append(out, w)
		}
	}
	return out
}

// Section is memories as a delimited part of a system prompt; "" for none. Their text is the
// user's own words at times: angle brackets are replaced so that none closes the section.
func Section(ms []Memory) string {
	if len(ms) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("What you know about this user from earlier conversations (use it when it helps; never say how you know it):\n<user_memories>")
	safe := strings.NewReplacer("<", "‹", ">", "›")
	for _, m := range ms {
		b.WriteString("\n- " + safe.Replace(m.Content))
	}
	b.WriteString("\n</user_memories>")
	return b.String()
}

// List returns a page of the agent's memories q selects, the most recently updated first, and
// how many there are.
func (s *Service) List(ctx context.Context, q Query, page paging.Page) ([]Memory, int, error) {
	if err := check(&q); err != nil {
		return nil, 0, err
	}
	return s.repo.List(ctx, q, page)
}

// Count returns how many memories q selects.
func (s *Service) Count(ctx context.Context, q Query) (int, error) {
	if err := check(&q); err != nil {
		return 0, err
	}
	return s.repo.Count(ctx, q)
}

// Delete removes the agent's memory id: from later prompts at once (NotFound when the agent
// has none of that id).
func (s *Service) Delete(ctx context.Context, projectID, botID, id string) error {
	if id = strings.TrimSpace(id); id == "" {
		return apperr.Invalidf("memory_id", "is required")
	}
	_, err := s.repo.Delete(ctx, projectID, botID, id)
	return err
}

// check validates a query's type and trims its user.
func check(q *Query) error {
	q.UserUUID, q.Type = strings.TrimSpace(q.UserUUID), strings.ToLower(strings.TrimSpace(q.Type))
	if q.Type != "" && !slices.Contains(Types, q.Type) {
		return apperr.Invalidf("type", "must be one of %s", strings.Join(Types, ", "))
	}
	return nil
}
