package store

import (
	"context"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/stats"
	"github.com/agentplane/agentplane/shared/tools"
	"github.com/agentplane/agentplane/shared/workflows"
)

// Stats reads an agent's stored messages for its statistics: its live chats' recent messages
// with the chats (one query), then its message pages (one query), each message once, without
// its content.
type Stats struct{ db *mongo.Database }

var _ stats.Repo = Stats{}

// NewStats returns the statistics' reader of db.
func NewStats(db *mongo.Database) Stats { return Stats{db: db} }

// statMessage is the part of a stored message the statistics read.
type statMessage struct {
	UUID            string `bson:"uuid"`
	Seq             int    `bson:"seq"`
	Role            string `bson:"role"`
	ReasoningType   string `bson:"reasoning_type"`
	Tokens          int    `bson:"tokens"`
	CreditUsed      string `bson:"credit_used"`
	EstimatedCost   string `bson:"estimated_cost"`
	EstimatedTimeMS string `bson:"estimated_time_ms"`
	Upvotes         int    `bson:"upvotes"`
	Downvotes       int    `bson:"downvotes"`
	User            struct {
		UUID string `bson:"uuid"`
	} `bson:"user"`
	CreatedAt time.Time `bson:"created_at"`
}

var statFields = []string{"uuid", "seq", "role", "reasoning_type", "tokens", "credit_used", "estimated_cost",
	"estimated_time_ms", "upvotes", "downvotes", "user.uuid", "created_at"}

// statProjection keeps the read fields of the messages under array, and extra.
func statProjection(array string, extra ...string) bson.D {
	p := bson.D{}
	for _, f := range extra {
		p = append(p, bson.E{Key: f, Value: 1})
	}
	for _, f := range statFields {
		p = append(p, bson.E{Key: array + "." + f, Value: 1})
	}
	return p
}

// statChat is what the statistics read of a chat: whose it is and where its messages are.
type statChat struct {
	ID         string        `bson:"_id"`
	Subscriber string        `bson:"subscriber"`
	RecentFrom int           `bson:"recent_from"`
	Recent     []statMessage `bson:"recent"`
}

// Messages reads the chats that may hold a message of the window (not deleted, created before
// to, written to since from), serving their recent messages, then the agent's pages, serving
// from each page the messages before its chat's recent ones (one copy of each number: a page
// may hold a message twice after a repeated move, and a message moved to its page may still be
// among the chat's recent ones when the chat's write failed).
func (r Stats) Messages(ctx context.Context, projectID, botID string, from, to time.Time, each func(stats.Fact) error) error {
	filter := bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}, notDeleted,
		{Key: "updated_at", Value: bson.D{{Key: "$gte", Value: from}}}, {Key: "created_at", Value: bson.D{{Key: "$lt", Value: to}}}}
	cur, err := r.db.Collection(chatsColl).Find(ctx, filter,
		options.Find().SetProjection(statProjection("recent", "subscriber", "recent_from")))
	if err != nil {
		return wrap(err, stats.Resource)
	}
	defer func() { _ = cur.Close(ctx) }()
	live := map[string]statChat{}
	for cur.Next(ctx) {
		var c statChat
		if err := cur.Decode(&c); err != nil {
			return wrap(err, stats.Resource)
		}
		if err := serve(c, c.Recent, 0, from, to, each); err != nil {
			return err
		}
		c.Recent = nil
		live[c.ID] = c
	}
	if err := wrap(cur.Err(), stats.Resource); err != nil {
		return err
	}
	return r.pages(ctx, projectID, botID, live, from, to, each)
}

func (r Stats) pages(ctx context.Context, projectID, botID string, live map[string]statChat, from, to time.Time, each func(stats.Fact) error) error {
	cur, err := r.db.Collection(chatMessagesColl).Find(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}},
		options.Find().SetProjection(statProjection("messages", "chat_id")))
	if err != nil {
		return wrap(err, stats.Resource)
	}
	defer func() { _ = cur.Close(ctx) }()
	for cur.Next(ctx) {
		var p struct {
			ChatID   string        `bson:"chat_id"`
			Messages []statMessage `bson:"messages"`
		}
		if err := cur.Decode(&p); err != nil {
			return wrap(err, stats.Resource)
		}
		c, ok := live[p.ChatID]
		if !ok {
			continue
		}
		before := c.RecentFrom
		if before == 0 {
			before = math.MaxInt
		}
		if err := serve(c, p.Messages, before, from, to, each); err != nil {
			return err
		}
	}
	return wrap(cur.Err(), stats.Resource)
}

// serve calls each with the messages of msgs created in [from, to), of numbers below before
// (0: all), the last copy of each number.
func serve(c statChat, msgs []statMessage, before int, from, to time.Time, each func(stats.Fact) error) error {
	last := map[int]int{}
	for i, m := range msgs {
		last[m.Seq] = i
	}
	for i, m := range msgs {
		if last[m.Seq] != i || (before > 0 && m.Seq >= before) || m.CreatedAt.Before(from) || !m.CreatedAt.Before(to) {
			continue
		}
		user := c.Subscriber
		if user == "" {
			user = m.User.UUID
		}
		if err := each(stats.Fact{UUID: m.UUID, ChatID: c.ID, User: user, Role: m.Role, ReasoningType: m.ReasoningType,
			Tokens: m.Tokens, CreditUsed: m.CreditUsed, EstimatedCost: m.EstimatedCost, EstimatedTimeMS: m.EstimatedTimeMS,
			Upvotes: m.Upvotes, Downvotes: m.Downvotes, CreatedAt: m.CreatedAt}); err != nil {
			return err
		}
	}
	return nil
}

// ToolCalls reads the agent's recorded tool calls of the window (by the bot index of
// tool_calls).
func (r Stats) ToolCalls(ctx context.Context, projectID, botID string, from, to time.Time, each func(stats.ToolCall) error) error {
	cur, err := r.db.Collection(toolCallsColl).Find(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID},
		{Key: "at", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lt", Value: to}}}})
	if err != nil {
		return wrap(err, stats.Resource)
	}
	defer func() { _ = cur.Close(ctx) }()
	for cur.Next(ctx) {
		var c tools.Call
		if err := cur.Decode(&c); err != nil {
			return wrap(err, stats.Resource)
		}
		if err := each(stats.ToolCall{ToolID: c.ToolID, Operation: c.Operation, Outcome: c.Outcome, DurationMS: c.DurationMS, At: c.At}); err != nil {
			return err
		}
	}
	return wrap(cur.Err(), stats.Resource)
}

// AgentRuns reads the agent's runs of the window, under way (executions) and ended
// (executions_finished, by its bot index), with their cycles' numbers and log entries' events
// (an ended run may still be in the live collection for a moment: each run is served once).
func (r Stats) AgentRuns(ctx context.Context, projectID, botID string, from, to time.Time, each func(stats.AgentRun) error) error {
	filter := bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID},
		{Key: "created_at", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lt", Value: to}}}}
	proj := bson.D{{Key: "status", Value: 1}, {Key: "created_at", Value: 1}, {Key: "cycles.cycle", Value: 1}, {Key: "log.event", Value: 1}, {Key: "log.data", Value: 1}}
	seen := map[string]bool{}
	for _, coll := range []string{finishedColl, executionsColl} {
		cur, err := r.db.Collection(coll).Find(ctx, filter, options.Find().SetProjection(proj))
		if err != nil {
			return wrap(err, stats.Resource)
		}
		err = eachRun(ctx, cur, seen, each)
		_ = cur.Close(ctx)
		if err != nil {
			return err
		}
	}
	return nil
}

func eachRun(ctx context.Context, cur *mongo.Cursor, seen map[string]bool, each func(stats.AgentRun) error) error {
	for cur.Next(ctx) {
		var e agentruns.Execution
		if err := cur.Decode(&e); err != nil {
			return wrap(err, stats.Resource)
		}
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		run := stats.AgentRun{Status: e.Status, Cycles: len(e.Cycles), CreatedAt: e.CreatedAt}
		if n := len(e.Log); n > 0 && e.Log[n-1].Event == agentruns.EventError {
			run.ErrorCode = agentruns.FailureOf(e.Log[n-1]).Code
		}
		if err := each(run); err != nil {
			return err
		}
	}
	return wrap(cur.Err(), stats.Resource)
}

// WorkflowRuns reads the runs of the agent's workflows of the window (by the bot index of
// workflow_runs).
func (r Stats) WorkflowRuns(ctx context.Context, projectID, botID string, from, to time.Time, each func(stats.WorkflowRun) error) error {
	cur, err := r.db.Collection(workflowRunsColl).Find(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID},
		{Key: "created_at", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lt", Value: to}}}},
		options.Find().SetProjection(bson.D{{Key: "workflow_id", Value: 1}, {Key: "status", Value: 1}, {Key: "created_at", Value: 1},
			{Key: "started_at", Value: 1}, {Key: "ended_at", Value: 1}}))
	if err != nil {
		return wrap(err, stats.Resource)
	}
	defer func() { _ = cur.Close(ctx) }()
	for cur.Next(ctx) {
		var w workflows.Run
		if err := cur.Decode(&w); err != nil {
			return wrap(err, stats.Resource)
		}
		if err := each(stats.WorkflowRun{WorkflowID: w.WorkflowID, Status: w.Status, CreatedAt: w.CreatedAt, StartedAt: w.StartedAt, EndedAt: w.EndedAt}); err != nil {
			return err
		}
	}
	return wrap(cur.Err(), stats.Resource)
}
