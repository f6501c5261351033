package agents

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
	Links   []map[string]any `json:"links" bson:"links"`
	Enabled bool             `json:"enabled" bson:"enabled"`
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
		Navigation:           Navigation{Links: []map[string]any{}},
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
		b.Navigation.Links = []map[string]any{}
	}
	if b.MessageGreetings.Greetings == nil {
		b.MessageGreetings.Greetings = []string{}
	}
	if b.ConversationStarters.Prompts == nil {
		b.ConversationStarters.Prompts = []string{}
	}
}
