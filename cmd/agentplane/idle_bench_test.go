//go:build unix

package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
)

// BenchmarkIdleCPU measures the CPU an idle dev process takes, fresh and with 10,000 standard
// chats stored: its roles and, in this process, the embedded store that serves them (Redis is
// a process of its own and not counted). The chats are written directly, as the API stores
// them (a chat and a page of its two messages, outbox empty). idle-ratio is the loaded over
// the fresh; nothing periodic may read in proportion to the data, so it stays near 1.
func BenchmarkIdleCPU(b *testing.B) {
	fresh := idleCores(b, 0)
	loaded := idleCores(b, 10_000)
	b.ReportMetric(fresh, "fresh-cores")
	b.ReportMetric(loaded, "loaded-cores")
	b.ReportMetric(loaded/fresh, "idle-ratio")
}

// Idle windows: the warm-up lets the relay's scan at start and the first plans end.
const (
	idleWarmup = 15 * time.Second
	idleWindow = 20 * time.Second
)

// idleCores stores n chats, starts dev on them and returns the cores it used over idleWindow.
func idleCores(b *testing.B, n int) float64 {
	b.Helper()
	db := testenv.Mongo(b)
	storeChats(b, db, n)
	env := map[string]string{
		"AGENTPLANE_MONGO_URI": testenv.MongoURI(), "AGENTPLANE_MONGO_DATABASE": db.Name(),
		"AGENTPLANE_REDIS_URL": testenv.RedisURL(), "AGENTPLANE_NATS_URL": testenv.NATSURL(),
		"AGENTPLANE_HTTP_ADDR": "127.0.0.1:0", "AGENTPLANE_DATA_DIR": b.TempDir(),
		"AGENTPLANE_QUEUE": testenv.NewName(), "AGENTPLANE_LOG_LEVEL": "warn",
	}
	p := start(b, env, "dev")
	waitFor(b, p.stdout, bannerBase, p)
	time.Sleep(idleWarmup)
	before := cpuTime(b)
	time.Sleep(idleWindow)
	used := cpuTime(b) - before
	p.stop(b)
	return used.Seconds() / idleWindow.Seconds()
}

// storeChats writes n chats of two messages each into db, a thousand at a time.
func storeChats(b *testing.B, db *mongo.Database, n int) {
	b.Helper()
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	for start := 0; start < n; start += 1000 {
		var convs, pages []any
		for i := start; i < min(start+1000, n); i++ {
			id := fmt.Sprintf("chat-%06d", i)
			convs = append(convs, chats.Chat{UUID: id, ProjectID: "p", BotID: "b", Title: "hello", Messages: 2, CreatedAt: at, UpdatedAt: at})
			msgs := []chats.Message{
				{UUID: id + "-1", ChatID: id, Seq: 1, Role: chats.RoleUser, Content: "What are your opening hours?", CreatedAt: at, UpdatedAt: at},
				{UUID: id + "-2", ChatID: id, Seq: 2, Role: chats.RoleAgent, Content: "We are open from nine to five, Monday to Friday.", CreatedAt: at, UpdatedAt: at},
			}
			pages = append(pages, bson.D{{Key: "_id", Value: id + ":0"}, {Key: "chat_id", Value: id}, {Key: "project_id", Value: "p"},
				{Key: "bot_id", Value: "b"}, {Key: "messages", Value: msgs}, {Key: "rev", Value: 2}, {Key: "_outbox", Value: bson.D{}}})
		}
		if _, err := db.Collection("chats").InsertMany(ctx, convs); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Collection("chat_messages").InsertMany(ctx, pages); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
