package chats

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/memory/text"
	"github.com/agentplane/agentplane/shared/outbox"
)

// messageEvents are the events of chat messages, about the message (EventOf).
var messageEvents = outbox.Declare[MessageEvent](outbox.ChatMessageCreated, outbox.ChatMessageUpdated, outbox.ChatMessageDeleted)

// historyBudget is how many tokens of earlier turns a prompt carries at most.
const historyBudget = 3000

// HistoryTurns bounds how many earlier messages are considered for a prompt.
const HistoryTurns = 20

// defaultInstruction is the system prompt of an agent without an instruction.
const defaultInstruction = "You are a helpful assistant."

// Providers picks the model that answers a request.
type Providers struct {
	// Default answers when the request names no provider host: the configured provider, or the
	// offline model.
	Default llm.Model
	// BaseURL is the configured provider's ("" when none): a request's provider_key (or the
	// agent's) is used with it.
	BaseURL string
	// Open gives the model of a provider host and key that a request or an agent names.
	Open func(llm.Endpoint) llm.Model
}

// Model is the model answering in for bot: the request's provider host, else the configured
// provider with the request's or the agent's key, else the default.
func (s *Service) Model(in Input, bot agents.Bot) llm.Model { return s.providers.pick(in, bot) }

func (p Providers) pick(in Input, bot agents.Bot) llm.Model {
	key := in.ProviderKey
	if key == "" {
		key = bot.ProviderKey
	}
	switch {
	case in.ProviderHost != "":
		return p.Open(llm.Endpoint{BaseURL: in.ProviderHost, APIKey: in.ProviderKey, Guarded: true})
	case p.BaseURL != "" && key != "":
		return p.Open(llm.Endpoint{BaseURL: p.BaseURL, APIKey: key})
	}
	return p.Default
}

// Service holds the conversation rules and the standard reply pipeline.
type Service struct {
	repo      Repo
	events    *outbox.Dispatcher
	memory    *memory.Memory
	providers Providers
	runs      AgentRuns
	spaces    Workspaces
	users     EndUsers
	online    OnlineEvals
	handoff   RequestHandoff
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
	Tool            *Tool        `json:"tool,omitempty"`
	RequiresApprove bool         `json:"requiresApproval"`
	IsComplete      bool         `json:"isComplete"`
	HasMoreSteps    bool         `json:"hasMoreSteps"`
	Converged       bool         `json:"converged"`
	ExecutedTools   []any        `json:"executedTools"`
	ReasoningSteps  []any        `json:"reasoningSteps"`
	Reasoning       []any        `json:"reasoning"`
	ReasoningCycles []any        `json:"reasoningCycles"`
}

// Asker is who sends the message: the account behind the API key, or an end user of the agent
// (Subscriber, whose id is then AccountID too).
type Asker struct {
	AccountID  string
	Name       string
	Subscriber string
	// ForEndUsers says the account sends on behalf of end users of its own (an OpenAI or MCP
	// client serving many people through one key): a turn remembers EndUser, the one its request
	// names, and no one when it names none. Otherwise the sender is the user remembered.
	ForEndUsers bool
	EndUser     string
}

// MaxEndUser bounds the name of an end user a request names, in characters.
const MaxEndUser = 256

// Remembered is the user whose memories the asker's turns use; "" for no one.
func (a Asker) Remembered() string {
	if a.ForEndUsers {
		return strings.TrimSpace(a.EndUser)
	}
	return a.AccountID
}

// Turn is a user's message stored in its chat, with the chat's messages before it.
type Turn struct {
	ProjectID string
	Bot       agents.Bot
	Chat      Chat
	User      Message
	Earlier   []Message
	Input     Input
	Started   time.Time
	// Verdict is the user's answer to the plan the chat proposed (Accept, Reject, Revise); ""
	// when the chat had none.
	Verdict string
	// EndUser is the user whose memories the prompt gets and whose message may add to them
	// (see EndUsers); "" for none.
	EndUser string
	// Workspace is the uuid of the workspace a turn of chat_mode edit edits with tools ("" for
	// none), authorised as the agent's when the turn began.
	Workspace string
}

// Question is the message the turn asks.
func (t Turn) Question() string { return t.User.Content }

// Begin starts a turn: it checks the agent is active, finds the request's chat (or creates
// one, holding the earlier messages the request brought, in.Prior) and stores the user's
// message, made with reasoning type rt (agent when it accepts a proposed plan, standard when it
// answers one otherwise; agent when it edits a workspace: workspaceFor). in must be validated.
func (s *Service) Begin(ctx context.Context, projectID string, bot agents.Bot, asker Asker, in Input, rt string) (Turn, error) {
	started := time.Now()
	if !bot.Active() {
		return Turn{}, apperr.New(apperr.Forbidden, "bot_inactive", "The agent is inactive (status 0); activate it to chat.")
	}
	chat, isNew, err := s.chatFor(ctx, projectID, bot, asker, in)
	if err != nil {
		return Turn{}, err
	}
	if bot = bot.ForChat(chat.UUID, chat.Version, isNew); isNew {
		chat.Version = bot.Serving()
	}
	workspace, err := s.workspaceFor(ctx, projectID, bot.ID, &chat, isNew, in)
	if err != nil {
		return Turn{}, err
	}
	if workspace != "" {
		rt = "agent" // an agent run edits the workspace with tools
	}
	var earlier, prior []Message
	if isNew {
		prior = s.prior(bot, asker, chat, in, rt)
	} else if earlier, err = s.repo.Range(ctx, chat, chat.Messages-HistoryTurns+1, chat.Messages); err != nil {
		return Turn{}, err
	}
	question := strings.TrimSpace(*in.Message)
	verdict := ""
	if chat.Plan != nil {
		if verdict, rt = Verdict(question), "standard"; verdict == Accept {
			rt = "agent"
		}
	}
	name, limit := ModelName(in, bot), MaxTokens(in, bot)
	level := Complexity(question)
	now := s.now()
	user := Message{Model: name, Preference: Preference{ReasoningType: rt, Model: name, MaxTokens: limit, Complexity: level},
		UUID: ids.New(), ChatID: chat.UUID, Role: RoleUser, Content: question,
		Channel: cmp.Or(in.Channel, "api"), CreditUsed: "0", Tokens: text.Tokens(question), Reasoning: map[string]any{}, Sources: []memory.Ref{},
		User: User{UUID: asker.AccountID, Name: asker.Name}, CreatedAt: now, UpdatedAt: now, Complexity: level,
		ReasoningType: rt, EstimatedTimeMS: "0", EstimatedCost: "0.000000", Confidence: "", ConfidenceScore: ""}
	if isNew {
		ms := append(prior, user)
		if err := s.start(ctx, projectID, bot, &chat, ms, true); err != nil {
			return Turn{}, err
		}
		n := len(prior)
		user, earlier = ms[n], ms[max(0, n-HistoryTurns):n:n]
	} else if err := s.store(ctx, projectID, bot, &chat, &user, s.repo.Append, true); err != nil {
		return Turn{}, err
	}
	return Turn{ProjectID: projectID, Bot: bot, Chat: chat, User: user, Earlier: earlier, Input: in, Started: started, Verdict: verdict,
		Workspace: workspace}, nil
}

// prior returns in.Prior, the conversation a client held, as the first messages of chat, a new
// chat, not stored yet.
func (s *Service) prior(bot agents.Bot, asker Asker, chat Chat, in Input, rt string) []Message {
	var ms []Message
	name, limit := ModelName(in, bot), MaxTokens(in, bot)
	for _, said := range in.Prior {
		now, level := s.now(), Complexity(said.Content)
		m := Message{UUID: ids.New(), ChatID: chat.UUID, Role: said.Role, Content: said.Content, Model: name, Complexity: level, ReasoningType: rt,
			Preference: Preference{ReasoningType: rt, Model: name, MaxTokens: limit, Complexity: level}, Channel: "api", CreditUsed: "0",
			Tokens: text.Tokens(said.Content), Reasoning: map[string]any{}, Sources: []memory.Ref{}, EstimatedTimeMS: "0",
			EstimatedCost: "0.000000", User: User{UUID: asker.AccountID, Name: asker.Name}, CreatedAt: now, UpdatedAt: now}
		if said.Role == RoleAgent {
			m.User = User{UUID: bot.UUID, Name: bot.Name, Avatar: bot.Avatar, AvatarLink: bot.AvatarLink}
		}
		ms = append(ms, m)
	}
	return ms
}

// Answer makes the standard reply of the turn t: one retrieval and one model call.
func (s *Service) Answer(ctx context.Context, t Turn, sink Sink) (Reply, error) {
	passages, err := s.Retrieve(ctx, t.ProjectID, t.Bot, t.Input, t.Question())
	if err != nil {
		return Reply{}, err
	}
	req := s.request(t)
	req.Messages, req.Passages = Prompt(t.Input, t.Bot, t.Earlier, passages, s.Recall(ctx, t), t.Question()), passages
	return s.respond(ctx, t, sink, pass{req: req, passages: passages, kind: "standard"})
}

// request is the model request of a turn, without its messages.
func (s *Service) request(t Turn) llm.Request {
	return llm.Request{Model: t.User.Preference.Model, MaxTokens: t.User.Preference.MaxTokens, NoAnswer: t.Bot.NoAnswerReply}
}

// pass is one model call answering a turn.
type pass struct {
	req      llm.Request
	passages []memory.Passage
	// kind is the reply's type: standard, edit or plan.
	kind string
	// text turns the model's text into the reply kept and returned; nil keeps it as it is.
	text func(string) string
	// after completes the reply; nil leaves the standard one.
	after func(*Reply)
}

// respond makes the model call of p for the turn t, streaming it to sink when there is one,
// and stores the agent's message. When ctx ends while the model streams (the client went
// away), what was generated is stored marked interrupted.
func (s *Service) respond(ctx context.Context, t Turn, sink Sink, p pass) (Reply, error) {
	bot, chat := t.Bot, t.Chat
	model := s.Model(t.Input, bot)
	called := time.Now()
	var res llm.Reply
	var err error
	var firstToken time.Duration
	if sink != nil {
		res, err = model.Stream(ctx, p.req, func(d string) error {
			if firstToken == 0 {
				firstToken = time.Since(t.Started)
			}
			return sink.Delta(d)
		})
	} else {
		res, err = model.Complete(ctx, p.req)
	}
	interrupted := err != nil && ctx.Err() != nil && res.Content != ""
	if err != nil && !interrupted {
		return Reply{}, err
	}
	if res.Model == "" {
		res.Model = p.req.Model
	}
	content := res.Content
	if p.text != nil && !interrupted {
		content = p.text(content)
	}
	pref := t.User.Preference
	pref.Model = res.Model
	cited := Citations(content, p.passages)
	confidence, score := ConfidenceOf(p.passages, cited)
	agent := s.AgentMessage(t, content, res.Model, time.Since(called), res.Usage, cited)
	agent.Confidence, agent.ConfidenceScore, agent.Interrupted = confidence, score, interrupted
	if firstToken > 0 {
		agent.FirstTokenMS = max(firstToken.Milliseconds(), 1)
	}
	if interrupted {
		stored, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s.Append(stored, t.ProjectID, bot, &chat, &agent); err != nil {
			s.log.Warn("interrupted reply not stored", "chat_id", chat.UUID, "error", err)
		}
		return Reply{}, ctx.Err()
	}
	if err := s.Append(ctx, t.ProjectID, bot, &chat, &agent); err != nil {
		return Reply{}, err
	}
	r := NewReply(chat.UUID, t.User, t.Started, Answered{Agent: agent, Done: true, Kind: p.kind, Steps: 1,
		Usage: UsageOf(res.Usage, pref.ReasoningType, agent.Seq), Sources: cited, Context: PassageContext(p.passages), At: agent.CreatedAt})
	if p.after != nil {
		p.after(&r)
	}
	return r, nil
}

// AgentMessage is the agent's message answering the turn t: content by the model, produced in
// took with usage u, citing cited. Its credit is one model call; callers adjust it.
func (s *Service) AgentMessage(t Turn, content, model string, took time.Duration, u llm.Usage, cited []memory.Ref) Message {
	pref := t.User.Preference
	pref.Model = model
	done := s.now()
	bot := t.Bot
	return Message{UUID: ids.New(), ChatID: t.Chat.UUID, Role: RoleAgent, Content: content, Model: model,
		Complexity: t.User.Complexity, ReasoningType: pref.ReasoningType, EstimatedTimeMS: strconv.FormatInt(took.Milliseconds(), 10),
		EstimatedCost: estimatedCost(model, u.PromptTokens, u.CompletionTokens), Channel: cmp.Or(t.User.Channel, "api"), CreditUsed: "1",
		Tokens: u.CompletionTokens, Reasoning: map[string]any{}, Preference: pref, Sources: cited,
		User: User{UUID: bot.UUID, Name: bot.Name, Avatar: bot.Avatar, AvatarLink: bot.AvatarLink}, CreatedAt: done, UpdatedAt: done,
		Version: bot.Serving()}
}

// UsageOf is the usage record (2.5) of a reply of reasoning type rt whose agent message is the
// chat's count-th.
func UsageOf(u llm.Usage, rt string, count int) Usage {
	return Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
		ReasoningType: rt, ConversationCount: count,
		PromptTokensDetails:     map[string]int{"cached_tokens": u.CachedTokens, "audio_tokens": 0},
		CompletionTokensDetails: map[string]int{"reasoning_tokens": u.ReasoningTokens, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
}

// chatFor returns the request's chat, or a new one, not stored yet (isNew), when it names none:
// the new chat is stored with its first messages (Repo.StartWith).
func (s *Service) chatFor(ctx context.Context, projectID string, bot agents.Bot, asker Asker, in Input) (c Chat, isNew bool, err error) {
	if id := strings.TrimSpace(in.ChatID); id != "" {
		c, err = s.chatOf(ctx, projectID, bot.ID, id, asker)
		return c, false, err
	}
	now := s.now()
	title := strings.TrimSpace(*in.Message)
	if r := []rune(title); len(r) > 80 {
		title = string(r[:80])
	}
	c = Chat{UUID: ids.New(), ProjectID: projectID, BotID: bot.ID, Title: title, CreatedAt: now, UpdatedAt: now, Subscriber: asker.Subscriber}
	return c, true, nil
}

// GetFor returns one chat of the agent as asker may see it.
func (s *Service) GetFor(ctx context.Context, projectID, botID, id string, asker Asker) (Chat, error) {
	return s.chatOf(ctx, projectID, botID, strings.TrimSpace(id), asker)
}

// chatOf returns the agent's chat id as asker may see it: an end user sees only their own
// chats, any other's is not found, exactly like a missing one.
func (s *Service) chatOf(ctx context.Context, projectID, botID, id string, asker Asker) (Chat, error) {
	c, err := s.repo.Get(ctx, projectID, botID, id)
	if err == nil && asker.Subscriber != "" && c.Subscriber != asker.Subscriber {
		return Chat{}, apperr.NotFoundf(Resource)
	}
	return c, err
}

// MessageEvent is the data of the chat.message.* events. MessageID names the message when it
// is too large for the event to carry; FirstTokenMS is how long a streamed answer took to its
// first token, from the user's message.
type MessageEvent struct {
	ChatID       string  `json:"chat_id"`
	MessageID    string  `json:"message_id"`
	FirstTokenMS int64   `json:"first_token_ms,omitempty"`
	Message      Message `json:"message"`
}

// EventOf is the data of an event about m.
func EventOf(m Message) MessageEvent {
	return MessageEvent{ChatID: m.ChatID, MessageID: m.UUID, FirstTokenMS: m.FirstTokenMS, Message: m}
}

// Append stores m as the chat's next message and emits chat.message.created; chat becomes what
// was stored.
func (s *Service) Append(ctx context.Context, projectID string, bot agents.Bot, chat *Chat, m *Message) error {
	return s.store(ctx, projectID, bot, chat, m, s.repo.Append, false)
}

// start stores chat, a new chat, with ms as its first messages (Repo.StartWith: one write, or two
// when the oldest go to their pages, however many there are) and emits chat.message.created for
// each, in order; held as dispatch says.
func (s *Service) start(ctx context.Context, projectID string, bot agents.Bot, chat *Chat, ms []Message, held bool) error {
	evs := make([]outbox.Event, len(ms))
	for i, m := range ms {
		evs[i] = outbox.New(ctx, outbox.ChatMessageCreated, projectID, bot.ID, EventOf(m))
	}
	refs, err := s.repo.StartWith(ctx, chat, ms, evs)
	if err != nil {
		return err
	}
	for i, ev := range evs {
		s.dispatch(ctx, refs[i], ev, held)
	}
	return nil
}

// store stores m in chat with write (Repo.Append, or a new chat's Repo.Start), removing with it
// the events of the chat's document that wait for its next write, and emits
// chat.message.created, held as dispatch says.
func (s *Service) store(ctx context.Context, projectID string, bot agents.Bot, chat *Chat, m *Message,
	write func(context.Context, *Chat, *Message, outbox.Event, []string) (outbox.Ref, error), held bool) error {
	ev := messageEvents.New(ctx, outbox.ChatMessageCreated, projectID, bot.ID, EventOf(*m))
	waiting := s.events.Take(outbox.Ref{Resource: RecordResource, ID: chat.UUID})
	published := make([]string, len(waiting))
	for i, p := range waiting {
		published[i] = p.Event.ID
	}
	ref, err := write(ctx, chat, m, ev, published)
	if err != nil {
		s.events.Release(waiting)
		return err
	}
	s.dispatch(ctx, ref, ev, held)
	return nil
}

// dispatch publishes ev, committed in the document ref. A user's message that a reply follows
// is held (an event in the chat's own document): the reply's write removes it (store), one
// write fewer than its removal on its own.
func (s *Service) dispatch(ctx context.Context, ref outbox.Ref, ev outbox.Event, held bool) {
	if held && ref.Resource == RecordResource {
		s.events.DispatchHeld(ctx, ref, ev)
		return
	}
	s.events.Dispatch(ctx, ref, ev)
}

// started is Repo.Start as store writes: a new chat has no events to remove.
func (s *Service) started(ctx context.Context, c *Chat, m *Message, ev outbox.Event, _ []string) (outbox.Ref, error) {
	return s.repo.Start(ctx, c, m, ev)
}

// Retrieve returns the memory passages for the question, from the sources of the version bot
// carries, unless the agent or the request turned memory off.
func (s *Service) Retrieve(ctx context.Context, projectID string, bot agents.Bot, in Input, question string) ([]memory.Passage, error) {
	if bot.Memory == 0 || (in.Memory != nil && !*in.Memory) {
		return nil, nil
	}
	top := bot.Top
	if in.Top.Set {
		top = int(in.Top.Value)
	}
	return s.memory.Search(ctx, memory.Query{ProjectID: projectID, BotID: bot.ID, Text: question, Top: min(max(top, 1), memory.MaxTop),
		Filter: memory.Filter{SourceIDs: in.SourceIDs, Tags: in.Tags}, Sources: bot.Sources})
}

// Prompt is a standard turn's messages: the system prompt (instruction, what is known of the
// user, numbered passages under their headings), the earlier turns that fit the history
// budget, and the question.
func Prompt(in Input, bot agents.Bot, earlier []Message, passages []memory.Passage, known, question string) []llm.Message {
	var sys strings.Builder
	sys.WriteString(Preamble(in, bot, known))
	if len(passages) > 0 {
		sys.WriteString("\n\nAnswer from the numbered passages below when they are relevant and cite them like [1]. " +
			"If they do not contain the answer, say so.\n\nPassages:")
		for i, p := range passages {
			fmt.Fprintf(&sys, "\n\n[%d] %s\n%s", i+1, p.Heading(), p.Text)
		}
	}
	msgs := []llm.Message{{Role: "system", Content: sys.String()}}
	return append(append(msgs, History(earlier)...), llm.Message{Role: "user", Content: question})
}

// Preamble is how a turn's system prompt begins: the instruction, then known, what is known of
// the turn's user (Recall), when there is something.
func Preamble(in Input, bot agents.Bot, known string) string {
	if known == "" {
		return Instruction(in, bot)
	}
	return Instruction(in, bot) + "\n\n" + known
}

// Instruction is the system instruction of a reply: the request's, else the agent's, else a
// default.
func Instruction(in Input, bot agents.Bot) string {
	instruction := strings.TrimSpace(in.Instruction)
	if instruction == "" {
		instruction = bot.Instruction
	}
	if instruction == "" {
		instruction = defaultInstruction
	}
	return instruction
}

// History is the latest of the earlier messages that fit the history budget, as model turns.
func History(earlier []Message) []llm.Message {
	var turns []llm.Message
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
		turns = append([]llm.Message{{Role: role, Content: m.Content}}, turns...)
	}
	return turns
}

// ModelName is the model a request asks for: its own, else the agent's.
func ModelName(in Input, bot agents.Bot) string {
	if m := strings.TrimSpace(in.Model); m != "" {
		return m
	}
	return bot.Model
}

// MaxTokens is the reply cap of a request: its own, else the agent's (0 for none).
func MaxTokens(in Input, bot agents.Bot) int {
	if in.MaxReplyTokens.Set {
		return int(in.MaxReplyTokens.Value)
	}
	n, _ := strconv.Atoi(bot.MaxReplyTokens)
	return n
}

var citation = regexp.MustCompile(`\[(\d{1,2})\]`)

// Citations lists the passages the reply cites by number, once each, in the order cited.
func Citations(reply string, passages []memory.Passage) []memory.Ref {
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

// ConfidenceOf rates a reply: high when it cites memory, medium when memory was found but not
// cited, low when the agent had no memory to answer from.
func ConfidenceOf(passages []memory.Passage, cited []memory.Ref) (string, string) {
	switch {
	case len(cited) > 0:
		return "high", "0.9"
	case len(passages) > 0:
		return "medium", "0.6"
	}
	return "low", "0.3"
}

// Complexity grades a question by its length: simple (under 12 words), moderate (under 40),
// complex.
func Complexity(question string) string {
	switch n := len(strings.Fields(question)); {
	case n < 12:
		return "simple"
	case n < 40:
		return "moderate"
	}
	return "complex"
}

// PassageContext is the numbered passages' text, as a reply's context.
func PassageContext(passages []memory.Passage) string {
	var b strings.Builder
	for i, p := range passages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%d] %s", i+1, p.Text)
	}
	return b.String()
}

// AnalyticsID is a number unique to a reply that fits in a JSON number: the milliseconds of t
// and 12 random bits.
func AnalyticsID(t time.Time) int64 {
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
	return s.HistoryFor(ctx, projectID, botID, id, Asker{}, page)
}

// HistoryFor is History as asker may read it: an end user reads only their own chats.
func (s *Service) HistoryFor(ctx context.Context, projectID, botID, id string, asker Asker, page paging.Page) ([]Message, int, error) {
	if id = strings.TrimSpace(id); id == "" {
		return nil, 0, apperr.Invalidf("chat_id", "is required")
	}
	c, err := s.chatOf(ctx, projectID, botID, id, asker)
	if err != nil {
		return nil, 0, err
	}
	from := int(page.Skip()) + 1
	to := min(from+page.PerPage-1, c.Messages)
	if from > c.Messages {
		return []Message{}, c.Messages, nil
	}
	msgs, err := s.repo.Range(ctx, c, from, to)
	if msgs == nil {
		msgs = []Message{}
	}
	return msgs, c.Messages, err
}

// Messages returns the messages of chat, as read, of sequence numbers from..to (1-based,
// inclusive; from below 1 starts at the first), oldest first.
func (s *Service) Messages(ctx context.Context, chat Chat, from, to int) ([]Message, error) {
	from = max(from, 1)
	if to < from {
		return nil, nil
	}
	return s.repo.Range(ctx, chat, from, to)
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

// Trial is a standard answer made by Try, stored nowhere.
type Trial struct {
	Content string
	Model   string
	Usage   llm.Usage
	// Cost is the estimated cost of the model call, in US dollars.
	Cost    float64
	Sources []memory.Ref
	Took    time.Duration
}

// Try answers question, after the earlier messages of a conversation, as a standard turn of bot
// answers it (the same retrieval, prompt and model call as Answer), and stores nothing: no chat,
// no message, no event. Eval runs ask agents' versions so.
func (s *Service) Try(ctx context.Context, projectID string, bot agents.Bot, earlier []Said, question string) (Trial, error) {
	in := Input{Message: &question}
	if err := in.Validate(); err != nil {
		return Trial{}, err
	}
	started := time.Now()
	passages, err := s.Retrieve(ctx, projectID, bot, in, question)
	if err != nil {
		return Trial{}, err
	}
	prior := make([]Message, len(earlier))
	for i, said := range earlier {
		prior[i] = Message{Role: said.Role, Content: said.Content}
	}
	req := llm.Request{Model: ModelName(in, bot), MaxTokens: MaxTokens(in, bot), NoAnswer: bot.NoAnswerReply, Passages: passages,
		Messages: Prompt(in, bot, prior, passages, "", question)}
	res, err := s.Model(in, bot).Complete(ctx, req)
	if err != nil {
		return Trial{}, err
	}
	model := cmp.Or(res.Model, req.Model)
	return Trial{Content: res.Content, Model: model, Usage: res.Usage, Cost: Cost(model, res.Usage), Sources: Citations(res.Content, passages),
		Took: time.Since(started)}, nil
}
