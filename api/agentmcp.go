package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/memory"
)

// AgentMCPPath is where every agent is served as an MCP server: /mcp/agents/{bot_id}.
const AgentMCPPath = "/mcp/agents"

// agentAt is the agent an MCP request reaches, authorised for the caller's account.
type agentAt struct {
	projectID, accountID, keyID string
	bot                         agents.Bot
}

type agentAtKey struct{}

// newAgentMCP is the MCP handler of agents (Streamable HTTP, stateless: any API replica answers
// any request, and no session outlives its request). Its server is made per request for the
// agent agentMCP authorised.
func (s *server) newAgentMCP() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		a, ok := r.Context().Value(agentAtKey{}).(agentAt)
		if !ok {
			return nil
		}
		return s.agentServer(a)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// agentMCP authorises the agent the path names (its project must be one of the key's account;
// another account's agent is not found) and serves the MCP request for it.
func (s *server) agentMCP(c *gin.Context) {
	sc := scope{BotID: c.Param("bot_id")}
	bot, err := s.bot(c, &sc)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	ctx := context.WithValue(c.Request.Context(), agentAtKey{}, agentAt{projectID: sc.ProjectID, accountID: httpx.Principal(c).AccountID,
		keyID: httpx.Principal(c).KeyID, bot: bot})
	s.agentMCPHandler.ServeHTTP(c.Writer, c.Request.WithContext(ctx))
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
func (s *server) agentServer(a agentAt) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentplane", Title: a.bot.Name, Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "chat", Description: fmt.Sprintf("Ask the agent %q. It answers from its memory and may use its tools; "+
		"give chat_id to go on with a conversation.", a.bot.Name)},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpChatArgs) (*mcp.CallToolResult, mcpChatOut, error) {
			out, err := s.mcpChat(ctx, a, in)
			if err != nil {
				return toolError(err), mcpChatOut{}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Reply}}}, out, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "search_memory", Description: fmt.Sprintf("Search the memory of the agent %q: its documents, pages and notes.", a.bot.Name),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpSearchArgs) (*mcp.CallToolResult, mcpSearchOut, error) {
			if strings.TrimSpace(in.Query) == "" {
				return toolError(apperr.Invalidf("query", "is required")), mcpSearchOut{}, nil
			}
			found, err := s.memory.Search(ctx, memory.Query{ProjectID: a.projectID, BotID: a.bot.ID, Text: in.Query, Top: in.Top})
			if err != nil {
				return toolError(err), mcpSearchOut{}, nil
			}
			var text strings.Builder
			for i, p := range found {
				fmt.Fprintf(&text, "[%d] %s\n%s\n\n", i+1, p.Heading(), p.Text)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSpace(text.String())}}},
				mcpSearchOut{Passages: append([]memory.Passage{}, found...)}, nil
		})
	return srv
}

// mcpChat is one chat turn of the agent, waited for as a non-streamed chat is: an agent run
// answers within the run wait, or says what it waits for. It counts against the agent's rate
// limit for the caller's key as a chat request does. The turn remembers the end user the
// caller names (user), and no one when it names none: one key may serve many people.
func (s *server) mcpChat(ctx context.Context, a agentAt, args mcpChatArgs) (mcpChatOut, error) {
	if _, err := s.botAllow(ctx, a.bot, a.keyID); err != nil {
		return mcpChatOut{}, err
	}
	in := chats.Input{Message: &args.Message, ChatID: args.ChatID}
	asker := chats.Asker{AccountID: a.accountID, ForEndUsers: true, EndUser: args.User}
	out, err := s.chats.Chat(ctx, a.projectID, a.bot, asker, in, nil)
	if err != nil {
		return mcpChatOut{}, err
	}
	reply := out.Reply
	if out.RunID != "" {
		e, err := s.runs.Get(ctx, a.projectID, a.bot.ID, out.RunID)
		if err != nil {
			return mcpChatOut{}, err
		}
		wait, cancel := context.WithTimeout(ctx, s.runWait)
		defer cancel()
		if e, err = s.runs.Follow(wait, e, 0, func(agentruns.Entry) error { return nil }, nil); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return mcpChatOut{}, err
		}
		r, err := s.runs.Reply(ctx, e)
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
func toolError(err error) *mcp.CallToolResult {
	e := apperr.As(err)
	msg := e.Message
	if e.Kind == apperr.Internal {
		msg = "Internal error."
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: e.Code + ": " + msg}}}
}
