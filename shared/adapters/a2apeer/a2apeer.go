// Package a2apeer calls remote agents that speak A2A (protocol 1.0 or 0.3, JSON-RPC binding) as
// agents' tools, with the official Go SDK's client (github.com/a2aproject/a2a-go/v2/a2aclient, its
// a2acompat/a2av0 transport for agents of 0.3): the agent card read from the tool's URL, the
// newest protocol version both speak chosen, a message sent and its task followed to its end
// (streamed when the card says the agent streams, else sent and polled), every request through
// the HTTP client it is given (the SSRF-guarded one), within the tool's time limit and with the
// answer cut to the size the model is shown.
//
// A remote agent is one operation, send_message, whatever skills its card lists: A2A routes a
// message to an agent, not to a skill, so the skills are described to the model in the
// operation's description, for it to word its message.
package a2apeer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	sdk "github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/tools"
)

// Operation is the name of a remote agent's one operation.
const Operation = "send_message"

// maxBody bounds one response of a remote agent (its card, an answer, a whole stream).
const maxBody = 8 << 20

// pollEvery is the first pause between reads of a task that an agent which does not stream
// answered before it was over; the pauses double up to pollMax.
const (
	pollEvery = 250 * time.Millisecond
	pollMax   = 5 * time.Second
)

// cancelTimeout bounds the cancel of a remote task that a call stopped waiting for.
const cancelTimeout = 5 * time.Second

// Client talks to remote A2A agents: it is the tools' connector of type a2a.
type Client struct {
	http *http.Client
	// pause is the first pause between reads of a task not over (pollEvery).
	pause time.Duration
}

var _ tools.Connector = (*Client)(nil)

// New returns a client whose requests go through hc.
func New(hc *http.Client) *Client { return &Client{http: hc, pause: pollEvery} }

// inputSchema is what the model gives send_message.
var inputSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"message": map[string]any{"type": "string", "description": "What to ask or tell the remote agent, in words."},
		"context_id": map[string]any{"type": "string",
			"description": "The context_id of an earlier answer of this agent, to go on with that conversation."},
		"task_id": map[string]any{"type": "string",
			"description": "The task_id of an earlier answer that asked for input, to answer it."},
	},
	"required":             []any{"message"},
	"additionalProperties": false,
}

// List reads the agent card at e's URL: the agent is one operation, send_message, called at the
// JSON-RPC endpoint the card names, in the newest protocol version it names for it that the
// client speaks (1.0, else 0.3).
func (c *Client) List(ctx context.Context, e tools.Endpoint) ([]tools.Operation, string, error) {
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	card, err := c.card(ctx, e)
	if err != nil {
		return nil, "", err
	}
	iface := jsonRPCInterface(card)
	if iface == nil {
		return nil, "", apperr.New(apperr.BadGateway, "a2a_card_unusable",
			"The agent card names no JSON-RPC endpoint (an http or https URL) of A2A 1.0 or 0.3 to send messages to.")
	}
	return []tools.Operation{{Name: Operation, Description: describe(card), InputSchema: inputSchema,
		Binding: &tools.Binding{Method: http.MethodPost, Server: iface.URL, Streaming: card.Capabilities.Streaming,
			Protocol: string(iface.ProtocolVersion)}}}, "", nil
}

// card reads and decodes the agent card at e's URL (the agent's base URL is taken to mean its
// card at the well-known path).
func (c *Client) card(ctx context.Context, e tools.Endpoint) (*a2a.AgentCard, error) {
	u, err := url.Parse(e.URL)
	if err != nil {
		return nil, apperr.Invalidf("config.url", "is not a URL")
	}
	path := u.EscapedPath()
	if !strings.HasSuffix(path, ".json") {
		path = strings.TrimSuffix(path, "/") + "/.well-known/agent-card.json"
	}
	base := u.Scheme + "://" + u.Host
	// The parser of the SDK's compatibility layer reads a card of either version (one of 0.3 as
	// the interfaces of 1.0 it means).
	resolver := &agentcard.Resolver{Client: c.client(e, u, 0), CardParser: a2av0.NewAgentCardParser()}
	card, err := resolver.Resolve(ctx, base, agentcard.WithPath(path))
	if err != nil {
		var status *agentcard.ErrStatusNotOK
		if errors.As(err, &status) {
			return nil, &apperr.Error{Kind: apperr.BadGateway, Code: "a2a_unreachable",
				Message: fmt.Sprintf("The agent card could not be read: its server answered %s.", status.Status), Err: err}
		}
		return nil, failure(ctx, err, e.Timeout)
	}
	return card, nil
}

// jsonRPCInterface is the card's JSON-RPC interface at an http or https URL of the newest
// protocol version the client speaks (1.0, else 0.3; another minor version of either counts as
// it), in the card's order among equals; nil when there is none.
func jsonRPCInterface(card *a2a.AgentCard) *a2a.AgentInterface {
	var best *a2a.AgentInterface
	for _, i := range card.SupportedInterfaces {
		u, err := url.Parse(i.URL)
		if !strings.EqualFold(string(i.ProtocolBinding), string(a2a.TransportProtocolJSONRPC)) || err != nil ||
			(u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		switch v := protocolOf(i.ProtocolVersion); {
		case v == a2a.Version && (best == nil || best.ProtocolVersion != a2a.Version):
			best = &a2a.AgentInterface{URL: i.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: v}
		case v == a2av0.Version && best == nil:
			best = &a2a.AgentInterface{URL: i.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: v}
		}
	}
	return best
}

// protocolOf is the version of A2A the client speaks that v is (1.0 for 1.x, 0.3 for 0.3.x),
// "" for any other; none (a tool read before versions were kept) is 0.3.
func protocolOf(v a2a.ProtocolVersion) a2a.ProtocolVersion {
	switch s := string(v); {
	case s == "":
		return a2av0.Version
	case s == "1" || strings.HasPrefix(s, "1."):
		return a2a.Version
	case s == "0.3" || strings.HasPrefix(s, "0.3."):
		return a2av0.Version
	}
	return ""
}

// describe is what the model is told of the agent: its name, description and skills.
func describe(card *a2a.AgentCard) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Send a message to the remote agent %q and get its answer.", card.Name)
	if d := strings.TrimSpace(card.Description); d != "" {
		fmt.Fprintf(&b, " %s", d)
	}
	if len(card.Skills) > 0 {
		b.WriteString(" Its skills:")
		for i, s := range card.Skills {
			if i > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " %s", s.Name)
			if d := strings.TrimSpace(s.Description); d != "" {
				fmt.Fprintf(&b, " (%s)", d)
			}
		}
		b.WriteString(".")
	}
	return b.String()
}

// args are send_message's arguments.
type args struct {
	Message   string `json:"message"`
	ContextID string `json:"context_id"`
	TaskID    string `json:"task_id"`
}

// Call sends the message of raw to the agent op names and follows the task it starts to its end
// (or to its asking for input), within e's time limit (a task not over then is canceled): its
// answer, artifacts, and the ids to go on with, as text. A call from a run that answers the last hop of a chain of agent calls is
// not made.
func (c *Client) Call(ctx context.Context, e tools.Endpoint, op tools.Operation, raw json.RawMessage) (tools.Output, error) {
	var in args
	if err := json.Unmarshal(raw, &in); err != nil || strings.TrimSpace(in.Message) == "" {
		return tools.Output{}, apperr.Invalidf("message", "is required: what to ask the remote agent")
	}
	hop := tools.HopOf(ctx) + 1
	if hop > tools.MaxHops {
		return tools.Output{}, apperr.New(apperr.Conflict, "a2a_hop_limit", fmt.Sprintf(
			"Not sent: this run answers a chain of %d agent-to-agent calls, the most there may be; answer without the remote agent.", hop-1))
	}
	if op.Binding == nil || op.Binding.Server == "" {
		return tools.Output{}, apperr.New(apperr.BadGateway, "a2a_card_unusable", "The remote agent's endpoint is not known: refresh the tool.")
	}
	origin, err := url.Parse(e.URL)
	if err != nil {
		return tools.Output{}, apperr.Invalidf("config.url", "is not a URL")
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	hc := c.client(e, origin, hop)
	endpoint := &a2a.AgentInterface{URL: op.Binding.Server, ProtocolBinding: a2a.TransportProtocolJSONRPC,
		ProtocolVersion: protocolOf(a2a.ProtocolVersion(op.Binding.Protocol))}
	client, err := sdk.NewFromEndpoints(ctx, []*a2a.AgentInterface{endpoint}, sdk.WithDefaultsDisabled(), sdk.WithJSONRPCTransport(hc),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}))
	if err != nil {
		return tools.Output{}, failure(ctx, err, e.Timeout)
	}
	defer func() { _ = client.Destroy() }()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(in.Message))
	msg.ContextID, msg.TaskID = strings.TrimSpace(in.ContextID), a2a.TaskID(strings.TrimSpace(in.TaskID))
	var r result
	if op.Binding.Streaming {
		err = c.stream(ctx, client, msg, &r)
	} else {
		err = c.send(ctx, client, msg, &r)
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			stopTask(parent, client, &r)
		}
		return tools.Output{}, failure(ctx, err, e.Timeout)
	}
	text, failed := r.text()
	return tools.OutputOf(text, failed, e.MaxBytes), nil
}

// stopTask asks the agent to cancel r's task, which the call stopped waiting for at its time
// limit: nobody follows it any more. What the agent answers changes nothing: the call failed.
func stopTask(parent context.Context, client *sdk.Client, r *result) {
	if r.task == nil || r.settled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), cancelTimeout)
	defer cancel()
	_, _ = client.CancelTask(ctx, &a2a.CancelTaskRequest{ID: r.task.ID})
}

// stream sends msg as a stream, taking its events into r; a stream that ends before its task
// is over is followed by reading the task.
func (c *Client) stream(ctx context.Context, client *sdk.Client, msg *a2a.Message, r *result) error {
	for ev, err := range client.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
		if err != nil {
			return err
		}
		r.take(ev)
	}
	return c.poll(ctx, client, r)
}

// send sends msg, asking the agent to answer at once rather than hold the connection open until
// the task is over, and, while the task it answers is not over, reads the task again.
func (c *Client) send(ctx context.Context, client *sdk.Client, msg *a2a.Message, r *result) error {
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		return err
	}
	r.take(res)
	return c.poll(ctx, client, r)
}

// poll reads r's task until it is over or asks for input, pausing longer each time.
func (c *Client) poll(ctx context.Context, client *sdk.Client, r *result) error {
	for pause := c.pause; !r.settled(); pause = min(2*pause, pollMax) {
		if r.task == nil {
			return fmt.Errorf("%w: the agent answered neither a message nor a task", a2a.ErrInvalidAgentResponse)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		task, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: r.task.ID})
		if err != nil {
			return err
		}
		r.take(task)
	}
	return nil
}

// client is the HTTP client of the calls to the agent of e: through c's, with e's credentials
// on every request to the origin of its card and of the endpoint its card named (none
// elsewhere, as on a redirect), the hop header when hop is set, and each response bounded.
func (c *Client) client(e tools.Endpoint, origin *url.URL, hop int) *http.Client {
	hc := *c.http
	hc.Transport = &peer{base: hc.Transport, headers: e.Headers, query: e.Query, origin: origin, hop: hop}
	return &hc
}

// peer is the transport of the calls to one remote agent.
type peer struct {
	base    http.RoundTripper
	headers map[string]string
	query   url.Values
	origin  *url.URL
	hop     int
}

func (p *peer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if safehttp.SameOrigin(r.URL, p.origin) {
		for k, v := range p.headers {
			r.Header.Set(k, v)
		}
		if len(p.query) > 0 {
			q := r.URL.Query()
			for k, vs := range p.query {
				q[k] = vs
			}
			r.URL.RawQuery = q.Encode()
		}
	}
	if p.hop > 0 {
		r.Header.Set(tools.HopHeader, strconv.Itoa(p.hop))
	}
	base := p.base
	if base == nil {
		base = http.DefaultTransport
	}
	res, err := base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	res.Body = http.MaxBytesReader(nil, res.Body, maxBody)
	return res, nil
}

// failure is err as the error a user sees: the agent did not answer in time, refused the
// message (its JSON-RPC error), or could not be reached (without the addresses or resolver
// details of the failure, but for a refusal of the outbound policy, which names the rule).
func failure(ctx context.Context, err error, limit time.Duration) error {
	var e *apperr.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return apperr.New(apperr.GatewayTimeout, "a2a_timeout",
			fmt.Sprintf("The remote agent did not answer within %gs.", limit.Seconds()))
	case errors.As(err, &e):
		return err
	case errors.Is(err, safehttp.ErrBlocked):
		return &apperr.Error{Kind: apperr.BadGateway, Code: "a2a_unreachable",
			Message: "The remote agent could not be reached: " + blocked(err), Err: err}
	case rpcError(err):
		return &apperr.Error{Kind: apperr.BadGateway, Code: "a2a_refused", Message: "The remote agent refused the message: " + err.Error(), Err: err}
	}
	return &apperr.Error{Kind: apperr.BadGateway, Code: "a2a_unreachable",
		Message: "The remote agent could not be reached or did not speak A2A (JSON-RPC).", Err: err}
}

// blocked is the outbound policy's reason for refusing a request, without the request.
func blocked(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if errors.Is(e, safehttp.ErrBlocked) && errors.Unwrap(e) == nil {
			return e.Error() + "."
		}
	}
	return "its address is not allowed."
}

// rpcErrors are the errors a remote agent answers (JSON-RPC errors of A2A).
var rpcErrors = []error{a2a.ErrParseError, a2a.ErrInvalidRequest, a2a.ErrMethodNotFound, a2a.ErrInvalidParams, a2a.ErrInternalError,
	a2a.ErrServerError, a2a.ErrTaskNotFound, a2a.ErrTaskNotCancelable, a2a.ErrPushNotificationNotSupported, a2a.ErrUnsupportedOperation,
	a2a.ErrUnsupportedContentType, a2a.ErrInvalidAgentResponse, a2a.ErrExtendedCardNotConfigured, a2a.ErrExtensionSupportRequired,
	a2a.ErrVersionNotSupported, a2a.ErrUnauthenticated, a2a.ErrUnauthorized}

func rpcError(err error) bool {
	for _, e := range rpcErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
