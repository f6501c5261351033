package email

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/subscribers"
	"github.com/agentplane/agentplane/shared/tasks"
)

// Bounds of what an inbox keeps.
const (
	MaxSignature = 2000
	// MaxText and MaxHTML bound the text and HTML kept of a message (the rest is cut).
	MaxText = 256 << 10
	MaxHTML = 512 << 10
	// MaxAttachments bounds the bytes of attachments kept with a message; past it an
	// attachment is listed without its content.
	MaxAttachments = 4 << 20
	// DefaultAnswersPerHour is how many automatic answers an agent sends one sender in an hour,
	// unless its settings say otherwise; MaxAnswersPerHour is the most they may say.
	DefaultAnswersPerHour = 5
	MaxAnswersPerHour     = 100
	maxLocal              = 64
	maxErrorKept          = 500
)

// reserved are local parts no agent may take: the mailboxes a mail domain keeps for its people.
var reserved = []string{"postmaster", "abuse", "mailer-daemon", "hostmaster", "webmaster", "noreply", "no-reply", "root"}

// localPart is what an agent's address may be: letters, digits and . _ + -, beginning and ending
// with a letter or digit.
var localPart = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9._+-]*[a-z0-9])?$`)

// Agents are the agents whose inboxes these are.
type Agents interface {
	Find(ctx context.Context, idOrUUID string) (agents.Bot, error)
	BySubdomain(ctx context.Context, subdomain string) (agents.Bot, error)
}

// Services are the domain services an inbox's mail is answered through.
type Services struct {
	Agents      Agents
	Chats       *chats.Service
	Runs        *agentruns.Service
	Subscribers *subscribers.Service
	// Limit takes one message of the agent's rate limit for the sender key (the end user's own,
	// whichever door they write by).
	Limit func(ctx context.Context, bot agents.Bot, key string) error
	// NewPart is the part of a reply's text above what it quotes (all of it when nil).
	NewPart func(text string) string
}

// Service keeps agents' inboxes: their settings, the mail they receive and the answers they
// send.
type Service struct {
	repo   Repo
	domain string
	sender Sender
	events *outbox.Dispatcher
	queue  tasks.Queue
	svc    Services
	now    func() time.Time
}

// NewService returns the inboxes at the mail domain, kept in repo, whose answers go out through
// sender (nil: none is configured, and answers are kept unsent).
func NewService(repo Repo, domain string, sender Sender, events *outbox.Dispatcher, queue tasks.Queue, svc Services) *Service {
	if svc.NewPart == nil {
		svc.NewPart = func(text string) string { return text }
	}
	return &Service{repo: repo, domain: strings.ToLower(domain), sender: sender, events: events, queue: queue, svc: svc,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Domain is the deployment's mail domain.
func (s *Service) Domain() string { return s.domain }

// shown is st as a read answers it.
func (s *Service) shown(st Settings) Settings {
	st.EmailAddress = st.Address + "@" + s.domain
	st.AutoReply = st.ReplyMode == ReplyAuto
	return st
}

// Settings returns the agent's inbox settings, giving it its default address (its subdomain,
// else its id) the first time.
func (s *Service) Settings(ctx context.Context, bot agents.Bot) (Settings, error) {
	st, err := s.repo.Settings(ctx, bot.ID)
	if apperr.IsNotFound(err) {
		st, err = s.provision(ctx, bot)
	}
	return s.shown(st), err
}

// provision keeps the agent's first settings, with its subdomain as its address unless another
// agent took it (then its id).
func (s *Service) provision(ctx context.Context, bot agents.Bot) (Settings, error) {
	st := Settings{BotID: bot.ID, ProjectID: bot.ProjectID, ReplyMode: ReplyAuto, MaxAnswersPerHour: DefaultAnswersPerHour, UpdatedAt: s.now()}
	for _, local := range []string{strings.ToLower(bot.Subdomain), strings.ToLower(bot.ID)} {
		if checkLocal(local) != "" {
			continue
		}
		st.Address = local
		err := s.repo.InsertSettings(ctx, st)
		if err == nil {
			return st, nil
		}
		if apperr.As(err).Kind != apperr.Conflict {
			return Settings{}, err
		}
		if kept, err := s.repo.Settings(ctx, bot.ID); err == nil {
			// Provisioned meanwhile by another request.
			return kept, nil
		}
	}
	return Settings{}, apperr.New(apperr.Conflict, "email_address_taken", "No free address is left for this agent; set one in its email settings.")
}

// checkLocal says what is wrong with local as an agent's address ("" when nothing is).
func checkLocal(local string) string {
	switch {
	case local == "":
		return "is required"
	case len(local) > maxLocal:
		return "must be at most 64 characters"
	case !localPart.MatchString(local) || strings.Contains(local, ".."):
		return "must be letters, digits and . _ + - (no two dots in a row), beginning and ending with a letter or digit"
	case slices.Contains(reserved, local):
		return "is reserved for the mail domain's own mailboxes"
	}
	return ""
}

// UpdateSettings changes the agent's settings. An address another agent has (of any account)
// is refused (409 email_address_taken).
func (s *Service) UpdateSettings(ctx context.Context, bot agents.Bot, in SettingsInput) (Settings, error) {
	st, err := s.Settings(ctx, bot)
	if err != nil {
		return Settings{}, err
	}
	var p apperr.Problems
	if in.Address != nil {
		local := strings.ToLower(strings.TrimSpace(*in.Address))
		local = strings.TrimSuffix(local, "@"+s.domain)
		if problem := checkLocal(local); problem != "" {
			p.Add("address", "%s", problem)
		}
		st.Address = local
	}
	if in.AutoReply != nil {
		st.ReplyMode = map[bool]string{true: ReplyAuto, false: ReplyOff}[*in.AutoReply]
	}
	if in.ReplyMode != nil {
		switch mode := strings.TrimSpace(*in.ReplyMode); mode {
		case "":
			st.ReplyMode = ReplyAuto
		case ReplyAuto, ReplyDraft, ReplyOff:
			st.ReplyMode = mode
		default:
			p.Add("reply_mode", "must be auto, draft or off")
		}
	}
	if in.Signature != nil {
		st.Signature = strings.TrimSpace(*in.Signature)
		if utf8.RuneCountInString(st.Signature) > MaxSignature {
			p.Add("signature", "must be at most %d characters", MaxSignature)
		}
	}
	if in.FilterSpam != nil {
		st.FilterSpam = *in.FilterSpam
	}
	if in.MaxAnswersPerHour != nil {
		st.MaxAnswersPerHour = *in.MaxAnswersPerHour
		if st.MaxAnswersPerHour < 0 || st.MaxAnswersPerHour > MaxAnswersPerHour {
			p.Add("max_answers_per_hour", "must be between 0 and %d", MaxAnswersPerHour)
		}
	}
	if err := p.Err(); err != nil {
		return Settings{}, err
	}
	st.UpdatedAt = s.now()
	err = s.repo.ReplaceSettings(ctx, st)
	if apperr.As(err).Kind == apperr.Conflict {
		return Settings{}, apperr.New(apperr.Conflict, "email_address_taken", "The address "+st.Address+"@"+s.domain+" is another agent's.")
	}
	return s.shown(st), err
}

// List returns a page of the agent's emails, newest first.
func (s *Service) List(ctx context.Context, projectID, botID string, page paging.Page) ([]Email, int, error) {
	return s.repo.List(ctx, projectID, botID, page)
}

// Get returns the project's agent's email id.
func (s *Service) Get(ctx context.Context, projectID, botID, id string) (Email, error) {
	return s.repo.Get(ctx, projectID, botID, id)
}

// Delete removes the agent's email id (its chat stays).
func (s *Service) Delete(ctx context.Context, projectID, botID, id string) error {
	return s.repo.Delete(ctx, projectID, botID, id)
}

// Stats returns the agent's inbox figures.
func (s *Service) Stats(ctx context.Context, projectID, botID string) (Stats, error) {
	return s.repo.Stats(ctx, projectID, botID)
}

// bounded is an error's text as an email keeps it.
func bounded(msg string) string {
	if utf8.RuneCountInString(msg) <= maxErrorKept {
		return msg
	}
	return string([]rune(msg)[:maxErrorKept]) + "…"
}

// ignoreGone is err, unless it says what it looked for is gone: then nothing is left to do.
func ignoreGone(err error) error {
	if apperr.IsNotFound(err) {
		return nil
	}
	return err
}
