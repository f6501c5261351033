// Package sources is the memory source resource: what an agent's memory is made of (inline text,
// documents, crawled web pages), its rules and its life: created `processing`, ingested by a
// worker into chunks (`success` or `failed`), re-synced on schedule and forgotten after its
// time. Retrieval over the chunks is package memory's.
package sources

import (
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/memory"
)

// Resource names sources in outbox references and errors.
const Resource = "source"

// Source types.
const (
	TypeText     = "text"
	TypeDocument = "document"
	TypeURL      = "url"
)

// Types lists the source types.
var Types = []string{TypeText, TypeDocument, TypeURL}

// Statuses of a source.
const (
	StatusProcessing = "processing"
	StatusSuccess    = "success"
	StatusFailed     = "failed"
)

// Statuses lists the source statuses.
var Statuses = []string{StatusProcessing, StatusSuccess, StatusFailed}

// Bounds of a source's fields.
const (
	MaxTitleLength       = 300
	MaxDescriptionLength = 2000
	MaxURLLength         = 2048
	MaxTags              = 20
	MaxTagLength         = 50
	// MaxContentBytes bounds the extracted text the record's `content` shows; the chunks hold
	// all of it.
	MaxContentBytes = 256 << 10
)

// Link is one page a source was built from.
type Link struct {
	URL     string `json:"url" bson:"url"`
	Title   string `json:"title" bson:"title"`
	Tokens  int    `json:"tokens" bson:"tokens"`
	Favicon string `json:"favicon" bson:"favicon"`
}

// Source is a memory source, every field of the interface's record plus `failure_reason`.
type Source struct {
	ID            string     `json:"id" bson:"_id"`
	UUID          string     `json:"uuid" bson:"uuid"`
	ProjectID     string     `json:"-" bson:"project_id"`
	BotID         string     `json:"-" bson:"bot_id"`
	Title         string     `json:"title" bson:"title"`
	Description   string     `json:"description" bson:"description"`
	Source        string     `json:"source" bson:"source"`
	Content       string     `json:"content" bson:"content"`
	Type          string     `json:"type" bson:"type"`
	ForgetAfter   string     `json:"forget_after" bson:"forget_after"`
	SyncFrequency string     `json:"sync_frequency" bson:"sync_frequency"`
	Status        string     `json:"status" bson:"status"`
	FailureReason string     `json:"failure_reason" bson:"failure_reason"`
	Links         []Link     `json:"links" bson:"links"`
	Tags          []string   `json:"tags" bson:"tags"`
	Tokens        int        `json:"tokens" bson:"tokens"`
	SyncedAt      *time.Time `json:"synced_at" bson:"synced_at"`
	ForgetAfterAt *time.Time `json:"forget_after_at" bson:"forget_after_at"`
	CreatedAt     time.Time  `json:"created_at" bson:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at" bson:"updated_at"`

	// Gen is the generation of chunks retrieval reads; Chunks how many it has.
	Gen    string `json:"-" bson:"gen"`
	Chunks int    `json:"-" bson:"chunks"`
	// Pending is the generation being ingested ("" when none), since PendingSince.
	Pending      string     `json:"-" bson:"pending"`
	PendingSince *time.Time `json:"-" bson:"pending_since"`
	// NextSyncAt is when the scheduler re-syncs the source (nil: never).
	NextSyncAt  *time.Time `json:"-" bson:"next_sync_at"`
	ContentHash string     `json:"-" bson:"content_hash"`
	Rev         int64      `json:"-" bson:"rev"`
}

// public is the source as users see it: lists are never null, and a text source's content,
// once ingested, is its source (storedContent).
func (s Source) public() Source {
	if s.Type == TypeText && s.Gen != "" {
		s.Content = clip(s.Source, MaxContentBytes)
	}
	if s.Links == nil {
		s.Links = []Link{}
	}
	if s.Tags == nil {
		s.Tags = []string{}
	}
	return s
}

// forgetPeriods are the allowed `forget_after` values and how long each keeps a source.
var forgetPeriods = []struct {
	name          string
	years, months int
	days          int
}{
	{"1 day", 0, 0, 1}, {"1 week", 0, 0, 7}, {"2 weeks", 0, 0, 14}, {"1 month", 0, 1, 0},
	{"3 months", 0, 3, 0}, {"6 months", 0, 6, 0}, {"1 year", 1, 0, 0}, {"never", 0, 0, 0},
}

// ForgetAfterValues lists the allowed `forget_after` values.
func ForgetAfterValues() []string {
	out := make([]string, len(forgetPeriods))
	for i, p := range forgetPeriods {
		out[i] = p.name
	}
	return out
}

// forgetAt is when a source created at created is forgotten under rule ("never": nil).
func forgetAt(rule string, created time.Time) *time.Time {
	for _, p := range forgetPeriods {
		if p.name == rule && rule != "never" {
			t := created.AddDate(p.years, p.months, p.days)
			return &t
		}
	}
	return nil
}

// Sync frequencies.
const (
	SyncNever   = "never"
	SyncWeekly  = "weekly"
	SyncMonthly = "monthly"
)

// SyncFrequencies lists the allowed `sync_frequency` values.
var SyncFrequencies = []string{SyncNever, SyncWeekly, SyncMonthly}

// nextSync is when a source synced at synced is due again under frequency (nil: never). Due
// times count from the last sync, so syncs missed while the service was down run once.
func nextSync(frequency string, synced time.Time) *time.Time {
	var t time.Time
	switch frequency {
	case SyncWeekly:
		t = synced.AddDate(0, 0, 7)
	case SyncMonthly:
		t = synced.AddDate(0, 1, 0)
	default:
		return nil
	}
	return &t
}

// Input is the body of a source's creation or update; absent or null fields keep their value
// (or default on creation), and an empty enum counts as absent.
type Input struct {
	Title         *string   `json:"title"`
	Type          *string   `json:"type"`
	Source        *string   `json:"source"`
	Description   *string   `json:"description"`
	Tags          *[]string `json:"tags"`
	ForgetAfter   *string   `json:"forget_after"`
	SyncFrequency *string   `json:"sync_frequency"`
}

func (in Input) apply(s *Source) {
	for dst, src := range map[*string]*string{&s.Title: in.Title, &s.Description: in.Description} {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	for dst, src := range map[*string]*string{&s.Type: in.Type, &s.ForgetAfter: in.ForgetAfter, &s.SyncFrequency: in.SyncFrequency} {
		if src != nil && strings.TrimSpace(*src) != "" {
			*dst = strings.ToLower(strings.TrimSpace(*src))
		}
	}
	if in.Source != nil {
		s.Source = *in.Source
		if s.Type == TypeURL {
			s.Source = strings.TrimSpace(s.Source)
		}
	}
	if in.Tags != nil {
		s.Tags = normalTags(*in.Tags)
	}
}

// normalTags trims tags and drops empty and repeated ones, keeping their order.
func normalTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// validate checks every field of s; maxSource bounds the inline content.
func (s Source) validate(maxSource int) error {
	var p apperr.Problems
	switch n := utf8.RuneCountInString(s.Title); {
	case n == 0:
		p.Add("title", "is required")
	case n > MaxTitleLength:
		p.Add("title", "must be at most %d characters", MaxTitleLength)
	}
	if utf8.RuneCountInString(s.Description) > MaxDescriptionLength {
		p.Add("description", "must be at most %d characters", MaxDescriptionLength)
	}
	if !slices.Contains(Types, s.Type) {
		p.Add("type", "must be one of %s", strings.Join(Types, ", "))
	}
	switch {
	case strings.TrimSpace(s.Source) == "":
		p.Add("source", "is required")
	case len(s.Source) > maxSource:
		p.Add("source", "must be at most %d bytes", maxSource)
	case s.Type == TypeURL:
		if err := checkURL(s.Source); err != "" {
			p.Add("source", "%s", err)
		}
	}
	if !slices.Contains(ForgetAfterValues(), s.ForgetAfter) {
		p.Add("forget_after", "must be one of %s", strings.Join(ForgetAfterValues(), ", "))
	}
	if !slices.Contains(SyncFrequencies, s.SyncFrequency) {
		p.Add("sync_frequency", "must be one of %s", strings.Join(SyncFrequencies, ", "))
	}
	if len(s.Tags) > MaxTags {
		p.Add("tags", "must have at most %d tags", MaxTags)
	}
	for _, t := range s.Tags {
		if utf8.RuneCountInString(t) > MaxTagLength {
			p.Add("tags", "each tag must be at most %d characters", MaxTagLength)
			break
		}
	}
	return p.Err()
}

// checkURL says what is wrong with a source URL ("" when nothing). Where it points is checked
// when it is fetched: names resolve differently over time.
func checkURL(raw string) string {
	if len(raw) > MaxURLLength {
		return "must be a URL of at most 2048 characters"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "":
		return "must be an absolute http or https URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http or https URL"
	case u.User != nil:
		return "must not carry credentials"
	}
	return ""
}

// isURL reports whether a document's source is a URL to fetch rather than the content itself.
func isURL(source string) bool {
	s := strings.TrimSpace(source)
	return (strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")) && !strings.ContainsAny(s, " \n\t")
}

// Ref is the source as retrieved passages cite it.
func (s Source) Ref() memory.Ref {
	r := memory.Ref{SourceID: s.ID, Title: s.Title, Type: s.Type, Tags: s.Tags}
	if r.Tags == nil {
		r.Tags = []string{}
	}
	if s.Type == TypeURL || isURL(s.Source) {
		r.URL = strings.TrimSpace(s.Source)
	}
	if len(s.Links) > 0 {
		r.Favicon = s.Links[0].Favicon
		if r.URL == "" {
			r.URL = s.Links[0].URL
		}
	}
	return r
}
