package chats

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/apperr"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/memory/text"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/paging"
	"github.com/agentplane/agentplane/shared/provider"
)

// historyBudget is how many tokens of earlier turns a prompt carries at most.
const historyBudget = 3000

// historyTurns bounds how many earlier messages are considered for the prompt.
const historyTurns = 20

// defaultInstruction is the system prompt of an agent without an instruction.
const defaultInstruction = "You are a helpful assistant."

// Providers picks the model that answers a request.
type Providers struct {
	// Default answers when the request names no provider host: the configured provider, or the
	// offline model.
	Default provider.Model
	// BaseURL and Key are the configured provider's ("" when none): a request's provider_key
	// (or the agent's) is used with BaseURL.
	BaseURL string
	// Guarded is the SSRF-guarded client, for provider hosts requests name.
	Guarded *http.Client
	Timeout time.Duration
}

func (p Providers) pick(in Input, bot agents.Bot) provider.Model {
	key := in.ProviderKey
	if key == "" {
		key = bot.ProviderKey
	}
	switch {
	case in.ProviderHost != "":
		return provider.NewOpenAI(provider.Config{BaseURL: in.ProviderHost, APIKey: in.ProviderKey, HTTPClient: p.Guarded, Timeout: p.Timeout})
	case p.BaseURL != "" && key != "":
		return provider.NewOpenAI(provider.Config{BaseURL: p.BaseURL, APIKey: key, Timeout: p.Timeout})
	}
	return p.Default
}

// Service holds the conversation rules and the standard reply pipeline.
type Service struct {
	repo      Repo
	events    *outbox.Dispatcher
	memory    *memory.Memory
	providers Providers
	log       *slog.Logger
	now       func() time.Time
}

// NewService returns the chat service.
func NewService(repo Repo, events *outbox.Dispatcher, mem *memory.Memory, providers Providers, log *slog.Logger) *Service {
	return &Service{repo: repo, events: events, memory: mem, providers: providers, log: log,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Sink receives the progress of a reply as it is made (a streamed response).
type Sink interface {
	// Stored is called once the user's message is stored.
	Stored(m Message) error
	// Delta is called with each piece of the reply as the model produces it.
	Delta(text string) error
}

// Usage is the interface's usage record (2.5).
type Usage struct {
	PromptTokens            int            `json:"prompt_tokens"`
	CompletionTokens        int            `json:"completion_tokens"`
	TotalTokens             int            `json:"total_tokens"`
	ReasoningType           string         `json:"reasoning_type"`
	ConversationCount       int            `json:"conversation_count"`
	PromptTokensDetails     map[string]int `json:"prompt_tokens_details"`
	CompletionTokensDetails map[string]int `json:"completion_tokens_details"`
}

// Reply is the `chat` object of a chat answer (4.1) for the standard reasoning mode.
type Reply struct {
	ChatID          string       `json:"chat_id"`
	Reply           string       `json:"reply"`
	User            Message      `json:"user"`
	Agent           Message      `json:"agent"`
	Preference      Preference   `json:"preference"`
	ConfigUsed      Preference   `json:"config_used"`
	Meta            []memory.Ref `json:"meta"`
	Sources         []memory.Ref `json:"sources"`
	Usage           Usage        `json:"usage"`
	AnalyticsID     int64        `json:"analytics_id"`
	ActualTimeMS    int64        `json:"actual_time_ms"`
	AvailableTools  int          `json:"availableTools"`
	TotalSteps      int          `json:"totalSteps"`
	TotalCycles     int          `json:"totalCycles"`
	Type            string       `json:"type"`
	OriginalQuery   string       `json:"originalQuery"`
	Context         string       `json:"context"`
	ExecutionID     string       `json:"executionId"`
	StepInfo        string       `json:"stepInfo"`
	FinalAnswer     string       `json:"finalAnswer"`
	RequiresApprove bool         `json:"requiresApproval"`
	IsComplete      bool         `json:"isComplete"`
	HasMoreSteps    bool         `json:"hasMoreSteps"`
	Converged       bool         `json:"converged"`
	ExecutedTools   []any        `json:"executedTools"`
	ReasoningSteps  []any        `json:"reasoningSteps"`
	Reasoning       []any        `json:"reasoning"`
	ReasoningCycles []any        `json:"reasoningCycles"`
}

// Asker is who sends the message: the account behind the API key.
type Asker struct {
	AccountID string
	Name      string
}

// Reply answers in.Message as bot in one retrieval and one model call (reasoning mode
// standard; auto picks it too). The user's message is stored first; when ctx ends while the
// model streams (the client went away), what was generated is stored marked interrupted.
func (s *Service) Reply(ctx context.Context, projectID string, bot agents.Bot, asker Asker, in Input, sink Sink) (Reply, error) {
	started := time.Now()
	if err := in.Validate(); err != nil {
		return Reply{}, err
	}
	if in.ReasoningMode == "agent" {
		return Reply{}, apperr.Invalidf("reasoning_mode", "agent runs are not available yet; use standard or auto")
	}
	if !bot.Active() {
		return Reply{}, apperr.New(apperr.Forbidden, "bot_inactive", "The agent is inactive (status 0); activate it to chat.")
	}
	chat, err := s.chatFor(ctx, projectID, bot, in)
	if err != nil {
		return Reply{}, err
	}
	earlier, err := s.repo.Range(ctx, chat.UUID, chat.Messages-historyTurns+1, chat.Messages)
	if err != nil {
		return Reply{}, err
	}
	question := strings.TrimSpace(*in.Message)
	model := s.providers.pick(in, bot)
	req := provider.Request{Model: modelName(in, bot), MaxTokens: maxTokens(in, bot), NoAnswer: bot.NoAnswerReply}
	asked := Preference{ReasoningType: "standard", Model: req.Model, MaxTokens: req.MaxTokens, Complexity: complexity(question)}
	now := s.now()
	user := Message{Model: req.Model, Preference: asked, UUID: uuid.Must(uuid.NewV7()).String(), ChatID: chat.UUID, Role: RoleUser, Content: question,
		Channel: "api", CreditUsed: "0", Tokens: text.Tokens(question), Reasoning: map[string]any{}, Sources: []memory.Ref{},
		User: User{UUID: asker.AccountID, Name: asker.Name}, CreatedAt: now, UpdatedAt: now, Complexity: complexity(question),
		ReasoningType: "standard", EstimatedTimeMS: "0", EstimatedCost: "0.000000", Confidence: "", ConfidenceScore: ""}
	if err := s.append(ctx, projectID, bot, chat, &user); err != nil {
		return Reply{}, err
	}
	if sink != nil {
		if err := sink.Stored(user); err != nil {
			return Reply{}, err
		}
	}

	passages, err := s.retrieve(ctx, projectID, bot, in, question)
	if err != nil {
		return Reply{}, err
	}
	req.Messages, req.Passages = prompt(in, bot, earlier, passages, question), passages
	called := time.Now()
	var res provider.Reply
	if sink != nil {
		res, err = model.Stream(ctx, req, sink.Delta)
	} else {
		res, err = model.Complete(ctx, req)
	}
	interrupted := err != nil && ctx.Err() != nil && res.Content != ""
	if err != nil && !interrupted {
		return Reply{}, err
	}
	if res.Model == "" {
		res.Model = req.Model
	}
	pref := asked
	pref.Model = res.Model
	cited := citations(res.Content, passages)
	confidence, score := confidenceOf(passages, cited)
	done := s.now()
	agent := Message{UUID: uuid.Must(uuid.NewV7()).String(), ChatID: chat.UUID, Role: RoleAgent, Content: res.Content, Model: res.Model,
		Complexity: user.Complexity, ReasoningType: "standard", EstimatedTimeMS: strconv.FormatInt(time.Since(called).Milliseconds(), 10),
		EstimatedCost: estimatedCost(res.Model, res.Usage.PromptTokens, res.Usage.CompletionTokens), Confidence: confidence,
		ConfidenceScore: score, Channel: "api", CreditUsed: "1", Tokens: res.Usage.CompletionTokens, Reasoning: map[string]any{},
		Preference: pref, Sources: cited, Interrupted: interrupted,
		User: User{UUID: bot.UUID, Name: bot.Name, Avatar: bot.Avatar, AvatarLink: bot.AvatarLink}, CreatedAt: done, UpdatedAt: done}
	if interrupted {
		stored, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s.append(stored, projectID, bot, chat, &agent); err != nil {
			s.log.Warn("interrupted reply not stored", "chat_id", chat.UUID, "error", err)
		}
		return Reply{}, ctx.Err()
	}
	if err := s.append(ctx, projectID, bot, chat, &agent); err != nil {
		return Reply{}, err
	}
	return Reply{
		ChatID: chat.UUID, Reply: res.Content, User: user, Agent: agent, Preference: pref, ConfigUsed: pref,
		Meta: cited, Sources: cited, AnalyticsID: analyticsID(done),
		Usage: Usage{PromptTokens: res.Usage.PromptTokens, CompletionTokens: res.Usage.CompletionTokens, TotalTokens: res.Usage.TotalTokens,
			ReasoningType: "standard", ConversationCount: agent.Seq,
			PromptTokensDetails:     map[string]int{"cached_tokens": res.Usage.CachedTokens, "audio_tokens": 0},
			CompletionTokensDetails: map[string]int{"reasoning_tokens": res.Usage.ReasoningTokens, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
		ActualTimeMS: time.Since(started).Milliseconds(), TotalSteps: 1, Type: "standard", OriginalQuery: question,
		Context: passageContext(passages), FinalAnswer: res.Content, IsComplete: true, Converged: true,
		ExecutedTools: []any{}, ReasoningSteps: []any{}, Reasoning: []any{}, ReasoningCycles: []any{},
	}, nil
}

// chatFor returns the request's chat, or a new one when it names none.
func (s *Service) chatFor(ctx context.Context, projectID string, bot agents.Bot, in Input) (Chat, error) {
	if id := strings.TrimSpace(in.ChatID); id != "" {
		return s.repo.Get(ctx, projectID, bot.ID, id)
	}
	now := s.now()
	title := strings.TrimSpace(*in.Message)
	if r := []rune(title); len(r) > 80 {
		title = string(r[:80])
	}
	c := Chat{UUID: uuid.Must(uuid.NewV7()).String(), ProjectID: projectID, BotID: bot.ID, Title: title, CreatedAt: now, UpdatedAt: now}
	return c, s.repo.Create(ctx, c)
}

// MessageEvent is the data of chat.message.created.
type MessageEvent struct {
	ChatID  string  `json:"chat_id"`
	Message Message `json:"message"`
}

func (s *Service) append(ctx context.Context, projectID string, bot agents.Bot, chat Chat, m *Message) error {
	ev := outbox.New(outbox.ChatMessageCreated, projectID, bot.ID, MessageEvent{ChatID: chat.UUID, Message: *m})
	ref, err := s.repo.Append(ctx, chat, m, ev)
	if err != nil {
		return err
	}
	s.events.Dispatch(ctx, ref, ev)
	return nil
}

// retrieve returns the memory passages for the question, unless the agent or the request
// turned memory off.
func (s *Service) retrieve(ctx context.Context, projectID string, bot agents.Bot, in Input, question string) ([]memory.Passage, error) {
	if bot.Memory == 0 || (in.Memory != nil && !*in.Memory) {
		return nil, nil
	}
	top := bot.Top
	if in.Top.Set {
		top = int(in.Top.Value)
	}
	return s.memory.Search(ctx, memory.Query{ProjectID: projectID, BotID: bot.ID, Text: question, Top: min(max(top, 1), memory.MaxTop),
		Filter: memory.Filter{SourceIDs: in.SourceIDs, Tags: in.Tags}})
}

// prompt is the system prompt (instruction and numbered passages), the earlier turns that fit
// the history budget, and the question.
func prompt(in Input, bot agents.Bot, earlier []Message, passages []memory.Passage, question string) []provider.Message {
	instruction := strings.TrimSpace(in.Instruction)
	if instruction == "" {
		instruction = bot.Instruction
	}
	if instruction == "" {
		instruction = defaultInstruction
	}
	var sys strings.Builder
	sys.WriteString(instruction)
	if len(passages) > 0 {
		sys.WriteString("\n\nAnswer from the numbered passages below when they are relevant and cite them like [1]. " +
			"If they do not contain the answer, say so.\n\nPassages:")
		for i, p := range passages {
			fmt.Fprintf(&sys, "\n\n[%d] %s\n%s", i+1, p.Source.Title, p.Text)
		}
	}
	msgs := []provider.Message{{Role: "system", Content: sys.String()}}
	var turns []provider.Message
	budget := historyBudget
	for i := len(earlier) - 1; i >= 0; i-- {
		m := earlier[i]
		if budget -= max(m.Tokens, text.Tokens(m.Content)); budget < 0 {
			break
		}
		role := "user"
		if m.Role == RoleAgent {
			role = "assistant"
		}
		turns = append([]provider.Message{{Role: role, Content: m.Content}}, turns...)
	}
	return append(append(msgs, turns...), provider.Message{Role: "user", Content: question})
}

func modelName(in Input, bot agents.Bot) string {
	if m := strings.TrimSpace(in.Model); m != "" {
		return m
	}
	return bot.Model
}

func maxTokens(in Input, bot agents.Bot) int {
	if in.MaxReplyTokens.Set {
		return int(in.MaxReplyTokens.Value)
	}
	n, _ := strconv.Atoi(bot.MaxReplyTokens)
	return n
}

var citation = regexp.MustCompile(`\[(\d{1,2})\]`)

// citations lists the passages the reply cites by number, once each, in the order cited.
func citations(reply string, passages []memory.Passage) []memory.Ref {
	out := []memory.Ref{}
	seen := map[int]bool{}
	for _, m := range citation.FindAllStringSubmatch(reply, -1) {
		n, _ := strconv.Atoi(m[1])
		if n < 1 || n > len(passages) || seen[n] {
			continue
		}
		seen[n] = true
		ref := passages[n-1].Source
		ref.CitationNumber = n
		out = append(out, ref)
	}
	return out
}

// confidenceOf rates a reply: high when it cites memory, medium when memory was found but not
// cited, low when the agent had no memory to answer from.
func confidenceOf(passages []memory.Passage, cited []memory.Ref) (string, string) {
	switch {
	case len(cited) > 0:
		return "high", "0.9"
	case len(passages) > 0:
		return "medium", "0.6"
	}
	return "low", "0.3"
}

// complexity grades a question by its length: simple (under 12 words), moderate (under 40),
// complex.
func complexity(question string) string {
	switch n := len(strings.Fields(question)); {
	case n < 12:
		return "simple"
	case n < 40:
		return "moderate"
	}
	return "complex"
}

func passageContext(passages []memory.Passage) string {
	var b strings.Builder
	for i, p := range passages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%d] %s", i+1, p.Text)
	}
	return b.String()
}

// analyticsID is a number unique to a reply that fits in a JSON number: the milliseconds of t
// and 12 random bits.
func analyticsID(t time.Time) int64 {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return t.UnixMilli()<<12 | int64(binary.BigEndian.Uint16(b[:])&0xfff)
}

// Get returns one chat of the agent.
func (s *Service) Get(ctx context.Context, projectID, botID, id string) (Chat, error) {
	if id = strings.TrimSpace(id); id == "" {
		return Chat{}, apperr.Invalidf("chat_id", "is required")
	}
	return s.repo.Get(ctx, projectID, botID, id)
}

// History returns one page of a chat's messages, oldest first, and how many there are.
func (s *Service) History(ctx context.Context, projectID, botID, id string, page paging.Page) ([]Message, int, error) {
	c, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return nil, 0, err
	}
	from := int(page.Skip()) + 1
	to := min(from+page.PerPage-1, c.Messages)
	if from > c.Messages {
		return []Message{}, c.Messages, nil
	}
	msgs, err := s.repo.Range(ctx, c.UUID, from, to)
	if msgs == nil {
		msgs = []Message{}
	}
	return msgs, c.Messages, err
}

// List returns one page of the agent's chats, the most recently active first.
func (s *Service) List(ctx context.Context, projectID, botID string, page paging.Page) ([]Chat, int, error) {
	return s.repo.List(ctx, projectID, botID, page)
}

// Delete removes a chat and its messages.
func (s *Service) Delete(ctx context.Context, projectID, botID, id string) error {
	c, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return err
	}
	return s.repo.Delete(ctx, c, s.now())
}

// IsDisconnect reports whether err is the end of a request whose client went away.
func IsDisconnect(err error) bool { return errors.Is(err, context.Canceled) }
