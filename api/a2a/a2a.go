// Package a2a is the A2A door: every agent served as an A2A server (protocol 1.0 and, for
// clients not yet on it, 0.3, over the JSON-RPC binding, with the official Go SDK's handlers),
// its agent card at the well-known path under the agent's own URL. A task is an agent run and a context a chat of the agent; both live in
// the store, so any API replica answers any request. api mounts its routes.
package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/tools"
)

// AgentsPath is where every agent is served as an A2A server: /a2a/agents/{bot_id}, its card at
// /a2a/agents/{bot_id}/.well-known/agent-card.json.
const AgentsPath = "/a2a/agents"

// CardPath is the agent card's path under the agent's URL.
const CardPath = a2asrv.WellKnownAgentCardPath

// HopHeader counts the agent-to-agent calls a request is at the end of (tools.HopHeader).
const HopHeader = tools.HopHeader

// MaxHops is the longest chain of agent-to-agent calls an agent answers: a call at a hop beyond
// it is refused, so that agents calling each other in a loop stop.
const MaxHops = tools.MaxHops

// ProtocolVersions are the A2A protocol versions the door speaks, newest first: 1.0 (methods
// SendMessage, ...) and 0.3 (message/send, ...), at the same endpoint.
var ProtocolVersions = []a2a.ProtocolVersion{a2a.Version, a2av0.Version}

// Door is what the A2A door needs of the API: the domain's services and the authorisation api
// does. New makes one ready to serve.
type Door struct {
	Log     *slog.Logger
	Chats   *chats.Service
	Runs    *agentruns.Service
	Tools   *tools.Service
	Sources *sources.Service
	// RunWait bounds how long message/send waits for an agent run.
	RunWait time.Duration
	// PublicURL is the service's address as its callers reach it ("" takes the request's host).
	PublicURL string
	// Decoder reads request bodies, within the API's size limit.
	Decoder httpx.Decoder
	// Heartbeat spaces the keep-alive comments of event streams.
	Heartbeat time.Duration
	// Bot is the agent botID names, authorised for the request's key (in the agent's own project).
	Bot func(c *gin.Context, botID string) (agents.Bot, error)
	// AgentAllow takes one message of the agent's rate limit for the key keyID.
	AgentAllow func(ctx context.Context, bot agents.Bot, keyID string) error

	rpc, rpc03 http.Handler
}

// New is the door d, with its JSON-RPC handler made.
func New(d Door) *Door {
	door := &d
	handler := &a2asrv.InterceptedHandler{Handler: &tasks{door: door}, Logger: d.Log, Interceptors: []a2asrv.CallInterceptor{hopLimit{}}}
	keepAlive := a2asrv.WithTransportKeepAlive(d.Heartbeat)
	door.rpc = a2asrv.NewJSONRPCHandler(handler, keepAlive)
	door.rpc03 = a2av0.NewJSONRPCHandler(handler, keepAlive)
	return door
}

// caller is the agent an A2A request reaches, authorised for the caller's account, and the hop
// the request is at.
type caller struct {
	accountID, keyID string
	bot              agents.Bot
	hop              int
}

type callerKey struct{}

func callerOf(ctx context.Context) caller {
	a, _ := ctx.Value(callerKey{}).(caller)
	return a
}

// Agent authorises the agent the path names (its project must be one of the key's account;
// another account's agent is not found) and serves the JSON-RPC request for it: a method of
// A2A 0.3 (its names have a slash: message/send) by the SDK's 0.3 handler, any other by its
// 1.0 one.
func (d *Door) Agent(c *gin.Context) {
	bot, err := d.Bot(c, c.Param("bot_id"))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	body, err := d.Decoder.Raw(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	var call struct {
		Method string `json:"method"`
	}
	rpc := d.rpc
	if json.Unmarshal(body, &call) == nil && strings.Contains(call.Method, "/") {
		rpc = d.rpc03
	}
	p := httpx.Principal(c)
	ctx := context.WithValue(c.Request.Context(), callerKey{}, caller{accountID: p.AccountID, keyID: p.KeyID, bot: bot, hop: hopOf(c.Request)})
	r := c.Request.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	// The SDK's handlers leave a JSON answer's type unset (a stream sets its own).
	c.Header("Content-Type", "application/json")
	rpc.ServeHTTP(c.Writer, r)
}

// hopOf reads the request's hop: 1 when absent, 0 when it is not a positive number (refused).
func hopOf(r *http.Request) int {
	v := strings.TrimSpace(r.Header.Get(HopHeader))
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// hopLimit refuses every method of a request at a hop beyond MaxHops, or with a hop that is
// not a number, as an invalid request (-32600) saying why.
type hopLimit struct {
	a2asrv.PassthroughCallInterceptor
}

func (hopLimit) Before(ctx context.Context, _ *a2asrv.CallContext, _ *a2asrv.Request) (context.Context, any, error) {
	switch hop := callerOf(ctx).hop; {
	case hop == 0:
		return ctx, nil, fmt.Errorf("%w: the %s header must be a positive whole number of agent-to-agent calls", a2a.ErrInvalidRequest, HopHeader)
	case hop > MaxHops:
		return ctx, nil, fmt.Errorf("%w: hop limit exceeded: this call is hop %d of a chain of agent-to-agent calls (%s), and agents answer at most %d",
			a2a.ErrInvalidRequest, hop, HopHeader, MaxHops)
	}
	return ctx, nil, nil
}

// Card serves the agent card of the agent the path names, to its account's keys (and its own A2A
// keys) only: it names the agent's tools and memory sources, which are the account's own. The card is A2A 1.0's
// with 0.3's fields beside (url, protocolVersion, ...), as the SDK's compatibility layer
// writes it, so that clients of either version read it.
func (d *Door) Card(c *gin.Context) {
	bot, err := d.Bot(c, c.Param("bot_id"))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	skills, err := d.skills(c, bot)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	base := d.PublicURL
	if base == "" {
		scheme := "http"
		if c.Request.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + c.Request.Host
	}
	url := base + AgentsPath + "/" + bot.ID
	card := &a2a.AgentCard{
		Name:               bot.Name,
		Description:        fmt.Sprintf("The agent %q: it answers from its memory and may use its tools; a tool that changes data may wait for your approval.", bot.Name),
		Version:            bot.UpdatedAt.UTC().Format(time.RFC3339),
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             skills,
		SecuritySchemes: a2a.NamedSecuritySchemes{
			"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "The account's API key, as the agent API takes it."},
			"a2aKey": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer",
				Description: "An A2A key of this agent (POST /v1/bot/a2a/key/create): it reaches this agent's A2A endpoint and nothing else."},
		},
		// Either one.
		SecurityRequirements: a2a.SecurityRequirementsOptions{{"bearer": a2a.SecuritySchemeScopes{}}, {"a2aKey": a2a.SecuritySchemeScopes{}}},
	}
	for _, v := range ProtocolVersions {
		card.SupportedInterfaces = append(card.SupportedInterfaces,
			&a2a.AgentInterface{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: v})
	}
	body, err := a2av0.NewStaticAgentCardProducer(card).(a2asrv.AgentCardJSONProducer).CardJSON(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	c.Data(http.StatusOK, "application/json", body)
}

// cardSkillsMax bounds the tools and the sources a card lists, each.
const cardSkillsMax = paging.MaxPerPage

// skills are what the agent can do: chat, each operation of its tools its runs may call, and
// answering from each of its memory sources.
func (d *Door) skills(ctx context.Context, bot agents.Bot) ([]a2a.AgentSkill, error) {
	skills := []a2a.AgentSkill{{ID: "chat", Name: "Chat", Tags: []string{"chat"},
		Description: fmt.Sprintf("Ask %s anything; give the contextId of an earlier answer to go on with that conversation.", bot.Name)}}
	offers, err := d.Tools.Offers(ctx, bot.ProjectID, bot.ID, bot.ToolSet())
	if err != nil {
		return nil, err
	}
	for _, o := range offers[:min(len(offers), cardSkillsMax)] {
		skills = append(skills, a2a.AgentSkill{ID: "tool:" + o.Name, Name: o.Operation, Description: o.Description, Tags: []string{"tool", o.Label}})
	}
	srcs, _, err := d.Sources.List(ctx, bot.ProjectID, bot.ID, sources.ListFilter{Status: sources.StatusSuccess},
		paging.Page{Page: 1, PerPage: cardSkillsMax})
	if err != nil {
		return nil, err
	}
	for _, s := range srcs {
		skills = append(skills, a2a.AgentSkill{ID: "source:" + s.ID, Name: s.Title, Tags: []string{"memory", s.Type},
			Description: fmt.Sprintf("Answers from %q in its memory. %s", s.Title, s.Description)})
	}
	return skills, nil
}
