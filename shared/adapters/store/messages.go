package store

import (
	"reflect"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/memory"
)

// A chat message is stored without what a reader can tell without it: a field that holds its
// zero value or the value nearly every message holds (estimated_time_ms "0", channel "api",
// complexity "simple", reasoning_type "standard", max_tokens 1024), the preference's fields that
// repeat the message's own, updated_at when it is created_at, a cited source's empty URL, favicon
// and tags. A message is written with every write of its chat's document and read back with
// every read, so its size is what a turn costs the store: a standard turn's question keeps 9
// fields of 30 (on the embedded store, which keeps a schema of every field beside the document,
// the largest chat after a minute of the mixed load was 60-66 KB and is 28 KB, see
// docs/BENCHMARKS.md). Reading a field left out gives what the message held, whichever document
// holds the message (a chat's, a page of its messages, an agent run's); messages stored whole,
// before, read as they did.

// storedMessage is chats.Message as the store keeps it. A nil pointer field stands for its
// default (the comment names it), an absent omitempty field for its zero value.
type storedMessage struct {
	UUID            string            `bson:"uuid"`
	ChatID          string            `bson:"chat_id"`
	Seq             int               `bson:"seq"`
	Role            string            `bson:"role"`
	Content         string            `bson:"content"`
	Model           string            `bson:"model,omitempty"`
	Complexity      *string           `bson:"complexity,omitempty"`        // "simple"
	ReasoningType   *string           `bson:"reasoning_type,omitempty"`    // "standard"
	EstimatedTimeMS *string           `bson:"estimated_time_ms,omitempty"` // "0"
	EstimatedCost   *string           `bson:"estimated_cost,omitempty"`    // "0.000000"
	Confidence      string            `bson:"confidence,omitempty"`
	ConfidenceScore string            `bson:"confidence_score,omitempty"`
	Channel         *string           `bson:"channel,omitempty"`     // "api"
	CreditUsed      *string           `bson:"credit_used,omitempty"` // "0"
	Tokens          int               `bson:"tokens,omitempty"`
	Upvotes         int               `bson:"upvotes,omitempty"`
	Downvotes       int               `bson:"downvotes,omitempty"`
	Reasoning       freeform.Object   `bson:"reasoning,omitempty"` // {}
	Preference      *storedPreference `bson:"preference,omitempty"`
	Sources         []storedRef       `bson:"sources,omitempty"` // []
	Interrupted     bool              `bson:"interrupted,omitempty"`
	IsToolExecuting bool              `bson:"is_tool_executing,omitempty"`
	User            *storedUser       `bson:"user,omitempty"`
	CreatedAt       time.Time         `bson:"created_at"`
	UpdatedAt       *time.Time        `bson:"updated_at,omitempty"` // created_at
	FirstTokenMS    int64             `bson:"first_token_ms,omitempty"`
	Version         int               `bson:"version,omitempty"`
}

// storedPreference is a message's preference: a nil field is the message's own (max_tokens:
// 1024, the agents' default).
type storedPreference struct {
	ReasoningType *string `bson:"reasoning_type,omitempty"`
	Model         *string `bson:"model,omitempty"`
	MaxTokens     *int    `bson:"max_tokens,omitempty"` // 1024
	Complexity    *string `bson:"complexity,omitempty"`
}

// storedRef is a source a message cites (memory.Ref): its tags left out are none.
type storedRef struct {
	CitationNumber int      `bson:"citationnumber"`
	SourceID       string   `bson:"sourceid"`
	Title          string   `bson:"title,omitempty"`
	URL            string   `bson:"url,omitempty"`
	Favicon        string   `bson:"favicon,omitempty"`
	Type           string   `bson:"type,omitempty"`
	Tags           []string `bson:"tags,omitempty"`
}

type storedUser struct {
	UUID       string `bson:"uuid,omitempty"`
	Email      string `bson:"email,omitempty"`
	Name       string `bson:"name,omitempty"`
	Avatar     string `bson:"avatar,omitempty"`
	AvatarLink string `bson:"avatar_link,omitempty"`
}

// unless is a pointer to v, or nil when v is def.
func unless[T comparable](v, def T) *T {
	if v == def {
		return nil
	}
	return &v
}

// or is *p, or def when p is nil.
func or[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func storeMessage(m chats.Message) storedMessage {
	s := storedMessage{
		UUID: m.UUID, ChatID: m.ChatID, Seq: m.Seq, Role: m.Role, Content: m.Content, Model: m.Model, Complexity: unless(m.Complexity, "simple"),
		ReasoningType: unless(m.ReasoningType, chats.ModeStandard), EstimatedTimeMS: unless(m.EstimatedTimeMS, "0"), EstimatedCost: unless(m.EstimatedCost, "0.000000"),
		Confidence: m.Confidence, ConfidenceScore: m.ConfidenceScore, Channel: unless(m.Channel, "api"), CreditUsed: unless(m.CreditUsed, "0"),
		Tokens: m.Tokens, Upvotes: m.Upvotes, Downvotes: m.Downvotes, Reasoning: m.Reasoning,
		Preference: unless(storedPreference{
			ReasoningType: unless(m.Preference.ReasoningType, m.ReasoningType), Model: unless(m.Preference.Model, m.Model),
			MaxTokens: unless(m.Preference.MaxTokens, agents.DefaultReplyTokens), Complexity: unless(m.Preference.Complexity, m.Complexity),
		}, storedPreference{}),
		Interrupted: m.Interrupted, IsToolExecuting: m.IsToolExecuting, User: unless(storedUser(m.User), storedUser{}),
		CreatedAt: m.CreatedAt, UpdatedAt: unlessSameTime(m.UpdatedAt, m.CreatedAt), FirstTokenMS: m.FirstTokenMS, Version: m.Version,
		Sources: make([]storedRef, len(m.Sources)),
	}
	for i, r := range m.Sources {
		s.Sources[i] = storedRef(r)
	}
	return s
}

// unlessSameTime is a pointer to t, or nil when t is the instant def is.
func unlessSameTime(t, def time.Time) *time.Time {
	if t.Equal(def) {
		return nil
	}
	return &t
}

func (s storedMessage) message() chats.Message {
	m := chats.Message{
		UUID: s.UUID, ChatID: s.ChatID, Seq: s.Seq, Role: s.Role, Content: s.Content, Model: s.Model, Complexity: or(s.Complexity, "simple"),
		ReasoningType: or(s.ReasoningType, chats.ModeStandard), EstimatedTimeMS: or(s.EstimatedTimeMS, "0"), EstimatedCost: or(s.EstimatedCost, "0.000000"),
		Confidence: s.Confidence, ConfidenceScore: s.ConfidenceScore, Channel: or(s.Channel, "api"), CreditUsed: or(s.CreditUsed, "0"),
		Tokens: s.Tokens, Upvotes: s.Upvotes, Downvotes: s.Downvotes, Reasoning: s.Reasoning,
		Sources: make([]memory.Ref, len(s.Sources)), Interrupted: s.Interrupted, IsToolExecuting: s.IsToolExecuting, User: chats.User(or(s.User, storedUser{})),
		CreatedAt: s.CreatedAt, UpdatedAt: or(s.UpdatedAt, s.CreatedAt), FirstTokenMS: s.FirstTokenMS, Version: s.Version,
	}
	p := or(s.Preference, storedPreference{})
	m.Preference = chats.Preference{
		ReasoningType: or(p.ReasoningType, m.ReasoningType), Model: or(p.Model, m.Model),
		MaxTokens: or(p.MaxTokens, agents.DefaultReplyTokens), Complexity: or(p.Complexity, m.Complexity),
	}
	if m.Reasoning == nil {
		m.Reasoning = freeform.Object{}
	}
	for i, r := range s.Sources {
		m.Sources[i] = memory.Ref(r)
		if r.Tags == nil {
			m.Sources[i].Tags = []string{}
		}
	}
	return m
}

// registerMessages makes r store chats.Message as storedMessage.
func registerMessages(r *bson.Registry) {
	message, stored := reflect.TypeFor[chats.Message](), reflect.TypeFor[storedMessage]()
	r.RegisterTypeEncoder(message, bson.ValueEncoderFunc(func(ec bson.EncodeContext, vw bson.ValueWriter, v reflect.Value) error {
		enc, err := ec.LookupEncoder(stored)
		if err != nil {
			return err
		}
		return enc.EncodeValue(ec, vw, reflect.ValueOf(storeMessage(v.Interface().(chats.Message))))
	}))
	r.RegisterTypeDecoder(message, bson.ValueDecoderFunc(func(dc bson.DecodeContext, vr bson.ValueReader, v reflect.Value) error {
		dec, err := dc.LookupDecoder(stored)
		if err != nil {
			return err
		}
		var s storedMessage
		if err := dec.DecodeValue(dc, vr, reflect.ValueOf(&s).Elem()); err != nil {
			return err
		}
		v.Set(reflect.ValueOf(s.message()))
		return nil
	}))
}
