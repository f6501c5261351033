package agents

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentplane/agentplane/shared/evals"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/limits"
)

// Bounds of an agent's fields, as documented in the OpenAPI document.
const (
	MaxNameLength        = 200
	MaxModelLength       = 200
	MaxInstructionLength = 20000
	MaxMessageLength     = 2000
	MaxURLLength         = 2048
	MinTop, MaxTop       = 1, 50
	DefaultTop           = 5
	MaxReplyTokensLimit  = 32768
	DefaultReplyTokens   = 1024
	MaxRatelimitSeconds  = 86400
	MaxRatelimitRequests = 100000
	MaxIntegrations      = 50
	MaxIntegrationsBytes = 64 << 10
	MaxProviderKeyLength = 500
	// MaxBotBytes bounds the whole agent as JSON, after an update's merge.
	MaxBotBytes = 256 << 10
)

// ReasoningTypes are the allowed values of reasoning_type; "" means the default, "auto".
var ReasoningTypes = []string{"auto", "standard", "agent"}

// Create is the body of an agent's creation.
type Create struct {
	Name        string       `json:"name"`
	Model       string       `json:"model"`
	Instruction string       `json:"instruction"`
	Status      flex.OptFlag `json:"status"`
	Versioning  bool         `json:"versioning"`
}

// Patch is an update: every field present (not absent, not null) replaces the stored one.
type Patch struct {
	Name                   *string            `json:"name"`
	Model                  *string            `json:"model"`
	Instruction            *string            `json:"instruction"`
	ReasoningType          *string            `json:"reasoning_type"`
	RatelimitMessage       *string            `json:"ratelimit_message"`
	NoAnswerReply          *string            `json:"no_answer_reply"`
	Avatar                 *string            `json:"avatar"`
	AvatarLink             *string            `json:"avatar_link"`
	Domain                 *string            `json:"domain"`
	Subdomain              *string            `json:"subdomain"`
	ProviderKey            *string            `json:"provider_key"`
	MaxReplyTokens         flex.OptInt        `json:"max_reply_tokens"`
	Top                    flex.OptInt        `json:"top"`
	RatelimitSeconds       flex.OptInt        `json:"ratelimit_seconds"`
	RatelimitRequests      flex.OptInt        `json:"ratelimit_requests"`
	RequireLogin           flex.OptFlag       `json:"require_login"`
	Memory                 flex.OptFlag       `json:"memory"`
	Heartbeat              flex.OptFlag       `json:"heartbeat"`
	HideBranding           flex.OptFlag       `json:"hide_branding"`
	AutoApproveTools       flex.OptFlag       `json:"auto_approve_tools"`
	VisitorApprovals       *bool              `json:"visitor_approvals"`
	HumanHandoff           *bool              `json:"human_handoff"`
	HandoffMessage         *string            `json:"handoff_message"`
	HandoffPhrases         *[]string          `json:"handoff_phrases"`
	HandoffOnLowConfidence *bool              `json:"handoff_on_low_confidence"`
	HandoffClassify        *bool              `json:"handoff_classify"`
	Status                 flex.OptFlag       `json:"status"`
	Branding               json.RawMessage    `json:"branding"`
	Integrations           *[]freeform.Object `json:"integrations"`
	AllowedOrigins         *[]string          `json:"allowed_origins"`
	Versioning             *bool              `json:"versioning"`
	// PublishGate replaces the agent's gate; one without a dataset removes it.
	PublishGate *PublishGate `json:"publish_gate"`
	// Canary replaces the agent's canary; one without a version removes it.
	Canary *Canary `json:"canary"`
	// OnlineEval replaces the agent's online grading; one with rate 0 removes it.
	OnlineEval *OnlineEval `json:"online_eval"`
}

// OnlineEval grades a share of the agent's live answers: an answer whose message id falls below
// Rate (InShare) is graded, in a worker, by the rule graders Criteria names, with what they
// compare with (a case of a dataset without its input; checked where it is set).
type OnlineEval struct {
	Rate     float64    `json:"rate" bson:"rate"`
	Criteria evals.Case `json:"criteria" bson:"criteria"`
}

// MaxGateThresholds bounds the graders a publish gate names.
const MaxGateThresholds = 20

// PublishGate is what a version must pass before it is published: the agent's newest finished
// eval run of the dataset at that version reached each threshold (a grader's pass rate, from 0
// to 1). The graders' names are the evals' (checked where a gate is set).
type PublishGate struct {
	DatasetID  string             `json:"dataset_id" bson:"dataset_id"`
	Thresholds map[string]float64 `json:"thresholds" bson:"thresholds"`
}

// apply sets every field p carries on b. Branding merges: sub-objects and fields the patch
// leaves out keep their values.
func (p Patch) apply(b *Bot) error {
	for dst, src := range map[*string]*string{
		&b.Name: p.Name, &b.Model: p.Model, &b.Instruction: p.Instruction, &b.ReasoningType: p.ReasoningType,
		&b.RatelimitMessage: p.RatelimitMessage, &b.NoAnswerReply: p.NoAnswerReply, &b.Avatar: p.Avatar,
		&b.AvatarLink: p.AvatarLink, &b.Domain: p.Domain, &b.Subdomain: p.Subdomain, &b.ProviderKey: p.ProviderKey,
	} {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	for dst, src := range map[*int]flex.OptInt{
		&b.Top: p.Top, &b.RatelimitSeconds: p.RatelimitSeconds, &b.RatelimitRequests: p.RatelimitRequests,
		&b.RequireLogin: p.RequireLogin.OptInt, &b.Memory: p.Memory.OptInt, &b.Heartbeat: p.Heartbeat.OptInt,
		&b.HideBranding: p.HideBranding.OptInt, &b.Status: p.Status.OptInt, &b.AutoApproveTools: p.AutoApproveTools.OptInt,
	} {
		if src.Set {
			*dst = int(src.Value)
		}
	}
	if p.VisitorApprovals != nil {
		b.VisitorApprovals = *p.VisitorApprovals
	}
	if p.HumanHandoff != nil {
		b.HumanHandoff = *p.HumanHandoff
	}
	if p.HandoffOnLowConfidence != nil {
		b.HandoffOnLowConfidence = *p.HandoffOnLowConfidence
	}
	if p.HandoffClassify != nil {
		b.HandoffClassify = *p.HandoffClassify
	}
	if p.Versioning != nil {
		b.Versioning = *p.Versioning
	}
	if p.PublishGate != nil {
		b.PublishGate = nil
		if id := strings.TrimSpace(p.PublishGate.DatasetID); id != "" {
			b.PublishGate = &PublishGate{DatasetID: id, Thresholds: p.PublishGate.Thresholds}
		}
	}
	if p.OnlineEval != nil {
		b.OnlineEval = nil
		if p.OnlineEval.Rate != 0 {
			b.OnlineEval = p.OnlineEval
		}
	}
	if p.HandoffMessage != nil {
		b.HandoffMessage = strings.TrimSpace(*p.HandoffMessage)
	}
	if p.HandoffPhrases != nil {
		b.HandoffPhrases = []string{}
		for _, phrase := range *p.HandoffPhrases {
			if phrase = strings.ToLower(strings.Join(strings.Fields(phrase), " ")); phrase != "" {
				b.HandoffPhrases = append(b.HandoffPhrases, phrase)
			}
		}
	}
	if p.MaxReplyTokens.Set {
		b.MaxReplyTokens = strconv.Itoa(int(p.MaxReplyTokens.Value))
	}
	b.Domain = normalizeHost(b.Domain)
	if p.Integrations != nil {
		b.Integrations = *p.Integrations
	}
	if p.AllowedOrigins != nil {
		b.AllowedOrigins = make([]string, len(*p.AllowedOrigins))
		for i, o := range *p.AllowedOrigins {
			b.AllowedOrigins[i] = strings.TrimRight(strings.ToLower(strings.TrimSpace(o)), "/")
		}
	}
	if len(p.Branding) > 0 && string(p.Branding) != "null" {
		if err := json.Unmarshal(p.Branding, &b.Branding); err != nil {
			if ferr := apperr.JSONField("branding", err); ferr != nil {
				return ferr
			}
			return apperr.Invalidf("branding", "must be an object")
		}
		b.Branding.normalize()
	}
	return nil
}

// Bounds of an agent's handoff phrases.
const (
	MaxHandoffPhrases      = 50
	MaxHandoffPhraseLength = 100
)

// DefaultHandoffPhrases are what an end user says to ask for a person, when the agent names none.
var DefaultHandoffPhrases = []string{"talk to a human", "speak to a human", "talk to a person", "speak to a person", "real person",
	"human agent", "live agent", "agent please", "talk to someone", "speak to someone", "customer service representative"}

// DefaultHandoffMessage tells an end user the team was asked, when the agent says nothing else.
const DefaultHandoffMessage = "I have asked a person of the team to take over; they will answer here."

// AsksForPerson reports whether message asks for a person, by the agent's handoff phrases (or
// the defaults): a phrase anywhere in it, case and spacing aside.
func (b Bot) AsksForPerson(message string) bool {
	phrases := b.HandoffPhrases
	if len(phrases) == 0 {
		phrases = DefaultHandoffPhrases
	}
	text := strings.ToLower(strings.Join(strings.Fields(message), " "))
	return slices.ContainsFunc(phrases, func(p string) bool { return strings.Contains(text, p) })
}

// MaxAllowedOrigins bounds an agent's allowed_origins.
const MaxAllowedOrigins = 20

var subdomainPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9])$`)

// validate checks every field of b (its domain and subdomain against h), reporting every problem
// at once (Invalid), then the size of the whole agent (TooLarge).
func validate(b Bot, h Hosts) error {
	var p apperr.Problems
	for field, v := range map[string]string{"name": b.Name, "model": b.Model} {
		if v == "" {
			p.Add(field, "is required")
		}
	}
	limits.Text(&p, "name", b.Name, MaxNameLength)
	limits.Text(&p, "model", b.Model, MaxModelLength)
	limits.Text(&p, "instruction", b.Instruction, MaxInstructionLength)
	limits.Text(&p, "ratelimit_message", b.RatelimitMessage, MaxMessageLength)
	limits.Text(&p, "no_answer_reply", b.NoAnswerReply, MaxMessageLength)
	limits.Text(&p, "handoff_message", b.HandoffMessage, MaxMessageLength)
	limits.Items(&p, "handoff_phrases", len(b.HandoffPhrases), MaxHandoffPhrases)
	for i, phrase := range b.HandoffPhrases {
		limits.Text(&p, fmt.Sprintf("handoff_phrases[%d]", i), phrase, MaxHandoffPhraseLength)
	}
	limits.Text(&p, "provider_key", b.ProviderKey, MaxProviderKeyLength)
	for field, v := range map[string]string{"avatar": b.Avatar, "avatar_link": b.AvatarLink} {
		checkURL(&p, field, v)
	}
	h.checkDomain(&p, "domain", b.Domain)
	limits.Items(&p, "allowed_origins", len(b.AllowedOrigins), MaxAllowedOrigins)
	for i, o := range b.AllowedOrigins {
		if !Origin(o) {
			p.Add(fmt.Sprintf("allowed_origins[%d]", i), "must be a web origin such as https://shop.example.com: http or https, a host name or IP address, an optional port, nothing else")
		}
	}
	h.checkSubdomain(&p, b.Subdomain)
	if !slices.Contains(ReasoningTypes, b.ReasoningType) {
		p.Add("reasoning_type", "must be one of %s", strings.Join(ReasoningTypes, ", "))
	}
	bounded := func(field string, v, lo, hi int) {
		if v < lo || v > hi {
			p.Add(field, "must be between %d and %d", lo, hi)
		}
	}
	bounded("top", b.Top, MinTop, MaxTop)
	bounded("ratelimit_seconds", b.RatelimitSeconds, 0, MaxRatelimitSeconds)
	bounded("ratelimit_requests", b.RatelimitRequests, 0, MaxRatelimitRequests)
	for field, v := range map[string]int{"status": b.Status, "require_login": b.RequireLogin, "memory": b.Memory,
		"heartbeat": b.Heartbeat, "hide_branding": b.HideBranding, "auto_approve_tools": b.AutoApproveTools} {
		if v != 0 && v != 1 {
			p.Add(field, "must be 0 or 1")
		}
	}
	if n, err := strconv.Atoi(b.MaxReplyTokens); err != nil || n < 1 || n > MaxReplyTokensLimit {
		p.Add("max_reply_tokens", "must be an integer between 1 and %d", MaxReplyTokensLimit)
	}
	limits.Items(&p, "integrations", len(b.Integrations), MaxIntegrations)
	limits.TotalJSON(&p, "integrations", b.Integrations, MaxIntegrationsBytes)
	b.Branding.validate(&p)
	if g := b.PublishGate; g != nil {
		if !b.Versioning {
			// An agent without versioning publishes each change as it is made: nothing would
			// hold it. Turning versioning off removes the gate in the same update, or is refused.
			p.Add("publish_gate", "needs versioning: true (an agent without versioning publishes each change at once); remove the gate with {} to turn versioning off")
		}
		if len(g.Thresholds) == 0 {
			p.Add("publish_gate.thresholds", "name at least one grader and its pass rate")
		}
		limits.Items(&p, "publish_gate.thresholds", len(g.Thresholds), MaxGateThresholds)
	}
	if err := p.Err(); err != nil {
		return err
	}
	return limits.Document(Resource, b, MaxBotBytes)
}

// originHost is the host and optional port of a web origin: a DNS name or IPv4 address, or an
// IPv6 address in brackets.
var originHost = regexp.MustCompile(`^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?$`)

// Origin reports whether o is a web origin, lowercase: scheme://host[:port] and nothing else.
func Origin(o string) bool {
	scheme, host, ok := strings.Cut(o, "://")
	return ok && (scheme == "https" || scheme == "http") && len(host) <= 260 && originHost.MatchString(host)
}

func checkURL(p *apperr.Problems, field, v string) {
	if v == "" {
		return
	}
	u, err := url.Parse(v)
	if err != nil || len(v) > MaxURLLength || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.Add(field, "must be an http or https URL of at most %d characters", MaxURLLength)
	}
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// newSubdomain derives a unique-enough subdomain from the agent's name: "support-bot-k3x9q2".
func newSubdomain(name string) string {
	slug := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(slug) > 40 {
		slug = strings.Trim(slug[:40], "-")
	}
	if slug == "" {
		slug = "agent"
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	for i, c := range suffix {
		suffix[i] = alphabet[int(c)%len(alphabet)]
	}
	return slug + "-" + string(suffix)
}
