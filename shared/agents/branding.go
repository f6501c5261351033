package agents

import (
	"fmt"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/limits"
)

// Bounds of branding's fields, checked on the merged branding of an update.
const (
	MaxSEOTitleLength       = 200
	MaxSEOKeywordsLength    = 1000
	MaxSEODescriptionLength = 2000
	MaxTaglineLength        = 500
	MaxDescriptionLength    = 2000
	MaxLinks                = 20
	MaxLinksBytes           = 16 << 10
	MaxGreetings            = 20
	MaxGreetingLength       = 1000
	MaxPrompts              = 20
	MaxPromptLength         = 500
	MaxPlaceholderLength    = 200
	// MaxStyleLength bounds theme, accent_color and background_color.
	MaxStyleLength = 100
)

// Branding is how an agent's public pages look. Every sub-object is always present.
type Branding struct {
	SEO                  SEO        `json:"seo" bson:"seo"`
	Logo                 Toggle     `json:"logo" bson:"logo"`
	Favicon              Toggle     `json:"favicon" bson:"favicon"`
	Tagline              Text       `json:"tagline" bson:"tagline"`
	Description          Text       `json:"description" bson:"description"`
	Navigation           Navigation `json:"navigation" bson:"navigation"`
	MessageGreetings     Greetings  `json:"message_greetings" bson:"message_greetings"`
	ConversationStarters Starters   `json:"conversation_starters" bson:"conversation_starters"`
	Theme                string     `json:"theme" bson:"theme"`
	Placeholder          string     `json:"placeholder" bson:"placeholder"`
	AccentColor          string     `json:"accent_color" bson:"accent_color"`
	BackgroundColor      string     `json:"background_color" bson:"background_color"`
}

// SEO is the page's metadata.
type SEO struct {
	Title       string `json:"title" bson:"title"`
	Keywords    string `json:"keywords" bson:"keywords"`
	Description string `json:"description" bson:"description"`
}

// Toggle is an image that can be shown or hidden.
type Toggle struct {
	URL     string `json:"url" bson:"url"`
	Enabled bool   `json:"enabled" bson:"enabled"`
}

// Text is a text that can be shown or hidden.
type Text struct {
	Content string `json:"content" bson:"content"`
	Enabled bool   `json:"enabled" bson:"enabled"`
}

// Navigation is the page's links.
type Navigation struct {
	Links   []freeform.Object `json:"links" bson:"links"`
	Enabled bool              `json:"enabled" bson:"enabled"`
}

// Greetings are the agent's first messages.
type Greetings struct {
	Enabled   bool     `json:"enabled" bson:"enabled"`
	Greetings []string `json:"greetings" bson:"greetings"`
}

// Starters are suggested first questions.
type Starters struct {
	Enabled bool     `json:"enabled" bson:"enabled"`
	Prompts []string `json:"prompts" bson:"prompts"`
}

// defaultBranding is the branding of a new agent named name.
func defaultBranding(name string) Branding {
	return Branding{
		SEO:                  SEO{Title: name},
		Navigation:           Navigation{Links: []freeform.Object{}},
		MessageGreetings:     Greetings{Greetings: []string{}},
		ConversationStarters: Starters{Prompts: []string{}},
		Theme:                "light",
		Placeholder:          "Ask me anything...",
		AccentColor:          "#2563eb",
		BackgroundColor:      "#ffffff",
	}
}

// normalize keeps every array present, so clients always see arrays, never null.
func (b *Branding) normalize() {
	if b.Navigation.Links == nil {
		b.Navigation.Links = []freeform.Object{}
	}
	if b.MessageGreetings.Greetings == nil {
		b.MessageGreetings.Greetings = []string{}
	}
	if b.ConversationStarters.Prompts == nil {
		b.ConversationStarters.Prompts = []string{}
	}
}

// validate reports every branding field over its bound, named by its path in the agent.
func (b Branding) validate(p *apperr.Problems) {
	for field, t := range map[string]struct {
		v   string
		max int
	}{
		"seo.title": {b.SEO.Title, MaxSEOTitleLength}, "seo.keywords": {b.SEO.Keywords, MaxSEOKeywordsLength},
		"seo.description": {b.SEO.Description, MaxSEODescriptionLength}, "logo.url": {b.Logo.URL, MaxURLLength},
		"favicon.url": {b.Favicon.URL, MaxURLLength}, "tagline.content": {b.Tagline.Content, MaxTaglineLength},
		"description.content": {b.Description.Content, MaxDescriptionLength}, "theme": {b.Theme, MaxStyleLength},
		"placeholder": {b.Placeholder, MaxPlaceholderLength}, "accent_color": {b.AccentColor, MaxStyleLength},
		"background_color": {b.BackgroundColor, MaxStyleLength},
	} {
		limits.Text(p, "branding."+field, t.v, t.max)
	}
	limits.Items(p, "branding.navigation.links", len(b.Navigation.Links), MaxLinks)
	limits.TotalJSON(p, "branding.navigation.links", b.Navigation.Links, MaxLinksBytes)
	limits.Items(p, "branding.message_greetings.greetings", len(b.MessageGreetings.Greetings), MaxGreetings)
	for i, g := range b.MessageGreetings.Greetings {
		limits.Text(p, fmt.Sprintf("branding.message_greetings.greetings[%d]", i), g, MaxGreetingLength)
	}
	limits.Items(p, "branding.conversation_starters.prompts", len(b.ConversationStarters.Prompts), MaxPrompts)
	for i, s := range b.ConversationStarters.Prompts {
		limits.Text(p, fmt.Sprintf("branding.conversation_starters.prompts[%d]", i), s, MaxPromptLength)
	}
}
