// Package store is the MongoDB adapter: connection, indexes and the repositories of the domain.
// It uses only what both MongoDB 7 and the embedded FerretDB store support: single-document
// atomic writes and ordinary indexes, no transactions.
package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Open connects to uri and returns database name. It does not wait for the server: the first
// operation does, and fails with an Unavailable error after a few seconds when it is down. Each
// command is counted for the work of its context (opcount) and, when commands is not nil, in it.
func Open(uri, name string, commands *Commands) (*mongo.Database, error) {
	opts := options.Client().ApplyURI(uri).
		SetMonitor(monitor(commands)).
		SetServerSelectionTimeout(5 * time.Second).
		SetConnectTimeout(5 * time.Second).
		SetWriteConcern(writeconcern.Majority()).
		SetAppName("agentplane").
		SetRegistry(registry)
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, fmt.Errorf("mongo: %w", err)
	}
	return client.Database(name), nil
}

// Ping checks that the database answers.
func Ping(ctx context.Context, db *mongo.Database) error {
	return db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
}

// Migrate creates the indexes every collection needs. It is idempotent. Indexes are created one
// at a time: FerretDB fails a createIndexes of several indexes that all exist already.
func Migrate(ctx context.Context, db *mongo.Database) error {
	for coll, models := range indexes() {
		for _, model := range models {
			if _, err := db.Collection(coll).Indexes().CreateOne(ctx, model); err != nil {
				return fmt.Errorf("indexes of %s: %w", coll, wrap(err, coll))
			}
		}
	}
	for _, coll := range unindexed {
		var se mongo.ServerError
		if err := db.CreateCollection(ctx, coll); err != nil && !(errors.As(err, &se) && se.HasErrorCode(namespaceExists)) {
			return fmt.Errorf("collection %s: %w", coll, wrap(err, coll))
		}
	}
	return nil
}

// unindexed are the collections read by _id alone, created here rather than by their first
// write so that they exist when the embedded store's _id lookup indexes are made
// (devstack's Reindex runs after Migrate).
var unindexed = []string{sourceTextsColl, versionsColl, evalResultsColl, toolRevisionsColl, workflowRevisionsColl, sourceSetsColl, sourceSetPagesColl}

// namespaceExists is the server's error code for a collection created twice.
const namespaceExists = 48

// indexes returns fresh index models on each call: the driver writes into their options.
func indexes() map[string][]mongo.IndexModel {
	return map[string][]mongo.IndexModel{
		keysColl: {
			{Keys: bson.D{{Key: "hash", Value: 1}}, Options: options.Index().SetUnique(true).SetName("hash_unique")},
			{Keys: bson.D{{Key: "account_id", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("account")},
		},
		projectsColl: {
			{Keys: bson.D{{Key: "account_id", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("account")},
		},
		botsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("project")},
			{Keys: bson.D{{Key: "uuid", Value: 1}}, Options: options.Index().SetUnique(true).SetName("uuid_unique")},
			{Keys: bson.D{{Key: "subdomain", Value: 1}}, Options: options.Index().SetUnique(true).SetName("subdomain_unique")},
			// Sparse: only agents whose domain is verified have the field.
			{Keys: bson.D{{Key: "verified_domain", Value: 1}}, Options: options.Index().SetUnique(true).SetSparse(true).SetName("verified_domain_unique")},
			// The schedulers' read of the versioned agents whose published workflows hold a schedule.
			{Keys: bson.D{{Key: "workflows.trigger_type", Value: 1}}, Options: options.Index().SetName("workflow_triggers")},
			outboxIndex(),
		},
		subscribersColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "last_seen", Value: -1}}, Options: options.Index().SetName("project_seen")},
			{Keys: bson.D{{Key: "bot_id", Value: 1}, {Key: "external_id", Value: 1}}, Options: options.Index().SetName("bot_external")},
			// The retention's: anonymous subscribers with no chat, least recently seen first.
			{Keys: bson.D{{Key: "anonymous", Value: 1}, {Key: "chats", Value: 1}, {Key: "last_seen", Value: 1}}, Options: options.Index().SetName("idle")},
		},
		dealsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("bot")},
			// A board's columns: an agent's deals of one stage, in id order.
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "stage_id", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("bot_stage")},
			outboxIndex(),
		},
		tasksColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("bot")},
			// The views: an agent's open tasks by due time, and its snoozed ones.
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "status", Value: 1}, {Key: "due_at", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("due")},
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "status", Value: 1}, {Key: "snoozed_until", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("snoozed")},
			// The scheduler's: tasks whose task.due is to be sent, soonest first.
			{Keys: bson.D{{Key: "notice_at", Value: 1}}, Options: options.Index().SetName("notice")},
			outboxIndex(),
		},
		contactsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("project")},
			outboxIndex(),
		},
		notesColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "contact_id", Value: 1}, {Key: "_id", Value: -1}}, Options: options.Index().SetName("contact")},
		},
		deletedEventsColl: {
			outboxIndex(),
		},
		pipelinesColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "created_at", Value: 1}}, Options: options.Index().SetName("project")},
			outboxIndex(),
		},
		stagesColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "sort_order", Value: 1}}, Options: options.Index().SetName("project")},
			outboxIndex(),
		},
		crmFieldsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "created_at", Value: 1}}, Options: options.Index().SetName("project")},
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "entity", Value: 1}, {Key: "key", Value: 1}}, Options: options.Index().SetName("key").SetUnique(true)},
		},
		workflowsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("bot")},
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "trigger_event", Value: 1}}, Options: options.Index().SetName("trigger")},
			outboxIndex(),
		},
		calendarsColl: {
			outboxIndex(),
		},
		heartbeatsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("bot")},
			{Keys: bson.D{{Key: "enabled", Value: 1}, {Key: "next_run_at", Value: 1}}, Options: options.Index().SetName("due")},
			{Keys: bson.D{{Key: "running", Value: 1}}, Options: options.Index().SetName("running")},
			outboxIndex(),
		},
		evalDatasetsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "created_at", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("bot")},
		},
		// An agent's eval runs, newest first (the gate's latest run of a dataset among them); the
		// unfinished ones, oldest first (the reconciler's).
		evalRunsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "created_at", Value: -1}, {Key: "_id", Value: -1}}, Options: options.Index().SetName("bot")},
			{Keys: bson.D{{Key: "status", Value: 1}, {Key: "created_at", Value: 1}}, Options: options.Index().SetName("status")},
		},
		// An agent's gradings of live answers, by day (online pass rates).
		onlineGradesColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "day", Value: 1}}, Options: options.Index().SetName("bot")},
		},
		firingsColl: {
			{Keys: bson.D{{Key: "heartbeat_id", Value: 1}, {Key: "scheduled_at", Value: -1}}, Options: options.Index().SetName("heartbeat")},
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "scheduled_at", Value: -1}}, Options: options.Index().SetName("bot")},
			{Keys: bson.D{{Key: "scheduled_at", Value: 1}}, Options: options.Index().SetName("age")},
		},
		bookingsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "start", Value: 1}}, Options: options.Index().SetName("bot")},
			outboxIndex(),
		},
		sourcesColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "_id", Value: 1}}, Options: options.Index().SetName("bot")},
			{Keys: bson.D{{Key: "uuid", Value: 1}}, Options: options.Index().SetUnique(true).SetName("uuid_unique")},
			{Keys: bson.D{{Key: "next_sync_at", Value: 1}}, Options: options.Index().SetName("next_sync")},
			{Keys: bson.D{{Key: "pending_since", Value: 1}}, Options: options.Index().SetName("pending_since")},
			{Keys: bson.D{{Key: "forget_after_at", Value: 1}}, Options: options.Index().SetName("forget_after")},
			{Keys: bson.D{{Key: "deleted_at", Value: 1}, {Key: "purged", Value: 1}}, Options: options.Index().SetName("purge")},
			{Keys: bson.D{{Key: "updated_at", Value: 1}}, Options: options.Index().SetName("updated")},
			outboxIndex(),
		},
		chatsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "updated_at", Value: -1}}, Options: options.Index().SetName("bot")},
			{Keys: bson.D{{Key: "recent.uuid", Value: 1}}, Options: options.Index().SetName("message")},
			outboxIndex(),
		},
		chatMessagesColl: {
			{Keys: bson.D{{Key: "chat_id", Value: 1}}, Options: options.Index().SetName("chat")},
			{Keys: bson.D{{Key: "messages.uuid", Value: 1}}, Options: options.Index().SetName("message")},
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}}, Options: options.Index().SetName("bot")},
			outboxIndex(),
		},
		votesColl: {
			{Keys: bson.D{{Key: "message_id", Value: 1}, {Key: "vote", Value: 1}}, Options: options.Index().SetName("message")},
		},
		memoryLiveColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}}, Options: options.Index().SetName("project")},
		},
		executionsColl: {
			{Keys: bson.D{{Key: "status", Value: 1}, {Key: "updated_at", Value: 1}}, Options: options.Index().SetName("status")},
			{Keys: bson.D{{Key: "status", Value: 1}, {Key: "lease_until", Value: 1}}, Options: options.Index().SetName("lease")},
		},
		workflowRunsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "created_at", Value: -1}}, Options: options.Index().SetName("bot")},
			outboxIndex(),
		},
		finishedColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "created_at", Value: 1}}, Options: options.Index().SetName("bot")},
		},
		toolsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "key", Value: 1}}, Options: options.Index().SetUnique(true).SetName("bot_key_unique")},
		},
		statHoursColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "start", Value: 1}}, Options: options.Index().SetName("bot")},
		},
		toolCallsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "tool_id", Value: 1}, {Key: "at", Value: 1}}, Options: options.Index().SetName("tool")},
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "server_id", Value: 1}, {Key: "at", Value: 1}}, Options: options.Index().SetName("server")},
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "at", Value: 1}}, Options: options.Index().SetName("bot")},
			{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetName("age")},
		},
		chunksColl: {
			{Keys: bson.D{{Key: "source_id", Value: 1}, {Key: "gen", Value: 1}}, Options: options.Index().SetName("generation")},
		},
		operatorsColl: {
			{Keys: bson.D{{Key: "token_hash", Value: 1}}, Options: options.Index().SetUnique(true).SetName("token_hash_unique")},
			{Keys: bson.D{{Key: "account_id", Value: 1}, {Key: "created_at", Value: 1}}, Options: options.Index().SetName("account")},
		},
		channelsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "created_at", Value: 1}}, Options: options.Index().SetName("bot")},
		},
		channelMessagesColl: {
			{Keys: bson.D{{Key: "received_at", Value: 1}}, Options: options.Index().SetName("age")},
			outboxIndex(),
		},
		channelThreadsColl: {
			{Keys: bson.D{{Key: "chat_id", Value: 1}}, Options: options.Index().SetName("chat")},
		},
		channelSendsColl: {
			{Keys: bson.D{{Key: "created_at", Value: 1}}, Options: options.Index().SetName("age")},
			outboxIndex(),
		},
		// One address is one agent's, across accounts.
		emailSettingsColl: {
			{Keys: bson.D{{Key: "address", Value: 1}}, Options: options.Index().SetUnique(true).SetName("address_unique")},
		},
		// An agent's inbox, newest first; its threads by Message-ID and by sender and subject;
		// a chat's latest email; the answers to a sender in the last hour; the retention's oldest.
		emailsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "direction", Value: 1}, {Key: "status", Value: 1}}, Options: options.Index().SetName("bot_status")},
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "created_at", Value: -1}}, Options: options.Index().SetName("bot")},
			{Keys: bson.D{{Key: "bot_id", Value: 1}, {Key: "message_id", Value: 1}}, Options: options.Index().SetName("message")},
			{Keys: bson.D{{Key: "bot_id", Value: 1}, {Key: "thread_key", Value: 1}, {Key: "created_at", Value: -1}}, Options: options.Index().SetName("thread")},
			{Keys: bson.D{{Key: "chat_id", Value: 1}, {Key: "created_at", Value: -1}}, Options: options.Index().SetName("chat")},
			{Keys: bson.D{{Key: "bot_id", Value: 1}, {Key: "to_address", Value: 1}, {Key: "created_at", Value: -1}}, Options: options.Index().SetName("recipient")},
			{Keys: bson.D{{Key: "created_at", Value: 1}}, Options: options.Index().SetName("age")},
			outboxIndex(),
		},
		handoffsColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "status", Value: 1}, {Key: "requested_at", Value: 1}}, Options: options.Index().SetName("inbox")},
			outboxIndex(),
		},
		// Workspaces: an agent's, oldest first; the published ones by subdomain, one each (sparse:
		// only published workspaces have the field); those with a verified custom domain by it,
		// one each. Their files: a workspace's by path, one file per
		// path (the unique index is what refuses a second). Their trash: a workspace's, the last
		// deleted first.
		workspacesColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "created_at", Value: 1}}, Options: options.Index().SetName("bot")},
			{Keys: bson.D{{Key: "uuid", Value: 1}}, Options: options.Index().SetUnique(true).SetName("uuid_unique")},
			{Keys: bson.D{{Key: "subdomain", Value: 1}}, Options: options.Index().SetUnique(true).SetSparse(true).SetName("subdomain_unique")},
			{Keys: bson.D{{Key: "verified_domain", Value: 1}}, Options: options.Index().SetUnique(true).SetSparse(true).SetName("verified_domain_unique")},
		},
		workspaceFilesColl: {
			{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "path", Value: 1}}, Options: options.Index().SetUnique(true).SetName("workspace_path_unique")},
			{Keys: bson.D{{Key: "uuid", Value: 1}}, Options: options.Index().SetUnique(true).SetName("uuid_unique")},
		},
		workspaceTrashColl: {
			{Keys: bson.D{{Key: "workspace_id", Value: 1}, {Key: "deleted_at", Value: -1}}, Options: options.Index().SetName("workspace_deleted")},
		},
		// End users' memories: a user's (the prompt's and the API's reads) and an agent's, newest first.
		userMemoriesColl: {
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "user", Value: 1}, {Key: "updated_at", Value: -1}},
				Options: options.Index().SetName("user")},
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}, {Key: "updated_at", Value: -1}}, Options: options.Index().SetName("bot")},
		},
	}
}

// outboxIndex lets the relay find documents with unpublished events: MongoDB answers the
// relay's {$ne: {}} from index bounds that skip the empty outboxes.
func outboxIndex() mongo.IndexModel {
	return mongo.IndexModel{Keys: bson.D{{Key: "_outbox", Value: 1}}, Options: options.Index().SetName("outbox").SetSparse(true)}
}

// wrap turns driver errors into domain errors: missing documents into NotFound errors of
// resource, unreachable servers into Unavailable, duplicates into Conflict.
func wrap(err error, resource string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mongo.ErrNoDocuments):
		return apperr.NotFoundf(resource)
	case duplicate(err):
		return &apperr.Error{Kind: apperr.Conflict, Code: resource + "_exists", Message: resource + " already exists", Err: err}
	case mongo.IsNetworkError(err), mongo.IsTimeout(err), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &topology.ServerSelectionError{}), errors.Is(err, mongo.ErrClientDisconnected), transient(err):
		return apperr.Unavailablef("mongodb", err)
	}
	return err
}

// duplicate reports whether err is a write refused by a unique index: MongoDB's duplicate key
// error, or the embedded store's answer to an update that would break one (an internal error
// naming SQLite's failed constraint; its inserts answer MongoDB's code).
func duplicate(err error) bool {
	var se mongo.ServerError
	return mongo.IsDuplicateKeyError(err) || (errors.As(err, &se) && se.HasErrorMessage("UNIQUE constraint failed"))
}

// transientCodes are the server errors of a deployment that is shutting down, stepping down or
// electing a primary (HostUnreachable, HostNotFound, NetworkTimeout, ShutdownInProgress,
// PrimarySteppedDown, SocketException, NotWritablePrimary, InterruptedAtShutdown,
// InterruptedDueToReplStateChange, NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary): the same
// request succeeds once it is over. The driver retries a write once on them; what is left after
// that is the dependency being down, not a fault of the request.
var transientCodes = []int{6, 7, 89, 91, 189, 9001, 10107, 11600, 11602, 13435, 13436}

func transient(err error) bool {
	var se mongo.ServerError
	if !errors.As(err, &se) {
		return false
	}
	if se.HasErrorLabel("RetryableWriteError") {
		return true
	}
	return slices.ContainsFunc(transientCodes, se.HasErrorCode)
}
