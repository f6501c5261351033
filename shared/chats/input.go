package chats

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/memory"
)

// Bounds of a chat request.
const (
	MaxMessageLength     = 32_000
	MaxInstructionLength = 20_000
	MaxReplyTokens       = 32_768
)

// Reasoning and chat modes.
var (
	ReasoningModes = []string{"auto", "standard", "agent"}
	ChatModes      = []string{"ask", "edit", "plan"}
)

// Input is the body of a chat request (4.1). provider_key is used for this request only: it
// is never stored or logged.
type Input struct {
	Message        *string     `json:"message"`
	ProviderKey    string      `json:"provider_key"`
	ProviderHost   string      `json:"provider_host"`
	Model          string      `json:"model"`
	SourceIDs      []string    `json:"source_ids"`
	Tags           []string    `json:"tags"`
	Top            flex.OptInt `json:"top"`
	Instruction    string      `json:"instruction"`
	MaxReplyTokens flex.OptInt `json:"max_reply_tokens"`
	Stream         bool        `json:"stream"`
	ChatID         string      `json:"chat_id"`
	ReasoningMode  string      `json:"reasoning_mode"`
	ChatMode       string      `json:"chat_mode"`
	// Memory false answers without retrieval (BoostGPT's clients send it).
	Memory *bool `json:"memory"`
	// WorkspaceUUID names the agent's workspace that a turn of chat_mode edit edits with tools
	// (an agent run), kept on the chat for its next turns. Turns of other modes ignore it:
	// BoostGPT's client sends one body for every call, so its chats carry the workspace_uuid of
	// its last workspace call.
	WorkspaceUUID string `json:"workspace_uuid"`
	// modeNamed says the request named its chat_mode; one that names none takes the chat's
	// default.
	modeNamed bool
	// Prior is the conversation so far, held by the client rather than in a chat (an OpenAI
	// client's earlier messages): a turn that starts a chat stores them in it before its
	// message, and they are the turn's history. A turn of an existing chat ignores them.
	Prior []Said `json:"-"`
	// RunID is the id of the agent run the turn starts, when its caller chose it (a heartbeat's
	// firing: a retried firing finds its run by it); Origin names what started the turn when no
	// person did (kept with the run).
	RunID  string `json:"-"`
	Origin string `json:"-"`
	// Hop is the A2A call the turn answers (tools.HopHeader): 0 when no agent asked. Its run's
	// calls of remote agents go a hop further.
	Hop int `json:"-"`
	// Channel names where the user wrote (a channel's type, web for the agent's page and widget); "" is the API.
	Channel string `json:"-"`
}

// Said is a message of a conversation the client held: who said it (RoleUser or RoleAgent) and
// what.
type Said struct {
	Role    string
	Content string
}

// MaxPrior bounds the earlier messages a turn may bring.
const MaxPrior = 200

// Validate checks every field and fills the defaults of the modes.
func (in *Input) Validate() error {
	var p apperr.Problems
	switch {
	case in.Message == nil || strings.TrimSpace(*in.Message) == "":
		p.Add("message", "is required")
	case utf8.RuneCountInString(*in.Message) > MaxMessageLength:
		p.Add("message", "must be at most %d characters", MaxMessageLength)
	}
	if len(in.Prior) > MaxPrior {
		p.Add("messages", "may hold at most %d earlier messages; name the chat instead", MaxPrior)
	}
	for i, m := range in.Prior {
		if m.Role != RoleUser && m.Role != RoleAgent {
			p.Add(fmt.Sprintf("messages[%d].role", i), "must be user or assistant")
		}
		if utf8.RuneCountInString(m.Content) > MaxMessageLength {
			p.Add(fmt.Sprintf("messages[%d].content", i), "must be at most %d characters", MaxMessageLength)
		}
	}
	if utf8.RuneCountInString(in.Instruction) > MaxInstructionLength {
		p.Add("instruction", "must be at most %d characters", MaxInstructionLength)
	}
	if in.Top.Set {
		if err := memory.CheckTop(int(in.Top.Value)); err != nil || in.Top.Value < 1 {
			p.Add("top", "must be between 1 and %d", memory.MaxTop)
		}
	}
	if in.MaxReplyTokens.Set && (in.MaxReplyTokens.Value < 1 || in.MaxReplyTokens.Value > MaxReplyTokens) {
		p.Add("max_reply_tokens", "must be between 1 and %d", MaxReplyTokens)
	}
	if in.ProviderHost = strings.TrimSpace(in.ProviderHost); in.ProviderHost != "" {
		if u, err := url.Parse(in.ProviderHost); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			p.Add("provider_host", "must be an http or https base URL such as https://api.openai.com/v1")
		}
	}
	in.ReasoningMode = strings.ToLower(strings.TrimSpace(in.ReasoningMode))
	if in.ReasoningMode == "" {
		in.ReasoningMode = "auto"
	}
	if !slices.Contains(ReasoningModes, in.ReasoningMode) {
		p.Add("reasoning_mode", "must be one of %s", strings.Join(ReasoningModes, ", "))
	}
	in.ChatMode = strings.ToLower(strings.TrimSpace(in.ChatMode))
	if in.ChatMode == "" {
		in.ChatMode = "ask"
	}
	if !slices.Contains(ChatModes, in.ChatMode) {
		p.Add("chat_mode", "must be one of %s", strings.Join(ChatModes, ", "))
	}
	return p.Err()
}
