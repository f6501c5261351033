// Package mcp is the MCP door: every agent served as an MCP server (chat with it, search its
// memory), and the hosted servers (one tool per operation of an imported API). Both speak
// Streamable HTTP, stateless: any API replica answers any request. api mounts its routes.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/tenancy"
	"github.com/agentplane/agentplane/shared/tools"
)

// AgentsPath is where every agent is served as an MCP server: /mcp/agents/{bot_id}.
const AgentsPath = "/mcp/agents"

// Door is what the MCP door needs of the API: the domain's services and the authorisation api
// does. New makes one ready to serve.
type Door struct {
	Log     *slog.Logger
	Tenancy *tenancy.Service
	Chats   *chats.Service
	Runs    *agentruns.Service
	Memory  *memory.Memory
	Tools   *tools.Service
	// RunWait bounds how long an agent run is waited for.
	RunWait time.Duration
	// Bot is the agent botID names, authorised for the request's key (in the agent's own project).
	Bot func(c *gin.Context, botID string) (agents.Bot, error)
	// AgentAllow takes one message of the agent's rate limit for the key keyID.
	AgentAllow func(ctx context.Context, bot agents.Bot, keyID string) error

	agents, hosted http.Handler
}

// New is the door d, with its MCP handlers made.
func New(d Door) *Door {
	door := &d
	door.agents, door.hosted = door.newAgentMCP(), door.newHostedMCP()
	return door
}

// agentAt is the agent an MCP request reaches, authorised for the caller's account.
type agentAt struct {
	projectID, accountID, keyID string
	bot                         agents.Bot
}

type agentAtKey struct{}

// newAgentMCP is the MCP handler of agents (Streamable HTTP, stateless: any API replica answers
// any request, and no session outlives its request). Its server is made per request for the
// agent Agent authorised.
func (d *Door) newAgentMCP() http.Handler {
	return sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		a, ok := r.Context().Value(agentAtKey{}).(agentAt)
		if !ok {
			return nil
		}
		return d.agentServer(a)
	}, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// Agent authorises the agent the path names (its project must be one of the key's account;
// another account's agent is not found) and serves the MCP request for it.
func (d *Door) Agent(c *gin.Context) {
	bot, err := d.Bot(c, c.Param("bot_id"))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	ctx := context.WithValue(c.Request.Context(), agentAtKey{}, agentAt{projectID: bot.ProjectID, accountID: httpx.Principal(c).AccountID,
		keyID: httpx.Principal(c).KeyID, bot: bot})
	d.agents.ServeHTTP(c.Writer, c.Request.WithContext(ctx))
}

type mcpChatArgs struct {
	Message string `json:"message" jsonschema:"what to ask or tell the agent"`
	ChatID  string `json:"chat_id,omitempty" jsonschema:"the chat to go on with, from an earlier answer; a new chat when left out"`
	User    string `json:"user,omitempty" jsonschema:"the end user you ask for, as you name them: the agent remembers what each states about themselves and recalls it for them only; nothing is remembered when left out"`
}

type mcpChatOut struct {
	ChatID      string `json:"chat_id"`
	Reply       string `json:"reply"`
	ExecutionID string `json:"execution_id,omitempty"`
	// WaitingFor names the tool the agent's run waits to be approved for.
	WaitingFor string `json:"waiting_for,omitempty"`
	Complete   bool   `json:"complete"`
}

type mcpSearchArgs struct {
	Query string `json:"query" jsonschema:"what to look for in the agent's memory"`
	Top   int    `json:"top,omitempty" jsonschema:"how many passages, 1 to 20 (5 by default)"`
}

type mcpSearchOut struct {
	Passages []memory.Passage `json:"passages"`
}

// agentServer is the MCP server of one agent: chat with it, or search its memory.
func (d *Door) agentServer(a agentAt) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "agentplane", Title: a.bot.Name, Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "chat", Description: fmt.Sprintf("Ask the agent %q. It answers from its memory and may use its tools; "+
		"give chat_id to go on with a conversation.", a.bot.Name)},
		func(ctx context.Context, _ *sdk.CallToolRequest, in mcpChatArgs) (*sdk.CallToolResult, mcpChatOut, error) {
			out, err := d.chat(ctx, a, in)
			if err != nil {
				return toolError(err), mcpChatOut{}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out.Reply}}}, out, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "search_memory", Description: fmt.Sprintf("Search the memory of the agent %q: its documents, pages and notes.", a.bot.Name),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in mcpSearchArgs) (*sdk.CallToolResult, mcpSearchOut, error) {
			if strings.TrimSpace(in.Query) == "" {
				return toolError(apperr.Invalidf("query", "is required")), mcpSearchOut{}, nil
			}
			found, err := d.Memory.Search(ctx, memory.Query{ProjectID: a.projectID, BotID: a.bot.ID, Text: in.Query, Top: in.Top, Sources: a.bot.Sources})
			if err != nil {
				return toolError(err), mcpSearchOut{}, nil
			}
			var text strings.Builder
			for i, p := range found {
				fmt.Fprintf(&text, "[%d] %s\n%s\n\n", i+1, p.Heading(), p.Text)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.TrimSpace(text.String())}}},
				mcpSearchOut{Passages: append([]memory.Passage{}, found...)}, nil
		})
	return srv
}

// chat is one chat turn of the agent, waited for as a non-streamed chat is: an agent run
// answers within the run wait, or says what it waits for. It counts against the agent's rate
// limit for the caller's key as a chat request does. The turn remembers the end user the
// caller names (user), and no one when it names none: one key may serve many people.
func (d *Door) chat(ctx context.Context, a agentAt, args mcpChatArgs) (mcpChatOut, error) {
	if err := d.AgentAllow(ctx, a.bot, a.keyID); err != nil {
		return mcpChatOut{}, err
	}
	in := chats.Input{Message: &args.Message, ChatID: args.ChatID}
	asker := chats.Asker{AccountID: a.accountID, ForEndUsers: true, EndUser: args.User}
	out, err := d.Chats.Chat(ctx, a.projectID, a.bot, asker, in, nil)
	if err != nil {
		return mcpChatOut{}, err
	}
	reply := out.Reply
	if out.RunID != "" {
		f, err := d.Runs.Open(ctx, a.projectID, a.bot.ID, out.RunID)
		if err != nil {
			return mcpChatOut{}, err
		}
		defer f.Close()
		wait, cancel := context.WithTimeout(ctx, d.RunWait)
		defer cancel()
		e, err := f.Follow(wait, 0, func(agentruns.Entry) error { return nil }, nil)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return mcpChatOut{}, err
		}
		r, err := d.Runs.Reply(ctx, e)
		if err != nil {
			return mcpChatOut{}, err
		}
		reply = &r
	}
	res := mcpChatOut{ChatID: reply.ChatID, Reply: reply.Reply, ExecutionID: reply.ExecutionID, Complete: reply.IsComplete || reply.ExecutionID == ""}
	if reply.RequiresApprove && reply.Tool != nil {
		res.WaitingFor = reply.Tool.Name
		res.Reply = fmt.Sprintf("The agent waits for approval to run %s (execution %s): approve or reject it with POST /v1/bot/chat/execute-tool.",
			reply.Tool.Name, reply.ExecutionID)
	}
	return res, nil
}

// toolError is err as an MCP tool's failure, which the caller's model reads: its message, never
// what it wraps.
func toolError(err error) *sdk.CallToolResult {
	e := apperr.As(err)
	msg := e.Message
	if e.Kind == apperr.Internal {
		msg = "Internal error."
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: e.Code + ": " + msg}}}
}
