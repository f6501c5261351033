// Package agents is the agent ("bot") resource: its fields, defaults and rules.
package agents

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/tools"
)

// Bot is an agent, every field of the interface's Agent record.
type Bot struct {
	ID               string `json:"id" bson:"_id"`
	UUID             string `json:"uuid" bson:"uuid"`
	ProjectID        string `json:"-" bson:"project_id"`
	Subdomain        string `json:"subdomain" bson:"subdomain"`
	ProviderKey      string `json:"provider_key" bson:"provider_key"`
	Avatar           string `json:"avatar" bson:"avatar"`
	Name             string `json:"name" bson:"name"`
	Model            string `json:"model" bson:"model"`
	ReasoningType    string `json:"reasoning_type" bson:"reasoning_type"`
	MaxReplyTokens   string `json:"max_reply_tokens" bson:"max_reply_tokens"`
	Instruction      string `json:"instruction" bson:"instruction"`
	RatelimitMessage string `json:"ratelimit_message" bson:"ratelimit_message"`
	NoAnswerReply    string `json:"no_answer_reply" bson:"no_answer_reply"`
	AvatarLink       string `json:"avatar_link" bson:"avatar_link"`
	// Domain is the agent's own domain, served once verified (DomainVerification).
	Domain            string `json:"domain" bson:"domain"`
	Top               int    `json:"top" bson:"top"`
	RatelimitSeconds  int    `json:"ratelimit_seconds" bson:"ratelimit_seconds"`
	RatelimitRequests int    `json:"ratelimit_requests" bson:"ratelimit_requests"`
	RequireLogin      int    `json:"require_login" bson:"require_login"`
	Memory            int    `json:"memory" bson:"memory"`
	Heartbeat         int    `json:"heartbeat" bson:"heartbeat"`
	HideBranding      int    `json:"hide_branding" bson:"hide_branding"`
	// AutoApproveTools 1 lets agent runs use tools that change data without asking; 0 (the
	// default) pauses the run for approval first.
	AutoApproveTools int `json:"auto_approve_tools" bson:"auto_approve_tools"`
	// VisitorApprovals lets the end users of the agent's page and widget approve the tool calls
	// their chats' runs wait for; without it (the default) only the account decides.
	VisitorApprovals bool `json:"visitor_approvals" bson:"visitor_approvals"`
	// HumanHandoff lets the agent hand its chats to the team's operators: its runs get the
	// handoff tool, and an end user asking for a person (HandoffPhrases, or the defaults) is
	// told HandoffMessage and waits in the inbox.
	HumanHandoff   bool     `json:"human_handoff" bson:"human_handoff"`
	HandoffMessage string   `json:"handoff_message" bson:"handoff_message"`
	HandoffPhrases []string `json:"handoff_phrases" bson:"handoff_phrases"`
	// HandoffOnLowConfidence flags for a person the chats whose standard answer found nothing in
	// the agent's memory to stand on (confidence low).
	HandoffOnLowConfidence bool `json:"handoff_on_low_confidence" bson:"handoff_on_low_confidence"`
	// HandoffClassify has the agent's model read each message that names none of the handoff
	// phrases, to tell whether it asks for a person all the same (one short call a message,
	// when a provider answers the agent).
	HandoffClassify bool      `json:"handoff_classify" bson:"handoff_classify"`
	Status          int       `json:"status" bson:"status"`
	ActiveAt        time.Time `json:"active_at" bson:"active_at"`
	UpdatedAt       time.Time `json:"updated_at" bson:"updated_at"`
	CreatedAt       time.Time `json:"-" bson:"created_at"`
	Rev             int64     `json:"-" bson:"rev"`
	Branding        Branding  `json:"branding" bson:"branding"`
	// AllowedOrigins are the web origins (https://shop.example.com) whose pages may embed the
	// agent's widget and call its public endpoints; its own page's origin always may.
	AllowedOrigins []string          `json:"allowed_origins" bson:"allowed_origins"`
	Integrations   []freeform.Object `json:"integrations" bson:"integrations"`
	// DomainVerification is the state of Domain (nil without one).
	DomainVerification *DomainVerification `json:"domain_verification" bson:"domain_verification,omitempty"`
	// VerifiedDomain is Domain once verified: the agent's page is served there. Unique among
	// agents, absent otherwise.
	VerifiedDomain string `json:"-" bson:"verified_domain,omitempty"`
	// Versioning keeps each change of the agent's behaviour (Config) a draft until it is
	// published; without it (the default) every change is published at once.
	Versioning bool `json:"versioning" bson:"versioning"`
	// Version is the number of the agent's newest version (its draft), PublishedVersion the one
	// whose behaviour its fields hold, what end users get; 0 for an agent stored before versions
	// were (version 1, made when it is first changed or its versions read).
	Version          int `json:"version" bson:"version"`
	PublishedVersion int `json:"published_version" bson:"published_version"`
	// PublishGate, when set, holds each publish until an eval run of the version passes it.
	PublishGate *PublishGate `json:"publish_gate" bson:"publish_gate,omitempty"`
	// Canary, when set, sends a share of the agent's new chats to a candidate version.
	Canary *Canary `json:"canary" bson:"canary,omitempty"`
	// OnlineEval, when set, grades a share of the agent's live answers with rule graders.
	OnlineEval *OnlineEval `json:"online_eval" bson:"online_eval,omitempty"`
	// Tools are the agent's own tools as the version whose behaviour it carries has them (nil for
	// an agent whose tools no version recorded: its runs get its tools as they are).
	Tools []tools.State `json:"-" bson:"tools"`
	// Workflows are the agent's workflows as the version whose behaviour it carries has them (nil
	// for an agent whose workflows no version recorded: events trigger its workflows as they are).
	Workflows []WorkflowState `json:"-" bson:"workflows"`
	// Sources names the set of memory sources the version whose behaviour it carries answers
	// from (nil for an agent whose sources no version recorded: it answers from all of them).
	Sources *memory.SetRef `json:"-" bson:"sources"`
	// Latest is the newest version whole, written with the agent: the store of versions gets it
	// after, and a version the agent names but the store lacks is taken from here.
	Latest *Version `json:"-" bson:"latest_version,omitempty"`
	// serving is the version whose behaviour the value carries when Draft made it.
	serving int
}

// Public is the bot as users and events see it: the provider key masked to its last four
// characters.
func (b Bot) Public() Bot {
	if n := len(b.ProviderKey); n > 0 {
		if n > 8 {
			b.ProviderKey = "****" + b.ProviderKey[n-4:]
		} else {
			b.ProviderKey = "****"
		}
	}
	if b.Integrations == nil {
		b.Integrations = []freeform.Object{}
	}
	if b.AllowedOrigins == nil {
		b.AllowedOrigins = []string{}
	}
	b.Version, b.PublishedVersion = max(b.Version, 1), max(b.PublishedVersion, 1)
	return b
}

// Active reports whether the agent answers (status 1).
func (b Bot) Active() bool { return b.Status == StatusActive }

// Status values.
const (
	StatusInactive = 0
	StatusActive   = 1
)

// Repo persists agents. Lookups take the project and accept the agent's id or uuid; deleted
// agents are not found. Methods return apperr NotFound and Unavailable errors.
type Repo interface {
	Insert(ctx context.Context, b Bot, ev outbox.Event) error
	Get(ctx context.Context, projectID, idOrUUID string) (Bot, error)
	// Find returns the live agent idOrUUID, whichever project it is in.
	Find(ctx context.Context, idOrUUID string) (Bot, error)
	// BySubdomain returns the live agent of the subdomain (unique across projects).
	BySubdomain(ctx context.Context, subdomain string) (Bot, error)
	// ByDomain returns the live agent whose own domain is host, verified.
	ByDomain(ctx context.Context, host string) (Bot, error)
	List(ctx context.Context, projectID string, page paging.Page) ([]Bot, int, error)
	// Replace writes b over the stored agent of revision b.Rev-1 (optimistic concurrency: a
	// Conflict error when another write came first). A subdomain or verified domain another agent
	// has is a Conflict coded subdomain_taken or domain_taken.
	Replace(ctx context.Context, b Bot, ev outbox.Event) error
	// Delete tombstones the data the agent owns, then the agent.
	Delete(ctx context.Context, b Bot, at time.Time, ev outbox.Event) error
	// ScheduledWorkflows lists the live versioned agents whose published workflows hold a
	// schedule trigger: their ids, projects, versioning and workflows only.
	ScheduledWorkflows(ctx context.Context) ([]Bot, error)
}

// clone returns a copy of b sharing no slice or map with it: a patch decodes into the copy's
// (json.Unmarshal reuses what it decodes into), and b may be a cached agent other requests read.
func (b Bot) clone() Bot {
	c := b
	objects := func(os []freeform.Object) []freeform.Object {
		if os == nil {
			return nil
		}
		out := make([]freeform.Object, len(os))
		for i, o := range os {
			out[i] = maps.Clone(o)
		}
		return out
	}
	c.Integrations = objects(b.Integrations)
	c.AllowedOrigins = slices.Clone(b.AllowedOrigins)
	c.Branding.Navigation.Links = objects(b.Branding.Navigation.Links)
	c.Branding.MessageGreetings.Greetings = slices.Clone(b.Branding.MessageGreetings.Greetings)
	c.Branding.ConversationStarters.Prompts = slices.Clone(b.Branding.ConversationStarters.Prompts)
	if b.DomainVerification != nil {
		v := *b.DomainVerification
		c.DomainVerification = &v
	}
	c.HandoffPhrases = slices.Clone(b.HandoffPhrases)
	c.Tools = slices.Clone(b.Tools)
	c.Workflows = slices.Clone(b.Workflows)
	c.Sources = refCopy(b.Sources)
	c.Canary = b.Canary.clone()
	if b.Latest != nil {
		v := b.Latest.clone()
		c.Latest = &v
	}
	return c
}
