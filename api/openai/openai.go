// Package openai is the OpenAI-compatible door: any OpenAI client talks to any agent. A model is
// an agent ("agent:<id>", or its bare id or uuid), the API key is the Bearer token, and the
// answers and errors have OpenAI's shapes. What only agentplane has (the chat, the run, the
// sources) rides in an "agentplane" field OpenAI's clients ignore. api mounts its routes.
package openai

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/tenancy"
)

// Door is what it needs of the API: the domain's services and the authorisation api does.
type Door struct {
	Tenancy *tenancy.Service
	Agents  *agents.Service
	Turns   httpx.Turns
	Decoder httpx.Decoder
	// Heartbeat spaces the comment lines of its streams.
	Heartbeat time.Duration
	// Bot is the agent botID names, authorised for the request's key: in projectID, or in the
	// agent's own project when projectID is empty.
	Bot func(c *gin.Context, projectID, botID string) (agents.Bot, error)
	// AgentLimit takes one message of the agent's rate limit for the request's key.
	AgentLimit func(c *gin.Context, bot agents.Bot) error
}

// modelPrefix names an agent as a model.
const modelPrefix = "agent:"

// Errors makes the request's errors OpenAI's: {"error": {message, type, code, param}}.
func Errors(c *gin.Context) {
	httpx.SetErrorShape(c, func(status int, e *apperr.Error) any { return openAIErrorOf(status, e) })
}

// openAIError is an error as OpenAI's API answers it.
type openAIError struct {
	Error openAIErrorObject `json:"error"`
}

type openAIErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Param   *string `json:"param"`
}

// openAITypes are OpenAI's error types by status.
var openAITypes = map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
	404: "not_found_error", 409: "conflict_error", 413: "invalid_request_error", 415: "invalid_request_error",
	422: "invalid_request_error", 429: "rate_limit_error", 503: "service_unavailable_error"}

// openAIErrorOf is e, answered with status, in OpenAI's shape.
func openAIErrorOf(status int, e *apperr.Error) openAIError {
	typ, ok := openAITypes[status]
	if !ok {
		typ = "api_error"
	}
	var param *string
	if len(e.Details) > 0 {
		param = &e.Details[0].Field
	}
	return openAIError{Error: openAIErrorObject{Message: e.Message, Type: typ, Code: e.Code, Param: param}}
}

// modelOf is the agent a model names, authorised for the key's account; the OpenAI-Project
// header, when given, is the project it must be in.
func (d *Door) modelOf(c *gin.Context, model string) (agents.Bot, error) {
	id := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(model), modelPrefix))
	if id == "" {
		return agents.Bot{}, apperr.Invalidf("model", "is required: the agent to talk to, as agent:<bot id> (GET /v1/models lists them)")
	}
	bot, err := d.Bot(c, strings.TrimSpace(c.GetHeader("OpenAI-Project")), id)
	if err != nil && apperr.As(err).Code == "bot_not_found" {
		return agents.Bot{}, apperr.New(apperr.NotFound, "model_not_found", "The model does not exist or you do not have access to it; GET /v1/models lists yours.")
	}
	return bot, err
}

// openAIModel is an agent as a model.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	Name    string `json:"name"`
}

func modelOfBot(b agents.Bot, projectID string) openAIModel {
	return openAIModel{ID: modelPrefix + b.ID, Object: "model", Created: b.CreatedAt.Unix(), OwnedBy: projectID, Name: b.Name}
}

// ListModels lists the agents of the key's account (of the OpenAI-Project header's project
// only, when given) as models.
func (d *Door) ListModels(c *gin.Context) (any, error) {
	account := httpx.Principal(c).AccountID
	var projects []string
	if p := strings.TrimSpace(c.GetHeader("OpenAI-Project")); p != "" {
		if _, err := d.Tenancy.Project(c, account, p); err != nil {
			return nil, err
		}
		projects = []string{p}
	} else {
		err := eachPage(func(page paging.Page) (int, int, error) {
			list, total, err := d.Tenancy.Projects(c, account, page)
			for _, p := range list {
				projects = append(projects, p.ID)
			}
			return len(list), total, err
		})
		if err != nil {
			return nil, err
		}
	}
	models := []openAIModel{}
	for _, p := range projects {
		err := eachPage(func(page paging.Page) (int, int, error) {
			list, total, err := d.Agents.List(c, p, page)
			for _, b := range list {
				models = append(models, modelOfBot(b, p))
			}
			return len(list), total, err
		})
		if err != nil {
			return nil, err
		}
	}
	return gin.H{"object": "list", "data": models}, nil
}

// eachPage reads a list a page at a time until it has all: read answers how many it read and
// the list's total.
func eachPage(read func(paging.Page) (int, int, error)) error {
	for n, seen := 1, 0; ; n++ {
		got, total, err := read(paging.Page{Page: n, PerPage: paging.MaxPerPage})
		if err != nil {
			return err
		}
		if seen += got; got == 0 || seen >= total || n == paging.MaxPage {
			return nil
		}
	}
}

// ReadModel is one agent as a model.
func (d *Door) ReadModel(c *gin.Context) (any, error) {
	bot, err := d.modelOf(c, c.Param("model"))
	if err != nil {
		return nil, err
	}
	return modelOfBot(bot, bot.ProjectID), nil
}

// completionRequest is a Chat Completions request; what the door does not use (temperature,
// n, the client's own tools...) is ignored.
type completionRequest struct {
	Model         string              `json:"model"`
	Messages      []completionMessage `json:"messages"`
	Stream        bool                `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Metadata            map[string]string `json:"metadata"`
	ReasoningEffort     string            `json:"reasoning_effort"`
	MaxTokens           flex.OptInt       `json:"max_tokens"`
	MaxCompletionTokens flex.OptInt       `json:"max_completion_tokens"`
	// User (else SafetyIdentifier) names the end user the client asks for (doorAsker).
	User             string `json:"user"`
	SafetyIdentifier string `json:"safety_identifier"`
}

type completionMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
}

// contentText is a message's content: its text, or its text parts joined (parts of the kinds
// given); at names it in errors.
func contentText(content json.RawMessage, at string, kinds ...string) (string, error) {
	raw := strings.TrimSpace(string(content))
	if raw == "" || raw == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(content, &parts); err != nil {
		return "", apperr.Invalidf(at, "must be a string or an array of content parts")
	}
	var texts []string
	for j, p := range parts {
		if !slices.Contains(kinds, p.Type) {
			return "", apperr.Invalidf(fmt.Sprintf("%s[%d].type", at, j), "must be %s: agents read text only", strings.Join(kinds, " or "))
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// efforts maps reasoning_effort to the reasoning mode: little effort is one model call, more is
// an agent run.
var efforts = map[string]string{"none": "standard", "minimal": "standard", "low": "standard", "medium": "agent", "high": "agent"}

// said is a message of an OpenAI request, in either API's form: a role (system, developer,
// user, assistant, tool), its text and, for a tool's answer, the call it answers. at names it in
// errors.
type said struct {
	role, text, callID, at string
}

// asked is what an OpenAI request asks of the turn besides its messages.
type asked struct {
	chatID, chatMode, reasoningMode, effort, instructions string
	stream                                                bool
	maxTokens                                             flex.OptInt
	// field names the request's messages in errors (messages, input).
	field string
}

// turnFrom reads an OpenAI request: the last message is the turn (a user's message, or a tool's
// answer deciding on the call a run waits for); system and developer messages are the turn's
// instruction; the others are the conversation so far unless a chat is named.
func turnFrom(list []said, a asked) (httpx.Turn, error) {
	if len(list) == 0 {
		return httpx.Turn{}, apperr.Invalidf(a.field, "is required: at least the user's message")
	}
	last := list[len(list)-1]
	if last.role == "tool" {
		return httpx.Turn{Decision: decisionOf(last.callID, last.text)}, nil
	}
	if last.role != "user" {
		return httpx.Turn{}, apperr.Invalidf(a.field, "must end with the user's message (or a tool's answer deciding on a tool call)")
	}
	in := chats.Input{Message: &last.text, ChatID: strings.TrimSpace(a.chatID), ChatMode: a.chatMode, ReasoningMode: a.reasoningMode,
		Stream: a.stream, MaxReplyTokens: a.maxTokens}
	if effort := strings.ToLower(strings.TrimSpace(a.effort)); effort != "" && in.ReasoningMode == "" {
		mode, ok := efforts[effort]
		if !ok {
			return httpx.Turn{}, apperr.Invalidf("reasoning_effort", "must be one of none, minimal, low (one model call), medium or high (an agent run)")
		}
		in.ReasoningMode = mode
	}
	var instructions []string
	if strings.TrimSpace(a.instructions) != "" {
		instructions = append(instructions, a.instructions)
	}
	for _, m := range list[:len(list)-1] {
		switch m.role {
		case "system", "developer":
			instructions = append(instructions, m.text)
		case "user":
			in.Prior = append(in.Prior, chats.Said{Role: chats.RoleUser, Content: m.text})
		case "assistant":
			if strings.TrimSpace(m.text) != "" {
				in.Prior = append(in.Prior, chats.Said{Role: chats.RoleAgent, Content: m.text})
			}
		case "tool":
		default:
			return httpx.Turn{}, apperr.Invalidf(m.at+".role", "must be system, developer, user, assistant or tool")
		}
	}
	in.Instruction = strings.Join(instructions, "\n\n")
	if in.ChatID != "" {
		in.Prior = nil
	}
	return httpx.Turn{Input: in}, nil
}

// turnOf reads a Chat Completions request's turn.
func (req completionRequest) turnOf() (httpx.Turn, error) {
	list := make([]said, len(req.Messages))
	for i, m := range req.Messages {
		at := fmt.Sprintf("messages[%d]", i)
		text, err := contentText(m.Content, at+".content", "text")
		if err != nil {
			return httpx.Turn{}, err
		}
		list[i] = said{role: m.Role, text: text, callID: m.ToolCallID, at: at}
	}
	maxTokens := req.MaxCompletionTokens
	if !maxTokens.Set {
		maxTokens = req.MaxTokens
	}
	return turnFrom(list, asked{chatID: req.Metadata["chat_id"], chatMode: req.Metadata["chat_mode"], reasoningMode: req.Metadata["reasoning_mode"],
		effort: req.ReasoningEffort, stream: req.Stream, maxTokens: maxTokens, field: "messages"})
}

// callPrefix starts the id of a paused tool call as the door shows it: the run's execution id
// follows.
const callPrefix = "call_"

// decisionOf is a tool message's decision on the call it answers: "approve" (or yes, ok,
// true, {"approve": true}) runs it, anything else rejects it.
func decisionOf(callID, content string) *agentruns.Approval {
	approve := false
	var obj struct {
		Approve *bool `json:"approve"`
	}
	if json.Unmarshal([]byte(content), &obj) == nil && obj.Approve != nil {
		approve = *obj.Approve
	} else {
		switch strings.ToLower(strings.Trim(strings.TrimSpace(content), ".!\"")) {
		case "approve", "approved", "yes", "y", "ok", "true", "allow", "run":
			approve = true
		}
	}
	return &agentruns.Approval{ExecutionID: strings.TrimPrefix(strings.TrimSpace(callID), callPrefix), Approve: &approve}
}

// Completion answers a Chat Completions request with a turn of the agent its model names: as
// a chat.completion, or as OpenAI's chunk stream.
func (d *Door) Completion(c *gin.Context) {
	var req completionRequest
	if err := d.Decoder.Decode(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	bot, t, ok := d.doorTurn(c, req.Model, req.turnOf)
	if !ok {
		return
	}
	w := &completionWriter{c: c, id: "chatcmpl-" + ids.New(), model: req.Model, created: time.Now().Unix(), usage: req.StreamOptions.IncludeUsage}
	var sink httpx.Sink
	if req.Stream {
		w.st = httpx.NewSSE(c, d.Heartbeat)
		defer w.st.Close()
		sink = w
	}
	reply, err := d.Turns.Converse(c.Request.Context(), bot, doorAsker(c, req.User, req.SafetyIdentifier), t, sink)
	if err != nil {
		w.fail(err)
		return
	}
	w.finish(reply)
}

// doorTurn is what both OpenAI doors do before answering: the agent the request's model names,
// the turn it asks for, and the agent's rate limit when the turn is a message (a decision on a
// waiting call is not one). On an error it answers it and reports false.
func (d *Door) doorTurn(c *gin.Context, model string, turnOf func() (httpx.Turn, error)) (agents.Bot, httpx.Turn, bool) {
	bot, err := d.modelOf(c, model)
	var t httpx.Turn
	if err == nil {
		t, err = turnOf()
	}
	if err == nil && t.Decision == nil {
		err = d.AgentLimit(c, bot)
	}
	if err != nil {
		httpx.Fail(c, err)
		return agents.Bot{}, httpx.Turn{}, false
	}
	return bot, t, true
}

// doorAsker is who asks a turn of an OpenAI door: the key's account, on behalf of the end user
// the request names (user, else safety_identifier), whose memories the turn uses; no one's when
// it names none, as one key may serve many people.
func doorAsker(c *gin.Context, user, safetyIdentifier string) chats.Asker {
	return chats.Asker{AccountID: httpx.Principal(c).AccountID, ForEndUsers: true, EndUser: cmp.Or(strings.TrimSpace(user), strings.TrimSpace(safetyIdentifier))}
}

// completionWriter answers a completion: a chat.completion at its end, or chunks as the reply
// is made.
type completionWriter struct {
	c       *gin.Context
	st      *httpx.SSE
	id      string
	model   string
	created int64
	usage   bool
	// sent is the text streamed so far; began says the role's chunk went.
	sent  strings.Builder
	began bool
}

// extension is what only agentplane answers, in a field OpenAI's clients ignore.
type extension struct {
	ChatID      string       `json:"chat_id"`
	MessageID   string       `json:"message_id,omitempty"`
	ExecutionID string       `json:"execution_id,omitempty"`
	Sources     []memory.Ref `json:"sources"`
	// Version is the agent's version that wrote the answer (absent while a run works on it).
	Version int `json:"version,omitempty"`
}

func extensionOf(r chats.Reply) *extension {
	return &extension{ChatID: r.ChatID, MessageID: r.Agent.UUID, ExecutionID: r.ExecutionID, Sources: append([]memory.Ref{}, r.Sources...),
		Version: r.Agent.Version}
}

type completionUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type toolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type completionMessageOut struct {
	Role      string     `json:"role,omitempty"`
	Content   *string    `json:"content,omitempty"`
	Refusal   *string    `json:"refusal"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

type completionChoice struct {
	Index        int                   `json:"index"`
	Message      *completionMessageOut `json:"message,omitempty"`
	Delta        *completionMessageOut `json:"delta,omitempty"`
	FinishReason *string               `json:"finish_reason"`
	Logprobs     *struct{}             `json:"logprobs"`
}

type completionOut struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint *string            `json:"system_fingerprint"`
	Choices           []completionChoice `json:"choices"`
	Usage             *completionUsage   `json:"usage,omitempty"`
	Agentplane        *extension         `json:"agentplane,omitempty"`
}

// pausedCall is the tool call a reply waits for, as OpenAI's tool call: its id names the run.
func pausedCall(r chats.Reply) []toolCall {
	if !r.RequiresApprove || r.Tool == nil {
		return nil
	}
	args, err := json.Marshal(r.Tool.Parameters)
	if err != nil || r.Tool.Parameters == nil {
		args = []byte("{}")
	}
	call := toolCall{ID: callPrefix + r.ExecutionID, Type: "function"}
	call.Function.Name, call.Function.Arguments = r.Tool.Name, string(args)
	return []toolCall{call}
}

func (w *completionWriter) chunk(choices []completionChoice, usage *completionUsage, ext *extension) error {
	return w.st.Data(completionOut{ID: w.id, Object: "chat.completion.chunk", Created: w.created, Model: w.model,
		Choices: choices, Usage: usage, Agentplane: ext})
}

// Stored begins the stream with the assistant's role.
func (w *completionWriter) Stored(chats.Message) error { return w.begin() }

func (w *completionWriter) InChat(string) error { return nil }

func (w *completionWriter) begin() error {
	if w.began {
		return nil
	}
	w.began = true
	empty := ""
	return w.chunk([]completionChoice{{Delta: &completionMessageOut{Role: "assistant", Content: &empty}}}, nil, nil)
}

// Delta streams a piece of the reply.
func (w *completionWriter) Delta(text string) error {
	if err := w.begin(); err != nil {
		return err
	}
	w.sent.WriteString(text)
	return w.chunk([]completionChoice{{Delta: &completionMessageOut{Content: &text}}}, nil, nil)
}

// finish answers the reply: the chat.completion, or the stream's last chunks.
func (w *completionWriter) finish(r chats.Reply) {
	calls := pausedCall(r)
	reason := "stop"
	if calls != nil {
		reason = "tool_calls"
	}
	usage := &completionUsage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, TotalTokens: r.Usage.TotalTokens}
	ext := extensionOf(r)
	if w.st == nil {
		msg := &completionMessageOut{Role: "assistant", ToolCalls: calls}
		if calls == nil {
			msg.Content = &r.Reply
		}
		w.c.JSON(200, completionOut{ID: w.id, Object: "chat.completion", Created: w.created, Model: w.model,
			Choices: []completionChoice{{Message: msg, FinishReason: &reason}}, Usage: usage, Agentplane: ext})
		return
	}
	if err := w.begin(); err != nil {
		return
	}
	if rest, ok := strings.CutPrefix(r.Reply, w.sent.String()); calls == nil && ok && rest != "" {
		if err := w.Delta(rest); err != nil {
			return
		}
	}
	for i := range calls {
		calls[i].Index = new(i)
	}
	if err := w.chunk([]completionChoice{{Delta: &completionMessageOut{ToolCalls: calls}, FinishReason: &reason}}, nil, ext); err != nil {
		return
	}
	if w.usage {
		if err := w.chunk([]completionChoice{}, usage, nil); err != nil {
			return
		}
	}
	_ = w.st.Raw("[DONE]")
}

// fail answers err: as an error answer while nothing was streamed, else as the stream's last
// chunk, an error object as OpenAI's streams end with one, before [DONE] as every stream ends.
func (w *completionWriter) fail(err error) {
	if chats.IsDisconnect(err) && w.c.Request.Context().Err() != nil {
		return
	}
	if w.st == nil || !w.st.Began() {
		httpx.Fail(w.c, err)
		return
	}
	status, _, e := httpx.ErrorOf(w.c, err)
	if w.st.Data(openAIErrorOf(status, e)) == nil {
		_ = w.st.Raw("[DONE]")
	}
}
