package stats

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/agentplane/agentplane/shared/chats"
)

// MaxWorst is how many of the worst-rated answers the votes list.
const MaxWorst = 10

// Votes are the votes on the messages of the window.
type Votes struct {
	Upvotes   int `json:"upvotes"`
	Downvotes int `json:"downvotes"`
	// Rated counts the messages with at least one vote.
	Rated int `json:"rated_messages"`
	// Satisfaction is upvotes / (upvotes + downvotes), 0 without votes.
	Satisfaction float64 `json:"satisfaction"`
	// Worst are the agent's answers with at least one downvote, the most downvotes net of
	// upvotes first (then the most downvotes, then the newest), at most MaxWorst.
	Worst []Rated `json:"worst_rated"`
}

// Rated is an answer and its votes.
type Rated struct {
	MessageID string    `json:"message_id"`
	ChatID    string    `json:"chat_id"`
	Upvotes   int       `json:"upvotes"`
	Downvotes int       `json:"downvotes"`
	CreatedAt time.Time `json:"created_at"`
}

type votes struct{ v Votes }

func newVotes() *votes { return &votes{v: Votes{Worst: []Rated{}}} }

func (s *votes) add(h Hourly) {
	for id, v := range h.Voted {
		s.v.Upvotes += v.Upvotes
		s.v.Downvotes += v.Downvotes
		s.v.Rated++
		if v.Role != chats.RoleAgent || v.Downvotes == 0 {
			continue
		}
		r := Rated{MessageID: id, ChatID: v.ChatID, Upvotes: v.Upvotes, Downvotes: v.Downvotes, CreatedAt: v.CreatedAt}
		i, _ := slices.BinarySearchFunc(s.v.Worst, r, worse)
		if i < MaxWorst {
			s.v.Worst = slices.Insert(s.v.Worst, i, r)
			s.v.Worst = s.v.Worst[:min(len(s.v.Worst), MaxWorst)]
		}
	}
}

// worse orders a before b when a is rated worse.
func worse(a, b Rated) int {
	return cmp.Or(cmp.Compare(b.Downvotes-b.Upvotes, a.Downvotes-a.Upvotes), cmp.Compare(b.Downvotes, a.Downvotes),
		b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.MessageID, b.MessageID))
}

func (s *votes) result() Votes {
	v := s.v
	if n := v.Upvotes + v.Downvotes; n > 0 {
		v.Satisfaction = round(float64(v.Upvotes) / float64(n))
	}
	return v
}

// Votes are the votes on the agent's messages and its worst-rated answers.
func (s *Service) Votes(ctx context.Context, projectID, botID string, w Window) (Report[Votes], error) {
	return hours(ctx, s, projectID, botID, w, newVotes)
}

// Latency is a distribution of times in milliseconds: nearest-rank percentiles.
type Latency struct {
	Count int     `json:"count"`
	Avg   float64 `json:"avg"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// latencyOf is the distribution of ms.
func latencyOf(ms []float64) Latency {
	if len(ms) == 0 {
		return Latency{}
	}
	slices.Sort(ms)
	sum := 0.0
	for _, x := range ms {
		sum += x
	}
	rank := func(p float64) float64 { return ms[int(math.Ceil(p*float64(len(ms))))-1] }
	return Latency{Count: len(ms), Avg: round(sum / float64(len(ms))), P50: rank(0.5), P90: rank(0.9), P95: rank(0.95), P99: rank(0.99), Max: ms[len(ms)-1]}
}

// Performance is how fast the agent answered.
type Performance struct {
	// ReplyMS is the reply time of the agent's answers that record one (estimated_time_ms above
	// 0), FirstTokenMS the time from the user's message to the first token of the streamed ones;
	// times of 100 ms or more are kept to within 2% (see Histogram).
	ReplyMS      Latency `json:"reply_ms"`
	FirstTokenMS Latency `json:"first_token_ms"`
}

type performance struct{ reply, first Histogram }

func newPerformance() *performance { return &performance{} }

func (s *performance) add(h Hourly) {
	s.reply.merge(h.Reply)
	s.first.merge(h.FirstToken)
}

func (s *performance) result() Performance {
	return Performance{ReplyMS: s.reply.latency(), FirstTokenMS: s.first.latency()}
}

// Performance is the distribution of the agent's reply times.
func (s *Service) Performance(ctx context.Context, projectID, botID string, w Window) (Report[Performance], error) {
	return hours(ctx, s, projectID, botID, w, newPerformance)
}
