package stats

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/agentplane/agentplane/shared/chats"
)

// Hourly is what the statistics keep of an agent's messages written in one hour (UTC): counters,
// the chats and authors it saw, and the distributions of its reply times, folded from the
// chat.message.created events in the order the stream holds them. An hour is kept in pages
// (PageID), each an Hourly of the messages it took; the figures of the hour are the sum (or
// union) of its pages', of its chat pages when it was begun before pages took messages in the
// stream's order (ChatPageID), and of its unpaged document when it was written before hours were
// paged (HourlyID). Seq is the stream sequence of the last event folded in: an event at or below
// it is already counted.
type Hourly struct {
	ID        string    `bson:"_id"`
	ProjectID string    `bson:"project_id"`
	BotID     string    `bson:"bot_id"`
	Start     time.Time `bson:"start"`
	Seq       uint64    `bson:"seq"`
	// Sealed, on an unpaged hour, is its Seq when the recorder first wrote it after hours were
	// paged: the events up to it are counted in it, none after (but the votes of the messages
	// it holds votes of, which stay in it).
	Sealed uint64 `bson:"sealed,omitempty"`
	// Pages, on an hour's first page, are the stream sequences its later pages begin at (page
	// n+1 takes the hour's message events from Pages[n] on).
	Pages []uint64 `bson:"pages,omitempty"`

	Messages      int     `bson:"messages"`
	UserMessages  int     `bson:"user_messages"`
	AgentMessages int     `bson:"agent_messages"`
	Tokens        int     `bson:"tokens"`
	Credits       float64 `bson:"credits"`
	Cost          float64 `bson:"cost"`
	// Chats counts the hour's messages by chat; Authors the user messages by author, then chat.
	Chats   map[string]int            `bson:"chats"`
	Authors map[string]map[string]int `bson:"authors"`
	// Modes counts the agent's answers by reasoning type, ModeCredits sums their credits.
	Modes       map[string]int     `bson:"modes"`
	ModeCredits map[string]float64 `bson:"mode_credits"`
	// Voted are the hour's messages that have votes, by id, with their votes.
	Voted map[string]Vote `bson:"voted"`
	// Reply is the distribution of the answers' reply times, FirstToken of their times to the
	// first token (streamed answers only).
	Reply      Histogram `bson:"reply"`
	FirstToken Histogram `bson:"first_token"`
	// Versions counts the agent's answers by the version of the agent that wrote them (in
	// decimal; answers written before versions were are in none).
	Versions map[string]VersionHour `bson:"versions,omitempty"`
}

// VersionHour is what one version of the agent answered in an hour.
type VersionHour struct {
	AgentMessages int     `bson:"agent_messages"`
	Tokens        int     `bson:"tokens"`
	Credits       float64 `bson:"credits"`
	Cost          float64 `bson:"cost"`
	ReplyMS       int64   `bson:"reply_ms"`
}

// HourlyID names the hour of an agent holding at: the one document of the hour as it was kept
// before hours were paged, and the stem of its pages' names.
func HourlyID(botID string, at time.Time) string {
	return botID + "@" + strconv.FormatInt(at.UTC().Truncate(time.Hour).Unix(), 10)
}

// PageChats is how many chats a page of an hour holds before the next page opens. An hour's
// pages take its message events in the stream's order: the first page until it holds
// PageChats chats, then the next, and so on (the first page lists where each later one begins in
// the stream, Pages), so a batch of events rewrites the open page only, whose size PageChats
// bounds (about 130 bytes a chat, in its chats and authors) whatever the hour holds, and a quiet
// hour is one page. A chat whose messages span pages is in each, with the messages of each: the
// figures sum and unite them. The votes of an hour's messages are kept in its first page: votes
// are set (not added) by their events, so each message's are kept in one place.
const PageChats = 1000

// PageID names page n of the agent's hour holding at.
func PageID(botID string, at time.Time, n int) string {
	return HourlyID(botID, at) + ":" + strconv.Itoa(n)
}

// ChatPages is how many pages an hour begun before pages took messages in the stream's order is
// kept in, by chat: such an hour keeps them to its end (the events it counts are in them).
const ChatPages = 16

// ChatPageID names the page of the agent's hour holding at that keeps the chat chatID, in an
// hour kept in chat pages.
func ChatPageID(botID string, at time.Time, chatID string) string {
	return HourlyID(botID, at) + "." + strconv.Itoa(chatPageOf(chatID))
}

// chatPageOf is the chat page a chat is kept in (0 to ChatPages-1): a hash of its id.
func chatPageOf(chatID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(chatID))
	return int(h.Sum32() % ChatPages)
}

// NewHourly is the empty hour of the agent holding at.
func NewHourly(projectID, botID string, at time.Time) Hourly {
	return Hourly{ID: HourlyID(botID, at), ProjectID: projectID, BotID: botID, Start: at.UTC().Truncate(time.Hour),
		Chats: map[string]int{}, Authors: map[string]map[string]int{}, Modes: map[string]int{}, ModeCredits: map[string]float64{}, Voted: map[string]Vote{},
		Reply: Histogram{Counts: map[string]int{}}, FirstToken: Histogram{Counts: map[string]int{}}}
}

// Fact is one written message of an agent, as the statistics count it.
type Fact struct {
	ChatID string
	// Author is who wrote a user message: the end user on an agent's page, else the account
	// behind the key.
	Author        string
	Role          string
	ReasoningType string
	Tokens        int
	CreditUsed    string
	EstimatedCost string
	// ReplyMS is how long the answer took (its estimated_time_ms); FirstTokenMS how long until
	// its first token was streamed (0: not streamed).
	ReplyMS      int64
	FirstTokenMS int64
	CreatedAt    time.Time
	// Version is the agent's version that wrote an answer (0: none recorded).
	Version int
}

// add counts f in the hour.
func (h *Hourly) add(f Fact) {
	h.Messages++
	h.Chats[f.ChatID]++
	h.Tokens += f.Tokens
	h.Credits += number(f.CreditUsed)
	h.Cost += number(f.EstimatedCost)
	switch f.Role {
	case chats.RoleUser:
		h.UserMessages++
		if h.Authors[f.Author] == nil {
			h.Authors[f.Author] = map[string]int{}
		}
		h.Authors[f.Author][f.ChatID]++
	case chats.RoleAgent:
		h.AgentMessages++
		mode := cmp.Or(f.ReasoningType, "standard")
		h.Modes[mode]++
		h.ModeCredits[mode] += number(f.CreditUsed)
		if f.ReplyMS > 0 {
			h.Reply.add(f.ReplyMS)
		}
		if f.FirstTokenMS > 0 {
			h.FirstToken.add(f.FirstTokenMS)
		}
		if f.Version > 0 {
			if h.Versions == nil {
				h.Versions = map[string]VersionHour{}
			}
			key := strconv.Itoa(f.Version)
			v := h.Versions[key]
			v.AgentMessages++
			v.Tokens += f.Tokens
			v.Credits += number(f.CreditUsed)
			v.Cost += number(f.EstimatedCost)
			v.ReplyMS += f.ReplyMS
			h.Versions[key] = v
		}
	}
}

// vote sets the votes of message id of the hour (none: it has no votes, or is gone).
func (h *Hourly) vote(id string, v Vote) {
	if h.Voted == nil {
		h.Voted = map[string]Vote{}
	}
	if v.Upvotes+v.Downvotes == 0 {
		delete(h.Voted, id)
		return
	}
	h.Voted[id] = v
}

// holdsVotes reports whether h (nil: none) holds votes of message id ("": none).
func (h *Hourly) holdsVotes(id string) bool {
	if h == nil || id == "" {
		return false
	}
	_, ok := h.Voted[id]
	return ok
}

// Histogram is a distribution of times in milliseconds: a time below exactMS exactly, a longer
// one rounded down to within 2% (buckets growing by 2%, so that a histogram of any spread of
// times stays a few hundred counts at most).
type Histogram struct {
	// Counts counts the times by their value so rounded (in decimal).
	Counts map[string]int `bson:"counts"`
	Sum    float64        `bson:"sum"`
	Max    int64          `bson:"max"`
}

// exactMS is the time below which a histogram keeps times exactly; growth is how much each of
// its buckets above is wider than the one before.
const (
	exactMS = 100
	growth  = 1.02
)

// bucket rounds ms down to the start of its bucket: itself below exactMS, else the largest
// whole exactMS x growth^k not above it.
func bucket(ms int64) int64 {
	if ms < exactMS {
		return ms
	}
	k := math.Floor(math.Log(float64(ms)/exactMS) / math.Log(growth))
	start := int64(exactMS * math.Pow(growth, k))
	if next := int64(exactMS * math.Pow(growth, k+1)); next <= ms {
		start = next
	}
	return start
}

func (h *Histogram) add(ms int64) {
	h.Counts[strconv.FormatInt(bucket(ms), 10)]++
	h.Sum += float64(ms)
	h.Max = max(h.Max, ms)
}

// merge adds o's times to h.
func (h *Histogram) merge(o Histogram) {
	if h.Counts == nil {
		h.Counts = map[string]int{}
	}
	for k, n := range o.Counts {
		h.Counts[k] += n
	}
	h.Sum += o.Sum
	h.Max = max(h.Max, o.Max)
}

// latency is the distribution h holds: nearest-rank percentiles of the rounded times, the
// exact average and maximum.
func (h Histogram) latency() Latency {
	type value struct {
		ms float64
		n  int
	}
	var vs []value
	count := 0
	for k, n := range h.Counts {
		ms, err := strconv.ParseFloat(k, 64)
		if err != nil || n <= 0 {
			continue
		}
		vs = append(vs, value{ms, n})
		count += n
	}
	if count == 0 {
		return Latency{}
	}
	slices.SortFunc(vs, func(a, b value) int { return cmp.Compare(a.ms, b.ms) })
	rank := func(p float64) float64 {
		r, seen := int(math.Ceil(p*float64(count))), 0
		for _, v := range vs {
			if seen += v.n; seen >= r {
				return v.ms
			}
		}
		return vs[len(vs)-1].ms
	}
	return Latency{Count: count, Avg: round(h.Sum / float64(count)), P50: rank(0.5), P90: rank(0.9), P95: rank(0.95),
		P99: rank(0.99), Max: float64(h.Max)}
}

// Vote is what the statistics keep of a message with votes.
type Vote struct {
	ChatID    string    `bson:"chat_id"`
	Role      string    `bson:"role"`
	Upvotes   int       `bson:"upvotes"`
	Downvotes int       `bson:"downvotes"`
	CreatedAt time.Time `bson:"created_at"`
	// Version is the agent's version that wrote the message (0: none recorded).
	Version int `bson:"version,omitempty"`
}
