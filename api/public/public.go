// Package public is the end users' door: an agent's hosted chat page at /a/{subdomain} (and at
// the root of the host that names it), its files in web/, the widget, and the public endpoints
// the page speaks to with a session token scoped to the agent (never an API key). api mounts its
// routes.
package public

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/keylock"
	"github.com/agentplane/agentplane/shared/kit/markdown"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/subscribers"
)

//go:embed web
var web embed.FS

var pageTemplate = template.Must(template.ParseFS(web, "web/page.html"))

// Door is what the end users' door needs of the API: the domain's services, the limits api
// configures and the agent's rate limit api keeps.
type Door struct {
	Agents      *agents.Service
	Chats       *chats.Service
	Runs        *agentruns.Service
	Subscribers *subscribers.Service
	Turns       httpx.Turns
	Decoder     httpx.Decoder
	// Heartbeat spaces the comment lines of its streams.
	Heartbeat time.Duration
	Limiter   *redis_rate.Limiter
	// Rate and AgentRate are the end users' requests a minute per client address and per agent
	// (0: no limit).
	Rate, AgentRate int
	// Budget bounds the turns in progress of one project's visitors (nil: no bound); a turn waits
	// up to BudgetWait for one.
	Budget     *keylock.Locks
	BudgetWait time.Duration
	// AgentAllow takes one message of the agent's rate limit for the key keyID.
	AgentAllow func(ctx context.Context, bot agents.Bot, keyID string) error
	// Watch streams a project's domain events of the types a subject pattern selects, as they
	// are published.
	Watch func(ctx context.Context, projectID, types string) (<-chan outbox.Event, error)
}

// Channel is the channel of the messages end users write on the agent's page and widget.
const Channel = "web"

// PagePath is where an agent's hosted chat page is: /a/{subdomain}.
const PagePath = "/a"

// color is what a branding colour must look like to reach the page's style.
var color = regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// pageLink is a navigation link of the page.
type pageLink struct {
	Title string
	URL   string
}

// pageData is what the page shows of the agent.
type pageData struct {
	Subdomain, Name, Title, Description, Keywords, Favicon, Logo, Tagline, About string
	Theme, Placeholder, Accent, Background                                       string
	Links                                                                        []pageLink
	Greetings, Starters                                                          []string
	PoweredBy                                                                    bool
	// RequireLogin says the agent talks only to users signed in with SSO.
	RequireLogin bool
	// ParentOrigin is the origin of the page that embeds this one (the widget's), when the agent
	// allows it; Refused is the one it does not allow, which the page shows in place of the chat.
	ParentOrigin, Refused string
}

// cspHost is what a host (and port) of a web URL must look like to be named in a header.
var cspHost = regexp.MustCompile(`^[a-zA-Z0-9.-]+(?::[0-9]+)?$|^\[[0-9a-fA-F:.]+\](?::[0-9]+)?$`)

// originsOf is the origins of urls, each after a space, for a Content-Security-Policy source list.
func originsOf(urls ...string) string {
	var out strings.Builder
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && raw != "" && cspHost.MatchString(u.Host) {
			out.WriteString(" " + strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host))
		}
	}
	return out.String()
}

// webURL is a URL the page may link or load: http or https only.
func webURL(u string) string {
	u = strings.TrimSpace(u)
	if lower := strings.ToLower(u); strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://") {
		return u
	}
	return ""
}

func pageOf(b agents.Bot) pageData {
	br := b.Branding
	d := pageData{Subdomain: b.Subdomain, Name: b.Name, Title: orDefault(br.SEO.Title, b.Name), Description: br.SEO.Description,
		Keywords: br.SEO.Keywords, Theme: "light", Placeholder: orDefault(br.Placeholder, "Ask me anything..."), Accent: "#2563eb",
		Background: "#ffffff", PoweredBy: b.HideBranding == 0, RequireLogin: b.RequireLogin == 1}
	if br.Theme == "dark" {
		d.Theme = "dark"
	}
	if color.MatchString(br.AccentColor) {
		d.Accent = br.AccentColor
	}
	if color.MatchString(br.BackgroundColor) {
		d.Background = br.BackgroundColor
	}
	if br.Favicon.Enabled {
		d.Favicon = webURL(br.Favicon.URL)
	}
	if br.Logo.Enabled {
		d.Logo = webURL(br.Logo.URL)
	}
	if br.Tagline.Enabled {
		d.Tagline = br.Tagline.Content
	}
	if br.Description.Enabled {
		d.About = br.Description.Content
	}
	if br.Navigation.Enabled {
		for _, l := range br.Navigation.Links {
			u, _ := l["url"].(string)
			title, _ := l["title"].(string)
			if title == "" {
				title, _ = l["label"].(string)
			}
			if u = webURL(u); u != "" {
				d.Links = append(d.Links, pageLink{Title: orDefault(title, u), URL: u})
			}
		}
	}
	if br.MessageGreetings.Enabled {
		d.Greetings = br.MessageGreetings.Greetings
	}
	if br.ConversationStarters.Enabled {
		d.Starters = br.ConversationStarters.Prompts
	}
	return d
}

func orDefault(v, otherwise string) string {
	if strings.TrimSpace(v) == "" {
		return otherwise
	}
	return v
}

// Page serves an agent's hosted chat page at /a/{subdomain}.
func (d *Door) Page(c *gin.Context) {
	bot, err := d.Agents.BySubdomain(c, c.Param("subdomain"))
	d.servePage(c, bot, err)
}

// HostPage serves the page of the agent the request's host names, at the root: a subdomain of
// AGENTPLANE_PUBLIC_DOMAIN, or an agent's own domain once verified.
func (d *Door) HostPage(c *gin.Context) {
	host := c.Request.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	bot, err := d.Agents.ByHost(c, host)
	d.servePage(c, bot, err)
}

// servePage answers bot's page, or err.
func (d *Door) servePage(c *gin.Context, bot agents.Bot, err error) {
	if err == nil && !bot.Active() {
		err = apperr.NotFoundf(agents.Resource)
	}
	if err != nil {
		status, _, e := httpx.ErrorOf(c, err)
		c.Data(status, "text/plain; charset=utf-8", []byte(e.Message))
		return
	}
	data := pageOf(bot)
	ancestors := "'self'"
	if parent := strings.TrimRight(strings.ToLower(c.Query("origin")), "/"); c.Query("embed") != "" {
		if slices.Contains(bot.AllowedOrigins, parent) {
			// Only an origin the agent allows may embed it (the widget on its site).
			data.ParentOrigin, ancestors = parent, "'self' "+parent
		} else {
			// Any other is shown a notice of what to do, and nothing of the agent.
			if !agents.Origin(parent) {
				parent = "this site"
			}
			data, ancestors = pageData{Title: "Not allowed here", Theme: "light", Accent: "#2563eb", Background: "#ffffff", Refused: parent}, "*"
		}
	}
	// Images come from the deployment and the agent's logo and favicon, never from a reply.
	c.Header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:"+originsOf(data.Logo, data.Favicon)+"; style-src 'self' 'unsafe-inline'; frame-ancestors "+ancestors)
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Referrer-Policy", "strict-origin-when-cross-origin")
	c.Status(http.StatusOK)
	c.Header("Content-Type", "text/html; charset=utf-8")
	if err := pageTemplate.Execute(c.Writer, data); err != nil {
		httpx.Logger(c).Error("page", "error", err)
	}
}

// Asset serves a file of the page (its script, its style).
func Asset(name string) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Header("Cache-Control", "public, max-age=300")
		c.Header("X-Content-Type-Options", "nosniff")
		c.FileFromFS("web/"+name, http.FS(web))
	}
}

type sessionRequest struct {
	Subdomain    string `json:"subdomain"`
	SubscriberID string `json:"subscriber_id"`
	// SSOToken signs the user in (the agent's customer signs it with the agent's SSO secret).
	SSOToken string `json:"sso_token"`
}

// OpenSession gives an end user of the agent at the subdomain a session: the subscriber id the
// browser kept, or a new one.
func (d *Door) OpenSession(c *gin.Context) (any, error) {
	var req sessionRequest
	if err := d.Decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	bot, err := d.Agents.BySubdomain(c, req.Subdomain)
	if err == nil && !bot.Active() {
		err = apperr.NotFoundf(agents.Resource)
	}
	if err == nil {
		err = d.agentLimit(c, bot)
	}
	if err != nil {
		return nil, err
	}
	return d.Subscribers.Open(c, bot, req.SubscriberID, req.SSOToken)
}

// endUser is the agent and subscriber a session token speaks for: the subscriber as the token
// has it (its id and name), with no store read. Subscribers are never deleted, and an agent
// deleted or paused refuses its sessions; an agent that requires sign-in refuses anonymous ones
// (opened before it did). The request counts against the agent's limit for all its visitors.
func (d *Door) endUser(c *gin.Context) (agents.Bot, subscribers.Subscriber, error) {
	scheme, token, ok := strings.Cut(c.GetHeader("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return agents.Bot{}, subscribers.Subscriber{}, apperr.New(apperr.Unauthorized, "invalid_session", "A session token is required (POST /public/v1/session).")
	}
	claims, err := d.Subscribers.Verify(token)
	if err != nil {
		return agents.Bot{}, subscribers.Subscriber{}, err
	}
	bot, err := d.Agents.Find(c, claims.BotID)
	if err == nil && !bot.Active() {
		err = apperr.NotFoundf(agents.Resource)
	}
	if err == nil && bot.RequireLogin == 1 && !claims.SignedIn {
		err = apperr.New(apperr.Unauthorized, "login_required", "This agent requires sign-in: open it from the site that signs you in.")
	}
	if err == nil {
		err = d.agentLimit(c, bot)
	}
	if err != nil {
		return agents.Bot{}, subscribers.Subscriber{}, err
	}
	return bot, subscribers.Subscriber{ID: claims.SubscriberID, ProjectID: bot.ProjectID, BotID: bot.ID, Name: claims.Name, Anonymous: !claims.SignedIn}, nil
}

// asker is the end user as the author of chat messages.
func askerOf(sub subscribers.Subscriber) chats.Asker {
	return chats.Asker{AccountID: sub.ID, Name: sub.Name, Subscriber: sub.ID}
}

type publicChatRequest struct {
	Message string `json:"message"`
	ChatID  string `json:"chat_id"`
	// ExecutionID and Approve decide on the tool call a run of the end user's chat waits for,
	// instead of a message.
	ExecutionID string `json:"execution_id"`
	Approve     *bool  `json:"approve"`
}

// publicReply is a reply as the page shows it: its text rendered as safe HTML, its sources.
type publicReply struct {
	ChatID string `json:"chat_id"`
	// MessageID is the agent's message (the page shows a message once, however it came).
	MessageID string `json:"message_id"`
	// Text is the reply as the agent wrote it (Markdown); HTML is how the page shows it.
	Text       string         `json:"text"`
	HTML       string         `json:"html"`
	Sources    []publicSource `json:"sources"`
	WaitingFor string         `json:"waiting_for,omitempty"`
	// Human says a person of the team has, or is asked to take, the chat: the page shows what
	// they write as it comes.
	Human bool `json:"human,omitempty"`
	// ExecutionID is the run that waits, for the page's Approve and Reject.
	ExecutionID string `json:"execution_id,omitempty"`
}

type publicSource struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

func sourcesOf(refs []memory.Ref) []publicSource {
	out := []publicSource{}
	for _, r := range refs {
		out = append(out, publicSource{Title: r.Title, URL: webURL(r.URL)})
	}
	return out
}

// publicSink streams a reply's pieces to the page.
type publicSink struct{ st *httpx.SSE }

func (p publicSink) Stored(chats.Message) error { return nil }
func (p publicSink) InChat(string) error        { return nil }
func (p publicSink) Delta(text string) error {
	return p.st.Event("delta", gin.H{"content": text})
}

// Chat is a turn of the end user's chat with the agent, streamed: delta events as the
// reply is made, then done with the reply as the page shows it. Each message counts against the
// agent's rate limit for this end user. A turn may instead decide on the tool call a run of one
// of the end user's chats waits for. The turns in progress of one project's visitors are bounded
// as an account's requests are (AGENTPLANE_ACCOUNT_CONCURRENCY), apart from those.
func (d *Door) Chat(c *gin.Context) {
	var req publicChatRequest
	if err := d.Decoder.Decode(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	bot, sub, err := d.endUser(c)
	var t httpx.Turn
	if err == nil {
		t, err = d.publicTurn(c, bot, sub, req)
	}
	release := func() {}
	if err == nil {
		release, err = d.visitorsBudget(c, bot)
	}
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	defer release()
	st := httpx.NewSSE(c, d.Heartbeat)
	defer st.Close()
	reply, err := d.Turns.Converse(c.Request.Context(), bot, askerOf(sub), t, publicSink{st: st})
	switch {
	case err != nil && chats.IsDisconnect(err) && c.Request.Context().Err() != nil:
	case err != nil && !st.Began():
		httpx.Fail(c, err)
	case err != nil:
		_, body, _ := httpx.ErrorOf(c, err)
		_ = st.Event("error", body)
	default:
		if req.ChatID == "" && t.Decision == nil {
			if err := d.Subscribers.ChatStarted(c, sub); err != nil {
				httpx.Logger(c).Warn("subscriber's chat not counted", "error", err)
			}
		}
		_ = st.Event("done", replyOf(bot, reply))
	}
}

// replyOf is reply as the page shows it. A run that waits for approval offers the visitor the
// decision (its execution id) only when the agent lets visitors approve; else it waits for the
// account's.
func replyOf(bot agents.Bot, reply chats.Reply) publicReply {
	out := publicReply{ChatID: reply.ChatID, MessageID: reply.Agent.UUID, Text: reply.Reply, HTML: markdown.HTML(reply.Reply), Sources: sourcesOf(reply.Sources),
		Human: reply.Type == chats.KindHuman || reply.Type == chats.KindHandoff}
	if reply.RequiresApprove && reply.Tool != nil {
		out.WaitingFor = reply.Tool.Name
		if bot.VisitorApprovals {
			out.ExecutionID = reply.ExecutionID
			out.HTML = markdown.HTML("The agent wants to use **" + reply.Tool.Name + "** and waits for approval.")
		} else {
			out.HTML = markdown.HTML("The agent wants to use **" + reply.Tool.Name + "** and waits for the team's approval; its answer will be in this chat.")
		}
	}
	return out
}

// publicTurn is what the end user's request asks: a message, answered in the agent's
// reasoning_type, which counts against the agent's limit for them (and, when they are anonymous,
// for their client address: a new session is no new limit); or, when the agent lets visitors
// approve, a decision on a run of one of their own chats.
func (d *Door) publicTurn(c *gin.Context, bot agents.Bot, sub subscribers.Subscriber, req publicChatRequest) (httpx.Turn, error) {
	if strings.TrimSpace(req.ExecutionID) == "" {
		err := d.AgentAllow(c, bot, "subscriber:"+sub.ID)
		if err == nil && sub.Anonymous {
			err = d.AgentAllow(c, bot, "address:"+c.ClientIP())
		}
		return httpx.Turn{Input: chats.Input{Message: &req.Message, ChatID: req.ChatID, ReasoningMode: bot.ReasoningType, Stream: true,
			Channel: Channel}}, err
	}
	if !bot.VisitorApprovals {
		return httpx.Turn{}, apperr.New(apperr.Forbidden, "visitor_approvals_off", "This agent's team approves its actions; the answer will be in this chat once they have.")
	}
	if req.Approve == nil {
		return httpx.Turn{}, apperr.Invalidf("approve", "is required with execution_id: true runs the tool, false rejects it")
	}
	e, err := d.Runs.Get(c, bot.ProjectID, bot.ID, req.ExecutionID)
	if err != nil {
		return httpx.Turn{}, err
	}
	if _, err := d.Chats.GetFor(c, bot.ProjectID, bot.ID, e.ChatID, askerOf(sub)); err != nil {
		if apperr.As(err).Kind == apperr.NotFound {
			return httpx.Turn{}, apperr.NotFoundf(agentruns.Resource)
		}
		return httpx.Turn{}, err
	}
	return httpx.Turn{Decision: &agentruns.Approval{ExecutionID: e.ID, Approve: req.Approve}}, nil
}

// publicMessage is a message of the end user's chat as the page shows it.
type publicMessage struct {
	ID      string         `json:"id"`
	Role    string         `json:"role"`
	Content string         `json:"content"`
	HTML    string         `json:"html"`
	Sources []publicSource `json:"sources"`
}

func messageOf(m chats.Message) publicMessage {
	out := publicMessage{ID: m.UUID, Role: m.Role, Content: m.Content, Sources: sourcesOf(m.Sources)}
	if m.Role == chats.RoleAgent {
		out.HTML = markdown.HTML(m.Content)
	}
	return out
}

// History is the end user's chat, its first 100 messages: only their own chats. Human says a
// person of the team has the chat (the page then streams what they write).
func (d *Door) History(c *gin.Context) (any, error) {
	bot, sub, err := d.endUser(c)
	if err != nil {
		return nil, err
	}
	chat, err := d.chatOf(c, bot, sub)
	if err != nil {
		return nil, err
	}
	msgs, err := d.Chats.Messages(c, chat, 1, min(paging.MaxPerPage, chat.Messages))
	if err != nil {
		return nil, err
	}
	out := make([]publicMessage, len(msgs))
	for i, m := range msgs {
		out[i] = messageOf(m)
	}
	return gin.H{"messages": out, "total": chat.Messages, "human": chat.Held}, nil
}

// chatOf is the end user's own chat the request names (chat_id): another's is not found.
func (d *Door) chatOf(c *gin.Context, bot agents.Bot, sub subscribers.Subscriber) (chats.Chat, error) {
	id := strings.TrimSpace(c.Query("chat_id"))
	if id == "" {
		return chats.Chat{}, apperr.Invalidf("chat_id", "is required")
	}
	return d.Chats.GetFor(c, bot.ProjectID, bot.ID, id, askerOf(sub))
}

// Stream streams what a person of the team writes in one of the end user's own chats as they
// write it: a ready event once the stream listens, then a message event for each message of
// the chat written by neither the end user nor the agent (whose answers come with the end
// user's turns), as History shows it; a message too long for its event comes as a changed
// event, on which the page reads the history. The page opens it while a person has, or is
// asked to take, the chat.
func (d *Door) Stream(c *gin.Context) {
	bot, sub, err := d.endUser(c)
	var chat chats.Chat
	if err == nil {
		chat, err = d.chatOf(c, bot, sub)
	}
	var changes <-chan outbox.Event
	if err == nil {
		changes, err = d.Watch(c.Request.Context(), bot.ProjectID, outbox.ChatMessageCreated)
	}
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	st := httpx.NewSSE(c, d.Heartbeat)
	defer st.Close()
	if err := st.Event("ready", gin.H{"chat_id": chat.UUID}); err != nil {
		return
	}
	for ev := range changes {
		var m chats.MessageEvent
		if ev.BotID != bot.ID || json.Unmarshal(ev.Data, &m) != nil || m.ChatID != chat.UUID {
			continue
		}
		if m.Message.UUID == "" {
			err = st.Event("changed", gin.H{"chat_id": chat.UUID})
		} else if m.Message.Role == chats.RoleAgent && m.Message.User.UUID != bot.UUID && m.Message.Content != "" {
			err = st.Event("message", messageOf(m.Message))
		}
		if err != nil {
			return
		}
	}
}

// Limited holds the end users' endpoints to AGENTPLANE_PUBLIC_RATE_LIMIT requests a
// minute per client address (GCRA in Redis, shared by every API replica), whatever the agent
// and the session: a visitor gains nothing by opening sessions. It fails closed, as the API
// keys' limit does.
func (d *Door) Limited(c *gin.Context) {
	if err := d.allow(c, "ratelimit:public:address:"+c.ClientIP(), d.Rate, "rate_limited",
		"Too many requests from your address"); err != nil {
		httpx.Fail(c, err)
		return
	}
	c.Next()
}

// agentLimit holds the end users' endpoints of bot to AGENTPLANE_PUBLIC_AGENT_RATE_LIMIT
// requests a minute, all its visitors together, so that one agent's visitors take at most that
// of the service.
func (d *Door) agentLimit(c *gin.Context, bot agents.Bot) error {
	return d.allow(c, "ratelimit:public:bot:"+bot.ID, d.AgentRate, "agent_rate_limited", "This agent has too many visitors at once")
}

// allow takes one request of perMinute from key's limit (none when perMinute is 0): a 429
// with Retry-After, its code and message, when there is none left.
func (d *Door) allow(c *gin.Context, key string, perMinute int, code, message string) error {
	if perMinute <= 0 {
		return nil
	}
	res, err := d.Limiter.Allow(c, key, redis_rate.PerMinute(perMinute))
	if err != nil {
		return apperr.Unavailablef("redis", err)
	}
	if res.Allowed > 0 {
		return nil
	}
	retry := max(int(math.Ceil(res.RetryAfter.Seconds())), 1)
	return &apperr.Error{Kind: apperr.RateLimited, Code: code, RetryAfter: retry, Message: fmt.Sprintf("%s; retry in %d s.", message, retry)}
}

// visitorsBudget waits, up to the budget's wait, for a turn of bot's project's visitors (as
// many at once as an account's requests): a flood of one project's visitors takes at most that
// of the process and leaves the rest to the others. It returns the function that ends the turn.
func (d *Door) visitorsBudget(c *gin.Context, bot agents.Bot) (func(), error) {
	if d.Budget == nil {
		return func() {}, nil
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), d.BudgetWait)
	defer cancel()
	release, err := d.Budget.Lock(ctx, "visitors:"+bot.ProjectID)
	if err != nil {
		return nil, &apperr.Error{Kind: apperr.RateLimited, Code: "visitors_busy", RetryAfter: 1,
			Message: "This agent's team has as many visitors' chats in progress as it may; retry in a moment."}
	}
	return release, nil
}
